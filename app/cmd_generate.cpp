// `logitscope generate`: decode a continuation with transformers' semantics (defaults from the
// model's generation_config.json, HF-named flags on top), streaming the text, or with --trace [N]
// showing every stage of every step, or with --json writing the trace as JSON Lines. The flags
// and the model-backed logits source are shared with `chat` (generation_cli.h).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include <unistd.h>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/progress.h"
#include "app/prompt.h"
#include "chat/reasoning.h"
#include "core/error.h"
#include "decode/generate.h"
#include "decode/trace_json.h"
#include "decode/trace_text.h"
#include "engine/engine.h"
#include "inspect/svg.h"

namespace ls::app {

namespace {

struct GenerateCli {
  ModelOptions model;
  PromptOptions prompt;
  std::string prompts;  // --prompts FILE: every prompt generated together
  GenerationFlags flags;
  // --trace [N]: the text trace of the first N steps (bare: every step; 0 or absent: none).
  CLI::Option* trace_flag = nullptr;
  std::string trace_text;
  int trace = 0;  // steps shown; INT_MAX for every step
  int top = 5;    // --top N: candidates per stage in the trace and the JSON steps
  bool json = false;
  std::string dump_logits;  // per-step raw logits of sequence 0, for `replay`
  std::string svg;          // entropy and chosen probability over the steps
  // --experts N|all: of each layer's chosen experts, the best N in --trace (a mixture of experts).
  std::string experts_text = "2";
  std::size_t experts = 2;
};

// Whether the steps carry the router's choice: a mixture of experts, traced as JSON or as text
// with experts shown.
bool traces_experts(const GenerateCli& o, const LoadedModel& lm) {
  return lm.model().config().moe.experts_per_token > 0 &&
         (o.json || (o.trace > 0 && o.experts > 0));
}

// The --svg chart of a generation: entropy before/after the chain and the chosen token's
// probability per step; each point's tooltip lists the top raw alternatives.
void write_generation_svg(const std::string& path, const std::vector<decode::StepTrace>& steps,
                          const LoadedModel& lm) {
  inspect::SvgSeries h_raw{"entropy raw (nats)", {}, "#4878d0", false, {}};
  inspect::SvgSeries h_final{"entropy final (nats)", {}, "#6acc64", false, {}};
  inspect::SvgSeries p_chosen{"chosen prob (final)", {}, "#d65f5f", true, {}};
  inspect::SvgSeries p_raw{"chosen prob (raw)", {}, "#ee854a", true, {}};
  std::vector<std::string> labels;
  for (const auto& s : steps) {
    if (s.sequence != 0 || s.chosen < 0) continue;
    std::string alts;
    for (const auto& t : s.raw_top)
      alts += fmt::format("{} {:.1f}%; ", token_label(lm, t.id), 100 * t.prob);
    h_raw.y.push_back(s.entropy_before);
    h_final.y.push_back(s.entropy_after);
    p_chosen.y.push_back(s.chosen_prob);
    p_raw.y.push_back(s.chosen_raw_prob);
    for (auto* se : {&h_raw, &h_final, &p_chosen, &p_raw}) se->notes.push_back("top: " + alts);
    labels.push_back(inspect::svg_token_label(token_label(lm, s.chosen, 10)));
  }
  inspect::write_svg_file(
      path, inspect::line_chart_svg(
                "generation: entropy and chosen-token probability per step", "step (chosen token)",
                labels, {h_raw, h_final, p_chosen, p_raw}, {}, "entropy (nats)", "probability"));
}

void print_trace_header(const decode::RunHeader& header) {
  const nlohmann::json h = decode::header_json(header);
  fmt::print("mode {}   seed {} ({})   order preset {}   prompt {} tokens\n",
             h["mode"].get<std::string>(), h["seed"].get<std::uint64_t>(),
             h["seed_source"].get<std::string>(), h["order_preset"].get<std::string>(),
             h["prompt_tokens"].get<std::size_t>());
  fmt::print("chain {}\n", h["chain"].get<std::string>());
  std::string set;
  for (const auto& [name, entry] : h["settings"].items()) {
    if (entry["source"] == "default") continue;
    set += fmt::format("  {}={} ({})\n", name, entry["value"].dump(),
                       entry["source"].get<std::string>());
  }
  if (!set.empty()) fmt::print("settings not at their defaults:\n{}", set);
  fmt::print("\n");
}

nlohmann::json result_json(const decode::GenerationResult& r, std::size_t sequence,
                           double seconds) {
  nlohmann::json j = {{"type", "result"},
                      {"sequence", sequence},
                      {"tokens", r.tokens},
                      {"text", decode::sanitize_utf8(r.text)},
                      {"finish_reason", decode::to_string(r.finish)},
                      {"message", r.message},
                      {"logprob", r.logprob},
                      {"processed_logprob", r.processed_logprob},
                      {"score", r.score},
                      {"seconds", seconds}};
  // A thinking model's reply (Qwen3: "<think>...</think>answer") also comes split.
  const chat::ReasoningDelta d = chat::split_reasoning(r.text);
  if (d.content != r.text) {
    j["reasoning"] = decode::sanitize_utf8(d.reasoning);
    j["answer"] = decode::sanitize_utf8(d.content);
  }
  return j;
}

// A seed only matters when something is drawn (sampling, beam sampling).
bool drawn(decode::DecodeMode mode) {
  return mode == decode::DecodeMode::sample || mode == decode::DecodeMode::beam_sample;
}

// --prompts FILE: one job per prompt, all stepped together (one forward pass per token for the
// whole batch). --json lines carry "prompt_index"; text and traces are printed per prompt once
// the batch is done, since the prompts' steps interleave.
void run_generate_batch(GenerateCli& o) {
  if (!o.prompt.tokens.empty() || !o.prompt.prompt.empty())
    fail("--prompts FILE replaces --prompt/--tokens: give one or the other");
  if (!o.dump_logits.empty() || !o.svg.empty())
    fail("--dump-logits and --svg record one prompt; run it without --prompts");
  LoadedModel lm = load_model(o.model);
  const decode::GenerationConfig config = generation_config_from(o.flags, lm);
  const std::vector<FilePrompt> file = read_prompt_file(o.prompts);
  std::vector<std::vector<std::int32_t>> ids(file.size());
  std::vector<std::string> rendered(file.size()), shown(file.size());
  for (std::size_t i = 0; i < file.size(); ++i)
    ids[i] = file_prompt_tokens(file[i], o.prompt, lm, &rendered[i]);
  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  const decode::TokenBytesFn token_bytes =
      lm.tokenizer() ? decode::TokenBytesFn([&](std::int32_t id) { return lm.token_bytes(id); })
                     : decode::TokenBytesFn();
  std::vector<decode::Request> jobs;
  for (std::size_t i = 0; i < file.size(); ++i) {
    decode::GenerateOptions go;
    go.token_bytes = token_bytes;
    go.trace_top_n = o.top;
    go.expert_routes = traces_experts(o, lm);
    std::string& out = shown[i];
    if (o.json) {
      go.on_header = [&, i](const decode::RunHeader& h) {
        nlohmann::json header = decode::header_json(h);
        header["prompt_index"] = i;
        header["model"] = lm.path();
        header["prompt_token_ids"] = ids[i];
        if (!rendered[i].empty()) header["prompt"] = rendered[i];
        print_json_line(header);
      };
      go.on_step = [&, i](const decode::StepTrace& st) {
        nlohmann::json j = decode::step_json(st, token_bytes);
        j["prompt_index"] = i;
        print_json_line(j);
      };
    } else if (o.trace > 0) {
      go.on_step = [&out, &token_bytes, &o](const decode::StepTrace& st) {
        if (st.step < o.trace) out += decode::format_step(st, token_bytes, o.experts);
      };
    }
    jobs.push_back({ids[i], for_reply(config, rendered[i], lm), std::move(go)});
  }
  // Nothing streams in a batch: the progress line counts every prompt's tokens.
  std::optional<Progress> progress;
  if (!decode::is_beam(decode::decode_mode(config))) {
    std::size_t total = 0;
    for (const auto& prompt : ids)
      total += static_cast<std::size_t>(decode::max_new_tokens_for(config, prompt.size()) *
                                        config.num_return_sequences);
    progress.emplace("generate", total);
    for (auto& job : jobs)
      job.options.on_token = [&progress](int, const decode::TokenChoice&) { progress->advance(); };
  }
  const auto start = std::chrono::steady_clock::now();
  const std::vector<decode::GenerationRun> runs = decode::generate_batch(engine, jobs);
  progress.reset();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::size_t total_tokens = 0;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t k = 0; k < runs[i].sequences.size(); ++k) {
      const auto& r = runs[i].sequences[k];
      total_tokens += r.tokens.size();
      if (o.json) {
        nlohmann::json j = result_json(r, k, seconds);
        j["prompt_index"] = i;
        print_json_line(j);
        continue;
      }
      if (k == 0)
        fmt::print("{}── prompt {} (line {}, {} tokens): \"{}\"\n{}", i ? "\n" : "", i,
                   file[i].line, ids[i].size(), printable(clip_utf8(rendered[i], 60)), shown[i]);
      if (runs[i].sequences.size() > 1) fmt::print("[sequence {}] ", k);
      fmt::print("{}\n[finish {}: {} · logprob {:.4f}{}]\n", r.text, decode::to_string(r.finish),
                 r.message, r.logprob,
                 drawn(runs[i].mode) ? fmt::format(" · seed {}", runs[i].seed) : "");
    }
  }
  std::fflush(stdout);
  // Without --seed each prompt draws its own (printed with its result); with one, all share it.
  std::string seeds;
  if (!runs.empty() && drawn(runs.front().mode)) {
    const bool shared = std::all_of(runs.begin(), runs.end(),
                                    [&](const auto& run) { return run.seed == runs.front().seed; });
    seeds = shared ? fmt::format(" · seed {}", runs.front().seed)
                   : " · a seed per prompt (with its result)";
  }
  fmt::print(stderr, "[{} · {} prompts generated together · {} tokens{} · {:.1f} tok/s in total]\n",
             runs.empty() ? "" : decode::to_string(runs.front().mode), runs.size(), total_tokens,
             seeds, seconds > 0 ? static_cast<double>(total_tokens) / seconds : 0.0);
}

// --trace's steps: bare, every step; N, the first N (0: none).
int trace_steps(const GenerateCli& o) {
  if (o.trace_flag->count() == 0) return 0;
  if (o.trace_text.empty()) return std::numeric_limits<int>::max();
  int n = -1;
  const char* end = o.trace_text.data() + o.trace_text.size();
  const auto [p, ec] = std::from_chars(o.trace_text.data(), end, n);
  if (ec != std::errc() || p != end || n < 0)
    fail("--trace takes the number of steps to show (bare: every step), got '{}'", o.trace_text);
  return n;
}

void run_generate(GenerateCli& o) {
  o.trace = trace_steps(o);
  o.experts = parse_experts_shown(o.experts_text);
  if (!o.prompts.empty()) return run_generate_batch(o);
  LoadedModel lm = load_model(o.model);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  decode::GenerationConfig config =
      for_reply(generation_config_from(o.flags, lm), o.prompt.rendered, lm);
  ThreadPool pool(o.model.threads);
  engine::Engine session_source(lm.model(), pool);
  RecordingSource recorder(session_source);
  decode::LogitsSource& source = o.dump_logits.empty()
                                     ? static_cast<decode::LogitsSource&>(session_source)
                                     : static_cast<decode::LogitsSource&>(recorder);
  if (!o.dump_logits.empty() && config.num_beams > 1)
    fail("--dump-logits records one sequence step by step; it needs --num-beams 1");

  decode::GenerateOptions go;
  if (lm.tokenizer()) go.token_bytes = [&](std::int32_t id) { return lm.token_bytes(id); };
  go.trace_top_n = o.top;
  go.expert_routes = traces_experts(o, lm);
  int last_sequence = -1;
  const bool several = config.num_return_sequences > 1;
  if (o.json) {
    go.on_header = [&](const decode::RunHeader& h) {
      nlohmann::json header = decode::header_json(h);
      header["model"] = lm.model().path();
      header["prompt_token_ids"] = ids;
      if (!o.dump_logits.empty())
        header["logits_file"] = std::filesystem::absolute(o.dump_logits).string();
      if (!o.prompt.rendered.empty()) header["prompt"] = o.prompt.rendered;
      print_json_line(header);
    };
    go.on_step = [&](const decode::StepTrace& s) {
      print_json_line(decode::step_json(s, go.token_bytes));
    };
  } else if (o.trace > 0) {
    go.on_header = print_trace_header;
    go.on_step = [&](const decode::StepTrace& s) {
      if (s.step >= o.trace) return;
      fmt::print("{}", decode::format_step(s, go.token_bytes, o.experts));
      std::fflush(stdout);
    };
  } else {
    go.on_text = [&](int seq, std::string_view text) {
      if (several && seq != last_sequence) {
        fmt::print("{}[sequence {}]\n", last_sequence >= 0 ? "\n\n" : "", seq);
        last_sequence = seq;
      }
      fmt::print("{}", text);
      std::fflush(stdout);
    };
  }
  std::vector<decode::StepTrace> svg_steps;
  if (!o.svg.empty()) {
    auto shown = go.on_step;
    go.on_step = [&svg_steps, shown](const decode::StepTrace& s) {
      if (shown) shown(s);
      svg_steps.push_back(s);
    };
  }
  // A progress line when the text is not streaming to the terminal (--json, a redirect).
  std::optional<Progress> progress;
  if (isatty(STDOUT_FILENO) != 1 && !decode::is_beam(decode::decode_mode(config))) {
    const auto total = static_cast<std::size_t>(decode::max_new_tokens_for(config, ids.size())) *
                       static_cast<std::size_t>(config.num_return_sequences);
    progress.emplace("generate", total);
    go.on_token = [&progress](int, const decode::TokenChoice&) { progress->advance(); };
  }
  const auto start = std::chrono::steady_clock::now();
  const decode::GenerationRun run = decode::generate(source, ids, config, go);
  progress.reset();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!o.dump_logits.empty()) {
    // One row per generated token of sequence 0 (the loop feeds no row after the last one).
    const auto V = static_cast<std::size_t>(source.vocab_size());
    std::vector<float> rows = recorder.rows();
    rows.resize(std::min(rows.size(), run.sequences.front().tokens.size() * V));
    write_rows_npy(o.dump_logits, rows, static_cast<std::int64_t>(V));
  }
  if (!o.svg.empty()) write_generation_svg(o.svg, svg_steps, lm);
  std::size_t total_tokens = 0;
  for (const auto& r : run.sequences) total_tokens += r.tokens.size();
  if (o.json) {
    for (std::size_t i = 0; i < run.sequences.size(); ++i)
      print_json_line(result_json(run.sequences[i], i, seconds));
    return;
  }
  if (o.trace > 0) {
    for (std::size_t i = 0; i < run.sequences.size(); ++i) {
      const auto& r = run.sequences[i];
      fmt::print("── result{}: {} tokens, finish {} ({}), logprob {:.4f}{}\n",
                 several ? fmt::format(" {}", i) : "", r.tokens.size(), decode::to_string(r.finish),
                 r.message, r.logprob,
                 decode::is_beam(run.mode) ? fmt::format(", beam score {:.4f}", r.score) : "");
      fmt::print("{}\n", r.text);
    }
  } else {
    fmt::print("\n");
  }
  std::fflush(stdout);
  const auto& first = run.sequences.front();
  fmt::print(stderr, "[{} · {} token{} · finish {}: {}{} · {:.1f} tok/s]\n",
             decode::to_string(run.mode), total_tokens, total_tokens == 1 ? "" : "s",
             decode::to_string(first.finish), first.message,
             drawn(run.mode) ? fmt::format(" · seed {}", run.seed) : "",
             seconds > 0 ? static_cast<double>(total_tokens) / seconds : 0.0);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateCli>();
  auto* cmd = app.add_subcommand(
      "generate", "Generate text with transformers' decoding rules; --trace shows every stage");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  cmd->add_option("--prompts", o->prompts,
                  "Generate for every prompt of FILE together (one per line, or JSON Lines with "
                  "\"prompt\" or \"messages\"); each result equals that prompt run alone");
  add_generation_flags(*cmd, o->flags);
  o->trace_flag = cmd->add_option("--trace", o->trace_text,
                                  "Show each step: raw top candidates, the pool after every "
                                  "stage, the choice (a mixture of experts: also the experts "
                                  "each layer chose, see --experts); N: the first N steps only "
                                  "(bare: every step)")
                      ->expected(0, 1)
                      ->type_name("[N]");
  cmd->add_option("--top", o->top,
                  "Candidates shown per stage in --trace and --json steps (1-1000)")
      ->check(CLI::Range(1, 1000).description(""))
      ->capture_default_str();
  cmd->add_option("--experts", o->experts_text,
                  "Mixture-of-experts models: per layer, how many of the experts the router chose "
                  "for each step's input token --trace lists (best first, with weights; 'all', or "
                  "0 for none). --json steps always carry every layer's full choice")
      ->type_name("N|all")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Write JSON Lines (header, one object per step, results)");
  cmd->add_option("--dump-logits", o->dump_logits,
                  "Write each step's raw logits to FILE.npy ([steps, vocab] float32; the --json "
                  "header names it as logits_file, for `logitscope replay`)");
  cmd->add_option("--svg", o->svg,
                  "Write entropy and chosen-token probability per step (top alternatives in "
                  "tooltips) to FILE.svg");
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace ls::app
