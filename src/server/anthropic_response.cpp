// Messages, stream events and errors in Anthropic's shapes (see anthropic_response.h): the
// chat route's finished response and streamed chunks re-read into Anthropic's content blocks,
// stop reasons and usage.
#include "server/anthropic_response.h"

#include <algorithm>

#include "server/anthropic_request.h"
#include "server/body_fields.h"

namespace ls::server {

using nlohmann::json;

namespace {

using body::count_at;
using body::text_at;

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string sse(const char* name, const json& data) {
  return std::string("event: ") + name + "\ndata: " + dump(data) + "\n\n";
}

}  // namespace

std::string anthropic_error_type(int status) {
  switch (status) {
    case 400:
    case 405:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
    case 529:
      return "overloaded_error";
    default:
      return status >= 400 && status < 500 ? "invalid_request_error" : "api_error";
  }
}

json anthropic_error(int status, const std::string& message) {
  return {{"type", "error"},
          {"error", {{"type", anthropic_error_type(status)}, {"message", message}}}};
}

std::string anthropic_stop_reason(const std::string& finish_reason, const std::string& stop) {
  if (finish_reason == "length") return "max_tokens";
  if (finish_reason == "tool_calls") return "tool_use";
  return stop.empty() ? "end_turn" : "stop_sequence";
}

json anthropic_usage(const json& chat_usage) {
  const std::size_t prompt = count_at(chat_usage, "prompt_tokens");
  std::size_t cached = 0;
  if (const auto d = chat_usage.find("prompt_tokens_details"); d != chat_usage.end())
    cached = std::min(count_at(*d, "cached_tokens"), prompt);
  return {{"input_tokens", prompt - cached},
          {"output_tokens", count_at(chat_usage, "completion_tokens")},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", cached}};
}

json tool_input(const std::string& arguments) {
  json input = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  if (input.is_object()) return input;
  return {{"arguments", arguments}};
}

json anthropic_message(const json& chat, const std::string& id, const std::string& stop) {
  const json& choice = chat.at("choices").at(0);
  const json& message = choice.at("message");
  json content = json::array();
  if (const std::string* r = text_at(message, "reasoning_content"))
    content.push_back({{"type", "thinking"}, {"thinking", *r}, {"signature", ""}});
  if (const std::string* c = text_at(message, "content"))
    content.push_back({{"type", "text"}, {"text", *c}});
  if (const auto calls = message.find("tool_calls"); calls != message.end())
    for (const json& call : *calls)
      content.push_back({{"type", "tool_use"},
                         {"id", tool_use_id(call.at("id").get<std::string>())},
                         {"name", call.at("function").at("name")},
                         {"input", tool_input(call.at("function").at("arguments"))}});
  const std::string reason =
      anthropic_stop_reason(choice.value("finish_reason", std::string()), stop);
  json out = {{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", chat.at("model")},
              {"content", std::move(content)},
              {"stop_reason", reason},
              {"stop_sequence", reason == "stop_sequence" ? json(stop) : json(nullptr)},
              {"usage", anthropic_usage(chat.at("usage"))}};
  if (const auto ext = chat.find("logitscope"); ext != chat.end()) out["logitscope"] = *ext;
  return out;
}

MessagesStream::MessagesStream(std::string id, std::string model)
    : id_(std::move(id)), model_(std::move(model)) {}

void MessagesStream::message_start(const json& chunk, const json& usage, std::string& out) {
  json u = anthropic_usage(usage);
  u["output_tokens"] = 0;
  json message = {{"id", id_},
                  {"type", "message"},
                  {"role", "assistant"},
                  {"model", model_},
                  {"content", json::array()},
                  {"stop_reason", nullptr},
                  {"stop_sequence", nullptr},
                  {"usage", std::move(u)}};
  if (const auto ext = chunk.find("logitscope"); ext != chunk.end()) message["logitscope"] = *ext;
  out += sse("message_start", {{"type", "message_start"}, {"message", std::move(message)}});
  started_ = true;
}

void MessagesStream::start(Block kind, json content_block, std::string& out) {
  stop_block(out);
  open_ = kind;
  ++index_;
  out += sse("content_block_start", {{"type", "content_block_start"},
                                     {"index", index_},
                                     {"content_block", std::move(content_block)}});
}

void MessagesStream::stop_block(std::string& out) {
  if (open_ == Block::none) return;
  out += sse("content_block_stop", {{"type", "content_block_stop"}, {"index", index_}});
  open_ = Block::none;
}

std::string MessagesStream::events(const std::vector<json>& chunks, const json& usage) {
  std::string out;
  for (const json& chunk : chunks) {
    if (!started_) message_start(chunk, usage, out);
    const auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty()) continue;
    const json& choice = (*choices)[0];
    const json delta = choice.value("delta", json::object());
    if (const std::string* r = text_at(delta, "reasoning_content")) {
      if (open_ != Block::thinking)
        start(Block::thinking, {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}}, out);
      out +=
          sse("content_block_delta", {{"type", "content_block_delta"},
                                      {"index", index_},
                                      {"delta", {{"type", "thinking_delta"}, {"thinking", *r}}}});
    }
    if (const std::string* c = text_at(delta, "content")) {
      if (open_ != Block::text) start(Block::text, {{"type", "text"}, {"text", ""}}, out);
      out += sse("content_block_delta", {{"type", "content_block_delta"},
                                         {"index", index_},
                                         {"delta", {{"type", "text_delta"}, {"text", *c}}}});
    }
    if (const auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array()) {
      for (const json& call : *calls) {
        const json fn = call.value("function", json::object());
        if (call.contains("id")) {  // a call's head: a new tool_use block
          start(Block::tool_use,
                {{"type", "tool_use"},
                 {"id", tool_use_id(call["id"].get<std::string>())},
                 {"name", fn.value("name", std::string())},
                 {"input", json::object()}},
                out);
        }
        const std::string args = fn.value("arguments", std::string());
        if (!args.empty() && open_ == Block::tool_use)
          out += sse("content_block_delta",
                     {{"type", "content_block_delta"},
                      {"index", index_},
                      {"delta",
                       {{"type", "input_json_delta"}, {"partial_json", dump(tool_input(args))}}}});
      }
    }
    if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string())
      finish_reason_ = f->get<std::string>();
  }
  return out;
}

std::string MessagesStream::finish(const json& usage, const std::string& stop) {
  std::string out;
  if (!started_) message_start(json::object(), usage, out);
  stop_block(out);
  const std::string reason = anthropic_stop_reason(finish_reason_, stop);
  out += sse("message_delta",
             {{"type", "message_delta"},
              {"delta",
               {{"stop_reason", reason},
                {"stop_sequence", reason == "stop_sequence" ? json(stop) : json(nullptr)}}},
              {"usage", anthropic_usage(usage)}});
  out += sse("message_stop", {{"type", "message_stop"}});
  return out;
}

std::string MessagesStream::error(const std::string& message) {
  return sse("error", anthropic_error(500, message));
}

}  // namespace ls::server
