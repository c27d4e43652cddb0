// The repetition penalty's exact interval (see boundary_search.h). A penalized token's final
// score under the penalty r is a / r + b (its score x above 0 at the penalty: x / r) or a r + b
// (below 0: x * r), the stages after the penalty only adding, masking or dividing by T; every
// other token's score does not move. So over a stretch [ra, rz] each score falls from its value
// at ra to its value at rz, with slope and curvature bounded by that fall:
//   |s'| <= (s(ra) - s(rz)) / h * rz / ra,   |s''| <= 2 (s(ra) - s(rz)) / h * rz / ra^2.
// A quantity the choice depends on (a difference of two scores, or a sum of weights with signs)
// is then bounded below twice, the better bound kept: by its terms at the ends (each at the end
// that hurts it), and by a Taylor bound, the smaller end value less (max |f''|) h^2 / 8, which
// stays tight when the penalized tokens move together. A stretch is certified when the chain
// keeps the same set K at both ends and, everywhere inside,
//   - K stays above the rest (so each truncation keeps a prefix of one order, K first);
//   - each truncation, in chain order, keeps all of K and, followed through with the tokens of
//     the rest it may keep, none of the rest survives the last one;
//   - the draw's inverse-CDF walk stops on the recorded token (greedy: it keeps the top score).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "decode/choose.h"
#include "decode/order.h"
#include "inspect/boundary_search.h"
#include "inspect/penalty_stretch.h"

namespace ls::inspect::detail {

namespace {

using decode::GenerationConfig;
using Ids = std::vector<std::size_t>;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::size_t kMaxPairs = 256;  // score pairs checked one by one before giving up

// Whether every i of `low` stays at least `gap` above every j of `high` over the stretch.
bool stays_above(const Stretch& st, const Ids& low, const Ids& high, double gap) {
  if (low.size() * high.size() > kMaxPairs) return false;
  for (std::size_t i : low)
    for (std::size_t j : high)
      if (i != j && !(st.difference(i, j) > gap)) return false;
  return true;
}

// The `count` best of `ids` by `s` (ties: lower id first), best first: one pass, a small heap.
Ids best_of(const Ids& ids, std::size_t count, const std::vector<float>& s) {
  const auto better = [&](std::size_t x, std::size_t y) {
    return s[x] > s[y] || (s[x] == s[y] && x < y);
  };
  Ids heap;  // the worst of the best on top
  for (std::size_t id : ids) {
    if (heap.size() < count) {
      heap.push_back(id);
      std::push_heap(heap.begin(), heap.end(), better);
    } else if (count > 0 && better(id, heap.front())) {
      std::pop_heap(heap.begin(), heap.end(), better);
      heap.back() = id;
      std::push_heap(heap.begin(), heap.end(), better);
    }
  }
  std::sort_heap(heap.begin(), heap.end(), better);
  return heap;
}

// The m-th largest of s over `ids` (m >= 1, m <= ids.size()).
double mth_largest(const Ids& ids, std::size_t m, const std::vector<float>& s) {
  std::vector<float> v;
  v.reserve(ids.size());
  for (std::size_t id : ids) v.push_back(s[id]);
  std::nth_element(v.begin(), v.begin() + static_cast<long>(m - 1), v.end(), std::greater<>());
  return v[m - 1];
}

// The m best of `ids` everywhere in the stretch (ascending ids), when the same m lead at both
// ends and stay above the others inside; none otherwise.
std::optional<Ids> top_set(const Stretch& st, const Ids& ids, std::size_t m) {
  const std::vector<float>& sa = st.a().scores;
  const std::vector<float>& sz = st.z().scores;
  Ids by_a = best_of(ids, m + 1, sa);
  const double max_other = by_a.size() > m ? static_cast<double>(sa[by_a[m]]) : -kInf;
  by_a.resize(std::min(m, by_a.size()));
  Ids by_z = best_of(ids, m, sz);
  std::sort(by_a.begin(), by_a.end());
  std::sort(by_z.begin(), by_z.end());
  if (by_a != by_z) return std::nullopt;
  double min_top = kInf;
  for (std::size_t i : by_a) min_top = std::min(min_top, static_cast<double>(sz[i]));
  if (min_top > max_other) return by_a;
  Ids low, high;
  for (std::size_t i : by_a)
    if (sz[i] <= max_other) low.push_back(i);
  for (std::size_t j : ids)
    if (sa[j] >= min_top && !std::binary_search(by_a.begin(), by_a.end(), j)) high.push_back(j);
  if (!stays_above(st, low, high, 0.0)) return std::nullopt;
  return by_a;
}

// The certificate when the chain keeps the same set K at both ends (any truncations): K stays
// above the rest, each truncation keeps all of K, none of the rest survives them, and the
// draw's walk stops on c.
bool same_set_certified(const Stretch& st, const std::vector<Cut>& cuts, std::size_t c, double u) {
  const Point& a = st.a();
  const Point& z = st.z();
  const std::vector<float>& sa = a.scores;
  const std::vector<float>& sz = z.scores;
  const std::size_t V = sa.size();
  const Ids& K = a.kept;
  std::vector<char> in_k(V, 0);
  for (std::size_t i : K) in_k[i] = 1;
  const double ref = a.top, top_z = z.top;
  double min_kz = kInf, min_ka = kInf, max_rest = -kInf;
  for (std::size_t i : K) {
    min_kz = std::min(min_kz, static_cast<double>(sz[i]));
    min_ka = std::min(min_ka, static_cast<double>(sa[i]));
  }
  Ids rest;
  for (std::size_t j = 0; j < V; ++j)
    if (sa[j] != kNegInf && !in_k[j]) {
      rest.push_back(j);
      max_rest = std::max(max_rest, static_cast<double>(sa[j]));
    }
  // K above the rest.
  if (!(min_kz > max_rest)) {
    Ids low, high;
    for (std::size_t i : K)
      if (sz[i] <= max_rest) low.push_back(i);
    for (std::size_t j : rest)
      if (sa[j] >= min_kz) high.push_back(j);
    if (!stays_above(st, low, high, 0.0)) return false;
  }
  // The rest through the truncations. Every truncation keeps a prefix of one order, so the
  // survivors of the rest are always its best n for some n. `pool` holds them all: exactly
  // them while `exact`; else at least the `sure` best of the pool (by their scores at z, which
  // bound the mass from below) survive and none whose score at a is below `floor`.
  Ids pool = std::move(rest);
  bool exact = true;
  std::size_t sure = pool.size();
  double floor = -kInf;
  for (const Cut& cut : cuts) {
    if (cut.name == "top_k") {
      const auto k = static_cast<std::size_t>(cut.value);
      if (k < K.size()) return false;
      const std::size_t m = k - K.size();
      if (m >= pool.size()) continue;
      if (exact) {
        if (auto top = top_set(st, pool, m)) {
          pool = std::move(*top);
          sure = pool.size();
          continue;
        }
        exact = false;
      }
      sure = std::min(sure, m);
      floor = std::max(floor, m == 0 ? kInf : mth_largest(pool, m, sz));
    } else if (cut.name == "min_p") {
      // Kept iff s - max(s) >= ln(min_p) / scale, the max being one of K's.
      const double cut_s = std::log(cut.value) / cut.scale;
      const double eps = 8 * FLT_EPSILON * (1 + std::abs(ref)) + 1e-9;
      if (K.size() > 1 && !(min_kz >= ref + cut_s + eps)) {
        Ids low, high;
        for (std::size_t i : K)
          if (sz[i] < ref + cut_s + eps) low.push_back(i);
        for (std::size_t i : K)
          if (sa[i] >= top_z) high.push_back(i);
        if (!stays_above(st, low, high, cut_s + eps)) return false;
      }
      const auto passes = [&](std::size_t j) { return sz[j] >= ref + cut_s + eps; };
      const auto fails = [&](std::size_t j) { return sa[j] < top_z + cut_s - eps; };
      if (exact) {
        Ids kept;
        for (std::size_t j : pool) {
          if (passes(j))
            kept.push_back(j);
          else if (!fails(j))
            exact = false;
        }
        if (exact) {
          pool = std::move(kept);
          sure = pool.size();
          continue;
        }
      }
      sure =
          std::min(sure, static_cast<std::size_t>(std::count_if(pool.begin(), pool.end(), passes)));
      floor = std::max(floor, top_z + cut_s - eps);
    } else {  // top_p: keeps a token iff the mass above it, among those still kept, is < p
      const double p = cut.value, scale = cut.scale;
      bool reaches = false;  // K alone reaches p
      if (exact) {
        // Exact up to the sums' rounding: the bounds use the chain's own float scores.
        const double margin = 1e-9;
        Stretch::Form reach, intact;
        for (std::size_t i : K) st.add(reach, i, 1 - p, scale), st.add(intact, i, p - 1, scale);
        for (std::size_t j : pool) st.add(reach, j, -p, scale), st.add(intact, j, p, scale);
        reaches = st.lower_bound(reach) > margin;
        if (K.size() > 1) {
          // The mass above K's last token stays below p: p W_R + w_last - (1 - p) W_K > 0
          // for whichever token of K is last.
          Ids last;
          for (std::size_t i : K)
            if (sz[i] <= min_ka) last.push_back(i);
          if (last.size() > 16) return false;
          for (std::size_t l : last) {
            Stretch::Form f = intact;
            f -= st.term(l, p - 1, scale);
            f += st.term(l, p, scale);
            if (!(st.lower_bound(f) > margin)) return false;
          }
        }
      } else {
        // Interval bounds: each weight at the end that hurts the inequality.
        const auto wa = [&](std::size_t i) { return std::exp(scale * (sa[i] - ref)); };
        const auto wz = [&](std::size_t i) { return std::exp(scale * (sz[i] - ref)); };
        double wk_hi = 0, wk_lo = 0, wk_min = kInf, wr_hi = 0, wr_lo = 0;
        for (std::size_t i : K) {
          wk_hi += wa(i);
          wk_lo += wz(i);
          wk_min = std::min(wk_min, wz(i));
        }
        for (std::size_t j : pool)
          if (sa[j] >= floor) wr_hi += wa(j);
        for (std::size_t j : best_of(pool, sure, sz)) wr_lo += wz(j);
        const double margin = 8 * FLT_EPSILON * (1 + std::abs(ref)) * scale + 1e-9;
        if (K.size() > 1 && !(1 - (wk_min + wr_lo) / (wk_hi + wr_lo) < p - margin)) return false;
        reaches = wk_lo / (wk_lo + wr_hi) >= p + margin;
      }
      sure = 0;
      if (reaches) {
        pool.clear();
        exact = true;
      } else {
        exact = false;
      }
    }
  }
  if (exact ? !pool.empty() : std::any_of(pool.begin(), pool.end(), [&](std::size_t j) {
        return sa[j] >= floor;  // a token of the rest may survive
      }))
    return false;
  // The walk stops on c: g1 = u W - sum_{i<c} w_i >= 0 and g2 = sum_{i<=c} w_i - u W > 0.
  Stretch::Form g1, g2;
  double total = 0;
  for (std::size_t i : K) {
    st.add(g1, i, i >= c ? u : u - 1, 1.0);
    st.add(g2, i, i <= c ? 1 - u : -u, 1.0);
    total += std::exp(sa[i] - ref);
  }
  const double margin = 1e-9 * total;
  return st.lower_bound(g1) > margin && st.lower_bound(g2) > margin;
}

}  // namespace

bool penalty_interval(Boundary& b, StepChain& chain, const GenerationConfig& config,
                      std::int32_t chosen) {
  if (config.typical_p < 1 || config.epsilon_cutoff > 0 || config.eta_cutoff > 0 ||
      config.top_n_sigma > 0 || config.dynatemp_range > 0 || config.xtc_probability > 0 ||
      config.dry_multiplier > 0 || config.repeat_last_n >= 0 || config.min_keep > 1)
    return false;
  const bool greedy = chain.mode == decode::DecodeMode::greedy;
  const std::vector<std::string> order = decode::resolve_order(config);
  const auto at_index = [&](const std::string& name) {
    return std::find(order.begin(), order.end(), name) - order.begin();
  };
  const bool temperature_on = config.temperature != 1.0 && config.temperature > 0.0;
  std::vector<Cut> cuts;
  for (const std::string& name : order) {
    const bool on = (name == "top_k" && config.top_k > 0) ||
                    (name == "top_p" && config.top_p < 1.0) ||
                    (name == "min_p" && config.min_p > 0.0);
    if (!on || greedy) continue;
    if (at_index(name) < at_index("repetition_penalty")) return false;
    const double scale =
        temperature_on && at_index("temperature") > at_index(name) ? config.temperature : 1.0;
    const double value = name == "top_k"   ? config.top_k
                         : name == "top_p" ? config.top_p
                                           : config.min_p;
    cuts.push_back({name, value, scale});
  }
  b.min = std::max(b.value / kScanRange, 1e-3);
  b.max = b.value * kScanRange;
  b.note = "exact within a factor of 4: bounds on the scores certify each stretch";

  // The tokens the penalty moves (the whole history), and for each a bound on the magnitudes
  // it passes through the stages (its float rounding is a few ulps of those).
  const std::size_t V = chain.raw.size();
  std::vector<char> moved(V, 0);
  for (std::int32_t t : chain.history.tokens)
    if (t >= 0 && static_cast<std::size_t>(t) < V) moved[static_cast<std::size_t>(t)] = 1;
  const double offsets =
      std::abs(config.presence_penalty) +
      std::abs(config.frequency_penalty) * static_cast<double>(chain.history.tokens.size());
  const double inverse_t = temperature_on ? std::max(1.0, 1.0 / config.temperature) : 1.0;
  std::vector<double> magnitude(V, 0.0);
  for (std::size_t i = 0; i < V; ++i)
    if (moved[i])
      magnitude[i] = (std::abs(chain.raw[i]) / std::min(b.min, 1.0) + offsets) * inverse_t;

  GenerationConfig open = config;
  open.top_k = 0;
  open.top_p = 1.0;
  open.min_p = 0.0;
  const auto c = static_cast<std::size_t>(chosen);
  const auto at = [&](double r) {
    Point p;
    p.v = r;
    const std::span<const float> s = chain.process(with(open, b.setting, r));
    p.scores.assign(s.begin(), s.end());
    p.top = -kInf;
    for (float x : p.scores) p.top = std::max(p.top, static_cast<double>(x));
    const std::span<const float> f = chain.process(with(config, b.setting, r));
    p.kept = kept_ids(f);
    p.choice = greedy ? decode::choose_greedy(f) : decode::choose_sample(f, *chain.draw);
    return p;
  };

  // One truncation at most, top_p or min_p: the kept set is every token above one threshold.
  std::optional<ThresholdCertificate> threshold;
  if (!greedy && (cuts.empty() || (cuts.size() == 1 && cuts[0].name != "top_k"))) {
    std::optional<Cut> cut;
    if (!cuts.empty()) cut = cuts[0];
    threshold.emplace(chain.process(with(open, b.setting, b.value)), moved, cut, c, *chain.draw);
  }
  const auto certified = [&](const Point& a, const Point& z) {  // a.v < z.v: scores fall a -> z
    if (a.choice != chosen || z.choice != chosen) return false;
    const Stretch st(a, z, moved, magnitude);
    if (greedy) {  // c keeps the top score (ties go to the lower id: strictly above them all)
      for (std::size_t j = 0; j < V; ++j)
        if (j != c && a.scores[j] >= z.scores[c] && !(st.difference(c, j) > 0)) return false;
      return true;
    }
    if (threshold) return threshold->certified(st);
    return a.kept == z.kept && same_set_certified(st, cuts, c, *chain.draw);
  };
  certified_search(b, chain, config, chosen, at, certified);
  return true;
}

}  // namespace ls::inspect::detail
