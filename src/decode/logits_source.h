// What the generation loop needs from a model: next-token scores for many sequences at once.
// One step() appends tokens to any mix of sequences (a prompt chunk to one, one token to
// another) and returns each one's scores, so a caller drives a whole batch with one forward
// pass per step. The engine implements it over the model and its paged KV cache; tests
// implement it with scripted distributions, so processors, samplers, beam search and stopping
// are testable without a model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace ls::decode {

// Tokens to append to sequence `seq` (created empty on first use), and which scores to return:
// after the last token ([vocab]) or after every one of them ([tokens, vocab]).
struct Feed {
  int seq = 0;
  std::span<const std::int32_t> tokens;
  bool all_positions = false;
  // Also the router's choice for the last token (a mixture of experts; see expert_routes()).
  bool expert_routes = false;
};

// One of the experts a mixture-of-experts layer routed a token to, and its weight in the sum
// (a dense layer of such a model: expert -1, weight 0).
struct ExpertChoice {
  std::int32_t expert = -1;
  float weight = 0;
};

// What a run holds between steps: the source's sizes and its table of sequences. A run forks
// and releases its own sequences but never steps; whoever drives the runs does (generate_batch,
// the server's scheduler, which records a run's forks and releases and applies them in order
// after runs advanced on many threads).
struct Sequences {
  virtual ~Sequences() = default;
  virtual std::int32_t vocab_size() const = 0;
  // Positions a sequence may hold (the model's max_position_embeddings); 0: no limit.
  virtual std::int32_t context_limit() const { return 0; }
  // Makes `to_seq` a copy of `from_seq` (its tokens and cached state; an engine shares the
  // memory of the common prefix). Whatever `to_seq` held before is released.
  virtual void fork(int from_seq, int to_seq) = 0;
  // Forgets sequence `seq` and frees what it held; it may be fed again from empty.
  virtual void release(int seq) = 0;
  // Experts each layer chose (top-k of the router) for the last token fed to `seq` in the latest
  // step, when its feed asked (Feed::expert_routes) and the model is a mixture of experts:
  // [layers, experts_per_token()], best first within a layer. Empty otherwise. Valid until the
  // next step.
  virtual std::span<const ExpertChoice> expert_routes(int /*seq*/) const { return {}; }
  virtual int experts_per_token() const { return 0; }
};

struct LogitsSource : Sequences {
  // One batched step: each feed's scores, in the order of `feeds` (a sequence at most once).
  // The spans stay valid until the next step, fork or release on this source.
  virtual std::vector<std::span<const float>> step(std::span<const Feed> feeds) = 0;
  // Calls fn(i) for every i in [0, n), each exactly once, in any order and on any thread: the
  // step's token choices, spread over the engine's threads (each touches only its own
  // sequence). By default in order on the calling thread.
  virtual void parallel(std::size_t n, const std::function<void(std::size_t)>& fn) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
  }

  // A step with one feed.
  std::span<const float> feed(int seq, std::span<const std::int32_t> tokens,
                              bool all_positions = false) {
    const Feed f{seq, tokens, all_positions};
    return step({&f, 1}).front();
  }
};

}  // namespace ls::decode
