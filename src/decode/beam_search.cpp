// Beam search and beam sampling with transformers' semantics (its vectorised _beam_search):
// scores are log_softmax'ed, processed, added to each beam's running sum; the best (max(2, 1 +
// #eos) x num_beams) continuations are ranked; those among the first num_beams that end (EOS, stop
// string, length) enter the finished set with score sum / generated_length^length_penalty
// (generated_length counts the final token); the best num_beams unfinished ones continue.
// early_stopping true/false/"never" follow transformers' stopping heuristics.
// generate_batch() drives it as one RunState among others.

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/rng.h"
#include "decode/run_state.h"
#include "decode/sampler.h"
#include "decode/text_stream.h"
#include "decode/trace_json.h"

namespace ls::decode {

namespace {

struct Beam {
  std::vector<std::int32_t> tokens;  // generated
  std::string text;                  // bytes of the generated tokens (for stop strings)
  double sum = 0;                    // processed logprob sum: the beam score before the penalty
  double raw_sum = 0;                // model logprob sum
  int slot = 0;                      // sequence id in the LogitsSource
  int parent = -1;
  std::span<const float> next;  // raw scores for the next token (valid for one step)
};

struct Candidate {
  int beam = 0;
  std::int32_t token = 0;
  double total = 0;
  double raw_logprob = 0;
  bool hits_stop = false;
  FinishReason reason = FinishReason::length;
};

struct Finished {
  std::vector<std::int32_t> tokens;
  double sum = 0, raw_sum = 0, score = 0;
  FinishReason reason = FinishReason::length;
};

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (a.total != b.total) return a.total > b.total;
  if (a.beam != b.beam) return a.beam < b.beam;
  return a.token < b.token;
}

// Sampling without replacement, as torch.multinomial(probs, k) does: each pick removes the
// chosen candidate and renormalises. One draw per pick.
std::vector<Candidate> sample_candidates(std::vector<Candidate> all, std::size_t k, Sampler& rng) {
  std::vector<Candidate> picked;
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& c : all) top = std::max(top, c.total);
  std::vector<double> weight(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) weight[i] = std::exp(all[i].total - top);
  for (std::size_t pick = 0; pick < k && pick < all.size(); ++pick) {
    double total = 0;
    for (double w : weight) total += w;
    if (!(total > 0)) break;
    const double target = rng.draw() * total;
    double cumulative = 0;
    std::size_t chosen = all.size();
    for (std::size_t i = 0; i < all.size(); ++i) {
      if (weight[i] <= 0) continue;
      cumulative += weight[i];
      chosen = i;
      if (cumulative > target) break;
    }
    picked.push_back(all[chosen]);
    weight[chosen] = 0;
  }
  std::stable_sort(picked.begin(), picked.end(), ranks_before);
  return picked;
}

// One beam search as a run of the batched loop: the prompt is fed once into slot 0; each step
// the surviving beams are forked (sharing their KV) into the other bank of slots and all of
// them are fed together.
class BeamRun final : public RunState {
 public:
  BeamRun(Sequences& source, const Request& job, int first_seq, GenerationRun run)
      : source_(source),
        job_(job),
        config_(job.config),
        run_(std::move(run)),
        first_seq_(first_seq),
        nb_(static_cast<std::size_t>(job.config.num_beams)),
        sampling_(run_.mode == DecodeMode::beam_sample),
        sampler_(job.config, run_.mode, source.vocab_size(), run_.seed, 0,
                 job.config.eos_token_id.empty()
                     ? 2
                     : static_cast<int>(job.config.eos_token_id.size()) + 1),
        prompt_len_(job.prompt.size()),
        cur_len_(job.prompt.size()) {
    run_.chain = sampler_.chain().describe();
    if (job.options.on_header)
      job.options.on_header(
          make_header(config_, run_.mode, run_.seed, sampler_.chain(), prompt_len_));
    max_length_ = prompt_len_ + static_cast<std::size_t>(max_new_tokens_for(config_, prompt_len_));
    const std::int32_t limit = source.context_limit();
    if (limit > 0 && static_cast<std::size_t>(limit) < max_length_) {
      max_length_ = static_cast<std::size_t>(limit);
      length_reason_ = FinishReason::context_limit;
    }
    beams_to_keep_ = std::max<std::size_t>(2, 1 + config_.eos_token_id.size()) * nb_;
    running_.resize(1);
    running_[0].slot = first_seq_;
    if (cur_len_ >= max_length_) finalize();
  }

  void feeds(std::vector<Feed>& out) override {
    if (done_) return;
    const bool routes = wants_routes();
    if (!prefilled_) {
      out.push_back({running_[0].slot, job_.prompt, false, routes});
      return;
    }
    for (const Beam& b : running_) out.push_back({b.slot, {&b.tokens.back(), 1}, false, routes});
  }

  void advance(std::span<const std::span<const float>> scores) override {
    prefilled_ = true;
    for (std::size_t b = 0; b < running_.size(); ++b) running_[b].next = scores[b];
    if (!step()) finalize();
  }

  bool done() const override { return done_; }
  GenerationRun take_result() override { return std::move(run_); }

 private:
  bool wants_routes() const {
    return job_.options.expert_routes && job_.options.on_step && source_.experts_per_token() > 0;
  }

  double penalised(double sum, std::size_t length) const {
    return sum / std::pow(static_cast<double>(length), config_.length_penalty);
  }

  // One step of transformers' beam search; false when the search is over.
  bool step() {
    const auto& eos = config_.eos_token_id;
    const auto& options = job_.options;
    const auto prompt = job_.prompt;
    // 1. Every continuation of every beam, scored with processed log-probabilities.
    std::vector<Candidate> all;
    for (std::size_t b = 0; b < running_.size(); ++b) {
      Beam& beam = running_[b];
      const double lse = log_sum_exp(beam.next);
      std::vector<float> logp(beam.next.size());
      for (std::size_t i = 0; i < logp.size(); ++i) {
        logp[i] = static_cast<float>(static_cast<double>(beam.next[i]) - lse);
      }
      history_.assign(prompt.begin(), prompt.end());
      history_.insert(history_.end(), beam.tokens.begin(), beam.tokens.end());
      sampler_.process(logp, TokenHistory{history_, prompt_len_});
      require_sortable(logp, "beam search");
      ids_.clear();
      for (std::size_t i = 0; i < logp.size(); ++i)
        if (logp[i] > -std::numeric_limits<float>::infinity())
          ids_.push_back(static_cast<std::int32_t>(i));
      if (!sampling_ && ids_.size() > beams_to_keep_) {
        // Only this beam's own best beams_to_keep can be among the best beams_to_keep overall
        // (ranks_before orders one beam's candidates by total, then token): select them here
        // instead of ranking the whole vocabulary of every beam.
        const double base = beam.sum;
        std::nth_element(ids_.begin(), ids_.begin() + static_cast<long>(beams_to_keep_), ids_.end(),
                         [&](std::int32_t x, std::int32_t y) {
                           const double tx = base + static_cast<double>(logp[x]);
                           const double ty = base + static_cast<double>(logp[y]);
                           return tx != ty ? tx > ty : x < y;
                         });
        ids_.resize(beams_to_keep_);
      }
      for (std::int32_t i : ids_)
        all.push_back({static_cast<int>(b), i, beam.sum + static_cast<double>(logp[i]),
                       static_cast<double>(beam.next[i]) - lse});
    }
    if (all.empty()) fail("beam search: every continuation was removed at step {}", step_);
    // 2. The best beams_to_keep (or a sample of them), best first.
    std::vector<Candidate> top;
    if (sampling_) {
      top = sample_candidates(std::move(all), beams_to_keep_, sampler_);
    } else {
      const std::size_t k = std::min(beams_to_keep_, all.size());
      std::partial_sort(all.begin(), all.begin() + static_cast<long>(k), all.end(), ranks_before);
      top.assign(all.begin(), all.begin() + static_cast<long>(k));
    }
    // 3. Which continuations end here.
    for (auto& c : top) {
      const Beam& beam = running_[c.beam];
      if (std::find(eos.begin(), eos.end(), c.token) != eos.end()) {
        c.hits_stop = true;
        c.reason = FinishReason::eos;
      } else if (!config_.stop_strings.empty()) {
        const std::string text = beam.text + options.token_bytes(c.token);
        for (const auto& stop : config_.stop_strings) {
          const std::size_t from =
              beam.text.size() >= stop.size() ? beam.text.size() - stop.size() + 1 : 0;
          if (text.find(stop, from) != std::string::npos) {
            c.hits_stop = true;
            c.reason = FinishReason::stop_string;
          }
        }
      }
      if (!c.hits_stop && cur_len_ + 1 >= max_length_) {
        c.hits_stop = true;
        c.reason = length_reason_;
      }
    }
    // 4. Finished hypotheses: only those ranked within the first num_beams count.
    const std::size_t length = cur_len_ + 1 - prompt_len_;
    std::vector<std::string> status(top.size(), "pruned");
    const bool full_and_early =
        finished_.size() == nb_ && config_.early_stopping == EarlyStopping::yes;
    for (std::size_t r = 0; r < top.size(); ++r) {
      const Candidate& c = top[r];
      if (!c.hits_stop) continue;
      if (r >= nb_ || full_and_early || !improvable_) {
        status[r] = "dropped";
        continue;
      }
      Finished f;
      f.tokens = running_[c.beam].tokens;
      f.tokens.push_back(c.token);
      f.sum = c.total;
      f.raw_sum = running_[c.beam].raw_sum + c.raw_logprob;
      f.score = penalised(c.total, length);
      f.reason = c.reason;
      finished_.push_back(std::move(f));
      std::stable_sort(finished_.begin(), finished_.end(),
                       [](const Finished& a, const Finished& b) { return a.score > b.score; });
      if (finished_.size() > nb_) finished_.resize(nb_);
      status[r] = "finished";
    }
    // 5. The best num_beams unfinished continuations carry on.
    std::vector<std::size_t> next_ranks;
    for (std::size_t r = 0; r < top.size() && next_ranks.size() < nb_; ++r) {
      if (!top[r].hits_stop) {
        next_ranks.push_back(r);
        status[r] = "live";
      }
    }
    if (options.on_step) {
      StepTrace trace;
      trace.step = step_;
      trace.mode = run_.mode;
      for (std::size_t r = 0; r < top.size(); ++r) {
        BeamTrace bt;
        bt.tokens = running_[top[r].beam].tokens;
        bt.tokens.push_back(top[r].token);
        bt.sum_logprob = top[r].total;
        bt.score = penalised(top[r].total, length);
        bt.parent = top[r].beam;
        bt.status = status[r];
        trace.beams.push_back(std::move(bt));
      }
      if (wants_routes())
        for (const Beam& beam : running_)
          trace.beam_experts.push_back(expert_layers(source_, beam.slot));
      options.on_step(trace);
    }
    ++cur_len_;
    ++step_;
    // 6. transformers' stopping heuristics.
    const double lp = config_.length_penalty;
    if (finished_.size() == nb_ && !next_ranks.empty()) {
      const bool never = config_.early_stopping == EarlyStopping::never && lp > 0.0;
      const std::size_t best_length = never ? max_length_ - prompt_len_ : cur_len_ - prompt_len_;
      const double best_possible = penalised(top[next_ranks[0]].total, best_length);
      improvable_ = improvable_ && best_possible > finished_.back().score;
    }
    const bool all_done = finished_.size() == nb_ && config_.early_stopping == EarlyStopping::yes;
    if (!improvable_ || all_done || next_ranks.empty() || cur_len_ >= max_length_) return false;
    // 7. The surviving beams move into the other bank of sequence ids, sharing their parents'
    // KV; the loop feeds all their tokens in one step.
    bank_ = 1 - bank_;
    std::vector<Beam> next;
    for (std::size_t j = 0; j < next_ranks.size(); ++j) {
      const Candidate& c = top[next_ranks[j]];
      const Beam& parent = running_[c.beam];
      Beam beam;
      beam.tokens = parent.tokens;
      beam.tokens.push_back(c.token);
      if (options.token_bytes) beam.text = parent.text + options.token_bytes(c.token);
      beam.sum = c.total;
      beam.raw_sum = parent.raw_sum + c.raw_logprob;
      beam.slot = first_seq_ + bank_ * static_cast<int>(nb_) + static_cast<int>(j);
      beam.parent = c.beam;
      source_.fork(parent.slot, beam.slot);
      next.push_back(std::move(beam));
    }
    for (const Beam& old : running_) source_.release(old.slot);
    running_ = std::move(next);
    return true;
  }

  void finalize() {
    const auto& eos = config_.eos_token_id;
    const auto& options = job_.options;
    // Too few finished hypotheses (tiny vocabularies): fall back on the running beams.
    for (const auto& beam : running_) {
      if (finished_.size() >= static_cast<std::size_t>(config_.num_return_sequences)) break;
      if (beam.tokens.empty()) continue;
      finished_.push_back({beam.tokens, beam.sum, beam.raw_sum,
                           penalised(beam.sum, beam.tokens.size()), length_reason_});
    }
    for (const Beam& b : running_) source_.release(b.slot);
    const auto n_return = std::min<std::size_t>(
        finished_.size(), static_cast<std::size_t>(config_.num_return_sequences));
    for (std::size_t i = 0; i < n_return; ++i) {
      const Finished& f = finished_[i];
      GenerationResult r;
      r.tokens = f.tokens;
      r.finish = f.reason;
      r.logprob = f.raw_sum;
      r.processed_logprob = f.sum;
      r.score = f.score;
      r.message = fmt::format("beam hypothesis {} of {}, finished by {}", i + 1, n_return,
                              to_string(f.reason));
      if (options.token_bytes) {
        TextStream stream(config_.stop_strings);
        bool stopped = false;
        for (std::int32_t t : f.tokens) {
          if (std::find(eos.begin(), eos.end(), t) != eos.end()) break;
          if (stream.push(options.token_bytes(t)).stopped) {
            stopped = true;
            break;
          }
        }
        if (!stopped) stream.finish();
        r.text = stream.emitted();
        if (options.on_text) options.on_text(static_cast<int>(i), r.text);
      }
      run_.sequences.push_back(std::move(r));
    }
    done_ = true;
  }

  Sequences& source_;
  const Request& job_;
  const GenerationConfig& config_;
  GenerationRun run_;
  int first_seq_;
  std::size_t nb_;
  bool sampling_;
  Sampler sampler_;
  std::size_t prompt_len_;
  std::size_t cur_len_;
  std::size_t max_length_ = 0;
  FinishReason length_reason_ = FinishReason::length;
  std::size_t beams_to_keep_ = 0;
  std::vector<Beam> running_;
  std::vector<Finished> finished_;
  std::vector<std::int32_t> history_;
  std::vector<std::int32_t> ids_;  // one beam's candidate tokens
  bool improvable_ = true;         // transformers' is_early_stop_heuristic_unsatisfied
  bool prefilled_ = false;
  bool done_ = false;
  int bank_ = 0;
  int step_ = 0;
};

}  // namespace

std::unique_ptr<RunState> make_beam_run(Sequences& source, const Request& job, int first_seq,
                                        GenerationRun run) {
  return std::make_unique<BeamRun>(source, job, first_seq, std::move(run));
}

}  // namespace ls::decode
