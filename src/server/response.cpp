// Building OpenAI responses and chunks from scheduler events (see response.h).
#include "server/response.h"

#include <algorithm>

#include <fmt/format.h>

#include "decode/trace_json.h"

namespace ls::server {

using nlohmann::json;

namespace {

std::size_t code_points(std::string_view s) {
  std::size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

json byte_list(std::string_view bytes) {
  json out = json::array();
  for (const unsigned char c : bytes) out.push_back(static_cast<int>(c));
  return out;
}

std::string finish_reason(decode::FinishReason r, bool tool_calls) {
  if (r == decode::FinishReason::length || r == decode::FinishReason::context_limit)
    return "length";
  return tool_calls ? "tool_calls" : "stop";
}

// OpenAI writes a logprob it cannot represent (a token the distribution removed) as -9999.
double finite(double logprob) {
  return std::isfinite(logprob) ? logprob : -9999.0;
}

}  // namespace

ResponseBuilder::ResponseBuilder(const ParsedRequest& request, const engine::LoadedModel& model,
                                 std::string id, std::string model_name, std::int64_t created)
    : request_(request),
      model_(model),
      id_(std::move(id)),
      model_name_(std::move(model_name)),
      created_(created),
      choices_(request.jobs.size() * static_cast<std::size_t>(request.n)),
      prompt_logprobs_(request.jobs.size()) {
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    if (request.parse_tools)
      choices_[i].parser.emplace(fmt::format("{}_{}", id_.substr(id_.size() - 8), i));
    if (request.reasoning) choices_[i].reasoning_splitter.emplace();
  }
}

json ResponseBuilder::chunk(json choices) const {
  return {{"id", id_},
          {"object", request_.chat ? "chat.completion.chunk" : "text_completion"},
          {"created", created_},
          {"model", model_name_},
          {"choices", std::move(choices)}};
}

// A chat entry {token, logprob, bytes, top_logprobs}, or a legacy tuple; with
// token_ids_logprob, the named tokens' {token_id, token, logprob, rank} too.
json ResponseBuilder::logprob_entry(const TokenLogprob& t, std::size_t& offset) const {
  const std::string bytes = model_.token_bytes(t.token);
  const std::string text = decode::sanitize_utf8(bytes);
  json named = nullptr;
  if (!t.named.empty()) {
    named = json::array();
    for (const RankedLogprob& n : t.named)
      named.push_back({{"token_id", n.token},
                       {"token", decode::sanitize_utf8(model_.token_bytes(n.token))},
                       {"logprob", finite(n.logprob)},
                       {"rank", n.rank}});
  }
  if (request_.chat) {
    json top = json::array();
    for (const auto& [id, lp] : t.top) {
      const std::string b = model_.token_bytes(id);
      top.push_back(
          {{"token", decode::sanitize_utf8(b)}, {"logprob", finite(lp)}, {"bytes", byte_list(b)}});
    }
    json e = {{"token", text},
              {"logprob", finite(t.logprob)},
              {"bytes", byte_list(bytes)},
              {"top_logprobs", top}};
    if (!named.is_null()) e["token_ids_logprob"] = std::move(named);
    return e;
  }
  json top = json::object();
  for (const auto& [id, lp] : t.top) {
    const std::string key = decode::sanitize_utf8(model_.token_bytes(id));
    if (!top.contains(key)) top[key] = finite(lp);
  }
  json e = {{"token", text}, {"logprob", finite(t.logprob)}, {"top", top}, {"offset", offset}};
  if (!named.is_null()) e["named"] = std::move(named);
  offset += code_points(text);
  return e;
}

// vLLM's prompt_logprobs entry of one prompt token: {"<id>": {logprob, rank, decoded_token}}
// for the token itself and the `top` best (their rank is their place in that list).
json ResponseBuilder::prompt_logprobs_entry(const TokenLogprob& t, int top) const {
  const auto item = [&](std::int32_t id, double lp, std::int64_t rank) {
    return json{{"logprob", finite(lp)},
                {"rank", rank},
                {"decoded_token", decode::sanitize_utf8(model_.token_bytes(id))}};
  };
  json out = json::object();
  out[std::to_string(t.token)] = item(t.token, t.logprob, t.rank);
  for (std::size_t k = 0; k < t.top.size() && k < static_cast<std::size_t>(top); ++k) {
    const auto& [id, lp] = t.top[k];
    if (id != t.token) out[std::to_string(id)] = item(id, lp, static_cast<std::int64_t>(k) + 1);
  }
  return out;
}

// The legacy shape of entries: four parallel lists (a fifth with token_ids_logprob: null for
// echoed prompt tokens).
json legacy_logprobs(const std::vector<json>& entries) {
  json out = {{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
  const bool named = std::any_of(entries.begin(), entries.end(),
                                 [](const json& e) { return e.contains("named"); });
  if (named) out["token_ids_logprob"] = json::array();
  for (const auto& e : entries) {
    out["tokens"].push_back(e["token"]);
    out["token_logprobs"].push_back(e["logprob"]);
    out["top_logprobs"].push_back(e["top"]);
    out["text_offset"].push_back(e["offset"]);
    if (named) out["token_ids_logprob"].push_back(e.value("named", json(nullptr)));
  }
  return out;
}

json ResponseBuilder::take_logprobs(Choice& c) const {
  if (!request_.logprobs.wanted) return nullptr;
  json out = request_.chat ? json{{"content", c.pending}} : legacy_logprobs(c.pending);
  c.pending.clear();
  return out;
}

// The reply's text: reasoning split off first (streamed as delta.reasoning_content, as vLLM
// and llama.cpp send it), then the answer through the tool-call parser.
void ResponseBuilder::add_text(std::size_t index, const std::string& text,
                               std::vector<json>& chunks) {
  Choice& c = choices_[index];
  if (!c.reasoning_splitter) return add_content(index, text, chunks);
  add_split(index, c.reasoning_splitter->push(text), chunks);
}

void ResponseBuilder::add_split(std::size_t index, const chat::ReasoningDelta& d,
                                std::vector<json>& chunks) {
  Choice& c = choices_[index];
  if (!d.reasoning.empty()) {
    c.reasoning += d.reasoning;
    if (request_.stream)
      chunks.push_back(chunk(json::array({{{"index", index},
                                           {"delta", {{"reasoning_content", d.reasoning}}},
                                           {"logprobs", take_logprobs(c)},
                                           {"finish_reason", nullptr}}})));
  }
  if (!d.content.empty()) {
    // The token whose text began the answer was counted as a thinking one (a token's event
    // comes before its text's).
    if (!c.answered && c.thinking_tokens > 0) --c.thinking_tokens;
    c.answered = true;
    add_content(index, d.content, chunks);
  }
}

void ResponseBuilder::add_content(std::size_t index, const std::string& text,
                                  std::vector<json>& chunks) {
  Choice& c = choices_[index];
  std::string content = text;
  std::vector<ToolCall> calls;
  if (c.parser) {
    ToolDelta d = c.parser->push(text);
    content = std::move(d.content);
    calls = std::move(d.calls);
  }
  c.text += content;
  if (request_.stream && (!content.empty() || !c.pending.empty())) {
    json choice = {{"index", index}, {"logprobs", take_logprobs(c)}, {"finish_reason", nullptr}};
    if (request_.chat)
      choice["delta"] = {{"content", content}};
    else
      choice["text"] = content;
    chunks.push_back(chunk(json::array({choice})));
  }
  for (auto& call : calls) {
    const std::size_t k = c.calls.size();
    if (request_.stream) {
      // The name first, then the arguments (one fragment: the block is parsed whole).
      json head = {{"index", k},
                   {"id", call.id},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", ""}}}};
      json args = {{"index", k}, {"function", {{"arguments", call.arguments}}}};
      for (json* d : {&head, &args})
        chunks.push_back(chunk(json::array({{{"index", index},
                                             {"delta", {{"tool_calls", json::array({*d})}}},
                                             {"logprobs", nullptr},
                                             {"finish_reason", nullptr}}})));
    }
    c.calls.push_back(std::move(call));
  }
}

void ResponseBuilder::apply(std::size_t job, const Event& event, std::vector<json>& chunks) {
  const std::size_t base = job * static_cast<std::size_t>(request_.n);
  std::visit(
      [&](const auto& e) {
        using T = std::decay_t<decltype(e)>;
        if constexpr (std::is_same_v<T, HeaderEvent>) {
          json header = decode::header_json(e.header);
          if (!e.generation.empty()) {
            header["generation"] = e.generation;
            header["prompt_token_ids"] = request_.jobs[job].prompt;
          }
          if (job == 0) header_ = header;
          cached_tokens_ += e.cached_tokens;
          if (request_.echo)
            for (int j = 0; j < request_.n; ++j)
              choices_[base + j].text = request_.prompt_texts[job];
          if (!request_.stream) return;
          json list = json::array();
          for (int j = 0; j < request_.n; ++j) {
            Choice& own = choices_[base + j];
            json choice = {{"index", base + j},
                           {"logprobs", own.pending.empty() ? json(nullptr) : take_logprobs(own)},
                           {"finish_reason", nullptr}};
            if (request_.chat)
              choice["delta"] = {{"role", "assistant"}, {"content", ""}};
            else
              choice["text"] = request_.echo ? request_.prompt_texts[job] : "";
            if (!request_.chat && request_.prompt_logprobs.wanted)
              choice["prompt_logprobs"] = prompt_logprobs_[job];
            list.push_back(choice);
          }
          json c = chunk(list);
          if (request_.chat && request_.prompt_logprobs.wanted)
            c["prompt_logprobs"] = prompt_logprobs_[job];
          c["logitscope"] = {{"header", header}};
          chunks.push_back(std::move(c));
          if (request_.echo)
            for (int j = 0; j < request_.n; ++j)
              choices_[base + j].text = request_.prompt_texts[job];
        } else if constexpr (std::is_same_v<T, PromptLogprobsEvent>) {
          if (request_.prompt_logprobs.wanted) {
            json list = json::array({nullptr});  // the first token has none
            for (const auto& t : e.tokens)
              list.push_back(prompt_logprobs_entry(t, request_.prompt_logprobs.top));
            prompt_logprobs_[job] = std::move(list);
          }
          if (!(request_.echo && request_.logprobs.wanted)) return;
          // Echo: the prompt's tokens first; its first token has no logprob.
          for (int j = 0; j < request_.n; ++j) {
            Choice& c = choices_[base + j];
            std::size_t offset = 0;
            const auto& prompt = request_.jobs[job].prompt;
            const std::string first = decode::sanitize_utf8(model_.token_bytes(prompt[0]));
            c.logprobs.push_back(
                {{"token", first}, {"logprob", nullptr}, {"top", nullptr}, {"offset", 0}});
            offset = code_points(first);
            for (TokenLogprob t : e.tokens) {
              if (t.top.size() > static_cast<std::size_t>(request_.logprobs.top))
                t.top.resize(static_cast<std::size_t>(request_.logprobs.top));
              c.logprobs.push_back(logprob_entry(t, offset));
            }
            c.text_chars = offset;
            if (request_.stream) c.pending = c.logprobs;
          }
        } else if constexpr (std::is_same_v<T, TokenEvent>) {
          Choice& c = choices_[base + e.choice];
          ++c.tokens;
          ++tokens_seen_;
          if (c.reasoning_splitter && !c.answered) ++c.thinking_tokens;
          if (!request_.logprobs.wanted || e.eos) return;
          json entry = logprob_entry(e.token, c.text_chars);
          c.logprobs.push_back(entry);
          if (request_.stream) c.pending.push_back(std::move(entry));
        } else if constexpr (std::is_same_v<T, TextEvent>) {
          add_text(base + e.choice, e.text, chunks);
        } else if constexpr (std::is_same_v<T, StepEvent>) {
          json step = e.step;
          step["sequence"] = base + e.choice;
          if (request_.stream) {
            json c = chunk(json::array());
            c["logitscope"] = {{"trace", json::array({step})}};
            chunks.push_back(std::move(c));
          } else {
            trace_.push_back(std::move(step));
          }
        } else if constexpr (std::is_same_v<T, FinishEvent>) {
          const std::size_t index = base + e.choice;
          Choice& c = choices_[index];
          if (c.reasoning_splitter) add_split(index, c.reasoning_splitter->finish(), chunks);
          if (c.parser) {
            ToolDelta d = c.parser->finish();
            if (!d.content.empty()) add_content(index, d.content, chunks);
          }
          c.finish = finish_reason(e.reason, !c.calls.empty());
          c.stop = e.stop;
          if (request_.stream) {
            json choice = {
                {"index", index}, {"logprobs", take_logprobs(c)}, {"finish_reason", c.finish}};
            if (request_.chat)
              choice["delta"] = json::object();
            else
              choice["text"] = "";
            chunks.push_back(chunk(json::array({choice})));
          }
        } else if constexpr (std::is_same_v<T, ErrorEvent>) {
          if (!error_) error_ = e.message;
        } else if constexpr (std::is_same_v<T, DoneEvent>) {
          ++jobs_done_;
        }
      },
      event);
}

std::size_t ResponseBuilder::completion_tokens() const {
  std::size_t n = 0;
  for (const auto& c : choices_) n += c.tokens;
  return n;
}

std::size_t ResponseBuilder::reasoning_tokens() const {
  std::size_t n = 0;
  for (const auto& c : choices_)
    if (!c.reasoning.empty()) n += c.thinking_tokens;
  return n;
}

json ResponseBuilder::usage_chunk() const {
  std::size_t prompt = 0;
  for (const auto& j : request_.jobs) prompt += j.prompt.size();
  json c = chunk(json::array());
  const std::size_t completion = completion_tokens();
  c["usage"] = {{"prompt_tokens", prompt},
                {"completion_tokens", completion},
                {"total_tokens", prompt + completion},
                {"prompt_tokens_details", {{"cached_tokens", cached_tokens_}}}};
  return c;
}

json ResponseBuilder::response() const {
  json choices = json::array();
  for (std::size_t i = 0; i < choices_.size(); ++i) {
    const Choice& c = choices_[i];
    json choice = {{"index", i}, {"finish_reason", c.finish}};
    if (request_.chat) {
      json message = {{"role", "assistant"}};
      message["content"] = c.calls.empty() || !c.text.empty() ? json(c.text) : json(nullptr);
      if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
      if (!c.calls.empty()) {
        json calls = json::array();
        for (const auto& call : c.calls)
          calls.push_back({{"id", call.id},
                           {"type", "function"},
                           {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
        message["tool_calls"] = calls;
      }
      choice["message"] = message;
      choice["logprobs"] = request_.logprobs.wanted ? json{{"content", c.logprobs}} : json(nullptr);
    } else {
      choice["text"] = c.text;
      choice["logprobs"] = request_.logprobs.wanted ? legacy_logprobs(c.logprobs) : json(nullptr);
      if (request_.prompt_logprobs.wanted)
        choice["prompt_logprobs"] = prompt_logprobs_[i / static_cast<std::size_t>(request_.n)];
    }
    choices.push_back(choice);
  }
  json out = usage_chunk();
  out["object"] = request_.chat ? "chat.completion" : "text_completion";
  out["choices"] = choices;
  if (request_.chat && request_.prompt_logprobs.wanted)
    out["prompt_logprobs"] = prompt_logprobs_[0];
  out["logitscope"] = {{"header", header_}};
  if (!trace_.empty()) out["logitscope"]["trace"] = trace_;
  return out;
}

}  // namespace ls::server
