// Windows, per-position numbers and their summary for two models on one text (see
// text_compare.h); every sum in double.
#include "inspect/text_compare.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::inspect {

std::vector<TextWindow> plan_text_windows(std::int64_t n_tokens, std::int64_t window,
                                          std::int64_t overlap) {
  if (n_tokens < 2)
    fail("the text has {} token{}; scoring needs at least 2 (the first is only context)", n_tokens,
         n_tokens == 1 ? "" : "s");
  if (window < 1) fail("--window must be at least 1, got {}", window);
  if (overlap < 0) fail("--overlap must be at least 0, got {}", overlap);
  if (overlap >= window)
    fail("--overlap {} must be smaller than --window {} (windows advance by window - overlap)",
         overlap, window);
  const std::int64_t positions = n_tokens - 1;  // the last token predicts nothing in the text
  const std::int64_t stride = window - overlap;
  std::vector<TextWindow> out;
  std::int64_t scored_to = 0;  // positions [0, scored_to) are scored by earlier windows
  for (std::int64_t start = 0;; start += stride) {
    const std::int64_t end = std::min(start + window, positions);
    out.push_back({start, scored_to, end});
    if (end == positions) break;
    scored_to = end;
  }
  return out;
}

namespace {

// compare_token after its checks (the driver checks rows with positions in its messages).
TokenComparison compare_checked(std::span<const float> a, std::span<const float> b,
                                std::int32_t target) {
  const double lse_a = decode::log_sum_exp(a), lse_b = decode::log_sum_exp(b);
  TokenComparison r;
  r.target = target;
  double kl = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] > a[static_cast<std::size_t>(r.top_a)]) r.top_a = static_cast<std::int32_t>(i);
    if (b[i] > b[static_cast<std::size_t>(r.top_b)]) r.top_b = static_cast<std::int32_t>(i);
    const double la = static_cast<double>(a[i]) - lse_a;
    const double pa = std::exp(la);
    if (pa > 0) kl += pa * (la - (static_cast<double>(b[i]) - lse_b));
  }
  r.kld = std::max(kl, 0.0);  // rounding can give -1e-17 for identical rows
  const auto t = static_cast<std::size_t>(target);
  r.logprob_a = static_cast<double>(a[t]) - lse_a;
  r.logprob_b = static_cast<double>(b[t]) - lse_b;
  r.dp = std::exp(r.logprob_b) - std::exp(r.logprob_a);
  return r;
}

void require_same_shape(std::size_t va, std::size_t vb, std::int32_t target) {
  if (va != vb)
    fail(
        "compare --text: model A has {} logits per position, model B {}; the vocabularies must "
        "match",
        va, vb);
  if (va == 0) fail("compare --text: empty logits");
  if (target < 0 || static_cast<std::size_t>(target) >= va)
    fail("compare --text: token id {} is outside the vocabulary of {}", target, va);
}

}  // namespace

TokenComparison compare_token(std::span<const float> a, std::span<const float> b,
                              std::int32_t target) {
  require_same_shape(a.size(), b.size(), target);
  decode::require_finite_logits(a, std::size_t(-1), " (model A)");
  decode::require_finite_logits(b, std::size_t(-1), " (model B)");
  return compare_checked(a, b, target);
}

double percentile(std::span<const double> sorted, double fraction) {
  if (sorted.empty()) fail("percentile of an empty list");
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  const double h = fraction * static_cast<double>(sorted.size() - 1);
  const auto i = static_cast<std::size_t>(std::floor(h));
  if (i + 1 >= sorted.size()) return sorted.back();
  const double f = h - static_cast<double>(i);
  return sorted[i] + f * (sorted[i + 1] - sorted[i]);
}

Percentiles percentiles(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const auto at = [&](double f) { return percentile(values, f); };
  Percentiles p;
  p.max = at(1);
  p.p99_9 = at(0.999);
  p.p99 = at(0.99);
  p.p95 = at(0.95);
  p.p90 = at(0.90);
  p.p75 = at(0.75);
  p.median = at(0.5);
  p.p25 = at(0.25);
  p.p10 = at(0.10);
  p.p5 = at(0.05);
  p.p1 = at(0.01);
  p.p0_1 = at(0.001);
  p.min = at(0);
  return p;
}

MeanSe mean_se(std::span<const double> values) {
  MeanSe r;
  if (values.empty()) return r;
  double sum = 0;
  for (double v : values) sum += v;
  const auto n = static_cast<double>(values.size());
  r.mean = sum / n;
  if (values.size() < 2) return r;
  double ss = 0;
  for (double v : values) ss += (v - r.mean) * (v - r.mean);
  r.se = std::sqrt(ss / n / (n - 1));
  return r;
}

namespace {

double pearson(std::span<const double> x, std::span<const double> y) {
  if (x.size() < 2) return kUndefined;
  const MeanSe mx = mean_se(x), my = mean_se(y);
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double dx = x[i] - mx.mean, dy = y[i] - my.mean;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx <= 0 || syy <= 0) return kUndefined;
  return sxy / std::sqrt(sxx * syy);
}

}  // namespace

TextComparisonSummary summarize_text(std::span<const TokenComparison> tokens) {
  if (tokens.empty()) fail("compare --text: no scored tokens to summarize");
  const std::size_t n = tokens.size();
  std::vector<double> nll_a(n), nll_b(n), diff(n), lp_a(n), lp_b(n), kld(n), dp(n), dp2(n);
  TextComparisonSummary s;
  s.tokens = static_cast<std::int64_t>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const auto& t = tokens[i];
    lp_a[i] = t.logprob_a;
    lp_b[i] = t.logprob_b;
    nll_a[i] = -t.logprob_a;
    nll_b[i] = -t.logprob_b;
    diff[i] = nll_b[i] - nll_a[i];
    kld[i] = t.kld;
    dp[i] = t.dp;
    dp2[i] = t.dp * t.dp;
    s.same_top += t.top_a == t.top_b ? 1 : 0;
  }
  s.nll_a = mean_se(nll_a);
  s.nll_b = mean_se(nll_b);
  s.ppl_a = std::exp(s.nll_a.mean);
  s.ppl_a_se = s.ppl_a * s.nll_a.se;
  s.ppl_b = std::exp(s.nll_b.mean);
  s.ppl_b_se = s.ppl_b * s.nll_b.se;
  s.ln_ppl_ratio = mean_se(diff);
  s.ppl_ratio = std::exp(s.ln_ppl_ratio.mean);
  s.ppl_ratio_se = s.ppl_ratio * s.ln_ppl_ratio.se;
  s.logprob_corr = pearson(lp_a, lp_b);
  s.kld = mean_se(kld);
  s.kld_pct = percentiles(kld);
  s.dp = mean_se(dp);
  s.dp_pct = percentiles(dp);
  const MeanSe mse = mean_se(dp2);
  s.dp_rms = std::sqrt(mse.mean);
  // d sqrt(x) = dx / (2 sqrt(x)); no spread at all (every dp 0) has no error either.
  s.dp_rms_se = std::isnan(mse.se) ? kUndefined : s.dp_rms > 0 ? mse.se / (2 * s.dp_rms) : 0.0;
  s.same_top1 = static_cast<double>(s.same_top) / static_cast<double>(n);
  if (n >= 2)
    s.same_top1_se = std::sqrt(s.same_top1 * (1 - s.same_top1) / static_cast<double>(n - 1));
  return s;
}

std::vector<TokenComparison> compare_on_text(decode::LogitsSource& a, decode::LogitsSource& b,
                                             std::span<const std::int32_t> tokens,
                                             std::span<const TextWindow> windows,
                                             std::int64_t chunk,
                                             const std::function<void(std::size_t)>& on_positions) {
  if (a.vocab_size() != b.vocab_size())
    fail("compare --text: model A's vocabulary has {} ids, model B's {}; they must match",
         a.vocab_size(), b.vocab_size());
  if (chunk < 1) fail("compare --text: chunk must be at least 1, got {}", chunk);
  const auto V = static_cast<std::size_t>(a.vocab_size());
  const auto n_tokens = static_cast<std::int64_t>(tokens.size());
  const auto report = [&](std::int64_t n) {
    if (on_positions) on_positions(static_cast<std::size_t>(n));
  };
  const auto ids = [&](std::int64_t from, std::int64_t to) {
    return tokens.subspan(static_cast<std::size_t>(from), static_cast<std::size_t>(to - from));
  };
  std::vector<TokenComparison> out;
  constexpr int kSeq = 0;
  for (const TextWindow& w : windows) {
    if (w.start < 0 || w.start > w.scored_from || w.scored_from >= w.end || w.end >= n_tokens)
      fail("compare --text: window [{}, {}) scoring from {} does not fit a text of {} tokens",
           w.start, w.end, w.scored_from, n_tokens);
    if (w.scored_from > w.start) {  // context only: no logits kept
      a.feed(kSeq, ids(w.start, w.scored_from));
      b.feed(kSeq, ids(w.start, w.scored_from));
      report(w.scored_from - w.start);
    }
    for (std::int64_t at = w.scored_from; at < w.end; at += chunk) {
      const std::int64_t n = std::min(chunk, w.end - at);
      const auto ra = a.feed(kSeq, ids(at, at + n), /*all_positions=*/true);
      const auto rb = b.feed(kSeq, ids(at, at + n), /*all_positions=*/true);
      const auto row = [&](std::span<const float> rows, std::int64_t k) {
        return rows.subspan(static_cast<std::size_t>(k) * V, V);
      };
      const std::size_t base = out.size();
      out.resize(base + static_cast<std::size_t>(n));
      // A worker must not throw: the first bad row's message (in position order) is kept.
      std::vector<std::string> errors(static_cast<std::size_t>(n));
      a.parallel(static_cast<std::size_t>(n), [&](std::size_t k) {
        const auto kk = static_cast<std::int64_t>(k);
        const auto position = static_cast<std::size_t>(at + kk);
        const std::int32_t target = tokens[position + 1];
        try {
          require_same_shape(row(ra, kk).size(), row(rb, kk).size(), target);
          decode::require_finite_logits(row(ra, kk), position, " (model A)");
          decode::require_finite_logits(row(rb, kk), position, " (model B)");
          out[base + k] = compare_checked(row(ra, kk), row(rb, kk), target);
          out[base + k].position = at + kk;
        } catch (const Error& e) {
          errors[k] = e.what();
        }
      });
      for (const auto& e : errors)
        if (!e.empty()) fail("{}", e);
      report(n);
    }
    a.release(kSeq);
    b.release(kSeq);
  }
  return out;
}

}  // namespace ls::inspect
