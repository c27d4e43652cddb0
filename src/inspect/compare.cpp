// Position comparison and its summary (see compare.h); sums in double.
#include "inspect/compare.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::inspect {

PositionComparison compare_position(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size())
    fail("compare: model A has {} logits per position, model B {}; the vocabularies must match",
         a.size(), b.size());
  if (a.size() < 2) fail("compare: need at least 2 logits per position, got {}", a.size());
  decode::require_sortable(a, "compare (model A)");
  decode::require_sortable(b, "compare (model B)");
  PositionComparison r;
  const auto top2 = decode::ids_by_score_desc(a, 2, false);
  r.top_a = top2[0];
  r.top_b = decode::ids_by_score_desc(b, 1, false)[0];
  r.agree = r.top_a == r.top_b;
  const double lse_a = decode::log_sum_exp(a), lse_b = decode::log_sum_exp(b);
  double kl = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double la = static_cast<double>(a[i]) - lse_a;
    const double lb = static_cast<double>(b[i]) - lse_b;
    const double pa = std::exp(la);
    if (pa > 0) kl += pa * (la - lb);
  }
  r.kl = std::max(kl, 0.0);  // rounding can give -1e-17 for identical inputs
  r.prob_a = std::exp(static_cast<double>(a[r.top_a]) - lse_a);
  r.prob_b = std::exp(static_cast<double>(b[r.top_b]) - lse_b);
  r.margin_a = static_cast<double>(a[top2[0]]) - static_cast<double>(a[top2[1]]);
  r.flip_margin = static_cast<double>(a[r.top_a]) - static_cast<double>(a[r.top_b]);
  return r;
}

ComparisonSummary summarize(const std::vector<PositionComparison>& positions) {
  ComparisonSummary s;
  const double edges[] = {0, 0.1, 0.5, 1, 2, std::numeric_limits<double>::infinity()};
  for (int i = 0; i + 1 < 6; ++i) s.buckets.push_back({edges[i], edges[i + 1], 0, 0});
  double sum_kl = 0, sum_flip_margin = 0, sum_agree_margin = 0;
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const auto& p = positions[i];
    ++s.positions;
    sum_kl += p.kl;
    if (s.max_kl_position < 0 || p.kl > s.max_kl) {
      s.max_kl = p.kl;
      s.max_kl_position = static_cast<int>(i);
    }
    if (p.agree) {
      ++s.agreements;
      sum_agree_margin += p.margin_a;
    } else {
      ++s.flips;
      sum_flip_margin += p.margin_a;
    }
    for (auto& b : s.buckets) {
      if (p.margin_a >= b.lo && p.margin_a < b.hi) {
        ++b.positions;
        b.flips += p.agree ? 0 : 1;
      }
    }
  }
  if (s.positions > 0) {
    s.agreement_rate = static_cast<double>(s.agreements) / s.positions;
    s.mean_kl = sum_kl / s.positions;
  }
  if (s.flips > 0) s.mean_margin_flips = sum_flip_margin / s.flips;
  if (s.agreements > 0) s.mean_margin_agree = sum_agree_margin / s.agreements;
  return s;
}

}  // namespace ls::inspect
