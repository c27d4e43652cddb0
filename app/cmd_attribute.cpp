// `logitscope attribute`: which prompt tokens the next token depends on. Exact leave-one-out:
// for every prompt position, the target token's log-probability with that token removed (or
// replaced by --replace-with), each variant run over the KV prefix it shares with the prompt,
// in batches. Delta = base logprob - variant logprob: positive means the token helped.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/lab_common.h"
#include "app/prompt.h"
#include "core/error.h"
#include "core/text_width.h"
#include "decode/distribution.h"
#include "engine/lens.h"

namespace ls::app {

namespace {

struct AttributeCli {
  ModelOptions model;
  PromptOptions prompt;
  std::optional<std::int32_t> target;
  std::optional<std::int32_t> replace_with;
  std::size_t max_prompt = 256;
  bool json = false;
};

void run_attribute(AttributeCli& o) {
  LoadedModel lm = load_model(o.model);
  const auto V = static_cast<std::int32_t>(lm.model().config().vocab_size);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  if (ids.empty()) fail("the prompt is empty: give --prompt TEXT or --tokens IDS");
  if (ids.size() > o.max_prompt)
    fail(
        "the prompt has {} tokens, more than --max-prompt {}: attribution runs the rest of the "
        "prompt once per token (raise --max-prompt to allow it)",
        ids.size(), o.max_prompt);
  if (!o.replace_with && ids.size() < 2)
    fail(
        "a 1-token prompt has nothing left when its token is removed: give a longer prompt, or "
        "--replace-with ID");
  if (o.target && (*o.target < 0 || *o.target >= V))
    fail("--target: token id {} is outside the vocabulary [0, {})", *o.target, V);
  if (o.replace_with && (*o.replace_with < 0 || *o.replace_with >= V))
    fail("--replace-with: token id {} is outside the vocabulary [0, {})", *o.replace_with, V);

  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  std::int32_t target = 0;
  if (o.target) {
    target = *o.target;
  } else {  // the model's own top choice after the prompt
    const auto logits = engine.feed(0, ids);
    target = decode::ids_by_score_desc(logits, 1, false).at(0);
    engine.release(0);
  }
  engine::AttributionRequest q;
  q.prompt = ids;
  q.target = target;
  q.replacement = o.replace_with;
  q.max_prompt = o.max_prompt;
  const engine::Attribution a = engine::attribute(engine, q);

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = lm.path();
    j["input_tokens"] = ids;
    j.update(engine::attribution_json(a, q, [&](std::int32_t id) { return lm.token_text(id); }));
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("model    {}\n", lm.path());
  fmt::print("target   {}   logprob {:.4f} after the whole prompt ({} tokens)\n",
             token_cell(lm, target), a.base_logprob, ids.size());
  fmt::print("variant  each token {}\n\n",
             o.replace_with ? "replaced by " + token_cell(lm, *o.replace_with) : "removed");
  fmt::print("{:>5}  {:<28}  {:>10}  {:>9}  {}\n", "pos", "token", "logprob", "delta", "");
  double scale = 0;
  for (double lp : a.logprobs) scale = std::max(scale, std::abs(a.base_logprob - lp));
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const double delta = a.base_logprob - a.logprobs[i];
    const auto bar =
        scale > 0 ? static_cast<std::size_t>(std::lround(20 * std::abs(delta) / scale)) : 0;
    fmt::print("{:>5}  {}  {:>10.4f}  {:>+9.4f}  {}\n", i, pad_to_width(token_cell(lm, ids[i]), 28),
               a.logprobs[i], delta, std::string(bar, delta >= 0 ? '+' : '-'));
  }
  fmt::print(
      "\ndelta = logprob with the whole prompt - logprob with that token {}: positive, the "
      "token made the target likelier\n",
      o.replace_with ? "replaced" : "removed");
}

}  // namespace

void add_attribute_command(CLI::App& app) {
  auto o = std::make_shared<AttributeCli>();
  auto* cmd = app.add_subcommand(
      "attribute", "Which prompt tokens the next token depends on: exact leave-one-out");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  cmd->add_option("--target", o->target,
                  "The token whose logprob to explain (default: the model's top choice after the "
                  "prompt)");
  cmd->add_option("--replace-with", o->replace_with,
                  "Replace each prompt token by this token id instead of removing it");
  cmd->add_option("--max-prompt", o->max_prompt,
                  "Longest prompt accepted (the work grows with its square)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { run_attribute(*o); });
}

}  // namespace ls::app
