// `logitscope compare`: two models on the same prompts (e.g. BF16 vs a quantized copy). For each
// prompt, and with --steps N along A's greedy continuation fed to both, it reports top-1
// agreement, KL(A||B), the flips with both tokens and A's margin between them, and a summary
// relating flips to A's small top-1/top-2 margins. --svg draws KL per position, flips marked.
// With --text FILE instead: both models score every token of one text in overlapping windows,
// with llama-perplexity --kl-divergence's statistics (perplexities, KL, delta-p, same top-1).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>

#include "app/commands.h"
#include "app/lab_common.h"
#include "app/model_source.h"
#include "app/progress.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "core/text_width.h"
#include "engine/engine.h"
#include "inspect/compare.h"
#include "inspect/svg.h"
#include "inspect/text_compare.h"

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
  std::string text;           // --text FILE: one text instead of prompts
  std::int64_t window = 0;    // 0: min(max_position_embeddings, 1024)
  std::int64_t overlap = -1;  // -1: window / 4
};

// --model-b opened with --model's load options; the vocabularies must match.
LoadedModel open_model_b(CompareCli& o, const LoadedModel& a) {
  // --model-b may be an id too (main, or --revision's); --pull covers both models.
  o.model_b = resolve_model_spec(o.model_b, "main", o.model.pull, "--model-b");
  LoadedModel b = LoadedModel::open(o.model_b, load_options(o.model));
  const auto va = a.model().config().vocab_size, vb = b.model().config().vocab_size;
  if (va != vb)
    fail(
        "--model {} has vocab_size {} but --model-b {} has vocab_size {}; compare needs the "
        "same vocabulary",
        a.model().path(), va, b.path(), vb);
  return b;
}

// "1.234567 ± 0.012345", the error "n/a" when undefined (fewer than 2 tokens).
std::string with_se(double value, double se, double scale = 1, const char* unit = "") {
  const auto num = [&](double v) {
    return std::isnan(v) ? std::string("n/a") : fmt::format("{:.6f}{}", scale * v, unit);
  };
  return fmt::format("{} ± {}", num(value), num(se));
}

void add_percentiles(nlohmann::ordered_json& j, const std::string& prefix,
                     const inspect::Percentiles& p, bool quartiles) {
  j[prefix + "_max"] = p.max;
  j[prefix + "_p99_9"] = p.p99_9;
  j[prefix + "_p99"] = p.p99;
  j[prefix + "_p95"] = p.p95;
  j[prefix + "_p90"] = p.p90;
  if (quartiles) j[prefix + "_p75"] = p.p75;
  j[prefix + "_median"] = p.median;
  if (quartiles) j[prefix + "_p25"] = p.p25;
  j[prefix + "_p10"] = p.p10;
  j[prefix + "_p5"] = p.p5;
  j[prefix + "_p1"] = p.p1;
  j[prefix + "_p0_1"] = p.p0_1;
  j[prefix + "_min"] = p.min;
}

void print_percentiles(const inspect::Percentiles& p, bool quartiles, double scale,
                       const char* unit) {
  const std::pair<const char*, double> rows[] = {
      {"max", p.max}, {"99.9%", p.p99_9},   {"99%", p.p99}, {"95%", p.p95}, {"90%", p.p90},
      {"75%", p.p75}, {"median", p.median}, {"25%", p.p25}, {"10%", p.p10}, {"5%", p.p5},
      {"1%", p.p1},   {"0.1%", p.p0_1},     {"min", p.min}};
  for (const auto& [name, v] : rows) {
    if (!quartiles && (std::string_view(name) == "75%" || std::string_view(name) == "25%"))
      continue;
    fmt::print("  {:<8} {:.6f}{}\n", name, scale * v, unit);
  }
}

void json_line(const nlohmann::ordered_json& j) {
  fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void run_compare_text(CompareCli& o) {
  if (o.window > 0 && o.overlap >= o.window)
    fail("--overlap {} must be smaller than --window {} (windows advance by window - overlap)",
         o.overlap, o.window);
  require_regular_file(o.text, kMaxTextFileBytes, "--text");
  const std::string text = read_text_file(o.text);
  LoadedModel a = load_model(o.model);
  const LoadedModel b = open_model_b(o, a);
  const std::vector<std::int32_t> tokens = a.require_tokenizer("compare --text").encode(text);
  if (tokens.size() < 2)
    fail(
        "--text {}: the text is {} token{}; compare --text needs at least 2 (the first token "
        "is only context for the second)",
        o.text, tokens.size(), tokens.size() == 1 ? "" : "s");
  std::int64_t limit = 0;  // the smaller max_position_embeddings of the two (0: none)
  for (const std::int64_t m :
       {a.model().config().max_position_embeddings, b.model().config().max_position_embeddings})
    if (m > 0 && (limit == 0 || m < limit)) limit = m;
  const std::int64_t window =
      o.window > 0 ? o.window : (limit > 0 ? std::min<std::int64_t>(limit, 1024) : 1024);
  if (limit > 0 && window > limit)
    fail("--window {} is more than the models hold (max_position_embeddings {})", window, limit);
  const std::int64_t overlap = o.overlap >= 0 ? o.overlap : window / 4;
  const std::vector<inspect::TextWindow> windows =
      inspect::plan_text_windows(static_cast<std::int64_t>(tokens.size()), window, overlap);
  std::size_t fed = 0;
  for (const auto& w : windows) fed += static_cast<std::size_t>(w.end - w.start);
  ThreadPool pool(o.model.threads);
  engine::Engine engine_a(a.model(), pool), engine_b(b.model(), pool);
  std::optional<Progress> progress(std::in_place, "compare", fed, "positions");
  const std::vector<inspect::TokenComparison> scored = inspect::compare_on_text(
      engine_a, engine_b, tokens, windows, 128, [&](std::size_t n) { progress->advance(n); });
  progress.reset();
  const inspect::TextComparisonSummary s = inspect::summarize_text(scored);
  const auto window_summary = [&](const inspect::TextWindow& w) {
    return inspect::summarize_text(std::span(scored).subspan(
        static_cast<std::size_t>(w.scored_from), static_cast<std::size_t>(w.end - w.scored_from)));
  };

  if (o.json) {
    for (std::size_t i = 0; i < windows.size(); ++i) {
      const auto& w = windows[i];
      const auto ws = window_summary(w);
      nlohmann::ordered_json j;
      j["type"] = "window";
      j["window"] = i;
      j["start"] = w.start;
      j["scored_from"] = w.scored_from;
      j["end"] = w.end;
      j["tokens"] = ws.tokens;
      j["ppl_a"] = ws.ppl_a;
      j["ppl_b"] = ws.ppl_b;
      j["ln_ppl_ratio"] = ws.ln_ppl_ratio.mean;
      j["kld_mean"] = ws.kld.mean;
      j["dp_rms"] = ws.dp_rms;
      j["same_top1"] = ws.same_top1;
      json_line(j);
    }
    nlohmann::ordered_json j;
    j["type"] = "summary";
    j["model_a"] = a.model().path();
    j["model_b"] = b.path();
    j["text"] = o.text;
    j["text_tokens"] = tokens.size();
    j["tokens"] = s.tokens;
    j["windows"] = windows.size();
    j["window"] = window;
    j["overlap"] = overlap;
    j["ppl_a"] = s.ppl_a;
    j["ppl_a_se"] = s.ppl_a_se;
    j["ppl_b"] = s.ppl_b;
    j["ppl_b_se"] = s.ppl_b_se;
    j["ln_ppl_ratio"] = s.ln_ppl_ratio.mean;
    j["ln_ppl_ratio_se"] = s.ln_ppl_ratio.se;
    j["ppl_ratio"] = s.ppl_ratio;
    j["ppl_ratio_se"] = s.ppl_ratio_se;
    j["logprob_corr"] = s.logprob_corr;
    j["kld_mean"] = s.kld.mean;
    j["kld_se"] = s.kld.se;
    add_percentiles(j, "kld", s.kld_pct, false);
    j["dp_mean"] = s.dp.mean;
    j["dp_se"] = s.dp.se;
    j["dp_rms"] = s.dp_rms;
    j["dp_rms_se"] = s.dp_rms_se;
    add_percentiles(j, "dp", s.dp_pct, true);
    j["same_top1"] = s.same_top1;
    j["same_top1_se"] = s.same_top1_se;
    j["same_top1_count"] = s.same_top;
    json_line(j);
    return;
  }
  fmt::print("A     {}\nB     {}\n", a.model().path(), b.path());
  fmt::print("text  {}: {} tokens, {} scored (position i predicts token i + 1)\n", o.text,
             tokens.size(), s.tokens);
  fmt::print(
      "{} window{} of up to {} positions overlapping by {} (a fresh sequence each; every position "
      "scored once, in the first window that holds it)\n\n",
      windows.size(), windows.size() == 1 ? "" : "s", window, overlap);
  fmt::print("{:>6}  {:<13}  {:<13}  {:>11}  {:>11}  {:>11}  {:>10}  {:>8}  {:>9}\n", "window",
             "positions", "scored", "PPL(A)", "PPL(B)", "ln(B/A)", "KL(A||B)", "dp RMS",
             "same top");
  for (std::size_t i = 0; i < windows.size(); ++i) {
    const auto& w = windows[i];
    const auto ws = window_summary(w);
    fmt::print(
        "{:>6}  {:<13}  {:<13}  {:>11.6g}  {:>11.6g}  {:>11.6f}  {:>10.6f}  {:>7.3f}%  {:>8.3f}%\n",
        i, fmt::format("{}-{}", w.start, w.end), fmt::format("{}-{}", w.scored_from, w.end),
        ws.ppl_a, ws.ppl_b, ws.ln_ppl_ratio.mean, ws.kld.mean, 100 * ws.dp_rms, 100 * ws.same_top1);
  }
  fmt::print("\nperplexity over {} tokens (exp of the mean of -ln p(next token))\n", s.tokens);
  fmt::print("  PPL(A)                {}\n", with_se(s.ppl_a, s.ppl_a_se));
  fmt::print("  PPL(B)                {}\n", with_se(s.ppl_b, s.ppl_b_se));
  fmt::print("  ln(PPL(B)/PPL(A))     {}\n", with_se(s.ln_ppl_ratio.mean, s.ln_ppl_ratio.se));
  fmt::print("  PPL(B)/PPL(A)         {}\n", with_se(s.ppl_ratio, s.ppl_ratio_se));
  fmt::print("  corr(ln p_A, ln p_B)  {}\n", std::isnan(s.logprob_corr)
                                                 ? std::string("n/a")
                                                 : fmt::format("{:.4f}%", 100 * s.logprob_corr));
  fmt::print("\nKL(A||B) per position, nats over the whole vocabulary\n");
  fmt::print("  {:<8} {}\n", "mean", with_se(s.kld.mean, s.kld.se));
  print_percentiles(s.kld_pct, false, 1, "");
  fmt::print("\ndp = p_B(next) - p_A(next), the reference token's probability\n");
  fmt::print("  {:<8} {}\n", "mean", with_se(s.dp.mean, s.dp.se, 100, "%"));
  fmt::print("  {:<8} {}\n", "RMS", with_se(s.dp_rms, s.dp_rms_se, 100, "%"));
  print_percentiles(s.dp_pct, true, 100, "%");
  fmt::print("\nsame top-1  {}/{} = {}\n", s.same_top, s.tokens,
             with_se(s.same_top1, s.same_top1_se, 100, "%"));
}

void run_compare(CompareCli& o) {
  if (!o.text.empty()) {
    run_compare_text(o);
    return;
  }
  if (o.prompts.empty())
    fail("compare needs --prompts FILE (a prompt set) or --text FILE (a text)");
  if (o.steps < 1) fail("--steps must be at least 1, got {}", o.steps);
  const std::vector<FilePrompt> file = read_prompt_file(o.prompts);
  LoadedModel a = load_model(o.model);
  const LoadedModel b = open_model_b(o, a);
  const auto V = static_cast<std::size_t>(a.model().config().vocab_size);
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
        "{:>6} {:>4}  {} {} {:>9.5f}  {:>8.4f}  {}\n", c.prompt, c.step,
        pad_to_width(fmt::format("{} {:.1f}%", token_cell(a, c.top_a), 100 * c.prob_a), 28),
        pad_to_width(fmt::format("{} {:.1f}%", token_cell(a, c.top_b), 100 * c.prob_b), 28), c.kl,
        c.margin_a,
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
      "compare",
      "Compare two models on a prompt set (top-1 agreement, KL(A||B), flips by margin) or on one "
      "text (perplexities, KL(A||B), delta-p, same top-1)");
  add_model_options(*cmd, o->model);
  cmd->add_option(
         "--model-b", o->model_b,
         "The model to compare with (B): a directory, .gguf or model id (its revision main)")
      ->required();
  auto* prompts =
      cmd->add_option("--prompts", o->prompts, "Prompts, one per line (# starts a comment)");
  auto* text = cmd->add_option(
      "--text", o->text,
      "A text file: score every token under both models (llama-perplexity --kl-divergence)");
  text->excludes(prompts);
  auto* window = cmd->add_option("--window", o->window,
                                 "With --text: positions per window (default: "
                                 "min(max_position_embeddings, 1024))")
                     ->check(integer_in(1, std::int64_t{1} << 30));
  auto* overlap =
      cmd->add_option("--overlap", o->overlap,
                      "With --text: positions shared by consecutive windows (default: window/4)")
          ->check(integer_in(0, std::int64_t{1} << 30));
  window->needs(text);
  overlap->needs(text);
  auto* chat =
      cmd->add_flag("--chat", o->chat, "Wrap each prompt as a user message (chat template of A)");
  auto* system = cmd->add_option("--system", o->system, "System message (with --chat)");
  auto* steps =
      cmd->add_option("--steps", o->steps, "Positions per prompt along A's greedy continuation")
          ->capture_default_str();
  cmd->add_flag("--json", o->json,
                "Print JSON instead of tables (--text: JSON Lines, one per window, then the "
                "summary)");
  auto* svg =
      cmd->add_option("--svg", o->svg, "Write KL per position with flips marked to FILE.svg");
  auto* dump =
      cmd->add_option("--dump-logits", o->dump_logits,
                      "Write raw logits to PREFIX.a.npy and PREFIX.b.npy ([positions, vocab])");
  for (auto* prompt_only : {chat, system, steps, svg, dump}) prompt_only->excludes(text);
  cmd->callback([o] { run_compare(*o); });
}

}  // namespace ls::app
