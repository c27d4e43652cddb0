// `logitscope lens`: the logit lens at one position of a prompt. The residual stream after each
// layer (0: the embedding) through the final norm and lm_head, then through the request's own
// decoding chain with one draw: per layer the top candidates, entropy, the ranks of the chosen
// token and its runner-up, and what the sampler would pick; the layer where the final choice
// first appears and where it settles. A table by default, one JSON object with --json.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/prompt.h"
#include "core/error.h"
#include "core/text_width.h"
#include "engine/lens.h"
#include "inspect/lens.h"
#include "inspect/replay.h"

namespace ls::app {

namespace {

struct LensCli {
  ModelOptions model;
  PromptOptions prompt;
  GenerationFlags flags;
  std::optional<std::int64_t> position;
  std::string trace;  // --trace FILE --step K: a recorded step
  std::optional<int> step;
  int top = 5;
  std::string track, layers;
  std::optional<std::int32_t> token;
  std::optional<double> draw;
  bool json = false;
  std::string dump_logits;
};

void print_table(const LoadedModel& lm, const inspect::LensReport& r,
                 std::span<const std::int32_t> ids, std::span<const int> layers) {
  const model::ModelConfig& c = lm.model().config();
  fmt::print("model     {} ({}, {} layers)\n", lm.path(), c.model_type, c.num_hidden_layers);
  fmt::print("position  {} (after {}: the distribution of the token that follows)\n",
             ids.size() - 1, token_cell(lm, ids.back()));
  fmt::print("chain     {}{}\n", r.chain, r.draw ? fmt::format("   draw {:.6f}", *r.draw) : "");
  fmt::print("chosen    {}   runner-up {}\n", token_cell(lm, r.chosen),
             r.runner_up ? token_cell(lm, *r.runner_up) : "(none)");
  const auto layer_text = [](const std::optional<int>& l) {
    return l ? fmt::format("layer {}", *l) : std::string("never");
  };
  fmt::print("the chain picks it first at {} and at every layer from {}; {}\n\n",
             layer_text(r.first_chosen_layer), layer_text(r.settled_layer),
             r.runner_up_lost_at
                 ? fmt::format("the runner-up ranked above it until layer {}", *r.runner_up_lost_at)
                 : std::string("the runner-up never ranked above it"));
  fmt::print("{:>5}  {:>7}  {:>9}  {:>9}  {:>9}  {:>8}  {:<22}  {}\n", "layer", "H nats", "rank",
             "logprob", "run-up #", "p chain", "chain picks", "top (raw logprob)");
  for (const inspect::LensLayer& l : r.layers) {
    if (!layers.empty() && std::find(layers.begin(), layers.end(), l.layer) == layers.end())
      continue;
    std::string top;
    for (const auto& cand : l.top)
      top += fmt::format("{} {:.2f}  ", token_label(lm, cand.id, 12), cand.logprob);
    fmt::print("{:>5}  {:>7.3f}  {:>9}  {:>9.4f}  {:>9}  {:>8.4f}  {}  {}\n", l.layer, l.entropy,
               l.ranks[0], l.logprobs[0], r.runner_up ? fmt::format("{}", l.ranks[1]) : "-",
               l.chosen_prob, pad_to_width(token_label(lm, l.sampler_choice, 14), 22), top);
  }
  fmt::print(
      "\nrank / logprob: the chosen token in the layer's raw lens distribution; p chain: "
      "its probability after the chain\n");
}

// The context, chain, draw and token of the lens: from the prompt flags, or from step K of a
// recorded generation (its prompt and the tokens before K; its draw, token and settings).
struct LensInput {
  std::vector<std::int32_t> ids;
  std::size_t prompt_length = 0;
  std::int64_t position = 0;
  decode::GenerationConfig config;
  std::optional<double> draw;
  std::optional<std::int32_t> token;
};

LensInput lens_input(LensCli& o, const LoadedModel& lm) {
  LensInput in;
  if (o.trace.empty()) {
    if (o.step) fail("--step needs --trace FILE (a generate --json trace)");
    in.ids = prompt_tokens(o.prompt, lm);
    if (in.ids.empty()) fail("the prompt is empty: give --prompt TEXT or --tokens IDS");
    in.prompt_length = in.ids.size();
    in.config = generation_config_from(o.flags, lm);
  } else {
    if (!o.prompt.tokens.empty() || !o.prompt.prompt.empty())
      fail("--trace replaces --prompt/--tokens: the recorded prompt is used");
    if (o.position) fail("--trace looks at --step K; --position applies to --prompt/--tokens");
    if (!o.step) fail("--trace needs --step K (0-based, the step whose choice to look into)");
    const inspect::Recording rec = inspect::read_trace(o.trace);
    const auto n = static_cast<int>(rec.steps.size());
    if (*o.step < 0 || *o.step >= n)
      fail("--step {} is not a step of {}: it recorded steps 0..{}", *o.step, o.trace, n - 1);
    in.ids = rec.prompt;
    in.prompt_length = rec.prompt.size();
    for (int k = 0; k < *o.step; ++k)
      in.ids.push_back(rec.steps[static_cast<std::size_t>(k)].chosen);
    const inspect::RecordedStep& s = rec.steps[static_cast<std::size_t>(*o.step)];
    in.draw = s.draw;
    in.token = s.chosen;
    in.config = replay_config(rec, o.trace, o.flags, lm);
    decode::validate(in.config);
  }
  const auto n = static_cast<std::int64_t>(in.ids.size());
  in.position = o.position.value_or(n - 1);
  if (in.position < 0 || in.position >= n)
    fail("--position {} is outside the prompt: its {} tokens have positions 0..{}", in.position, n,
         n - 1);
  if (o.token) in.token = o.token;
  if (o.draw) in.draw = o.draw;
  return in;
}

void run_lens(LensCli& o) {
  LoadedModel lm = load_model(o.model);
  const model::ModelConfig& c = lm.model().config();
  std::vector<int> layers;
  if (!o.layers.empty()) layers = parse_int_list(o.layers, "--layers");
  for (int l : layers)
    if (l < 0 || l > c.num_hidden_layers)
      fail(
          "--layers: {} is not a layer of this model: 0 (the embedding) to {} (the last of its "
          "{} layers)",
          l, c.num_hidden_layers, c.num_hidden_layers);
  std::vector<std::int32_t> track;
  if (!o.track.empty()) track = parse_token_list(o.track, "--track");
  for (std::int32_t id : track)
    if (id < 0 || id >= c.vocab_size)
      fail("--track: token id {} is outside the vocabulary [0, {})", id, c.vocab_size);
  if (o.token && (*o.token < 0 || *o.token >= c.vocab_size))
    fail("--token: id {} is outside the vocabulary [0, {})", *o.token, c.vocab_size);
  if (o.draw && !(*o.draw >= 0 && *o.draw < 1))
    fail("--draw must be in [0, 1) (a uniform draw, as a trace records it), got {}", *o.draw);
  const LensInput in = lens_input(o, lm);
  const std::vector<std::int32_t>& ids = in.ids;
  const std::int64_t pos = in.position;

  ThreadPool pool(o.model.threads);
  const std::span<const std::int32_t> prefix(ids.data(), static_cast<std::size_t>(pos) + 1);
  const std::vector<float> rows = engine::lens_logits(lm.model(), pool, prefix);
  if (!o.dump_logits.empty()) write_rows_npy(o.dump_logits, rows, c.vocab_size);

  inspect::LensRequest q;
  q.rows = rows;
  q.vocab = static_cast<std::int32_t>(c.vocab_size);
  q.history = prefix;
  q.prompt_length = std::min(in.prompt_length, prefix.size());
  q.config = &in.config;
  q.draw = in.draw;
  q.token = in.token;
  q.track = track;
  q.top = o.top;
  const inspect::LensReport r = inspect::lens_report(q);
  if (!o.json) return print_table(lm, r, prefix, layers);
  nlohmann::ordered_json j;
  j["model"] = lm.path();
  j["input_tokens"] = ids;
  j["position"] = pos;
  if (in.token && !o.trace.empty()) j["step"] = *o.step;
  j["n_layers"] = c.num_hidden_layers;
  j["vocab_size"] = c.vocab_size;
  const auto text = [&](std::int32_t id) { return lm.token_text(id); };
  const nlohmann::ordered_json lens = inspect::lens_json(r, text, layers);
  for (const auto& [key, value] : lens.items()) j[key] = value;
  if (!o.dump_logits.empty()) j["logits_file"] = o.dump_logits;
  fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace

void add_lens_command(CLI::App& app) {
  auto o = std::make_shared<LensCli>();
  auto* cmd = app.add_subcommand(
      "lens",
      "The logit lens: each layer's residual stream read as a next-token distribution, "
      "through the decoding chain");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--position", o->position,
                  "Input position to look at (0-based; default the last): the distribution "
                  "there predicts the token after it");
  cmd->add_option("--trace", o->trace,
                  "A generate --json trace: look into its step --step K (the recorded prompt and "
                  "tokens before K, the step's settings, draw and chosen token)");
  cmd->add_option("--step", o->step, "With --trace: the step (0-based)");
  cmd->add_option("--top", o->top, "Candidates per layer")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--track", o->track, "More token ids whose rank and logprob to show: 1,2,3");
  cmd->add_option("--layers", o->layers,
                  "Only these layers in the output: 0 (the embedding) to n_layers, e.g. 0,12,24");
  cmd->add_option("--token", o->token,
                  "Follow this token instead of the chain's choice from the last layer");
  cmd->add_option("--draw", o->draw,
                  "The uniform draw in [0, 1) every layer's sampling uses (default: the first "
                  "draw of --seed, or 0)");
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option(
      "--dump-logits", o->dump_logits,
      "Write every layer's raw lens logits to FILE.npy (float32, [n_layers + 1, vocab])");
  cmd->callback([o] { run_lens(*o); });
}

}  // namespace ls::app
