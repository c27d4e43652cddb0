// `logitscope compare`: two models on the same prompts (e.g. BF16 vs a quantized copy). For each
// prompt, and with --steps N along A's greedy continuation fed to both, it reports top-1
// agreement, KL(A||B), the flips with both tokens and A's margin between them, and a summary
// relating flips to A's small top-1/top-2 margins. --svg draws KL per position, flips marked.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/lab_common.h"
#include "app/model_source.h"
#include "app/progress.h"
#include "core/error.h"
#include "engine/engine.h"
#include "inspect/compare.h"
#include "inspect/svg.h"

namespace ls::app {

namespace {

struct CompareCli {
  ModelOptions model;
  std::string model_b;
  std::string prompts;
  bool chat = false;
  std::string system;
  int steps = 1;
  bool json = false;
  std::string svg;
  std::string dump_logits;
};

void run_compare(CompareCli& o) {
  if (o.steps < 1) fail("--steps must be at least 1, got {}", o.steps);
  const std::vector<FilePrompt> file = read_prompt_file(o.prompts);
  LoadedModel a = load_model(o.model);
  // --model-b may be an id too (main, or --revision's); --pull covers both models.
  o.model_b = resolve_model_spec(o.model_b, "main", o.model.pull, "--model-b");
  const LoadedModel b = LoadedModel::open(o.model_b, load_options(o.model));
  const auto V = static_cast<std::size_t>(a.model().config().vocab_size);
  if (b.model().config().vocab_size != a.model().config().vocab_size)
    fail(
        "--model-b {}: vocab_size {} differs from --model {} ({}); compare needs the same "
        "vocabulary",
        o.model_b, b.model().config().vocab_size, o.model.model, V);
  std::vector<std::vector<std::int32_t>> prompts;
  PromptOptions how;
  how.chat = o.chat;
  how.system = o.system;
  for (const auto& p : file) prompts.push_back(file_prompt_tokens(p, how, a));
  ThreadPool pool(o.model.threads);
  engine::Engine engine_a(a.model(), pool), engine_b(b.model(), pool);
  std::optional<Progress> progress(std::in_place, "compare", static_cast<std::size_t>(o.steps),
                                   "steps");
  ProgressSource counted_a(engine_a, *progress);
  const inspect::ModelComparison run =
      inspect::compare_models(counted_a, engine_b, prompts, o.steps, !o.dump_logits.empty());
  progress.reset();
  const auto& positions = run.positions;
  const auto& continuations = run.continuations;
  const auto& rows_a = run.rows_a;
  const auto& rows_b = run.rows_b;
  const inspect::ComparisonSummary s = inspect::summarize(positions);
  if (!o.dump_logits.empty()) {
    write_rows_npy(o.dump_logits + ".a.npy", rows_a, static_cast<std::int64_t>(V));
    write_rows_npy(o.dump_logits + ".b.npy", rows_b, static_cast<std::int64_t>(V));
  }
  if (!o.svg.empty()) {
    inspect::SvgSeries kl{"KL(A||B)", {}, "#4878d0", false, {}};
    std::vector<std::string> labels;
    std::vector<inspect::SvgMark> marks;
    for (std::size_t i = 0; i < positions.size(); ++i) {
      const auto& c = positions[i];
      kl.y.push_back(c.kl);
      kl.notes.push_back(
          fmt::format("A {} B {}", token_label(a, c.top_a), token_label(a, c.top_b)));
      labels.push_back(fmt::format("p{} s{}", c.prompt, c.step));
      if (!c.agree)
        marks.push_back({i, fmt::format("flip at prompt {} step {}: A {} / B {}, A margin {:.3f}",
                                        c.prompt, c.step, token_label(a, c.top_a),
                                        token_label(a, c.top_b), c.flip_margin)});
    }
    inspect::write_svg_file(
        o.svg, inspect::line_chart_svg(
                   fmt::format("compare: KL(A||B) per position, flips marked (agreement {:.1f}%)",
                               100 * s.agreement_rate),
                   "prompt / step", labels, {kl}, marks, "KL (nats)", "",
                   "top-1 flip (A and B choose differently)"));
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["model_a"] = a.model().path();
    j["model_b"] = b.path();
    j["positions"] = nlohmann::ordered_json::array();
    for (const auto& c : positions)
      j["positions"].push_back({{"prompt", c.prompt},
                                {"step", c.step},
                                {"top_a", c.top_a},
                                {"top_a_text", a.token_text(c.top_a)},
                                {"top_b", c.top_b},
                                {"top_b_text", a.token_text(c.top_b)},
                                {"agree", c.agree},
                                {"kl", c.kl},
                                {"prob_a", c.prob_a},
                                {"prob_b", c.prob_b},
                                {"margin_a", c.margin_a},
                                {"flip_margin", c.flip_margin}});
    j["continuations"] = continuations;
    nlohmann::ordered_json sj;
    sj["positions"] = s.positions;
    sj["agreements"] = s.agreements;
    sj["agreement_rate"] = s.agreement_rate;
    sj["mean_kl"] = s.mean_kl;
    sj["max_kl"] = s.max_kl;
    sj["max_kl_position"] = s.max_kl_position;
    sj["flips"] = s.flips;
    sj["mean_margin_flips"] = s.mean_margin_flips;
    sj["mean_margin_agree"] = s.mean_margin_agree;
    sj["margin_buckets"] = nlohmann::ordered_json::array();
    for (const auto& bk : s.buckets)
      sj["margin_buckets"].push_back(
          {{"lo", bk.lo},
           {"hi", std::isfinite(bk.hi) ? nlohmann::ordered_json(bk.hi) : nlohmann::ordered_json()},
           {"positions", bk.positions},
           {"flips", bk.flips}});
    j["summary"] = sj;
    if (!o.dump_logits.empty())
      j["logits_files"] = {o.dump_logits + ".a.npy", o.dump_logits + ".b.npy"};
    print_json_line(j);
    return;
  }
  fmt::print(
      "A {}\nB {}\n{} prompt{} x up to {} step{} (A's greedy continuation) = {} positions\n\n",
      a.model().path(), b.path(), prompts.size(), prompts.size() == 1 ? "" : "s", o.steps,
      o.steps == 1 ? "" : "s", positions.size());
  fmt::print("{:>6} {:>4}  {:<28} {:<28} {:>9}  {:>8}  {}\n", "prompt", "step", "A top-1 (prob)",
             "B top-1 (prob)", "KL(A||B)", "A gap", "");
  for (const auto& c : positions) {
    fmt::print(
        "{:>6} {:>4}  {:<28} {:<28} {:>9.5f}  {:>8.4f}  {}\n", c.prompt, c.step,
        fmt::format("{} {:.1f}%", token_cell(a, c.top_a), 100 * c.prob_a),
        fmt::format("{} {:.1f}%", token_cell(a, c.top_b), 100 * c.prob_b), c.kl, c.margin_a,
        c.agree ? "" : fmt::format("FLIP (A prefers its token by {:.4f} logits)", c.flip_margin));
  }
  fmt::print("\nagreement  {}/{} = {:.1f}%   flips {}\n", s.agreements, s.positions,
             100 * s.agreement_rate, s.flips);
  if (s.max_kl_position >= 0) {
    const auto& m = positions[static_cast<std::size_t>(s.max_kl_position)];
    fmt::print("KL(A||B)   mean {:.6f}   max {:.6f} (prompt {} step {})\n", s.mean_kl, s.max_kl,
               m.prompt, m.step);
  }
  fmt::print("A gap = A's top-1 minus top-2 logit; flips by gap:\n");
  for (const auto& bk : s.buckets) {
    if (bk.positions == 0) continue;
    fmt::print("  gap [{:g}, {:g}): {:>4} positions, {:>3} flips ({:.1f}%)\n", bk.lo, bk.hi,
               bk.positions, bk.flips, 100.0 * bk.flips / bk.positions);
  }
  if (s.flips > 0)
    fmt::print("mean A gap at flips {:.4f} vs at agreements {:.4f}\n", s.mean_margin_flips,
               s.mean_margin_agree);
  if (!o.svg.empty()) fmt::print("wrote {}\n", o.svg);
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareCli>();
  auto* cmd = app.add_subcommand(
      "compare", "Compare two models on a prompt set: top-1 agreement, KL(A||B), flips by margin");
  add_model_options(*cmd, o->model);
  cmd->add_option(
         "--model-b", o->model_b,
         "The model to compare with (B): a directory, .gguf or model id (its revision main)")
      ->required();
  cmd->add_option("--prompts", o->prompts, "Prompts, one per line (# starts a comment)")
      ->required();
  cmd->add_flag("--chat", o->chat, "Wrap each prompt as a user message (chat template of A)");
  cmd->add_option("--system", o->system, "System message (with --chat)");
  cmd->add_option("--steps", o->steps, "Positions per prompt along A's greedy continuation")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of tables");
  cmd->add_option("--svg", o->svg, "Write KL per position with flips marked to FILE.svg");
  cmd->add_option("--dump-logits", o->dump_logits,
                  "Write raw logits to PREFIX.a.npy and PREFIX.b.npy ([positions, vocab])");
  cmd->callback([o] { run_compare(*o); });
}

}  // namespace ls::app
