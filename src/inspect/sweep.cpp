// Sweep cells: run one configured chain on a copy of the raw logits and measure the pool.
#include "inspect/sweep.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "decode/choose.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/sampler.h"

namespace ls::inspect {

std::vector<SweepSetting> sweep_grid(const std::vector<double>& temperatures,
                                     const std::vector<int>& top_ks,
                                     const std::vector<double>& top_ps,
                                     const std::vector<double>& min_ps) {
  std::vector<SweepSetting> grid;
  for (double t : temperatures)
    for (int k : top_ks)
      for (double p : top_ps)
        for (double m : min_ps) grid.push_back({t, k, p, m});
  return grid;
}

decode::GenerationConfig with_setting(const decode::GenerationConfig& base, const SweepSetting& s) {
  decode::GenerationConfig c = base;
  c.temperature = s.temperature;
  c.top_k = s.top_k;
  c.top_p = s.top_p;
  c.min_p = s.min_p;
  c.do_sample = true;
  for (const char* f : {"temperature", "top_k", "top_p", "min_p", "do_sample"})
    c.sources[f] = "flag";
  return c;
}

SweepCell sweep_cell(std::span<const float> raw, const decode::TokenHistory& history,
                     const decode::GenerationConfig& config, int top_n) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  SweepCell cell;
  cell.setting = {config.temperature, config.top_k, config.top_p, config.min_p};
  const bool greedy = config.temperature == 0.0;
  // Temperature 0 means greedy: the processors run, the warpers do not, one token remains.
  decode::require_mirostat_first_step(config, history, "sweep");
  decode::Sampler sampler(config, greedy ? decode::DecodeMode::greedy : decode::DecodeMode::sample,
                          static_cast<std::int32_t>(raw.size()), config.seed.value_or(0));
  cell.chain = sampler.chain().describe();
  std::vector<float> work(raw.begin(), raw.end());
  sampler.process(work, history);
  if (greedy) {
    const std::int32_t best = decode::choose_greedy(work);
    for (std::size_t i = 0; i < work.size(); ++i)
      if (static_cast<std::int32_t>(i) != best) work[i] = kNegInf;
    cell.chain += " -> argmax (temperature 0)";
  }
  cell.pool = decode::count_candidates(work);
  cell.entropy = decode::entropy(work);
  const double lse_raw = decode::log_sum_exp(raw);
  std::vector<float> scaled(raw.begin(), raw.end());
  if (!greedy)
    for (float& v : scaled) v = static_cast<float>(static_cast<double>(v) / config.temperature);
  const double lse_t = decode::log_sum_exp(scaled);
  const double lse_final = decode::log_sum_exp(work);
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (!(work[i] > kNegInf)) continue;
    cell.mass_kept += std::exp(static_cast<double>(raw[i]) - lse_raw);
    cell.mass_kept_t += std::exp(static_cast<double>(scaled[i]) - lse_t);
  }
  if (greedy) cell.mass_kept_t = 1.0;
  for (std::int32_t id : decode::ids_by_score_desc(work, top_n, /*finite_only=*/true)) {
    const auto i = static_cast<std::size_t>(id);
    cell.top.push_back({id, raw[i], std::exp(static_cast<double>(raw[i]) - lse_raw),
                        std::exp(static_cast<double>(work[i]) - lse_final)});
  }
  return cell;
}

SweepRun sweep_run(decode::LogitsSource& source, std::span<const std::int32_t> prompt,
                   std::span<const decode::GenerationConfig> configs, int steps, int top_n,
                   std::span<const std::int32_t> eos) {
  SweepRun run;
  decode::Sampler next_token = decode::Sampler::raw_argmax(source.vocab_size());
  std::vector<std::int32_t> history(prompt.begin(), prompt.end());
  const std::int32_t limit = source.context_limit();
  std::span<const float> raw = source.feed(0, prompt);
  for (int step = 0; step < steps; ++step) {
    run.rows.insert(run.rows.end(), raw.begin(), raw.end());
    std::vector<SweepCell> cells;
    for (const auto& c : configs)
      cells.push_back(sweep_cell(raw, {history, prompt.size()}, c, top_n));
    run.steps.push_back(std::move(cells));
    const std::int32_t next = next_token.choose(raw, {history, prompt.size()}).token;
    run.greedy.push_back(next);
    history.push_back(next);
    const bool ends = std::find(eos.begin(), eos.end(), next) != eos.end();
    const bool full = limit > 0 && history.size() >= static_cast<std::size_t>(limit);
    if (ends || full || step + 1 == steps) break;
    raw = source.feed(0, {&run.greedy.back(), 1});
  }
  source.release(0);
  return run;
}

}  // namespace ls::inspect
