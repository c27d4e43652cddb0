// `logitscope eval`: run a golden set (JSON Lines of prompts with expected answers, see
// src/inspect/eval.h) under fixed decoding settings and print a pass/fail table and the match
// rate. Under --min-rate the command exits with status 3 (errors exit 1), so it can guard a CI.
// Sampling without --seed uses seed 0, so that a run is repeatable.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/progress.h"
#include "core/error.h"
#include "core/text_width.h"
#include "decode/generate.h"
#include "decode/trace_json.h"
#include "engine/engine.h"
#include "inspect/eval.h"

namespace ls::app {

namespace {

struct EvalCli {
  ModelOptions model;
  std::string golden;
  GenerationFlags flags;
  double min_rate = 1.0;
  bool json = false;
};

std::string clip(const std::string& s, std::size_t n) {
  return clip_utf8(printable(s), n);
}

void run_eval(EvalCli& o) {
  if (!(o.min_rate >= 0 && o.min_rate <= 1))
    fail("--min-rate must be between 0 and 1, got {}", o.min_rate);
  const std::vector<inspect::GoldenCase> cases = inspect::read_golden(o.golden);
  LoadedModel lm = load_model(o.model);
  const decode::GenerationConfig base = generation_config_from(o.flags, lm);
  ThreadPool pool(o.model.threads);
  engine::Engine source(lm.model(), pool);
  const auto text_of = [&](std::int32_t id) { return lm.token_text(id); };
  struct Row {
    const inspect::GoldenCase* c;
    inspect::CaseResult r;
    inspect::CaseOutput out;
  };
  std::vector<Row> rows(cases.size());
  std::vector<std::vector<std::int32_t>> prompts(cases.size());
  std::vector<decode::Request> jobs;
  std::optional<Progress> progress;  // created below, once the token budget is known
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const inspect::GoldenCase& c = cases[k];
    decode::GenerationConfig config = base;
    if (decode::decode_mode(config) != decode::DecodeMode::greedy && !config.seed) config.seed = 0;
    if (c.max_new_tokens) {
      config.max_new_tokens = *c.max_new_tokens;
    } else if (c.kind == inspect::ExpectKind::top1) {
      config.max_new_tokens = c.step + 1;  // nothing after step k matters
    }
    if (c.max_new_tokens || c.kind == inspect::ExpectKind::top1)
      config.sources["max_new_tokens"] = "golden file";
    PromptOptions po;
    po.prompt = c.prompt;
    po.chat = c.chat;
    po.system = c.system;
    try {
      prompts[k] = prompt_tokens(po, lm);
    } catch (const Error& e) {
      fail("{} line {}: {}", o.golden, c.line, e.what());
    }
    decode::GenerateOptions go;
    go.token_bytes = [&](std::int32_t id) { return lm.token_bytes(id); };
    inspect::CaseOutput& out = rows[k].out;
    if (decode::is_beam(decode::decode_mode(config))) {
      // Beam search reports no tokens as it goes: the raw top-1 comes from its step traces.
      go.trace_top_n = 1;
      go.on_step = [&out](const decode::StepTrace& s) {
        if (s.sequence == 0 && !s.raw_top.empty()) out.raw_top1.push_back(s.raw_top.front().id);
      };
    } else {
      // The raw argmax straight from the logits: a step trace (softmax, entropy and top-N after
      // every stage over the whole vocabulary) made eval ~4x slower per token than generate.
      go.on_token = [&out, &progress](int sequence, const decode::TokenChoice& choice) {
        if (sequence == 0) {
          const auto best =
              std::max_element(choice.raw.begin(), choice.raw.end());  // first of ties
          out.raw_top1.push_back(static_cast<std::int32_t>(best - choice.raw.begin()));
        }
        if (progress) progress->advance();
      };
    }
    jobs.push_back({prompts[k], config, std::move(go)});
  }
  // Every case generated together (one forward pass per token for the whole golden set).
  std::size_t budget = 0;
  for (const auto& job : jobs)
    budget += static_cast<std::size_t>(decode::max_new_tokens_for(job.config, job.prompt.size()));
  if (!decode::is_beam(decode::decode_mode(base))) progress.emplace("eval", budget);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<decode::GenerationRun> runs = decode::generate_batch(source, jobs);
  progress.reset();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // The decoding every case ran with; a seed only when something is drawn.
  const decode::DecodeMode mode = decode::decode_mode(base);
  const bool drawn = mode == decode::DecodeMode::sample || mode == decode::DecodeMode::beam_sample;
  const std::uint64_t seed = base.seed.value_or(0);
  std::size_t tokens = 0;
  for (const auto& run : runs) tokens += run.sequences.front().tokens.size();
  const double tok_per_s = seconds > 0 ? static_cast<double>(tokens) / seconds : 0.0;
  int passed = 0;
  for (std::size_t k = 0; k < cases.size(); ++k) {
    Row& row = rows[k];
    row.c = &cases[k];
    row.out.text = runs[k].sequences.front().text;
    row.out.tokens = runs[k].sequences.front().tokens;
    row.r = inspect::check_case(cases[k], row.out, text_of);
    passed += row.r.pass ? 1 : 0;
  }
  const double rate = static_cast<double>(passed) / static_cast<double>(cases.size());
  const bool ok = rate >= o.min_rate;
  if (!ok) exit_status = kExitThreshold;
  if (o.json) {
    nlohmann::ordered_json j;
    j["golden"] = o.golden;
    j["model"] = lm.model().path();
    j["mode"] = decode::to_string(mode);
    if (drawn) j["seed"] = seed;
    j["cases"] = nlohmann::ordered_json::array();
    for (const auto& row : rows) {
      nlohmann::ordered_json cj;
      cj["id"] = row.c->id;
      cj["line"] = row.c->line;
      cj["kind"] = inspect::to_string(row.c->kind);
      if (row.c->expected_id)
        cj["expected"] = *row.c->expected_id;
      else
        cj["expected"] = row.c->expected_text;
      if (row.c->kind == inspect::ExpectKind::top1) cj["step"] = row.c->step;
      cj["pass"] = row.r.pass;
      cj["got"] = decode::sanitize_utf8(row.r.got);
      cj["text"] = decode::sanitize_utf8(row.out.text);
      cj["tokens"] = row.out.tokens;
      cj["raw_top1"] = row.out.raw_top1;
      j["cases"].push_back(std::move(cj));
    }
    j["passed"] = passed;
    j["total"] = cases.size();
    j["match_rate"] = rate;
    j["min_rate"] = o.min_rate;
    j["ok"] = ok;
    j["generated_tokens"] = tokens;
    j["seconds"] = seconds;
    j["tokens_per_s"] = tok_per_s;
    print_json_line(j);
    return;
  }
  fmt::print("eval {} · {} cases · {}{} · {}\n\n", o.golden, cases.size(), decode::to_string(mode),
             drawn
                 ? fmt::format(" · seed {}{}", seed, base.seed ? "" : " (fixed, for repeatability)")
                 : "",
             lm.model().path());
  fmt::print("{:>3}  {:<16} {:<9} {:<24} {:<32} {}\n", "#", "id", "kind", "expected", "got",
             "result");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& c = *rows[i].c;
    const std::string expected =
        c.expected_id ? fmt::format("{}", *c.expected_id) : "\"" + clip(c.expected_text, 20) + "\"";
    const std::string kind =
        c.kind == inspect::ExpectKind::top1 ? fmt::format("top1@{}", c.step) : to_string(c.kind);
    fmt::print(
        "{:>3}  {} {:<9} {} {} {}\n", i + 1, pad_to_width(clip(c.id, 16), 16), kind,
        pad_to_width(expected, 24),
        pad_to_width(c.kind == inspect::ExpectKind::top1 ? clip(rows[i].r.got, 30)
                                                         : "\"" + clip(rows[i].r.got, 28) + "\"",
                     32),
        rows[i].r.pass ? "PASS" : "FAIL");
  }
  fmt::print("\nmatch rate {}/{} = {:.1f}%   threshold {:.1f}%   {}\n", passed, cases.size(),
             100 * rate, 100 * o.min_rate, ok ? "OK" : "BELOW THRESHOLD (exit status 3)");
  fmt::print("{} tokens generated in {:.2f} s ({:.1f} tok/s, every case in one batch)\n", tokens,
             seconds, tok_per_s);
}

}  // namespace

void add_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalCli>();
  auto* cmd = app.add_subcommand(
      "eval", "Run a golden set (JSONL: prompt + exact/contains/top1) and report the match rate");
  add_model_options(*cmd, o->model);
  cmd->add_option("--golden", o->golden,
                  "JSON Lines: {\"id\", \"prompt\", \"chat\", \"system\", one of \"exact\", "
                  "\"contains\", \"top1\" (+ \"step\"), \"max_new_tokens\"}")
      ->required();
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--min-rate", o->min_rate,
                  "Exit with status 3 when the match rate is below this (0..1)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { run_eval(*o); });
}

}  // namespace ls::app
