// Seed-study statistics (see seeds.h).
#include "inspect/seeds.h"

#include <fmt/format.h>
#include <algorithm>
#include <cmath>
#include <map>

namespace ls::inspect {

std::string LoopRule::describe() const {
  return fmt::format("a block of 1..{} tokens repeated at least {} times back to back", max_ngram,
                     min_repeats);
}

std::optional<Loop> find_loop(const std::vector<std::int32_t>& tokens, const LoopRule& rule) {
  const std::size_t n_tok = tokens.size();
  for (std::size_t start = 0; start < n_tok; ++start) {
    for (int n = 1; n <= rule.max_ngram; ++n) {
      const auto un = static_cast<std::size_t>(n);
      int repeats = 1;
      std::size_t next = start + un;
      while (next + un <= n_tok &&
             std::equal(tokens.begin() + static_cast<std::ptrdiff_t>(start),
                        tokens.begin() + static_cast<std::ptrdiff_t>(start + un),
                        tokens.begin() + static_cast<std::ptrdiff_t>(next))) {
        ++repeats;
        next += un;
      }
      if (repeats >= rule.min_repeats && start + un <= n_tok) return Loop{start, n, repeats};
    }
  }
  return std::nullopt;
}

namespace {
void mean_std(const std::vector<double>& v, double& mean, double& sd) {
  mean = sd = 0;
  if (v.empty()) return;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) sd += (x - mean) * (x - mean);
  sd = std::sqrt(sd / static_cast<double>(v.size()));
}
}  // namespace

SeedSummary summarize_seeds(const std::vector<SeedRun>& runs, const LoopRule& rule) {
  SeedSummary s;
  s.runs = static_cast<int>(runs.size());
  std::map<std::vector<std::int32_t>, std::size_t> index;
  std::vector<double> logprobs, lengths;
  for (const auto& r : runs) {
    auto [it, fresh] = index.emplace(r.tokens, s.distinct.size());
    if (fresh) s.distinct.push_back({r.tokens, r.text, 0, {}});
    auto& d = s.distinct[it->second];
    ++d.count;
    d.seeds.push_back(r.seed);
    logprobs.push_back(r.logprob);
    lengths.push_back(static_cast<double>(r.tokens.size()));
    s.loop_of_run.push_back(find_loop(r.tokens, rule));
    s.loops += s.loop_of_run.back() ? 1 : 0;
  }
  std::stable_sort(
      s.distinct.begin(), s.distinct.end(),
      [](const DistinctOutput& a, const DistinctOutput& b) { return a.count > b.count; });
  if (s.distinct.size() > 1) {
    std::size_t step = 0;
    for (;; ++step) {
      const auto& first = runs.front().tokens;
      bool same = step < first.size();
      for (const auto& r : runs)
        same = same && step < r.tokens.size() && r.tokens[step] == first[step];
      if (!same) break;
    }
    s.first_divergence = static_cast<int>(step);
  }
  mean_std(logprobs, s.mean_logprob, s.std_logprob);
  mean_std(lengths, s.mean_length, s.std_length);
  if (s.runs > 0) s.loop_rate = static_cast<double>(s.loops) / s.runs;
  return s;
}

}  // namespace ls::inspect
