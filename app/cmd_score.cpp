// `logitscope score`: how likely a model finds a given continuation of a prompt. One forward
// pass over prompt + text; per token the log-probability (log_softmax of the raw logits, like
// transformers' compute_transition_scores with normalize_logits=True), its rank and the model's
// own top choice; then the sum, the mean and the perplexity.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "app/progress.h"
#include "app/prompt.h"
#include "core/error.h"
#include "core/text_width.h"
#include "decode/score.h"
#include "engine/engine.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

namespace {

struct ScoreCli {
  ModelOptions model;
  PromptOptions prompt;
  std::string text;
  std::string text_tokens;
  bool json = false;
};

void run_score(ScoreCli& o) {
  LoadedModel lm = load_model(o.model);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  std::vector<std::int32_t> cont;
  if (!o.text_tokens.empty()) {
    cont = parse_token_list(o.text_tokens, "--text-tokens");
  } else {
    if (o.text.empty())
      fail("give the continuation to score with --text TEXT or --text-tokens 1,2");
    if (!lm.tokenizer())
      fail("{}: --text needs a tokenizer.json in the model directory", lm.model().path());
    cont = lm.tokenizer()->encode(o.text);
  }
  if (ids.empty()) fail("the prompt is empty: the first token of --text has no context to score");
  if (cont.empty()) fail("--text gives no tokens");
  const auto V = static_cast<std::size_t>(lm.model().config().vocab_size);
  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  // Row i must be the logits at the position before cont[i]: the last prompt row, then the
  // rows of every continuation token but the last.
  // The continuation goes in chunks, for the progress line of a long text; chunking changes no
  // logit (each is computed the same way whatever the chunk).
  constexpr std::size_t kChunk = 256;
  std::optional<Progress> progress(std::in_place, "score", ids.size() + cont.size() - 1);
  std::vector<float> rows;
  const auto last = engine.feed(0, ids);
  rows.assign(last.begin(), last.end());
  progress->advance(ids.size());
  for (std::size_t at = 0; at + 1 < cont.size(); at += kChunk) {
    const std::size_t n = std::min(kChunk, cont.size() - 1 - at);
    const auto more = engine.feed(0, std::span<const std::int32_t>(cont).subspan(at, n),
                                  /*all_positions=*/true);
    rows.insert(rows.end(), more.begin(), more.end());
    progress->advance(n);
  }
  progress.reset();
  const decode::ScoreResult r = decode::score_rows(rows, static_cast<std::int32_t>(V), cont);

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = lm.model().path();
    j["prompt_tokens"] = ids.size();
    if (!o.prompt.rendered.empty()) j["prompt"] = o.prompt.rendered;
    j["tokens"] = nlohmann::ordered_json::array();
    for (const auto& t : r.tokens) {
      j["tokens"].push_back(
          {{"id", t.id},
           {"text", lm.token_text(t.id)},
           {"logit", t.logit},
           {"logprob", t.logprob},
           {"prob", std::exp(t.logprob)},
           {"rank", t.rank},
           {"top", {{"id", t.top_id}, {"text", lm.token_text(t.top_id)}, {"logit", t.top_logit}}}});
    }
    j["n_tokens"] = r.tokens.size();
    j["sum_logprob"] = r.sum;
    j["mean_logprob"] = r.mean;
    j["perplexity"] = r.perplexity;
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("model  {}\nprompt {} tokens, text {} tokens\n\n", lm.model().path(), ids.size(),
             cont.size());
  fmt::print("{:>4}  {:>7}  {:<20}  {:>10}  {:>9}  {:>7}  {}\n", "pos", "id", "token", "logprob",
             "prob", "rank", "model's top choice (its logit minus this token's)");
  for (std::size_t i = 0; i < r.tokens.size(); ++i) {
    const auto& t = r.tokens[i];
    const std::string text = fmt::format("\"{}\"", printable(lm.token_bytes(t.id)));
    const std::string top = t.rank == 1 ? std::string("(this token)")
                                        : fmt::format("\"{}\" #{} (logit gap {:+.3f})",
                                                      printable(lm.token_bytes(t.top_id)), t.top_id,
                                                      static_cast<double>(t.top_logit - t.logit));
    // Small probabilities in scientific notation: 0.000000 would hide how small.
    const double p = std::exp(t.logprob);
    const std::string prob = p >= 1e-3 ? fmt::format("{:.6f}", p) : fmt::format("{:.3e}", p);
    fmt::print("{:>4}  {:>7}  {}  {:>10.4f}  {:>9}  {:>7}  {}\n", i, t.id, pad_to_width(text, 20),
               t.logprob, prob, t.rank, top);
  }
  fmt::print(
      "\nsum logprob  {:.4f} nats\nmean logprob {:.4f} nats per token\nperplexity   {:.4f} "
      "(exp of minus the mean)\n",
      r.sum, r.mean, r.perplexity);
}

}  // namespace

void add_score_command(CLI::App& app) {
  auto o = std::make_shared<ScoreCli>();
  auto* cmd = app.add_subcommand(
      "score", "Per-token log-probabilities of a given continuation, their sum and perplexity");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  auto* text = cmd->add_option("--text", o->text, "The continuation to score");
  auto* tokens = cmd->add_option("--text-tokens", o->text_tokens, "The continuation as ids: 1,2,3");
  text->excludes(tokens);
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the table");
  cmd->callback([o] { run_score(*o); });
}

}  // namespace ls::app
