// `logitscope sweep`: one forward pass, then every combination of --temperature / --top-k /
// --top-p / --min-p lists applied to the same logits, side by side: the pool left, its entropy,
// the probability mass kept and the top candidates. --steps N repeats this along the greedy
// (raw argmax) continuation; --svg draws the probability bars of each setting.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/progress.h"
#include "core/error.h"
#include "engine/engine.h"
#include "inspect/svg.h"
#include "inspect/sweep.h"

namespace ls::app {

namespace {

struct SweepCli {
  ModelOptions model;
  PromptOptions prompt;
  GenerationFlags flags;
  int steps = 1;
  int top = 5;
  bool json = false;
  std::string svg;
  std::string dump_logits;
};

const std::vector<std::string> kSweptFields = {"temperature", "top_k", "top_p", "min_p"};

std::string setting_label(const inspect::SweepSetting& s) {
  return fmt::format("T={:g} k={} p={:g} min_p={:g}", s.temperature, s.top_k, s.top_p, s.min_p);
}

void run_sweep(SweepCli& o) {
  if (o.steps < 1) fail("--steps must be at least 1, got {}", o.steps);
  LoadedModel lm = load_model(o.model);
  const decode::GenerationConfig base = generation_config_from(o.flags, lm, kSweptFields);
  auto list_or = [&](const char* field, const char* flag, double fallback) {
    const std::string text = flag_text(o.flags, field);
    return text.empty() ? std::vector<double>{fallback} : parse_number_list(text, flag);
  };
  const auto temps = list_or("temperature", "--temperature", base.temperature);
  const std::string k_text = flag_text(o.flags, "top_k");
  const auto top_ks =
      k_text.empty() ? std::vector<int>{base.top_k} : parse_int_list(k_text, "--top-k");
  const auto top_ps = list_or("top_p", "--top-p", base.top_p);
  const auto min_ps = list_or("min_p", "--min-p", base.min_p);
  const auto grid = inspect::sweep_grid(temps, top_ks, top_ps, min_ps);
  std::vector<decode::GenerationConfig> configs;
  for (const auto& s : grid) {
    configs.push_back(inspect::with_setting(base, s));
    decode::validate(configs.back());  // names the flag of a bad value
  }

  const std::vector<std::int32_t> prompt = prompt_tokens(o.prompt, lm);
  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  const auto V = static_cast<std::size_t>(lm.model().config().vocab_size);
  std::optional<Progress> progress(std::in_place, "sweep", static_cast<std::size_t>(o.steps),
                                   "steps");
  ProgressSource counted(engine, *progress);
  const inspect::SweepRun run =
      inspect::sweep_run(counted, prompt, configs, o.steps, o.top, base.eos_token_id);
  progress.reset();
  const auto& steps = run.steps;
  const auto& greedy = run.greedy;
  const auto& rows = run.rows;
  if (!o.dump_logits.empty()) write_rows_npy(o.dump_logits, rows, static_cast<std::int64_t>(V));

  if (!o.svg.empty()) {
    std::vector<inspect::SvgPanel> panels;
    for (const auto& cell : steps.front()) {
      inspect::SvgPanel p{fmt::format("{} · pool {} · H {:.2f} nats", setting_label(cell.setting),
                                      cell.pool, cell.entropy),
                          {}};
      for (const auto& c : cell.top)
        p.bars.push_back({inspect::svg_token_label(token_label(lm, c.id)), c.prob});
      panels.push_back(std::move(p));
    }
    inspect::write_svg_file(
        o.svg, inspect::bar_panels_svg("sweep: final probabilities after the prompt", panels));
  }

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = lm.model().path();
    j["prompt_token_ids"] = prompt;
    j["greedy_continuation"] = greedy;
    j["steps"] = nlohmann::ordered_json::array();
    for (std::size_t k = 0; k < steps.size(); ++k) {
      nlohmann::ordered_json st;
      st["step"] = k;
      st["greedy_next"] = greedy[k];
      st["cells"] = nlohmann::ordered_json::array();
      for (const auto& cell : steps[k]) {
        nlohmann::ordered_json c;
        c["temperature"] = cell.setting.temperature;
        c["top_k"] = cell.setting.top_k;
        c["top_p"] = cell.setting.top_p;
        c["min_p"] = cell.setting.min_p;
        c["chain"] = cell.chain;
        c["pool"] = cell.pool;
        c["entropy"] = cell.entropy;
        c["mass_kept"] = cell.mass_kept;
        c["mass_kept_t"] = cell.mass_kept_t;
        c["top"] = nlohmann::ordered_json::array();
        for (const auto& t : cell.top)
          c["top"].push_back({{"id", t.id},
                              {"text", lm.token_text(t.id)},
                              {"logit", t.logit},
                              {"raw_prob", t.raw_prob},
                              {"prob", t.prob}});
        st["cells"].push_back(std::move(c));
      }
      j["steps"].push_back(std::move(st));
    }
    if (!o.dump_logits.empty()) j["logits_file"] = o.dump_logits;
    if (!o.svg.empty()) j["svg_file"] = o.svg;
    print_json_line(j);
    return;
  }
  fmt::print("sweep: {} setting{} over {} step{} · prompt {} tokens\n", grid.size(),
             grid.size() == 1 ? "" : "s", steps.size(), steps.size() == 1 ? "" : "s",
             prompt.size());
  fmt::print("each row runs the chain on the same logits (warpers on, as when sampling):\n  {}\n",
             steps.front().front().chain);
  fmt::print(
      "pool = tokens left · H = entropy of the final distribution (nats) · kept = model\n"
      "probability of the pool · kept@T = the same at temperature T\n");
  for (std::size_t k = 0; k < steps.size(); ++k) {
    fmt::print(
        "\n── step {} ({}) · greedy next {}\n", k,
        k == 0 ? "after the prompt" : fmt::format("after greedy {}", token_cell(lm, greedy[k - 1])),
        token_cell(lm, greedy[k]));
    fmt::print("  {:>5} {:>6} {:>5} {:>5}  {:>7} {:>7} {:>7} {:>7}  top candidates (final prob)\n",
               "T", "top_k", "top_p", "min_p", "pool", "H", "kept", "kept@T");
    for (const auto& cell : steps[k]) {
      std::string tops;
      for (const auto& t : cell.top)
        tops += fmt::format("{} {:.1f}%  ", token_cell(lm, t.id), 100 * t.prob);
      fmt::print("  {:>5g} {:>6} {:>5g} {:>5g}  {:>7} {:>7.3f} {:>6.1f}% {:>6.1f}%  {}\n",
                 cell.setting.temperature, cell.setting.top_k, cell.setting.top_p,
                 cell.setting.min_p, cell.pool, cell.entropy, 100 * cell.mass_kept,
                 100 * cell.mass_kept_t, tops);
    }
  }
  if (!o.dump_logits.empty())
    fmt::print("\nwrote {} (float32 [{}, {}])\n", o.dump_logits, steps.size(), V);
  if (!o.svg.empty()) fmt::print("wrote {}\n", o.svg);
}

}  // namespace

void add_sweep_command(CLI::App& app) {
  auto o = std::make_shared<SweepCli>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "One forward pass, every combination of --temperature/--top-k/--top-p/--min-p lists "
      "(e.g. --temperature 0.2,0.7,1): pool, entropy, mass kept, top candidates");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--steps", o->steps, "Repeat along the greedy continuation for N steps")
      ->capture_default_str();
  cmd->add_option("--top", o->top, "Candidates listed per setting")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", o->json, "Print one JSON object instead of tables");
  cmd->add_option("--svg", o->svg, "Write probability bars per setting (first step) to FILE.svg");
  cmd->add_option("--dump-logits", o->dump_logits,
                  "Write the raw logits of every step to FILE.npy ([steps, vocab] float32)");
  cmd->callback([o] { run_sweep(*o); });
}

}  // namespace ls::app
