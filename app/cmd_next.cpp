// `logitscope next`: one forward pass over a prompt, then the next-token distribution the way
// an article on "what are logits" would show it: input size, logits shape and range, entropy,
// and the top-N table (rank, id, text, raw logit, probability, log-probability).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <memory>

#include "app/commands.h"
#include "app/common.h"
#include "app/prompt.h"
#include "core/error.h"
#include "core/npy.h"
#include "inspect/distribution.h"
#include "model/model.h"

namespace ls::app {

namespace {

struct NextOptions {
  ModelOptions model;
  PromptOptions prompt;
  std::size_t top = 10;
  double temperature = 1.0;
  bool json = false;
  std::string dump_logits;
  bool all_positions = false;
};

void run_next(NextOptions& o) {
  if (o.all_positions && o.dump_logits.empty())
    fail("--all-positions needs --dump-logits FILE.npy");
  LoadedModel lm = load_model(o.model);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  ThreadPool pool(o.model.threads);
  Session session(lm.model(), pool);
  const auto V = static_cast<std::size_t>(lm.model().config().vocab_size);
  const std::span<const float> all = session.feed(ids, o.all_positions);
  const std::span<const float> last = all.subspan(all.size() - V, V);
  if (!o.dump_logits.empty()) {
    const auto rows = static_cast<std::int64_t>(all.size() / V);
    write_npy_f32(o.dump_logits, all, {rows, static_cast<std::int64_t>(V)});
  }
  const DistributionSummary s = summarize_logits(last, o.temperature, o.top);

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = lm.model().path();
    j["n_input_tokens"] = ids.size();
    j["input_tokens"] = ids;
    if (!o.prompt.rendered.empty()) j["prompt"] = o.prompt.rendered;
    j["logits_shape"] = {1, V};
    j["min_logit"] = s.min_logit;
    j["max_logit"] = s.max_logit;
    j["temperature"] = s.temperature;
    j["entropy_nats"] = s.entropy_nats;
    j["entropy_bits"] = s.entropy_bits;
    j["top"] = nlohmann::ordered_json::array();
    for (const auto& e : s.top)
      j["top"].push_back({{"rank", e.rank},
                          {"id", e.id},
                          {"text", lm.token_text(e.id)},
                          {"logit", e.logit},
                          {"prob", e.prob},
                          {"logprob", e.logprob}});
    if (!o.dump_logits.empty()) j["logits_file"] = o.dump_logits;
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  const ModelConfig& c = lm.model().config();
  fmt::print("model        {} (qwen2, {} layers, hidden {}, {} weights, vocab {})\n",
             lm.model().path(), c.num_hidden_layers, c.hidden_size, lm.model().weight_dtype(), V);
  fmt::print("input        {} tokens\n", ids.size());
  fmt::print("logits       shape [1, {}]   min {:.4f}   max {:.4f}\n", V, s.min_logit, s.max_logit);
  fmt::print("temperature  {}   (probabilities are softmax(logit / T))\n", s.temperature);
  fmt::print("entropy      {:.4f} nats = {:.4f} bits   (uniform over the vocab: {:.4f} nats)\n\n",
             s.entropy_nats, s.entropy_bits, std::log(static_cast<double>(V)));
  fmt::print("{:>5}  {:>7}  {:<24}  {:>10}  {:>10}  {:>9}\n", "rank", "id", "token", "logit",
             "prob", "logprob");
  for (const auto& e : s.top) {
    const std::string text = fmt::format("\"{}\"", printable(lm.token_bytes(e.id)));
    fmt::print("{:>5}  {:>7}  {:<24}  {:>10.4f}  {:>10.6f}  {:>9.4f}\n", e.rank, e.id, text,
               e.logit, e.prob, e.logprob);
  }
  if (!o.dump_logits.empty())
    fmt::print("\nwrote {} (float32, shape [{}, {}])\n", o.dump_logits, all.size() / V, V);
}

}  // namespace

void add_next_command(CLI::App& app) {
  auto o = std::make_shared<NextOptions>();
  auto* cmd = app.add_subcommand("next", "Show the next-token distribution after a prompt");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  cmd->add_option("--top", o->top, "Rows in the table")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--temperature", o->temperature, "Softmax temperature for prob/logprob/entropy")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--dump-logits", o->dump_logits, "Write float32 logits to FILE.npy ([1, vocab])");
  cmd->add_flag("--all-positions", o->all_positions,
                "With --dump-logits: logits of every input position ([positions, vocab])");
  cmd->callback([o] { run_next(*o); });
}

}  // namespace ls::app
