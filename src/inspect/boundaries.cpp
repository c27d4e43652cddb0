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
#include "inspect/boundary_search.h"

namespace ls::inspect {

namespace detail {

decode::GenerationConfig with(const decode::GenerationConfig& base, const std::string& field,
                              double v) {
  decode::GenerationConfig c = base;
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

void set_interval(Boundary& b, const Found& up, const Found& down, bool integer) {
  std::tie(b.hi, b.above) = up;
  std::tie(b.lo, b.below) = down;
  const double step = integer ? 1 : 0;
  const double tol = kFragile * std::abs(b.value);
  b.fragile = (b.lo > b.min && std::abs(b.value - (b.lo - step)) <= tol) ||
              (b.hi < b.max && std::abs(b.hi + step - b.value) <= tol);
}

}  // namespace detail

namespace {

using decode::GenerationConfig;
using namespace detail;

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
void scanned_interval(Boundary& b, StepChain& chain, const GenerationConfig& config,
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
  if (!out.greedy && config.mirostat != 0)
    fail(
        "decision boundaries: mirostat ({} {}) replaces top_k, top_p and min_p, and its mu comes "
        "from the steps before this one, which a single step cannot re-run; use mirostat 0",
        config.origin_of("mirostat"), config.mirostat);
  StepChain chain{raw, {history, prompt_length}, mode, vocab, out.greedy ? std::nullopt : draw, {}};
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
      if (config.typical_p < 1 || config.epsilon_cutoff > 0 || config.eta_cutoff > 0 ||
          config.dynatemp_range > 0 || config.xtc_probability > 0)
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
  if (!penalty_interval(rp, chain, config, chosen)) {
    scanned_interval(rp, chain, config, chosen, 1e-3);
    rp.note +=
        " (typical_p, epsilon, eta, top_n_sigma, dynamic temperature, XTC or DRY, or the penalty "
        "after a truncation: no bounds)";
  }
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
