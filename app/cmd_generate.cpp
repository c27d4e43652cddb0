// `logitscope generate`: decode a continuation with transformers' semantics (defaults from the
// model's generation_config.json, HF-named flags on top), streaming the text, or with --trace N
// showing every stage of every step, or with --json writing the trace as JSON Lines. The flags
// and the model-backed logits source are shared with `chat` (generation_cli.h).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "app/generation_cli.h"
#include "app/prompt.h"
#include "core/error.h"
#include "decode/generate.h"
#include "decode/trace_json.h"
#include "decode/trace_text.h"
#include "model/model.h"

namespace ls::app {

namespace {

struct GenerateCli {
  ModelOptions model;
  PromptOptions prompt;
  GenerationFlags flags;
  int trace = 0;
  bool json = false;
};

void print_json(const nlohmann::json& j) {
  fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::fflush(stdout);
}

void print_trace_header(const nlohmann::json& h) {
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

void run_generate(GenerateCli& o) {
  LoadedModel lm = load_model(o.model);
  decode::GenerationConfig config = generation_config_from(o.flags, lm);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  ThreadPool pool(o.model.threads);
  SessionSource source(*lm.model, pool);

  decode::GenerateOptions go;
  if (lm.tokenizer) go.token_bytes = [&](std::int32_t id) { return token_bytes(lm, id); };
  go.context_limit = static_cast<std::int32_t>(lm.model->config().max_position_embeddings);
  go.trace_top_n = o.trace > 0 ? o.trace : 5;
  int last_sequence = -1;
  const bool several = config.num_return_sequences > 1;
  if (o.json) {
    go.on_header = [&](const nlohmann::json& h) {
      nlohmann::json header = h;
      header["model"] = lm.model->path();
      header["prompt_token_ids"] = ids;
      if (!o.prompt.rendered.empty()) header["prompt"] = o.prompt.rendered;
      print_json(header);
    };
    go.on_step = [&](const decode::StepTrace& s) {
      print_json(decode::step_json(s, go.token_bytes));
    };
  } else if (o.trace > 0) {
    go.on_header = print_trace_header;
    go.on_step = [&](const decode::StepTrace& s) {
      fmt::print("{}", decode::format_step(s, go.token_bytes));
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
  const auto start = std::chrono::steady_clock::now();
  const decode::GenerationRun run = decode::generate(source, ids, config, go);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::size_t total_tokens = 0;
  for (const auto& r : run.sequences) total_tokens += r.tokens.size();
  if (o.json) {
    for (std::size_t i = 0; i < run.sequences.size(); ++i) {
      const auto& r = run.sequences[i];
      print_json({{"type", "result"},
                  {"sequence", i},
                  {"tokens", r.tokens},
                  {"text", decode::sanitize_utf8(r.text)},
                  {"finish_reason", decode::to_string(r.finish)},
                  {"message", r.message},
                  {"logprob", r.logprob},
                  {"processed_logprob", r.processed_logprob},
                  {"score", r.score},
                  {"seconds", seconds}});
    }
    return;
  }
  if (o.trace > 0) {
    for (std::size_t i = 0; i < run.sequences.size(); ++i) {
      const auto& r = run.sequences[i];
      fmt::print(
          "── result{}: {} tokens, finish {} ({}), logprob {:.4f}{}\n",
          several ? fmt::format(" {}", i) : "", r.tokens.size(), decode::to_string(r.finish),
          r.message, r.logprob,
          run.mode == decode::DecodeMode::beam_search || run.mode == decode::DecodeMode::beam_sample
              ? fmt::format(", beam score {:.4f}", r.score)
              : "");
      fmt::print("{}\n", r.text);
    }
  } else {
    fmt::print("\n");
  }
  std::fflush(stdout);
  const auto& first = run.sequences.front();
  fmt::print(stderr, "[{} · {} token{} · finish {}: {} · seed {} · {:.1f} tok/s]\n",
             decode::to_string(run.mode), total_tokens, total_tokens == 1 ? "" : "s",
             decode::to_string(first.finish), first.message, run.seed,
             seconds > 0 ? static_cast<double>(total_tokens) / seconds : 0.0);
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto o = std::make_shared<GenerateCli>();
  auto* cmd = app.add_subcommand(
      "generate", "Generate text with transformers' decoding rules; --trace shows every stage");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--trace", o->trace, "Show each step: raw top-N, every stage, the choice")
      ->expected(0, 1)
      ->default_str("5");
  cmd->add_flag("--json", o->json, "Write JSON Lines (header, one object per step, results)");
  cmd->callback([o] { run_generate(*o); });
}

}  // namespace ls::app
