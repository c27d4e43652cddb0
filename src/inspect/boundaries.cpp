// Decision boundaries (see boundaries.h). Every choice below is the real chain's: a Sampler
// built from the config with one setting replaced, run on the step's raw logits with the
// recorded history and draw, so an interval means exactly what replay would do.
//
// Truncation settings (top_k, top_p, min_p) only remove tokens, and each keeps a prefix of the
// tokens ordered by their final score s (the chain without truncation). So the choice depends
// only on n, the number kept: h(n) is the inverse-CDF pick (ascending ids, weights exp(s -
// max)) over the n best, computed for every n in one pass with a Fenwick tree over ids. The
// run of n around the recorded n0 where h(n) is the recorded token maps back to the setting
// through n(setting), the kept count of the real chain, which is monotone in the setting:
// bisection (binary search for top_k) finds the ends exactly.
#include "inspect/boundaries.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <tuple>
#include <utility>

#include "core/error.h"
#include "decode/choose.h"
#include "decode/distribution.h"
#include "decode/sampler.h"

namespace ls::inspect {

namespace {

using decode::GenerationConfig;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr double kFragile = 0.10;   // within 10 % of a boundary
constexpr double kScanStep = 1.02;  // temperature and penalty: 2 % steps ...
constexpr double kScanRange = 4.0;  // ... within a factor of 4 of the recorded value
constexpr int kBisections = 40;

// The step's chain under modified configs.
struct Chain {
  std::span<const float> raw;
  decode::TokenHistory history;
  decode::DecodeMode mode;
  std::int32_t vocab;
  std::optional<double> draw;
  std::vector<float> work;

  std::int32_t choose(const GenerationConfig& c) {
    decode::Sampler s(c, mode, vocab, decode::Rng(0));
    decode::ChoiceOptions how;
    how.draw = draw;
    how.accept = false;
    how.raw_logprob = false;
    return s.choose(raw, history, how).token;
  }
  std::span<const float> process(const GenerationConfig& c) {
    decode::Sampler s(c, mode, vocab, decode::Rng(0));
    work.assign(raw.begin(), raw.end());
    s.process(work, history);
    return work;
  }
  std::int32_t kept(const GenerationConfig& c) { return decode::count_candidates(process(c)); }
};

GenerationConfig with(const GenerationConfig& base, const std::string& field, double v) {
  GenerationConfig c = base;
  if (field == "temperature")
    c.temperature = v;
  else if (field == "top_k")
    c.top_k = static_cast<int>(v);
  else if (field == "top_p")
    c.top_p = v;
  else if (field == "min_p")
    c.min_p = v;
  else if (field == "repetition_penalty")
    c.repetition_penalty = v;
  c.sources[field] = "boundaries";
  return c;
}

// h(n) for n at the end of each group of equal scores, best first.
struct PrefixChoices {
  std::vector<std::int32_t> group_end;  // kept counts that a truncation can give
  std::vector<std::int32_t> choice;     // the pick with exactly that many kept

  std::size_t group_of(std::int32_t n) const {  // the group whose end is n, or the first past it
    return static_cast<std::size_t>(std::lower_bound(group_end.begin(), group_end.end(), n) -
                                    group_end.begin());
  }
};

PrefixChoices prefix_choices(std::span<const float> s, double draw) {
  const std::size_t V = s.size();
  std::vector<std::int32_t> order;
  for (std::size_t i = 0; i < V; ++i)
    if (s[i] > kNegInf) order.push_back(static_cast<std::int32_t>(i));
  std::stable_sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return s[static_cast<std::size_t>(a)] > s[static_cast<std::size_t>(b)];
  });
  const double m = order.empty() ? 0.0 : static_cast<double>(s[static_cast<std::size_t>(order[0])]);
  std::vector<double> tree(V + 1, 0.0);  // Fenwick tree over ids (1-based)
  std::size_t top_bit = 1;
  while (top_bit * 2 <= V) top_bit *= 2;
  double total = 0;
  PrefixChoices out;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const auto id = static_cast<std::size_t>(order[k]);
    const double w = std::exp(static_cast<double>(s[id]) - m);
    total += w;
    for (std::size_t i = id + 1; i <= V; i += i & (~i + 1)) tree[i] += w;
    if (k + 1 < order.size() && s[static_cast<std::size_t>(order[k + 1])] == s[id]) continue;
    // The first id whose running total exceeds draw * total: descend the tree.
    const double target = draw * total;
    std::size_t pos = 0;
    double acc = 0;
    for (std::size_t bit = top_bit; bit > 0; bit /= 2)
      if (pos + bit <= V && acc + tree[pos + bit] <= target) pos += bit, acc += tree[pos];
    // pos ids have a running total <= target; the next one (0-based id pos) crosses it. Past
    // the end (rounding), the last kept token, as choose_sample does.
    std::int32_t pick = static_cast<std::int32_t>(std::min(pos, V - 1));
    if (pos >= V) pick = *std::max_element(order.begin(), order.begin() + static_cast<long>(k) + 1);
    out.group_end.push_back(static_cast<std::int32_t>(k + 1));
    out.choice.push_back(pick);
  }
  return out;
}

// How far a search got from the recorded value: the last value keeping the choice, and the
// token chosen just past it (none: it reached the end of the range).
using Found = std::pair<double, std::optional<std::int32_t>>;

// The interval the searches up to b.max and down to b.min found, and whether the recorded value
// lies within 10 % of an end that is not a range end (top_k: of the nearest k that changes it).
void set_interval(Boundary& b, const Found& up, const Found& down, bool integer = false) {
  std::tie(b.hi, b.above) = up;
  std::tie(b.lo, b.below) = down;
  const double step = integer ? 1 : 0;
  const double tol = kFragile * std::abs(b.value);
  b.fragile = (b.lo > b.min && std::abs(b.value - (b.lo - step)) <= tol) ||
              (b.hi < b.max && std::abs(b.hi + step - b.value) <= tol);
}

// A truncation setting: `n_of(v)` is the kept count under value v (monotone in v: top_k and
// top_p keep more as they grow, min_p fewer), `integer` for top_k. The interval of v whose n
// stays in a run of groups that pick `chosen`, extended over runs that only groups no value
// reaches separate.
template <class KeptFn>
void truncation_interval(Boundary& b, const PrefixChoices& h, std::int32_t n0, std::int32_t chosen,
                         bool integer, KeptFn&& n_of) {
  const std::size_t g0 = h.group_of(n0);
  if (g0 >= h.group_end.size() || h.group_end[g0] != n0 || h.choice[g0] != chosen) {
    b.applies = false;
    b.note =
        "the chain keeps a set that is not a prefix of the scores (typical_p, epsilon or "
        "eta cutoffs): not computed";
    return;
  }
  // Kept counts in [first_n, last_n] pick `chosen` (first_n: one past the previous group).
  const auto run_bounds = [&](std::size_t g) {
    std::size_t a = g, z = g;
    while (a > 0 && h.choice[a - 1] == chosen) --a;
    while (z + 1 < h.choice.size() && h.choice[z + 1] == chosen) ++z;
    const std::int32_t first_n = a == 0 ? 1 : h.group_end[a - 1] + 1;
    return std::pair<std::int32_t, std::int32_t>{first_n, h.group_end[z]};
  };
  const auto inside = [&](std::int32_t n, std::pair<std::int32_t, std::int32_t> r) {
    return n >= r.first && n <= r.second;
  };
  // Search one direction: from the recorded value towards `end`, the last value whose kept
  // count stays in a picking run; returns it and the token picked just past it (if any).
  const auto search = [&](double end) -> Found {
    double good = b.value;
    auto run = run_bounds(g0);
    while (true) {
      const double far = end;
      if (inside(n_of(far), run)) return {far, std::nullopt};
      double lo = good, hi = far;  // n_of(lo) inside, n_of(hi) outside
      if (integer) {
        while (std::abs(hi - lo) > 1) {
          const double mid = std::floor((lo + hi) / 2);
          (inside(n_of(mid), run) ? lo : hi) = mid;
        }
      } else {
        for (int i = 0; i < kBisections; ++i) {
          const double mid = (lo + hi) / 2;
          (inside(n_of(mid), run) ? lo : hi) = mid;
        }
      }
      const std::int32_t n_past = n_of(hi);
      const std::size_t g = h.group_of(n_past);
      const std::int32_t pick = g < h.choice.size() ? h.choice[g] : h.choice.back();
      if (pick != chosen) return {lo, pick};
      good = hi;  // the groups between were never kept: continue over the next run
      run = run_bounds(g);
    }
  };
  set_interval(b, search(b.max), search(b.min), integer);
}

// temperature / repetition_penalty: scan in 2 % steps from the recorded value to each end of
// [value / 4, value * 4] (clipped to `floor`), bisecting the first change.
void scanned_interval(Boundary& b, Chain& chain, const GenerationConfig& config,
                      std::int32_t chosen, double floor) {
  b.min = std::max(b.value / kScanRange, floor);
  b.max = b.value * kScanRange;
  b.note = "scanned in 2 % steps within a factor of 4, each change bisected";
  const auto pick = [&](double v) { return chain.choose(with(config, b.setting, v)); };
  const auto search = [&](double end) -> Found {
    const double factor = end > b.value ? kScanStep : 1 / kScanStep;
    double good = b.value;
    while (good != end) {
      const double next =
          end > b.value ? std::min(good * factor, end) : std::max(good * factor, end);
      const std::int32_t t = pick(next);
      if (t != chosen) {
        double lo = good, hi = next;
        std::int32_t past = t;
        for (int i = 0; i < kBisections; ++i) {
          const double mid = (lo + hi) / 2;
          const std::int32_t m = pick(mid);
          if (m == chosen)
            lo = mid;
          else
            hi = mid, past = m;
        }
        return {lo, past};
      }
      good = next;
    }
    return {end, std::nullopt};
  };
  set_interval(b, search(b.max), search(b.min));
}

// Temperature, exactly: scores z (the chain at temperature 1, nothing truncated) give the
// final weights w_i(T) = exp((z_i - z_max) / T), each increasing in T, and the kept set grows
// with T (top_k's does not depend on T; top_p needs more tokens and min_p's threshold
// z_max + T ln(min_p) falls as the distribution flattens). The draw u picks c iff
//   g1 = u W - sum_{i<c} w_i >= 0   and   g2 = sum_{i<=c} w_i - u W > 0   (sums over the kept).
// Over [Ta, Tb] with kept sets Ka within Kb, each sum is bounded by its terms at the ends (a
// token kept only in Kb counts 0 on the side it helps), so when both lower bounds are clearly
// positive no value in between changes the choice. Otherwise the stretch is halved, down to a
// width of 1e-6 relative, where the chain's own choice at the end decides: only there, where
// the draw lies within float rounding (~1e-5 of the mass) of a cumulative edge, can a flip
// narrower than that go unseen.
void temperature_interval(Boundary& b, Chain& chain, const GenerationConfig& config,
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
  struct Point {
    double t;
    std::vector<std::size_t> kept;  // ascending ids
    std::int32_t choice;
  };
  const auto at = [&](double t) {
    const std::span<const float> f = chain.process(with(config, "temperature", t));
    Point p{t, {}, decode::choose_sample(f, draw)};
    for (std::size_t i = 0; i < f.size(); ++i)
      if (f[i] > kNegInf) p.kept.push_back(i);
    return p;
  };
  // Whether [lo.t, hi.t] (lo.t < hi.t) surely keeps the choice.
  const auto certified = [&](const Point& lo, const Point& hi) {
    if (lo.choice != chosen || hi.choice != chosen) return false;
    if (!std::includes(hi.kept.begin(), hi.kept.end(), lo.kept.begin(), lo.kept.end()))
      return false;  // not nested: no bound
    double pos1 = 0, neg1 = 0, pos2 = 0, neg2 = 0, total = 0;
    std::size_t j = 0;  // walks lo.kept, a subset of hi.kept
    for (std::size_t i : hi.kept) {
      const bool in_lo = j < lo.kept.size() && lo.kept[j] == i;
      j += in_lo;
      const double w_hi = std::exp((z[i] - z_max) / hi.t);
      const double w_lo = in_lo ? std::exp((z[i] - z_max) / lo.t) : 0.0;
      total += w_hi;
      if (i >= c) pos1 += draw * w_lo;
      if (i < c) neg1 += (1 - draw) * w_hi;
      if (i <= c) pos2 += (1 - draw) * w_lo;
      if (i > c) neg2 += draw * w_hi;
    }
    const double margin = 1e-5 * total;  // the chain's float rounding is far below this
    return pos1 - neg1 > margin && pos2 - neg2 > margin;
  };
  // The change nearest to `good` in the stretch to `far`, with the last value known to keep
  // the choice, or none: a certified stretch has none; an uncertified one is halved, and one
  // narrower than 1e-6 (relative) is decided by the chain's choice at its far end (then
  // bisected to 1e-13). `budget` bounds the evaluations of a search.
  int budget = 0;
  using Change = std::pair<double, std::int32_t>;  // last good value, the token past it
  const std::function<std::optional<Change>(const Point&, const Point&)> nearest_change =
      [&](const Point& good, const Point& far) -> std::optional<Change> {
    const bool up = far.t > good.t;
    if (up ? certified(good, far) : certified(far, good)) return std::nullopt;
    if (std::abs(far.t - good.t) <= 1e-6 * good.t || ++budget > 4000) {
      if (far.choice == chosen) return std::nullopt;
      // Close in on the change with the chain's choice alone.
      double lo = good.t, hi = far.t;
      std::int32_t past = far.choice;
      for (int i = 0; i < 20 && std::abs(hi - lo) > 1e-13 * lo; ++i) {
        const double m = (lo + hi) / 2;
        const std::int32_t t = chain.choose(with(config, "temperature", m));
        if (t == chosen)
          lo = m;
        else
          hi = m, past = t;
      }
      return Change{lo, past};
    }
    const Point mid = at((good.t + far.t) / 2);
    if (auto r = nearest_change(good, mid)) return r;
    return nearest_change(mid, far);
  };
  const auto search = [&](double end) -> Found {
    budget = 0;
    Point good = at(b.value);
    while (good.t != end) {
      // Stretches of a quarter of the value: most are certified whole.
      const double t = end > b.value ? std::min(good.t * 1.25, end) : std::max(good.t / 1.25, end);
      Point far = at(t);
      if (const auto change = nearest_change(good, far)) return {change->first, change->second};
      good = std::move(far);
    }
    return {end, std::nullopt};
  };
  set_interval(b, search(b.max), search(b.min));
}

}  // namespace

StepBoundaries step_boundaries(std::span<const float> raw, std::span<const std::int32_t> history,
                               std::size_t prompt_length, const GenerationConfig& config,
                               std::optional<double> draw, std::int32_t chosen) {
  const decode::DecodeMode mode = decode::decode_mode(config);
  if (decode::is_beam(mode))
    fail("decision boundaries follow one sequence's choices: num_beams must be 1");
  const auto vocab = static_cast<std::int32_t>(raw.size());
  StepBoundaries out;
  out.greedy = mode == decode::DecodeMode::greedy;
  out.chosen = chosen;
  if (!out.greedy && !draw) fail("decision boundaries of a sampled step need its recorded draw");
  Chain chain{raw, {history, prompt_length}, mode, vocab, out.greedy ? std::nullopt : draw, {}};
  if (const std::int32_t t = chain.choose(config); t != chosen)
    fail(
        "the settings choose token {} at this step, the recording token {}: the boundaries "
        "are those of the recorded choice, under the recorded settings",
        t, chosen);

  for (const char* name : {"temperature", "top_k", "top_p", "min_p"}) {
    Boundary b;
    b.setting = name;
    if (out.greedy) {
      b.applies = false;
      b.note = "greedy: the argmax after the processors; the warpers take no part";
      out.settings.push_back(b);
      continue;
    }
    if (b.setting == "temperature") {
      b.value = config.temperature;
      if (config.typical_p < 1 || config.epsilon_cutoff > 0 || config.eta_cutoff > 0)
        scanned_interval(b, chain, config, chosen, 1e-3);
      else
        temperature_interval(b, chain, config, chosen, *draw);
    } else {
      // The final scores with no truncation: each truncation keeps a prefix of them.
      GenerationConfig open = config;
      open.top_k = 0;
      open.top_p = 1.0;
      open.min_p = 0.0;
      const std::span<const float> processed = chain.process(open);
      const std::vector<float> s(processed.begin(), processed.end());
      const PrefixChoices h = prefix_choices(s, *draw);
      const std::int32_t n0 = chain.kept(config);
      const auto all = static_cast<double>(decode::count_candidates(s));
      if (b.setting == "top_k") {
        b.value = config.top_k > 0 ? config.top_k : all;
        b.min = 1;
        b.max = all;
        truncation_interval(b, h, n0, chosen, true, [&](double k) {
          return chain.kept(with(config, "top_k", k >= all ? 0 : k));
        });
      } else if (b.setting == "top_p") {
        b.value = config.top_p;
        b.min = 1e-9;
        b.max = 1;
        truncation_interval(b, h, n0, chosen, false,
                            [&](double p) { return chain.kept(with(config, "top_p", p)); });
      } else {
        b.value = config.min_p;
        b.min = 0;
        b.max = 1;
        truncation_interval(b, h, n0, chosen, false,
                            [&](double p) { return chain.kept(with(config, "min_p", p)); });
      }
      b.note = "exact: the kept set is a prefix of the scores";
    }
    out.settings.push_back(b);
  }
  Boundary rp;
  rp.setting = "repetition_penalty";
  rp.value = config.repetition_penalty;
  scanned_interval(rp, chain, config, chosen, 1e-3);
  out.settings.push_back(rp);
  for (const Boundary& b : out.settings) out.fragile = out.fragile || b.fragile;
  return out;
}

nlohmann::ordered_json boundaries_json(const StepBoundaries& sb) {
  using J = nlohmann::ordered_json;
  J j{{"greedy", sb.greedy}, {"fragile", sb.fragile}, {"settings", J::object()}};
  const auto token = [](const std::optional<std::int32_t>& t) { return t ? J(*t) : J(nullptr); };
  for (const Boundary& b : sb.settings) {
    J e{{"applies", b.applies}};
    if (b.applies)
      e.update(J{{"value", b.value},
                 {"lo", b.lo},
                 {"hi", b.hi},
                 {"min", b.min},
                 {"max", b.max},
                 {"below", token(b.below)},
                 {"above", token(b.above)},
                 {"fragile", b.fragile}});
    e["note"] = b.note;
    j["settings"][b.setting] = std::move(e);
  }
  return j;
}

}  // namespace ls::inspect
