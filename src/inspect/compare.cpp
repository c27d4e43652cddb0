// Position comparison and its summary (see compare.h); sums in double.
#include "inspect/compare.h"

#include "decode/sampler.h"

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

ModelComparison compare_models(decode::LogitsSource& a, decode::LogitsSource& b,
                               std::span<const std::vector<std::int32_t>> prompts, int steps,
                               bool keep_rows) {
  const std::size_t n = prompts.size();
  std::int32_t limit = a.context_limit();
  if (b.context_limit() > 0 && (limit == 0 || b.context_limit() < limit)) limit = b.context_limit();
  std::vector<std::vector<PositionComparison>> by_prompt(n);
  std::vector<std::vector<float>> rows_a(n), rows_b(n);
  ModelComparison out;
  out.continuations.resize(n);
  std::vector<std::vector<std::int32_t>> history(prompts.begin(), prompts.end());  // + cont
  decode::Sampler next_token = decode::Sampler::raw_argmax(a.vocab_size());
  std::vector<decode::Feed> feeds;
  std::vector<std::size_t> live;  // prompts still stepping, in feed order
  for (std::size_t p = 0; p < n; ++p) {
    feeds.push_back({static_cast<int>(p), prompts[p]});
    live.push_back(p);
  }
  for (int step = 0; !feeds.empty(); ++step) {
    const auto la = a.step(feeds);
    const auto lb = b.step(feeds);
    std::vector<decode::Feed> next;
    std::vector<std::size_t> still;
    for (std::size_t k = 0; k < live.size(); ++k) {
      const std::size_t p = live[k];
      PositionComparison c = compare_position(la[k], lb[k]);
      c.prompt = static_cast<int>(p);
      c.step = step;
      by_prompt[p].push_back(c);
      if (keep_rows) {
        rows_a[p].insert(rows_a[p].end(), la[k].begin(), la[k].end());
        rows_b[p].insert(rows_b[p].end(), lb[k].begin(), lb[k].end());
      }
      auto& cont = out.continuations[p];
      cont.push_back(next_token.choose(la[k], {history[p], prompts[p].size()}).token);
      history[p].push_back(cont.back());
      const bool full =
          limit > 0 && prompts[p].size() + cont.size() >= static_cast<std::size_t>(limit);
      if (step + 1 == steps || full) {
        a.release(static_cast<int>(p));
        b.release(static_cast<int>(p));
        continue;
      }
      still.push_back(p);
      next.push_back({static_cast<int>(p), {&cont.back(), 1}});
    }
    feeds = std::move(next);
    live = std::move(still);
  }
  for (std::size_t p = 0; p < n; ++p) {
    out.positions.insert(out.positions.end(), by_prompt[p].begin(), by_prompt[p].end());
    out.rows_a.insert(out.rows_a.end(), rows_a[p].begin(), rows_a[p].end());
    out.rows_b.insert(out.rows_b.end(), rows_b[p].begin(), rows_b[p].end());
  }
  return out;
}

}  // namespace ls::inspect
