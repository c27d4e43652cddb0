// The certified search shared by the continuous settings, and temperature's certificate (see
// boundary_search.h; the repetition penalty's is in penalty_interval.cpp). The search goes out
// from the recorded value in stretches; a stretch [a, b] is certified when bounds on every
// token's score over it, taken from the chain at a and b, prove that the kept set and the draw's
// pick cannot change inside. An uncertified stretch is halved, down to a width of 1e-6
// relative, where the chain's choice at the far end decides: only there, where the draw lies
// within float rounding of a cumulative edge, can a flip narrower than that go unseen.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>

#include "decode/choose.h"
#include "inspect/boundary_search.h"

namespace ls::inspect::detail {

using decode::GenerationConfig;

void certified_search(Boundary& b, StepChain& chain, const GenerationConfig& config,
                      std::int32_t chosen, const std::function<Point(double)>& at,
                      const std::function<bool(const Point&, const Point&)>& certified) {
  int budget = 0;                                  // bounds the evaluations of one search
  using Change = std::pair<double, std::int32_t>;  // last good value, the token past it
  const std::function<std::optional<Change>(const Point&, const Point&)> nearest_change =
      [&](const Point& good, const Point& far) -> std::optional<Change> {
    const bool up = far.v > good.v;
    if (up ? certified(good, far) : certified(far, good)) return std::nullopt;
    if (std::abs(far.v - good.v) <= 1e-6 * good.v || ++budget > 4000) {
      if (far.choice == chosen) return std::nullopt;
      // Close in on the change with the chain's choice alone.
      double lo = good.v, hi = far.v;
      std::int32_t past = far.choice;
      for (int i = 0; i < 64 && std::abs(hi - lo) > 1e-13 * lo; ++i) {
        const double m = (lo + hi) / 2;
        const std::int32_t t = chain.choose(with(config, b.setting, m));
        if (t == chosen)
          lo = m;
        else
          hi = m, past = t;
      }
      return Change{lo, past};
    }
    const Point mid = at((good.v + far.v) / 2);
    if (auto r = nearest_change(good, mid)) return r;
    return nearest_change(mid, far);
  };
  const auto search = [&](double end) -> Found {
    budget = 0;
    Point good = at(b.value);
    while (good.v != end) {
      const double v = end > b.value ? std::min(good.v * 1.25, end) : std::max(good.v / 1.25, end);
      Point far = at(v);
      if (const auto change = nearest_change(good, far)) return {change->first, change->second};
      good = std::move(far);
    }
    return {end, std::nullopt};
  };
  const Found up = search(b.max);
  const Found down = search(b.min);
  set_interval(b, up, down);
}

std::vector<std::size_t> kept_ids(std::span<const float> final_scores) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < final_scores.size(); ++i)
    if (final_scores[i] > kNegInf) out.push_back(i);
  return out;
}

namespace {

// The draw picks c from the kept set K iff (sums over K, weights w)
//   g1 = u W - sum_{i<c} w_i >= 0   and   g2 = sum_{i<=c} w_i - u W > 0.
// With each weight between w_lo(i) and w_hi(i), both lower bounds clearly positive prove it.
// The bounds recompute z / T in double where the chain rounds it to float: 1e-5 covers that.
template <class Lo, class Hi>
bool pick_certified(const std::vector<std::size_t>& kept, std::size_t c, double u, Lo&& w_lo,
                    Hi&& w_hi) {
  double pos1 = 0, neg1 = 0, pos2 = 0, neg2 = 0, total = 0;
  for (std::size_t i : kept) {
    const double lo = w_lo(i), hi = w_hi(i);
    total += hi;
    if (i >= c) pos1 += u * lo;
    if (i < c) neg1 += (1 - u) * hi;
    if (i <= c) pos2 += (1 - u) * lo;
    if (i > c) neg2 += u * hi;
  }
  const double margin = 1e-5 * total;
  return pos1 - neg1 > margin && pos2 - neg2 > margin;
}

}  // namespace

// Temperature: scores z (the chain at temperature 1, nothing truncated) give the final weights
// w_i(T) = exp((z_i - z_max) / T), each increasing in T, and the kept set grows with T (top_k's
// does not depend on T; top_p needs more tokens and min_p's threshold z_max + T ln(min_p) falls
// as the distribution flattens). Over [Ta, Tb] with kept sets Ka within Kb, each weight lies
// between its values at the ends (a token kept only in Kb counts 0 on the side it helps).
void temperature_interval(Boundary& b, StepChain& chain, const GenerationConfig& config,
                          std::int32_t chosen, double draw) {
  b.min = std::max(b.value / kScanRange, 1e-3);
  b.max = b.value * kScanRange;
  b.note = "exact within a factor of 4: bounds on the weights certify each stretch";
  GenerationConfig open = config;
  open.temperature = 1.0;
  open.top_k = 0;
  open.top_p = 1.0;
  open.min_p = 0.0;
  const std::span<const float> zs = chain.process(open);
  const std::vector<double> z(zs.begin(), zs.end());
  double z_max = -std::numeric_limits<double>::infinity();
  for (double v : z) z_max = std::max(z_max, v);
  const auto c = static_cast<std::size_t>(chosen);
  const auto at = [&](double t) {
    const std::span<const float> f = chain.process(with(config, "temperature", t));
    return Point{t, kept_ids(f), {}, decode::choose_sample(f, draw)};
  };
  const auto certified = [&](const Point& lo, const Point& hi) {
    if (lo.choice != chosen || hi.choice != chosen) return false;
    if (!std::includes(hi.kept.begin(), hi.kept.end(), lo.kept.begin(), lo.kept.end()))
      return false;  // not nested: no bound
    std::vector<char> in_lo(z.size(), 0);
    for (std::size_t i : lo.kept) in_lo[i] = 1;
    return pick_certified(
        hi.kept, c, draw,
        [&](std::size_t i) { return in_lo[i] ? std::exp((z[i] - z_max) / lo.v) : 0.0; },
        [&](std::size_t i) { return std::exp((z[i] - z_max) / hi.v); });
  };
  certified_search(b, chain, config, chosen, at, certified);
}

}  // namespace ls::inspect::detail
