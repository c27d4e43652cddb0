// Two models on one text (`compare --text`, llama-perplexity --kl-divergence's statistics): the
// text's tokens run in overlapping windows, each a fresh sequence; every position i < n - 1 is
// scored once, by the window that gives it the most context, against token i + 1. Per position:
// log p(next) under A and B, KL(A||B) over the vocabulary, delta-p and both argmaxes; over the
// text: perplexities, their ratio, the KL and delta-p distributions (mean, SE, percentiles).
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

#include "decode/logits_source.h"

namespace ls::inspect {

// One window: text tokens [start, end) fed as one fresh sequence (position i's logits predict
// token i + 1); positions [scored_from, end) are scored in it, the ones before are context.
struct TextWindow {
  std::int64_t start = 0, scored_from = 0, end = 0;
};

// The windows over the n_tokens - 1 positions that have a next token: window w starts at
// w * (window - overlap) and holds up to `window` positions; position i is scored by the first
// window holding it (the one where it has the most tokens before it), so a window scores the
// positions after the previous window's end. Throws if n_tokens < 2, window < 1, overlap < 0
// or overlap >= window.
std::vector<TextWindow> plan_text_windows(std::int64_t n_tokens, std::int64_t window,
                                          std::int64_t overlap);

struct TokenComparison {
  std::int64_t position = 0;            // i: the logits after token i
  std::int32_t target = 0;              // token i + 1, the reference
  double logprob_a = 0, logprob_b = 0;  // log p(target) under A and under B
  double kld = 0;                       // KL(A||B) = sum_v p_A(v) (log p_A(v) - log p_B(v))
  double dp = 0;                        // p_B(target) - p_A(target)
  std::int32_t top_a = 0, top_b = 0;    // each model's argmax, the lower id on ties
};

// Raw logits of A and B at one position (same vocabulary size; no NaN or +inf, not all -inf:
// throws otherwise, naming the model), softmax in double.
TokenComparison compare_token(std::span<const float> a, std::span<const float> b,
                              std::int32_t target);

// The value at `fraction` in [0, 1] of ascending `sorted` values, linearly interpolated between
// the two nearest ranks: h = fraction * (n - 1), v[floor h] + (h - floor h) (v[floor h + 1] -
// v[floor h]) (numpy's default; llama-perplexity's). Throws on an empty list.
double percentile(std::span<const double> sorted, double fraction);

struct Percentiles {
  double max = 0, p99_9 = 0, p99 = 0, p95 = 0, p90 = 0, p75 = 0, median = 0, p25 = 0, p10 = 0,
         p5 = 0, p1 = 0, p0_1 = 0, min = 0;
};
Percentiles percentiles(std::vector<double> values);

constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();

// Mean and its standard error sqrt(var / (n - 1)), var the population variance (the sample
// standard deviation over sqrt(n)); the error is NaN for fewer than 2 values.
struct MeanSe {
  double mean = 0, se = kUndefined;
};
MeanSe mean_se(std::span<const double> values);

struct TextComparisonSummary {
  std::int64_t tokens = 0;
  MeanSe nll_a, nll_b;                      // -log p(next), per token
  double ppl_a = 0, ppl_a_se = kUndefined;  // exp(mean nll_a), ppl_a * se(nll_a)
  double ppl_b = 0, ppl_b_se = kUndefined;
  MeanSe ln_ppl_ratio;                              // of nll_b - nll_a: ln(PPL_B / PPL_A)
  double ppl_ratio = 0, ppl_ratio_se = kUndefined;  // exp(ln ratio), ppl_ratio * its se
  double logprob_corr = kUndefined;  // Pearson correlation of log p_A(next), log p_B(next)
  MeanSe kld;
  Percentiles kld_pct;
  MeanSe dp;
  double dp_rms = 0, dp_rms_se = kUndefined;  // sqrt(mean dp^2), se(dp^2) / (2 rms)
  Percentiles dp_pct;
  std::int64_t same_top = 0;
  double same_top1 = 0, same_top1_se = kUndefined;  // share with top_a == top_b, sqrt(p(1-p)/(n-1))
};

// Throws on an empty list.
TextComparisonSummary summarize_text(std::span<const TokenComparison> tokens);

// Every window through A and B, one window at a time (fresh sequence 0, released after; context
// positions fed without their logits, scored ones in chunks of `chunk` positions); the scored
// positions in text order. `on_positions(n)` after each chunk fed to both, n its positions.
std::vector<TokenComparison> compare_on_text(
    decode::LogitsSource& a, decode::LogitsSource& b, std::span<const std::int32_t> tokens,
    std::span<const TextWindow> windows, std::int64_t chunk = 128,
    const std::function<void(std::size_t)>& on_positions = {});

}  // namespace ls::inspect
