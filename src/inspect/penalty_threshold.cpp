// ThresholdCertificate (see penalty_stretch.h). Over a stretch every score s_i(r) lies between
// its values at the ends, sz_i <= s_i(r) <= sa_i (equal for unmoved tokens), and every weight
// w = exp(scale (s - top at a)) between wz_i and wa_i.
//   min_p keeps i iff s_i - max(s) >= ln(min_p) / scale, with max(s) between z.top and a.top.
//   top_p keeps i iff the mass strictly above it is < p of the total. Surely kept when even
//     counting every token that may reach i's lowest score (ties too) at its highest weight,
//     against the others at their lowest, the mass above stays < p; surely removed when the
//     tokens surely above i, at their lowest weight, against the rest at their highest, reach p.
// The walk stops on c iff g1 = u W - sum_{i<c} w_i >= 0 and g2 = sum_{i<=c} w_i - u W > 0; each
// is a sum of coef * w over the kept tokens: the surely kept unmoved ones are constants, the
// surely kept moved ones a Stretch form, and a maybe-kept token counts only where it hurts
// (its negative coefficient at its highest weight).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>

#include "inspect/penalty_stretch.h"

namespace ls::inspect::detail {

ThresholdCertificate::ThresholdCertificate(std::span<const float> scores,
                                           const std::vector<char>& moved, std::optional<Cut> cut,
                                           std::size_t chosen, double draw)
    : cut_(std::move(cut)), c_(chosen), u_(draw) {
  std::vector<std::size_t> unmoved;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (scores[i] == kNegInf) continue;
    (moved[i] ? moved_ids_ : unmoved).push_back(i);
  }
  std::stable_sort(unmoved.begin(), unmoved.end(),
                   [&](std::size_t x, std::size_t y) { return scores[x] > scores[y]; });
  top_ = unmoved.empty() ? 0.0 : scores[unmoved[0]];
  const double scale = cut_ ? cut_->scale : 1.0;
  c_position_ = unmoved.size();
  below_c_.assign(unmoved.size() + 1, 0.0);
  above_c_.assign(unmoved.size() + 1, 0.0);
  at_scale_.assign(unmoved.size() + 1, 0.0);
  for (std::size_t n = 0; n < unmoved.size(); ++n) {
    const std::size_t id = unmoved[n];
    const double s = scores[id];
    score_.push_back(s);
    const double w = std::exp(s - top_);
    below_c_[n + 1] = below_c_[n] + (id < c_ ? w : 0.0);
    above_c_[n + 1] = above_c_[n] + (id > c_ ? w : 0.0);
    at_scale_[n + 1] = at_scale_[n] + std::exp(scale * (s - top_));
    if (id == c_) c_position_ = n;
  }
}

ThresholdCertificate::Split ThresholdCertificate::split(const Stretch& st) const {
  const Point& a = st.a();
  const Point& z = st.z();
  const std::size_t N = score_.size();
  Split out;
  out.moved.assign(moved_ids_.size(), Kept::surely);
  if (!cut_) {
    out.sure_end = out.maybe_end = N;
    return out;
  }
  // Positions of the unmoved scores >= t and > t (score_ is descending).
  const auto at_least = [&](double t) {
    return static_cast<std::size_t>(
        std::upper_bound(score_.begin(), score_.end(), t, std::greater<>()) - score_.begin());
  };
  const auto above = [&](double t) {
    return static_cast<std::size_t>(
        std::lower_bound(score_.begin(), score_.end(), t, std::greater<>()) - score_.begin());
  };
  const double scale = cut_->scale;
  const double stage = scale != 1.0 ? 32 * FLT_EPSILON * (1 + std::abs(a.top)) * scale : 0.0;
  if (cut_->name == "min_p") {
    const double cut_s = std::log(cut_->value) / scale;
    const double eps = 16 * FLT_EPSILON * (1 + std::abs(a.top) + std::abs(z.top)) + 1e-9;
    const double keep = a.top + cut_s + eps, drop = z.top + cut_s - eps;
    out.sure_end = at_least(keep);
    out.maybe_end = at_least(drop);
    for (std::size_t k = 0; k < moved_ids_.size(); ++k) {
      const std::size_t i = moved_ids_[k];
      out.moved[k] = z.scores[i] >= keep   ? Kept::surely
                     : a.scores[i] >= drop ? Kept::maybe
                                           : Kept::no;
    }
    return out;
  }
  // top_p at `scale`, weights relative to a.top (>= every score in the stretch).
  const double p = cut_->value, margin = 1e-9 + stage;
  const double unmoved = std::exp(scale * (top_ - a.top));  // factor of the prefix sums
  const double total_unmoved = at_scale_[N] * unmoved;
  const auto wa = [&](std::size_t i) { return std::exp(scale * (a.scores[i] - a.top)); };
  const auto wz = [&](std::size_t i) { return std::exp(scale * (z.scores[i] - a.top)); };
  // Surely kept, for a token of lowest score lo and lowest weight w_lo (`self`: its moved id,
  // or its unmoved tie group [tie_begin, tie_end) and weight).
  const auto surely_kept = [&](double lo, double w_lo, std::size_t self, std::size_t tie_end,
                               double w_self_unmoved) {
    double above_hi = at_scale_[tie_end] * unmoved - w_self_unmoved;  // may reach lo
    double below_lo = total_unmoved - at_scale_[tie_end] * unmoved + w_lo;
    for (std::size_t j : moved_ids_) {
      if (j == self) continue;
      if (a.scores[j] >= lo)
        above_hi += wa(j);
      else
        below_lo += wz(j);
    }
    return above_hi / (above_hi + below_lo) < p - margin;
  };
  // Surely removed, for a token of highest score hi and highest weight w_hi.
  const auto surely_removed = [&](double hi, double w_hi, std::size_t self, std::size_t tie_begin,
                                  double w_self_unmoved) {
    double above_lo = at_scale_[tie_begin] * unmoved;  // surely strictly above
    double below_hi = total_unmoved - above_lo - w_self_unmoved + w_hi;
    for (std::size_t j : moved_ids_) {
      if (j == self) continue;
      if (z.scores[j] > hi)
        above_lo += wz(j);
      else
        below_hi += wa(j);
    }
    return above_lo / (above_lo + below_hi) >= p + margin;
  };
  const auto unmoved_weight = [&](std::size_t n) { return std::exp(scale * (score_[n] - a.top)); };
  // Both properties are monotone in the position: binary searches.
  std::size_t lo = 0, hi = N;  // first position not surely kept
  while (lo < hi) {
    const std::size_t n = (lo + hi) / 2;
    const double w = unmoved_weight(n);
    if (surely_kept(score_[n], w, SIZE_MAX, at_least(score_[n]), w))
      lo = n + 1;
    else
      hi = n;
  }
  out.sure_end = lo;
  lo = out.sure_end, hi = N;  // first position surely removed
  while (lo < hi) {
    const std::size_t n = (lo + hi) / 2;
    const double w = unmoved_weight(n);
    if (surely_removed(score_[n], w, SIZE_MAX, above(score_[n]), w))
      hi = n;
    else
      lo = n + 1;
  }
  out.maybe_end = lo;
  for (std::size_t k = 0; k < moved_ids_.size(); ++k) {
    const std::size_t i = moved_ids_[k];
    const double s_lo = z.scores[i], s_hi = a.scores[i];
    if (surely_kept(s_lo, wz(i), i, at_least(s_lo), 0.0))
      out.moved[k] = Kept::surely;
    else if (surely_removed(s_hi, wa(i), i, above(s_hi), 0.0))
      out.moved[k] = Kept::no;
    else
      out.moved[k] = Kept::maybe;
  }
  return out;
}

bool ThresholdCertificate::certified(const Stretch& st) const {
  const Point& a = st.a();
  const Split sp = split(st);
  const double unmoved = std::exp(top_ - a.top);
  // c must be surely kept.
  if (c_position_ < score_.size()) {
    if (c_position_ >= sp.sure_end) return false;
  } else {
    const auto k = std::find(moved_ids_.begin(), moved_ids_.end(), c_) - moved_ids_.begin();
    if (static_cast<std::size_t>(k) == moved_ids_.size() ||
        sp.moved[static_cast<std::size_t>(k)] != Kept::surely)
      return false;
  }
  const double u = u_;
  // Unmoved, surely kept (c included when unmoved): constants.
  const double w_c = c_position_ < score_.size() ? std::exp(score_[c_position_] - a.top) : 0.0;
  double g1 = (u * above_c_[sp.sure_end] + (u - 1) * below_c_[sp.sure_end]) * unmoved + u * w_c;
  double g2 =
      ((1 - u) * below_c_[sp.sure_end] - u * above_c_[sp.sure_end]) * unmoved + (1 - u) * w_c;
  // Unmoved, maybe kept: only where they hurt.
  g1 += (u - 1) * (below_c_[sp.maybe_end] - below_c_[sp.sure_end]) * unmoved;
  g2 -= u * (above_c_[sp.maybe_end] - above_c_[sp.sure_end]) * unmoved;
  double total = (below_c_[sp.maybe_end] + above_c_[sp.maybe_end]) * unmoved + w_c;
  // Moved: surely kept ones in Stretch forms, maybe kept ones where they hurt.
  Stretch::Form f1, f2;
  for (std::size_t k = 0; k < moved_ids_.size(); ++k) {
    const std::size_t i = moved_ids_[k];
    const double c1 = i >= c_ ? u : u - 1, c2 = i <= c_ ? 1 - u : -u;
    const double w_hi = std::exp(a.scores[i] - a.top);
    if (sp.moved[k] == Kept::surely) {
      st.add(f1, i, c1, 1.0);
      st.add(f2, i, c2, 1.0);
    } else if (sp.moved[k] == Kept::maybe) {
      g1 += std::min(c1, 0.0) * w_hi;
      g2 += std::min(c2, 0.0) * w_hi;
    }
    if (sp.moved[k] != Kept::no) total += w_hi;
  }
  const double margin = 1e-9 * total;  // the sums' rounding
  return g1 + st.lower_bound(f1) > margin && g2 + st.lower_bound(f2) > margin;
}

}  // namespace ls::inspect::detail
