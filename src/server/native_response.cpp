// Building llama-server's native completion bodies and chunks (see native_response.h).
#include "server/native_response.h"

#include <cmath>
#include <limits>

#include "decode/text_stream.h"
#include "decode/trace_json.h"

namespace ls::server {

using nlohmann::json;

namespace {

json byte_list(std::string_view bytes) {
  json out = json::array();
  for (const unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

// JSON has no -inf: llama-server writes float's lowest for a removed token's logprob.
double finite_logprob(double lp) {
  return std::isfinite(lp) ? lp : static_cast<double>(std::numeric_limits<float>::lowest());
}

std::string stop_type_of(decode::FinishReason r) {
  switch (r) {
    case decode::FinishReason::eos:
      return "eos";
    case decode::FinishReason::stop_string:
      return "word";
    case decode::FinishReason::length:
    case decode::FinishReason::context_limit:
      return "limit";
  }
  return "none";
}

double ms_between(std::chrono::steady_clock::time_point a,
                  std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

NativeResponse::NativeResponse(const ParsedRequest& request, NativeOptions options,
                               const engine::LoadedModel& model, std::string model_name, int ctx)
    : request_(request),
      options_(std::move(options)),
      model_(model),
      model_name_(std::move(model_name)),
      ctx_(ctx),
      results_(request.jobs.size()) {}

// {id, token, bytes, logprob, top_logprobs} or, after the chain, {..., prob, top_probs}: as
// llama-server, only tokens the chain kept are listed after it.
json NativeResponse::prob_entry(const TokenLogprob& t) const {
  const bool post = options_.post_sampling;
  const auto entry = [&](std::int32_t id, double lp) {
    const std::string bytes = model_.token_bytes(id);
    json e = {{"id", id}, {"token", decode::sanitize_utf8(bytes)}, {"bytes", byte_list(bytes)}};
    if (post)
      e["prob"] = std::exp(lp);
    else
      e["logprob"] = finite_logprob(lp);
    return e;
  };
  json top = json::array();
  for (const auto& [id, lp] : t.top) {
    if (post && !std::isfinite(lp)) break;  // best first: the rest were removed too
    top.push_back(entry(id, lp));
  }
  json e = entry(t.token, t.logprob);
  e[post ? "top_probs" : "top_logprobs"] = std::move(top);
  return e;
}

json NativeResponse::timings(const Result& r, std::size_t job) const {
  const auto prompt_n = static_cast<std::int64_t>(request_.jobs[job].prompt.size() - r.cached);
  const auto first = r.first == Clock::time_point{} ? Clock::now() : r.first;
  const auto end = r.end == Clock::time_point{} ? Clock::now() : r.end;
  const double prompt_ms = ms_between(r.start, first);
  const double predicted_ms = ms_between(first, end);
  const auto n = static_cast<std::int64_t>(r.tokens.size());
  const auto per = [](double ms, std::int64_t k) { return k > 0 ? ms / k : 0.0; };
  const auto rate = [](double ms, std::int64_t k) { return ms > 0 ? 1e3 * k / ms : 0.0; };
  return {{"prompt_n", prompt_n},
          {"prompt_ms", prompt_ms},
          {"prompt_per_token_ms", per(prompt_ms, prompt_n)},
          {"prompt_per_second", rate(prompt_ms, prompt_n)},
          {"predicted_n", n},
          {"predicted_ms", predicted_ms},
          {"predicted_per_token_ms", per(predicted_ms, n)},
          {"predicted_per_second", rate(predicted_ms, n)}};
}

json NativeResponse::final_object(std::size_t job, bool streamed) const {
  const Result& r = results_[job];
  const Job& j = request_.jobs[job];
  json settings = options_.settings;
  settings["n_ctx"] = ctx_;
  settings["model"] = model_name_;
  settings["seed"] = r.seed;
  settings["chain"] = r.chain;  // ours: the stages that ran, with their parameters
  json o = {{"index", job},
            {"content", streamed ? "" : r.content},
            {"tokens", streamed || !options_.return_tokens ? json::array() : json(r.tokens)},
            {"id_slot", -1},
            {"stop", true},
            {"model", model_name_},
            {"tokens_predicted", r.tokens.size()},
            {"tokens_evaluated", j.prompt.size()},
            {"generation_settings", std::move(settings)},
            {"prompt", request_.prompt_texts[job]},
            {"has_new_line", r.content.find('\n') != std::string::npos},
            {"truncated", r.context_full},
            {"stop_type", r.stop_type},
            {"stopping_word", r.stopping_word},
            {"tokens_cached", r.cached},
            {"timings", timings(r, job)}};
  if (!streamed && options_.n_probs > 0) o["completion_probabilities"] = r.probs;
  if (options_.response_fields.empty()) return o;
  // response_fields: only those, a path "a/b" lifted to the top under its whole name.
  json picked = json::object();
  for (const std::string& path : options_.response_fields) {
    const json* at = &o;
    std::size_t from = 0;
    while (at != nullptr) {
      const std::size_t slash = path.find('/', from);
      const std::string key = path.substr(from, slash - from);
      at = at->is_object() && at->contains(key) ? &(*at)[key] : nullptr;
      if (slash == std::string::npos) break;
      from = slash + 1;
    }
    if (at != nullptr) picked[path] = *at;
  }
  return picked;
}

// A streamed chunk: the text, and the tokens (and their probabilities) not sent yet.
json NativeResponse::partial(std::size_t job, std::string content) {
  Result& r = results_[job];
  json tokens(std::vector<std::int32_t>(
      r.tokens.begin() + static_cast<std::ptrdiff_t>(r.sent_tokens), r.tokens.end()));
  json c = {{"index", job},
            {"content", std::move(content)},
            {"tokens", std::move(tokens)},
            {"stop", false},
            {"id_slot", -1},
            {"tokens_predicted", r.tokens.size()},
            {"tokens_evaluated", request_.jobs[job].prompt.size()}};
  if (options_.n_probs > 0) {
    json probs = json::array();
    for (std::size_t i = r.sent_tokens; i < r.probs.size(); ++i) probs.push_back(r.probs[i]);
    c["completion_probabilities"] = std::move(probs);
  }
  if (options_.timings_per_token) c["timings"] = timings(r, job);
  r.sent_tokens = r.tokens.size();
  return c;
}

void NativeResponse::apply(std::size_t job, const Event& event, std::vector<json>& chunks) {
  Result& r = results_[job];
  const bool stream = request_.stream;
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, HeaderEvent>) {
          r.cached = e.cached_tokens;
          r.seed = e.header.seed;
          r.chain = e.header.chain;
        } else if constexpr (std::is_same_v<T, TokenEvent>) {
          if (r.first == Clock::time_point{}) r.first = Clock::now();
          r.tokens.push_back(e.token.token);
          if (options_.n_probs > 0) {
            TokenLogprob t = e.token;
            // Greedy draws from a point mass: after the chain (llama.cpp's temperature <= 0
            // keeps the best token alone) the chosen token has probability 1.
            if (options_.post_sampling && request_.jobs[job].config.temperature <= 0) {
              t.logprob = 0;
              t.top = {{t.token, 0.0}};
            }
            r.probs.push_back(prob_entry(t));
          }
        } else if constexpr (std::is_same_v<T, TextEvent>) {
          r.content += e.text;
          if (stream) chunks.push_back(partial(job, e.text));
        } else if constexpr (std::is_same_v<T, FinishEvent>) {
          r.end = Clock::now();
          r.stop_type = stop_type_of(e.reason);
          r.stopping_word = e.stop;
          // llama-server's `truncated`: the sequence filled the context.
          r.context_full =
              e.reason == decode::FinishReason::context_limit ||
              request_.jobs[job].prompt.size() + r.tokens.size() >= static_cast<std::size_t>(ctx_);
          if (stream && r.sent_tokens < r.tokens.size()) chunks.push_back(partial(job, ""));
          if (stream) chunks.push_back(final_object(job, true));
        } else if constexpr (std::is_same_v<T, ErrorEvent>) {
          if (!error_) error_ = e.message;
        } else if constexpr (std::is_same_v<T, DoneEvent>) {
          // A prompt only evaluated (n_predict 0) finishes without a FinishEvent's tokens.
          if (r.end == Clock::time_point{}) {
            r.end = Clock::now();
            r.stop_type = "limit";
            if (stream && !error_) chunks.push_back(final_object(job, true));
          }
          ++jobs_done_;
        }
      },
      event);
}

std::size_t NativeResponse::completion_tokens() const {
  std::size_t n = 0;
  for (const auto& r : results_) n += r.tokens.size();
  return n;
}

json NativeResponse::response() const {
  if (results_.size() == 1) return final_object(0, false);
  json list = json::array();
  for (std::size_t i = 0; i < results_.size(); ++i) list.push_back(final_object(i, false));
  return list;
}

}  // namespace ls::server
