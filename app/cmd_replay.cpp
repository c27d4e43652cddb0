// `logitscope replay`: re-score a recorded generation (`generate --json --dump-logits F.npy`)
// under other decoding flags without running the model: which steps would have chosen
// differently, the new pools and probabilities. Settings start from the ones the trace recorded;
// flags override. --fork STEP=TOKEN loads the model and continues from the recorded prefix with
// TOKEN forced at STEP, to show the road not taken.
#include <fmt/format.h>

#include <charconv>
#include <filesystem>
#include <memory>

#include "app/commands.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/model_source.h"
#include "core/error.h"
#include "core/text_width.h"
#include "decode/generate.h"
#include "decode/order.h"
#include "decode/trace_json.h"
#include "engine/engine.h"
#include "inspect/boundaries.h"
#include "inspect/npy_read.h"
#include "inspect/replay.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

namespace {

struct ReplayCli {
  std::string trace;
  std::string logits;  // overrides the header's logits_file
  std::string model;   // overrides the header's model (tokenizer, and weights for --fork)
  int threads = 0;
  GenerationFlags flags;
  int top = 3;
  std::string fork;
  bool json = false;
  bool boundaries = false;
};

struct Fork {
  int step = 0;
  std::int32_t token = 0;
};

Fork parse_fork(const std::string& text, const LoadedModel& lm, std::size_t steps) {
  const auto eq = text.find('=');
  if (eq == std::string::npos)
    fail("--fork must be STEP=TOKEN (a token id or text), got '{}'", text);
  Fork f;
  const std::string step = text.substr(0, eq), tok = text.substr(eq + 1);
  auto [p, ec] = std::from_chars(step.data(), step.data() + step.size(), f.step);
  if (ec != std::errc() || p != step.data() + step.size() || f.step < 0 ||
      static_cast<std::size_t>(f.step) > steps)
    fail("--fork: STEP must be an integer from 0 to {} (the recorded steps), got '{}'", steps,
         step);
  auto [q, ec2] = std::from_chars(tok.data(), tok.data() + tok.size(), f.token);
  if (ec2 == std::errc() && q == tok.data() + tok.size()) {
    if (f.token < 0 || f.token >= lm.model().config().vocab_size)
      fail("--fork: token id {} is outside the vocabulary ({})", f.token,
           lm.model().config().vocab_size);
    return f;
  }
  if (!lm.tokenizer()) fail("--fork: token text '{}' needs a tokenizer.json", tok);
  const auto ids = lm.tokenizer()->encode(tok, true);
  if (ids.size() != 1)
    fail("--fork: '{}' is {} tokens, give one token (or its id)", tok, ids.size());
  f.token = ids.front();
  return f;
}

void print_boundaries(const LoadedModel& lm, const std::vector<inspect::ReplayStep>& steps,
                      const std::vector<inspect::StepBoundaries>& bounds) {
  fmt::print(
      "\ndecision boundaries (each setting varied alone, the step's draw kept): the "
      "interval that keeps the choice; '!' within 10 % of an end; '-' greedy\n");
  fmt::print("{:>4}  {:<22} {:<19} {:<17} {:<19} {:<19} {:<19}\n", "step", "chosen", "temperature",
             "top_k", "top_p", "min_p", "repetition_penalty");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    std::string row;
    for (const inspect::Boundary& b : bounds[i].settings) {
      std::string cell = "-";
      if (b.applies) {
        const auto end = [&](double v, double edge) {
          return v == edge ? std::string("..") : fmt::format("{:.4g}", v);
        };
        cell = fmt::format("[{}, {}]{}", end(b.lo, b.min), end(b.hi, b.max), b.fragile ? "!" : "");
      }
      row += fmt::format(" {:<19}", cell);
    }
    fmt::print("{:>4}  {}{}\n", steps[i].step, pad_to_width(token_cell(lm, steps[i].chosen), 22),
               row);
  }
}

void run_replay(ReplayCli& o) {
  const inspect::Recording rec = inspect::read_trace(o.trace);
  const std::string logits_path = o.logits.empty() ? rec.logits_file : o.logits;
  if (logits_path.empty())
    fail(
        "--trace {}: the trace names no logits file; record with `generate --json "
        "--dump-logits FILE.npy` or give --logits FILE.npy",
        o.trace);
  const inspect::NpyF32 npy = inspect::read_npy_f32(logits_path);
  if (npy.shape.size() != 2)
    fail("{}: expected a [steps, vocab] array, got {} dimensions", logits_path, npy.shape.size());
  const auto vocab = static_cast<std::int32_t>(npy.shape[1]);

  // Token text from the model's tokenizer; the weights are loaded only for --fork.
  const std::string model_dir = resolve_model_spec(
      !o.model.empty() ? o.model : rec.header.value("model", ""), "main", false, "--model");
  if (!o.fork.empty() && model_dir.empty())
    fail("--fork needs the model: the trace names none, give --model");
  ModelOptions fork_model{model_dir};
  fork_model.threads = o.threads;
  const LoadedModel lm =
      !o.fork.empty() ? load_model(fork_model) : LoadedModel::tokenizer_only(model_dir);

  decode::GenerationConfig config = replay_config(rec, o.trace, o.flags, lm);
  decode::validate(config);
  const std::vector<inspect::ReplayStep> steps =
      inspect::replay(rec, npy.data, vocab, config, o.top);
  const std::string new_mode = decode::to_string(decode::decode_mode(config));
  // Each step's decision boundaries under the new settings, with the step's draw.
  std::vector<inspect::StepBoundaries> bounds;
  if (o.boundaries) {
    std::vector<std::int32_t> history = rec.prompt;
    for (const auto& st : steps) {
      const auto k = static_cast<std::size_t>(st.step);
      bounds.push_back(inspect::step_boundaries(
          std::span<const float>(npy.data).subspan(k * static_cast<std::size_t>(vocab),
                                                   static_cast<std::size_t>(vocab)),
          history, rec.prompt.size(), config, st.draw, st.chosen));
      history.push_back(rec.steps[k].chosen);
    }
  }
  int changed = 0;
  for (const auto& s : steps) changed += s.changed ? 1 : 0;

  nlohmann::ordered_json fork_json;
  std::string fork_text;
  if (!o.fork.empty()) {
    const Fork f = parse_fork(o.fork, lm, rec.steps.size());
    ThreadPool pool(o.threads);
    engine::Engine source(lm.model(), pool);
    const inspect::ForkResult fr = inspect::replay_fork(
        source, rec, f.step, f.token, config, [&](std::int32_t id) { return lm.token_bytes(id); });
    const auto& r = fr.continuation;
    const std::vector<std::int32_t> forced(
        fr.tokens.begin(), fr.tokens.end() - static_cast<std::ptrdiff_t>(r.tokens.size()));
    const std::string forced_prefix =
        lm.tokenizer() ? lm.tokenizer()->decode(forced, /*skip_special=*/true) : "";
    fork_text = forced_prefix + r.text;
    fork_json = {{"step", f.step},
                 {"token", f.token},
                 {"tokens", fr.tokens},
                 {"text", decode::sanitize_utf8(fork_text)},
                 {"finish_reason", decode::to_string(r.finish)},
                 {"finish_message", r.message},
                 {"generated", r.tokens.size()},
                 {"logprob_continuation", r.logprob}};
  }

  if (o.json) {
    nlohmann::ordered_json j;
    j["trace"] = o.trace;
    j["logits_file"] = logits_path;
    j["recorded_mode"] = rec.header.value("mode", "");
    j["mode"] = new_mode;
    j["chain"] = steps.empty() ? "" : steps.front().chain;
    j["settings"] = decode::settings_json(config);
    j["steps"] = nlohmann::ordered_json::array();
    for (const auto& s : steps) {
      nlohmann::ordered_json sj{{"step", s.step},
                                {"recorded", s.recorded},
                                {"chosen", s.chosen},
                                {"changed", s.changed},
                                {"pool", s.pool},
                                {"entropy", s.entropy},
                                {"recorded_prob", s.recorded_prob},
                                {"chosen_prob", s.chosen_prob}};
      sj["draw"] = s.draw ? nlohmann::ordered_json(*s.draw) : nlohmann::ordered_json();
      if (o.boundaries)
        sj["boundaries"] = inspect::boundaries_json(bounds[static_cast<std::size_t>(s.step)]);
      sj["top"] = nlohmann::ordered_json::array();
      for (const auto& t : s.top)
        sj["top"].push_back({{"id", t.id},
                             {"text", lm.token_text(t.id)},
                             {"logit", t.logit},
                             {"raw_prob", t.raw_prob},
                             {"prob", t.prob}});
      j["steps"].push_back(std::move(sj));
    }
    j["changed"] = changed;
    if (!o.fork.empty()) j["fork"] = fork_json;
    print_json_line(j);
    return;
  }
  fmt::print("replay of {}: {} steps recorded in mode {} · logits {}\n", o.trace, steps.size(),
             rec.header.value("mode", "?"), logits_path);
  fmt::print("recorded chain  {}\nnew chain       {} ({})\n\n", rec.header.value("chain", "?"),
             steps.empty() ? "" : steps.front().chain, new_mode);
  fmt::print("{:>4}  {:<22} {:>8}  {:<22} {:>8} {:>7} {:>7}  {}\n", "step", "recorded", "p(new)",
             "new choice", "p", "pool", "H nats", "new top");
  for (const auto& s : steps) {
    std::string tops;
    for (const auto& t : s.top)
      tops += fmt::format("{} {:.1f}%  ", token_cell(lm, t.id), 100 * t.prob);
    fmt::print("{:>4}  {} {:>7.2f}%  {} {:>7.2f}% {:>7} {:>7.3f}  {}{}\n", s.step,
               pad_to_width(token_cell(lm, s.recorded), 22), 100 * s.recorded_prob,
               pad_to_width(s.changed ? token_cell(lm, s.chosen) : "(same)", 22),
               100 * s.chosen_prob, s.pool, s.entropy, s.changed ? "CHANGED  " : "", tops);
  }
  fmt::print("\n{} of {} steps would have chosen differently under the new settings{}\n", changed,
             steps.size(),
             new_mode == "sample" ? " (sampling reuses each step's recorded draw)" : "");
  if (o.boundaries) print_boundaries(lm, steps, bounds);
  if (!o.fork.empty()) {
    // The fork's tokens: the recorded steps before it, the forced token, then new ones.
    const int step = fork_json["step"].get<int>();
    const std::size_t generated = fork_json["generated"].get<std::size_t>();
    fmt::print(
        "\nfork at step {} with {}: {} tokens = {} recorded + 1 forced + {} generated; finish {} "
        "({}); logprob of the generated part {:.4f}\n\"{}\"\n",
        step, token_cell(lm, fork_json["token"].get<std::int32_t>()), fork_json["tokens"].size(),
        step, generated, fork_json["finish_reason"].get<std::string>(),
        fork_json["finish_message"].get<std::string>(),
        fork_json["logprob_continuation"].get<double>(), printable(fork_text));
  }
}

}  // namespace

void add_replay_command(CLI::App& app) {
  auto o = std::make_shared<ReplayCli>();
  auto* cmd = app.add_subcommand(
      "replay", "Re-score a recorded generation under other flags; --fork STEP=TOKEN continues");
  cmd->add_option("--trace", o->trace, "JSON Lines from `generate --json --dump-logits F.npy`")
      ->required();
  cmd->add_option("--logits", o->logits, "The logits .npy (default: the header's logits_file)");
  cmd->add_option("-m,--model", o->model, "Model directory (default: the header's model)");
  cmd->add_option("--threads", o->threads, "Worker threads for --fork (0 = all)")
      ->check(integer_in(0, 1024));
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--top", o->top, "Candidates listed per step")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--fork", o->fork, "Continue from the recorded prefix with TOKEN at STEP");
  cmd->add_flag("--boundaries", o->boundaries,
                "Per step, the interval of temperature, top_k, top_p, min_p and "
                "repetition_penalty (each alone, with the step's draw) that keeps the choice");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { run_replay(*o); });
}

}  // namespace ls::app
