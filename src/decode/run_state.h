// The pieces generate_batch() drives: a run states which tokens it feeds this step and gets
// the scores back; sampling runs and beam searches both take this shape, so one loop steps any
// mix of them with one LogitsSource::step per token.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "decode/chain.h"
#include "decode/generate.h"

namespace ls::decode {

class RunState {
 public:
  virtual ~RunState() = default;
  // Appends this step's feeds (none once the run is done).
  virtual void feeds(std::vector<Feed>& out) = 0;
  // The choices of this step that may run beside other runs' on any thread, before advance():
  // how many, then each by index over the scores for the run's feeds (a sampled or greedy
  // sequence's own chain over its own row). advance() applies them in order, making any that
  // were not made. Beam runs make theirs in advance().
  virtual std::size_t pending_choices() const { return 0; }
  virtual void make_choice(std::size_t /*i*/, std::span<const std::span<const float>> /*scores*/) {}
  // The scores for the feeds it appended, in the same order.
  virtual void advance(std::span<const std::span<const float>> scores) = 0;
  virtual bool done() const = 0;
  virtual GenerationRun take_result() = 0;
};

// Throws ls::Error when a request cannot run: invalid settings, an empty prompt or one that
// leaves no room in the context, stop strings without token text, a bad cached_prefix.
void check_request(const Sequences& source, const Request& job);
// Sequence ids [first_seq, first_seq + sequence_ids_needed(config)) of `source` are the run's.
int sequence_ids_needed(const GenerationConfig& config);
// Greedy or sampled sequences (generate.cpp); `run` carries mode and seed in.
std::unique_ptr<RunState> make_sampling_run(Sequences& source, const Request& job, int first_seq,
                                            GenerationRun run);
// Beam search or beam sampling (beam_search.cpp).
std::unique_ptr<RunState> make_beam_run(Sequences& source, const Request& job, int first_seq,
                                        GenerationRun run);
// The run a request becomes (beam search or sampling), its seed drawn at random when the
// config has none; the request must have passed check_request and outlive the run. The run
// forks and releases its sequences in `source` but never steps it: its driver does.
std::unique_ptr<RunState> make_run(Sequences& source, const Request& job, int first_seq);
// The header of a run (stage order, settings and their sources).
RunHeader make_header(const GenerationConfig& config, DecodeMode mode, std::uint64_t seed,
                      const ProcessorChain& chain, std::size_t prompt_len);

}  // namespace ls::decode
