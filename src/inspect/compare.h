// Compare: how two models' next-token distributions differ at the same positions. Per position,
// top-1 of each, whether they agree, KL(A||B) of the raw softmaxes, A's own top-1/top-2 margin
// and, on a flip, A's margin between its token and B's. The summary relates flips to small
// margins by bucketing positions on A's top-1/top-2 logit gap.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "decode/logits_source.h"

namespace ls::inspect {

struct PositionComparison {
  int prompt = 0;  // index in the prompt set
  int step = 0;    // 0: after the prompt; k: after k tokens of A's greedy continuation
  std::int32_t top_a = 0, top_b = 0;
  bool agree = true;
  double kl = 0;           // KL(A||B) in nats over the whole vocabulary
  double prob_a = 0;       // A's probability of its top-1
  double prob_b = 0;       // B's probability of its top-1
  double margin_a = 0;     // A: logit(top1) - logit(top2), the confidence gap
  double flip_margin = 0;  // A: logit(top_a) - logit(top_b); 0 when they agree
};

// Both spans hold raw logits over the same vocabulary (sizes must match; throws otherwise).
PositionComparison compare_position(std::span<const float> a, std::span<const float> b);

struct MarginBucket {
  double lo = 0, hi = 0;  // A's top-1/top-2 logit gap in [lo, hi)
  int positions = 0;
  int flips = 0;
};

struct ComparisonSummary {
  int positions = 0;
  int agreements = 0;
  double agreement_rate = 0;
  double mean_kl = 0, max_kl = 0;
  int max_kl_position = -1;  // index into the positions list
  int flips = 0;
  double mean_margin_flips = 0;       // A's top-1/top-2 gap averaged over flips (0 if none)
  double mean_margin_agree = 0;       // ... over agreements (0 if none)
  std::vector<MarginBucket> buckets;  // edges 0, 0.1, 0.5, 1, 2, inf
};

ComparisonSummary summarize(const std::vector<PositionComparison>& positions);

struct ModelComparison {
  std::vector<PositionComparison> positions;             // prompt by prompt, step by step
  std::vector<std::vector<std::int32_t>> continuations;  // A's greedy tokens, per prompt
  std::vector<float> rows_a, rows_b;                     // raw logits per position (keep_rows)
};

// Every prompt through A and B, all prompts stepped together on each (one batched step per
// position): `steps` positions per prompt along A's greedy (raw argmax) continuation, fed to
// both, fewer when the context is full.
ModelComparison compare_models(decode::LogitsSource& a, decode::LogitsSource& b,
                               std::span<const std::vector<std::int32_t>> prompts, int steps,
                               bool keep_rows);

}  // namespace ls::inspect
