// `logitscope next`: one forward pass over a prompt (or, with --prompts, over many prompts at
// once), then the next-token distribution the way an article on "what are logits" would show
// it: input size, logits shape and range, entropy, and the top-N table (rank, id, text, raw
// logit, probability, log-probability).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/common.h"
#include "app/lab_common.h"
#include "app/prompt.h"
#include "core/error.h"
#include "core/npy.h"
#include "core/text_width.h"
#include "decode/generate.h"
#include "decode/trace_text.h"
#include "engine/engine.h"
#include "inspect/distribution.h"

namespace ls::app {

namespace {

struct NextOptions {
  ModelOptions model;
  PromptOptions prompt;
  std::string prompts;  // --prompts FILE: many prompts, one forward pass
  std::size_t top = 10;
  double temperature = 1.0;
  bool json = false;
  std::string dump_logits;
  bool all_positions = false;
  std::string experts = "2";  // --experts N|all: per layer, in the table (a mixture of experts)
};

// One prompt's result: its ids, the text tokenized ("" for --tokens) and its last logits row.
struct NextResult {
  std::vector<std::int32_t> ids;
  std::string rendered;
  std::span<const float> last;
  // A mixture of experts: per layer, the experts the prompt's last token was routed to.
  std::vector<std::vector<decode::ExpertChoice>> experts;
};

void print_next(const NextOptions& o, const LoadedModel& lm, const NextResult& r,
                std::optional<std::size_t> index) {
  const auto V = static_cast<std::size_t>(lm.model().config().vocab_size);
  const inspect::DistributionSummary s = inspect::summarize_logits(r.last, o.temperature, o.top);
  if (o.json) {
    nlohmann::ordered_json j;
    if (index) j["prompt_index"] = *index;
    j["model"] = lm.path();
    j["n_input_tokens"] = r.ids.size();
    j["input_tokens"] = r.ids;
    if (!r.rendered.empty()) j["prompt"] = r.rendered;
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
    if (!r.experts.empty()) {
      j["experts"] = nlohmann::ordered_json::array();
      for (const auto& layer : r.experts) {
        auto row = nlohmann::ordered_json::array();
        for (const auto& e : layer) row.push_back({e.expert, e.weight});
        j["experts"].push_back(std::move(row));
      }
    }
    if (!o.dump_logits.empty()) j["logits_file"] = o.dump_logits;
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  const model::ModelConfig& c = lm.model().config();
  if (index) {
    fmt::print("{}── prompt {}: \"{}\"\n", *index ? "\n" : "", *index,
               printable(clip_utf8(r.rendered, 60)));
  } else {
    fmt::print("model        {} ({}, {} layers, hidden {}, {} weights, vocab {})\n", lm.path(),
               c.model_type, c.num_hidden_layers, c.hidden_size, lm.model().weight_dtype(), V);
  }
  fmt::print("input        {} tokens\n", r.ids.size());
  fmt::print("logits       shape [1, {}] (the last position)   min {:.4f}   max {:.4f}\n", V,
             s.min_logit, s.max_logit);
  fmt::print("temperature  {}   (probabilities are softmax(logit / T))\n", s.temperature);
  fmt::print("entropy      {:.4f} nats = {:.4f} bits   (uniform over the vocab: {:.4f} nats)\n\n",
             s.entropy_nats, s.entropy_bits, std::log(static_cast<double>(V)));
  fmt::print("{:>5}  {:>7}  {:<24}  {:>10}  {:>10}  {:>9}\n", "rank", "id", "token", "logit",
             "prob", "logprob");
  for (const auto& e : s.top) {
    const std::string text = fmt::format("\"{}\"", printable(lm.token_bytes(e.id)));
    fmt::print("{:>5}  {:>7}  {}  {:>10.4f}  {:>10.6f}  {:>9.4f}\n", e.rank, e.id,
               pad_to_width(text, 24), e.logit, e.prob, e.logprob);
  }
  const std::size_t shown = parse_experts_shown(o.experts);
  if (!r.experts.empty() && shown > 0) {
    fmt::print(
        "\nexperts      of the last input token (layer expert:weight, best {} of {} per layer)\n",
        std::min<std::size_t>(shown, c.moe.experts_per_token), c.moe.experts_per_token);
    fmt::print("{}", decode::format_experts(r.experts, shown, "  "));
  }
}

void run_next(NextOptions& o) {
  if (o.all_positions && o.dump_logits.empty())
    fail("--all-positions needs --dump-logits FILE.npy");
  if (!o.prompts.empty() && (!o.prompt.tokens.empty() || !o.prompt.prompt.empty()))
    fail("--prompts FILE replaces --prompt/--tokens: give one or the other");
  if (!o.prompts.empty() && o.all_positions)
    fail(
        "--all-positions applies to one prompt; with --prompts, --dump-logits writes one row "
        "per prompt");
  LoadedModel lm = load_model(o.model);
  const auto V = static_cast<std::size_t>(lm.model().config().vocab_size);
  std::vector<NextResult> results;
  if (o.prompts.empty()) {
    results.push_back({prompt_tokens(o.prompt, lm), o.prompt.rendered, {}});
  } else {
    for (const auto& p : read_prompt_file(o.prompts)) {
      NextResult r;
      r.ids = file_prompt_tokens(p, o.prompt, lm, &r.rendered);
      results.push_back(std::move(r));
    }
  }
  // Every prompt in one batched forward pass (ragged: no padding, each its own positions).
  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  parse_experts_shown(o.experts);  // a bad --experts fails before the forward pass
  std::vector<decode::Feed> feeds;
  for (std::size_t i = 0; i < results.size(); ++i)
    feeds.push_back({static_cast<int>(i), results[i].ids, o.all_positions, true});
  const std::vector<std::span<const float>> out = engine.step(feeds);
  std::vector<float> rows;
  for (std::size_t i = 0; i < results.size(); ++i) {
    results[i].last = out[i].subspan(out[i].size() - V, V);
    results[i].experts = decode::expert_layers(engine, static_cast<int>(i));
    if (!o.dump_logits.empty()) rows.insert(rows.end(), out[i].begin(), out[i].end());
  }
  if (!o.dump_logits.empty()) write_rows_npy(o.dump_logits, rows, static_cast<std::int64_t>(V));
  for (std::size_t i = 0; i < results.size(); ++i)
    print_next(o, lm, results[i], o.prompts.empty() ? std::nullopt : std::optional(i));
  if (!o.dump_logits.empty() && !o.json)
    fmt::print("\nwrote {} (float32, shape [{}, {}])\n", o.dump_logits, rows.size() / V, V);
}

}  // namespace

void add_next_command(CLI::App& app) {
  auto o = std::make_shared<NextOptions>();
  auto* cmd = app.add_subcommand("next", "Show the next-token distribution after a prompt");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  cmd->add_option("--prompts", o->prompts,
                  "Many prompts in one forward pass: FILE with one per line, or JSON Lines with "
                  "\"prompt\" or \"messages\" (--chat applies the template to plain prompts)");
  cmd->add_option("--top", o->top, "Rows in the table")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--temperature", o->temperature, "Softmax temperature for prob/logprob/entropy")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->add_option("--experts", o->experts,
                  "Mixture-of-experts models: per layer, how many of the experts the router chose "
                  "for the last input token the table lists (best first, with weights; 'all', or "
                  "0 for none); --json has every layer's full choice as \"experts\"")
      ->type_name("N|all")
      ->capture_default_str();
  cmd->add_option("--dump-logits", o->dump_logits, "Write float32 logits to FILE.npy ([1, vocab])");
  cmd->add_flag("--all-positions", o->all_positions,
                "With --dump-logits: logits of every input position ([positions, vocab])");
  cmd->callback([o] { run_next(*o); });
}

}  // namespace ls::app
