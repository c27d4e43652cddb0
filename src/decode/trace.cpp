// Building StepTrace records from score vectors (see trace.h).
#include "decode/trace.h"

#include <cmath>
#include <limits>

#include "decode/distribution.h"

namespace ls::decode {

namespace {
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
}

std::vector<TokenScore> top_tokens(std::span<const float> scores, int n) {
  const std::vector<double> probs = softmax(scores);
  std::vector<TokenScore> out;
  for (std::int32_t id : ids_by_score_desc(scores, n, /*finite_only=*/true)) {
    out.push_back({id, scores[id], probs[id]});
  }
  return out;
}

void trace_raw(StepTrace& step, std::span<const float> raw, int n) {
  step.raw_candidates = count_candidates(raw);
  step.raw_top = top_tokens(raw, n);
  step.entropy_before = entropy(raw);
}

StageTrace trace_stage(const LogitsProcessor& stage, std::span<const float> before,
                       std::span<const float> after, int n) {
  StageTrace t;
  t.name = stage.name();
  t.description = stage.describe();
  t.candidates = count_candidates(after);
  t.entropy = entropy(after);
  t.top = top_tokens(after, n);
  const std::vector<double> p = softmax(before);
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i] > kNegInf && !(after[i] > kNegInf)) t.mass_removed += p[i];
  }
  std::size_t best = after.size();  // the best score left, the lowest id on ties
  for (std::size_t i = 0; i < after.size(); ++i)
    if (after[i] > kNegInf && (best == after.size() || after[i] > after[best])) best = i;
  if (best < after.size()) {
    t.best_kept_rank = 1;
    for (std::size_t i = 0; i < before.size(); ++i)
      if (before[i] > before[best] || (before[i] == before[best] && i < best)) ++t.best_kept_rank;
  }
  return t;
}

void trace_choice(StepTrace& step, std::span<const float> raw, std::span<const float> final_scores,
                  std::int32_t chosen) {
  step.chosen = chosen;
  const float c = raw[chosen];
  std::int32_t rank = 1;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const auto id = static_cast<std::int32_t>(i);
    if (raw[i] > c || (raw[i] == c && id < chosen)) ++rank;
  }
  step.chosen_raw_rank = rank;
  step.chosen_logit = c;
  const double raw_lse = log_sum_exp(raw);
  step.chosen_raw_logprob = static_cast<double>(c) - raw_lse;
  step.chosen_raw_prob = std::exp(step.chosen_raw_logprob);
  const double final_lse = log_sum_exp(final_scores);
  step.chosen_logprob = static_cast<double>(final_scores[chosen]) - final_lse;
  step.chosen_prob = std::exp(step.chosen_logprob);
  step.entropy_after = entropy(final_scores);
  step.final_candidates = count_candidates(final_scores);
  const std::vector<double> p_raw = softmax(raw);
  step.mass_removed = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] > kNegInf && !(final_scores[i] > kNegInf)) step.mass_removed += p_raw[i];
  }
  step.runner_up = -1;
  for (std::int32_t id : ids_by_score_desc(final_scores, 2, /*finite_only=*/true)) {
    if (id != chosen) {
      step.runner_up = id;
      break;
    }
  }
  if (step.runner_up >= 0) {
    const double other = static_cast<double>(final_scores[step.runner_up]);
    step.margin_logit = static_cast<double>(final_scores[chosen]) - other;
    step.margin_prob = step.chosen_prob - std::exp(other - final_lse);
  } else {
    step.margin_logit = std::numeric_limits<double>::infinity();
    step.margin_prob = step.chosen_prob;
  }
}

}  // namespace ls::decode
