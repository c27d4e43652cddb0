// Internal to the repetition penalty's interval (penalty_interval.cpp, penalty_threshold.cpp):
// the truncations as the bounds see them, and one stretch [ra, rz] of the penalty with the
// bounds on scores and on signed sums of weights that its certificates are made of.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "inspect/boundary_search.h"

namespace ls::inspect::detail {

// A truncation of the chain, with the scale of the scores it sees relative to the final ones:
// T when temperature comes after it (llama.cpp's order), else 1.
struct Cut {
  std::string name;
  double value;
  double scale;
};

// One stretch [ra, rz]: the chain at its ends, which tokens the penalty moves, and a bound on
// each moved score's float rounding (`slack(i)`, final-score units).
class Stretch {
 public:
  Stretch(const Point& a, const Point& z, const std::vector<char>& moved,
          const std::vector<double>& magnitude)
      : a_(a), z_(z), h_(z.v - a.v), moved_(moved), magnitude_(magnitude) {}

  const Point& a() const { return a_; }
  const Point& z() const { return z_; }

  double slack(std::size_t i) const {
    if (!moved_[i]) return 0.0;
    const double m = std::max(std::abs(a_.scores[i]), std::abs(z_.scores[i]));
    return 8 * FLT_EPSILON * (1 + magnitude_[i] + m);
  }

  // A lower bound of s_i(r) - s_j(r) over the stretch.
  double difference(std::size_t i, std::size_t j) const {
    const std::vector<float>& sa = a_.scores;
    const std::vector<float>& sz = z_.scores;
    const double ends = static_cast<double>(sz[i]) - sa[j];
    const double taylor =
        std::min(static_cast<double>(sa[i]) - sa[j], static_cast<double>(sz[i]) - sz[j]) -
        (curvature(i) + curvature(j)) * h_ * h_ / 8 - 2 * (slack(i) + slack(j));
    return std::max(ends, taylor);
  }

  // The parts of a lower bound of g(r) = sum coef * w(r) over the stretch, w = exp(scale * (s -
  // a.top)): sums over the terms, so that forms differing in one coefficient cost one term each.
  struct Form {
    double ga = 0, gz = 0, ends = 0, bend = 0, rounding = 0, stage = 0;
    Form& operator+=(const Form& o) {
      ga += o.ga, gz += o.gz, ends += o.ends, bend += o.bend, rounding += o.rounding;
      stage += o.stage;
      return *this;
    }
    Form& operator-=(const Form& o) {
      ga -= o.ga, gz -= o.gz, ends -= o.ends, bend -= o.bend, rounding -= o.rounding;
      stage -= o.stage;
      return *this;
    }
  };
  Form term(std::size_t i, double coef, double scale) const {
    Form f;
    add(f, i, coef, scale);
    return f;
  }
  void add(Form& f, std::size_t i, double coef, double scale) const {
    const double wa = std::exp(scale * (a_.scores[i] - a_.top));
    const double wz = std::exp(scale * (z_.scores[i] - a_.top));
    f.ga += coef * wa;
    f.gz += coef * wz;
    f.ends += coef * (coef > 0 ? wz : wa);
    const double c = std::abs(coef);
    if (moved_[i]) {
      const double d1 = scale * slope(i), d2 = scale * curvature(i);
      f.bend += c * wa * (d1 * d1 + d2);
      f.rounding += c * wa * 2.01 * scale * slack(i);
    }
    // A truncation before temperature sees the unscaled floats, not T times the final ones.
    if (scale != 1.0) f.stage += c * wa * 8 * FLT_EPSILON * (1 + std::abs(a_.scores[i])) * scale;
  }
  double lower_bound(const Form& f) const {
    return std::max(f.ends, std::min(f.ga, f.gz) - f.bend * h_ * h_ / 8 - f.rounding) - f.stage;
  }

 private:
  double fall(std::size_t i) const {
    return static_cast<double>(a_.scores[i]) - z_.scores[i] + 2 * slack(i);
  }
  double slope(std::size_t i) const { return fall(i) / h_ * (z_.v / a_.v); }
  double curvature(std::size_t i) const {
    return moved_[i] ? 2 * fall(i) / h_ * z_.v / (a_.v * a_.v) : 0.0;
  }

  const Point& a_;
  const Point& z_;
  double h_;
  const std::vector<char>& moved_;
  const std::vector<double>& magnitude_;
};

// The certificate for a chain with at most one truncation, top_p or min_p, whose kept set is
// every token above one threshold (penalty_threshold.cpp). Tokens the penalty does not move keep
// their scores at every value, so they are sorted once, with prefix sums of their weights; a
// stretch then sorts each token into surely kept, maybe kept or surely removed in O(moved +
// log vocabulary), and bounds the draw's walk with the maybe-kept counted against it. Unlike
// same_set_certified, the kept set may change inside the stretch (on a flat distribution top_p's
// does at almost every value) as long as the walk's stop cannot.
class ThresholdCertificate {
 public:
  // `scores`: the final scores with no truncation at any value of the penalty.
  ThresholdCertificate(std::span<const float> scores, const std::vector<char>& moved,
                       std::optional<Cut> cut, std::size_t chosen, double draw);
  bool certified(const Stretch& st) const;

 private:
  enum class Kept { surely, maybe, no };
  // Over the stretch: for the unmoved tokens, the first position (by score, best first) not
  // surely kept and the first surely removed; for each moved token, its status.
  struct Split {
    std::size_t sure_end = 0, maybe_end = 0;
    std::vector<Kept> moved;
  };
  Split split(const Stretch& st) const;

  std::optional<Cut> cut_;
  std::size_t c_;
  double u_;
  std::vector<std::size_t> moved_ids_;  // finite tokens the penalty moves
  std::vector<double> score_;           // the unmoved finite tokens' scores, best first
  double top_ = 0;                      // score_[0]
  std::size_t c_position_;              // c's position in score_ (size(): c moves)
  // Prefix sums over score_ of exp(s - top) for ids below and above c, and of exp(scale (s -
  // top)) at the truncation's scale.
  std::vector<double> below_c_, above_c_, at_scale_;
};

}  // namespace ls::inspect::detail
