// Beam search and beam sampling (see beam_search.h).
#include "decode/beam_search.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/rng.h"
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
  std::vector<float> next;  // raw scores for the next token
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
std::vector<Candidate> sample_candidates(std::vector<Candidate> all, std::size_t k, Rng& rng) {
  std::vector<Candidate> picked;
  double top = -std::numeric_limits<double>::infinity();
  for (const auto& c : all) top = std::max(top, c.total);
  std::vector<double> weight(all.size());
  for (std::size_t i = 0; i < all.size(); ++i) weight[i] = std::exp(all[i].total - top);
  for (std::size_t pick = 0; pick < k && pick < all.size(); ++pick) {
    double total = 0;
    for (double w : weight) total += w;
    if (!(total > 0)) break;
    const double target = rng.uniform() * total;
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

}  // namespace

GenerationRun beam_search(LogitsSource& source, std::span<const std::int32_t> prompt,
                          const GenerationConfig& config, const GenerateOptions& options,
                          GenerationRun run) {
  const bool sampling = run.mode == DecodeMode::beam_sample;
  const auto nb = static_cast<std::size_t>(config.num_beams);
  const auto& eos = config.eos_token_id;
  const int min_keep = eos.empty() ? 2 : static_cast<int>(eos.size()) + 1;
  ProcessorChain chain = build_chain(config, {source.vocab_size(), sampling, min_keep});
  run.chain = chain.describe();
  if (options.on_header) {
    options.on_header(header_json(config, run.mode, run.seed, chain, prompt.size()));
  }
  Rng rng(run.seed);
  const std::size_t prompt_len = prompt.size();
  std::size_t max_length =
      prompt_len + static_cast<std::size_t>(max_new_tokens_for(config, prompt_len));
  FinishReason length_reason = FinishReason::length;
  if (options.context_limit > 0 && static_cast<std::size_t>(options.context_limit) < max_length) {
    max_length = static_cast<std::size_t>(options.context_limit);
    length_reason = FinishReason::context_limit;
  }
  const std::size_t beams_to_keep = std::max<std::size_t>(2, 1 + eos.size()) * nb;
  const double lp = config.length_penalty;
  auto penalised = [&](double sum, std::size_t length) {
    return sum / std::pow(static_cast<double>(length), lp);
  };

  source.reset(0);
  auto first = source.feed(0, prompt);
  std::vector<Beam> running(1);
  running[0].next.assign(first.begin(), first.end());
  std::vector<Finished> finished;
  std::size_t cur_len = prompt_len;
  bool improvable = true;  // transformers' is_early_stop_heuristic_unsatisfied
  int bank = 0;
  std::vector<std::int32_t> history_tokens;

  for (int step = 0; cur_len < max_length; ++step) {
    // 1. Every continuation of every beam, scored with processed log-probabilities.
    std::vector<Candidate> all;
    for (std::size_t b = 0; b < running.size(); ++b) {
      Beam& beam = running[b];
      const double lse = log_sum_exp(beam.next);
      std::vector<float> logp(beam.next.size());
      for (std::size_t i = 0; i < logp.size(); ++i) {
        logp[i] = static_cast<float>(static_cast<double>(beam.next[i]) - lse);
      }
      history_tokens.assign(prompt.begin(), prompt.end());
      history_tokens.insert(history_tokens.end(), beam.tokens.begin(), beam.tokens.end());
      chain.apply(logp, TokenHistory{history_tokens, prompt_len});
      require_sortable(logp, "beam search");
      for (std::size_t i = 0; i < logp.size(); ++i) {
        if (!(logp[i] > -std::numeric_limits<float>::infinity())) continue;
        all.push_back({static_cast<int>(b), static_cast<std::int32_t>(i),
                       beam.sum + static_cast<double>(logp[i]),
                       static_cast<double>(beam.next[i]) - lse});
      }
    }
    if (all.empty()) fail("beam search: every continuation was removed at step {}", step);
    // 2. The best beams_to_keep (or a sample of them), best first.
    std::vector<Candidate> top;
    if (sampling) {
      top = sample_candidates(std::move(all), beams_to_keep, rng);
    } else {
      const std::size_t k = std::min(beams_to_keep, all.size());
      std::partial_sort(all.begin(), all.begin() + static_cast<long>(k), all.end(), ranks_before);
      top.assign(all.begin(), all.begin() + static_cast<long>(k));
    }
    // 3. Which continuations end here.
    for (auto& c : top) {
      const Beam& beam = running[c.beam];
      if (std::find(eos.begin(), eos.end(), c.token) != eos.end()) {
        c.hits_stop = true;
        c.reason = FinishReason::eos;
      } else if (!config.stop_strings.empty()) {
        const std::string text = beam.text + options.token_bytes(c.token);
        for (const auto& stop : config.stop_strings) {
          const std::size_t from =
              beam.text.size() >= stop.size() ? beam.text.size() - stop.size() + 1 : 0;
          if (text.find(stop, from) != std::string::npos) {
            c.hits_stop = true;
            c.reason = FinishReason::stop_string;
          }
        }
      }
      if (!c.hits_stop && cur_len + 1 >= max_length) {
        c.hits_stop = true;
        c.reason = length_reason;
      }
    }
    // 4. Finished hypotheses: only those ranked within the first num_beams count.
    StepTrace trace;
    const bool tracing = static_cast<bool>(options.on_step);
    const std::size_t length = cur_len + 1 - prompt_len;
    std::vector<std::string> status(top.size(), "pruned");
    const bool full_and_early =
        finished.size() == nb && config.early_stopping == EarlyStopping::yes;
    for (std::size_t r = 0; r < top.size(); ++r) {
      const Candidate& c = top[r];
      if (!c.hits_stop) continue;
      if (r >= nb || full_and_early || !improvable) {
        status[r] = "dropped";
        continue;
      }
      Finished f;
      f.tokens = running[c.beam].tokens;
      f.tokens.push_back(c.token);
      f.sum = c.total;
      f.raw_sum = running[c.beam].raw_sum + c.raw_logprob;
      f.score = penalised(c.total, length);
      f.reason = c.reason;
      finished.push_back(std::move(f));
      std::stable_sort(finished.begin(), finished.end(),
                       [](const Finished& a, const Finished& b) { return a.score > b.score; });
      if (finished.size() > nb) {
        finished.resize(nb);
      }
      status[r] = "finished";
    }
    // 5. The best num_beams unfinished continuations carry on.
    std::vector<std::size_t> next_ranks;
    for (std::size_t r = 0; r < top.size() && next_ranks.size() < nb; ++r) {
      if (!top[r].hits_stop) {
        next_ranks.push_back(r);
        status[r] = "live";
      }
    }
    if (tracing) {
      trace.step = step;
      trace.mode = to_string(run.mode);
      for (std::size_t r = 0; r < top.size(); ++r) {
        BeamTrace bt;
        bt.tokens = running[top[r].beam].tokens;
        bt.tokens.push_back(top[r].token);
        bt.sum_logprob = top[r].total;
        bt.score = penalised(top[r].total, length);
        bt.parent = top[r].beam;
        bt.status = status[r];
        trace.beams.push_back(std::move(bt));
      }
      options.on_step(trace);
    }
    ++cur_len;
    // 6. transformers' stopping heuristics.
    if (finished.size() == nb && !next_ranks.empty()) {
      const bool never = config.early_stopping == EarlyStopping::never && lp > 0.0;
      const std::size_t best_length = never ? max_length - prompt_len : cur_len - prompt_len;
      const double best_possible = penalised(top[next_ranks[0]].total, best_length);
      improvable = improvable && best_possible > finished.back().score;
    }
    const bool all_done = finished.size() == nb && config.early_stopping == EarlyStopping::yes;
    if (!improvable || all_done || next_ranks.empty() || cur_len >= max_length) break;
    // 7. Move the surviving beams into the other bank of sequence ids and feed their tokens.
    bank = 1 - bank;
    std::vector<Beam> next;
    for (std::size_t j = 0; j < next_ranks.size(); ++j) {
      const Candidate& c = top[next_ranks[j]];
      const Beam& parent = running[c.beam];
      Beam beam;
      beam.tokens = parent.tokens;
      beam.tokens.push_back(c.token);
      if (options.token_bytes) beam.text = parent.text + options.token_bytes(c.token);
      beam.sum = c.total;
      beam.raw_sum = parent.raw_sum + c.raw_logprob;
      beam.slot = bank * static_cast<int>(nb) + static_cast<int>(j);
      beam.parent = c.beam;
      source.fork(parent.slot, beam.slot);
      auto scores = source.feed(beam.slot, std::span<const std::int32_t>(&c.token, 1));
      beam.next.assign(scores.begin(), scores.end());
      next.push_back(std::move(beam));
    }
    running = std::move(next);
  }

  // Too few finished hypotheses (tiny vocabularies): fall back on the running beams.
  for (const auto& beam : running) {
    if (finished.size() >= static_cast<std::size_t>(config.num_return_sequences)) break;
    if (beam.tokens.empty()) continue;
    finished.push_back({beam.tokens, beam.sum, beam.raw_sum,
                        penalised(beam.sum, beam.tokens.size()), length_reason});
  }
  const auto n_return =
      std::min<std::size_t>(finished.size(), static_cast<std::size_t>(config.num_return_sequences));
  for (std::size_t i = 0; i < n_return; ++i) {
    const Finished& f = finished[i];
    GenerationResult r;
    r.tokens = f.tokens;
    r.finish = f.reason;
    r.logprob = f.raw_sum;
    r.processed_logprob = f.sum;
    r.score = f.score;
    r.message = fmt::format("beam hypothesis {} of {}, finished by {}", i + 1, n_return,
                            to_string(f.reason));
    if (options.token_bytes) {
      TextStream stream(config.stop_strings);
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
    run.sequences.push_back(std::move(r));
  }
  return run;
}

}  // namespace ls::decode
