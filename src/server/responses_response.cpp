// Responses and their stream events from chat chunks (see responses_response.h): one item open
// at a time; a chunk's reasoning, content or tool call closes the open item when it is of
// another kind and opens its own.
#include "server/responses_response.h"

#include <fmt/format.h>

#include "server/body_fields.h"

namespace ls::server {

using nlohmann::json;

namespace {

using body::count_at;
using body::text_at;

json output_text_part(const std::string& text, const json& logprobs) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", logprobs}};
}

}  // namespace

json responses_usage(const json& chat_usage, std::size_t reasoning_tokens) {
  const std::size_t input = count_at(chat_usage, "prompt_tokens");
  const std::size_t output = count_at(chat_usage, "completion_tokens");
  std::size_t cached = 0;
  if (const auto d = chat_usage.find("prompt_tokens_details"); d != chat_usage.end())
    cached = count_at(*d, "cached_tokens");
  return {{"input_tokens", input},
          {"input_tokens_details", {{"cached_tokens", cached}}},
          {"output_tokens", output},
          {"output_tokens_details", {{"reasoning_tokens", reasoning_tokens}}},
          {"total_tokens", input + output}};
}

ResponsesStream::ResponsesStream(std::string id, std::string model, std::int64_t created, json echo,
                                 bool logprobs)
    : id_(std::move(id)),
      model_(std::move(model)),
      created_(created),
      echo_(std::move(echo)),
      logprobs_(logprobs) {}

std::string ResponsesStream::item_id(const char* prefix) const {
  // Unique within the server: the response's own id with the item's index.
  const std::size_t cut = id_.find('_');
  return fmt::format("{}_{}_{}", prefix, id_.substr(cut == std::string::npos ? 0 : cut + 1),
                     output_.size());
}

json ResponsesStream::object(const std::string& status) const {
  json o = {{"id", id_},        {"object", "response"}, {"created_at", created_},
            {"status", status}, {"error", nullptr},     {"incomplete_details", nullptr},
            {"model", model_},  {"output", output_},    {"usage", nullptr}};
  for (const auto& [key, value] : echo_.items()) o[key] = value;
  if (!logitscope_.empty()) o["logitscope"] = logitscope_;
  return o;
}

void ResponsesStream::emit(const char* type, json data, std::string& out) {
  data["type"] = type;
  data["sequence_number"] = sequence_++;
  out += fmt::format("event: {}\ndata: {}\n\n", type,
                     data.dump(-1, ' ', false, json::error_handler_t::replace));
}

void ResponsesStream::start(const json& chunk, std::string& out) {
  started_ = true;
  if (const auto ext = chunk.find("logitscope"); ext != chunk.end() && ext->contains("header"))
    logitscope_["header"] = (*ext)["header"];
  emit("response.created", {{"response", object("in_progress")}}, out);
  emit("response.in_progress", {{"response", object("in_progress")}}, out);
}

void ResponsesStream::open(Item kind, json item, std::string& out) {
  close(out);
  open_ = kind;
  text_.clear();
  text_logprobs_ = json::array();
  const int index = static_cast<int>(output_.size());
  output_.push_back(item);
  emit("response.output_item.added", {{"output_index", index}, {"item", std::move(item)}}, out);
  const json base = {
      {"item_id", output_.back()["id"]}, {"output_index", index}, {"content_index", 0}};
  if (kind == Item::message) {
    json e = base;
    e["part"] = output_text_part("", json::array());
    emit("response.content_part.added", std::move(e), out);
  } else if (kind == Item::reasoning) {
    json e = base;
    e["part"] = {{"type", "reasoning_text"}, {"text", ""}};
    emit("response.content_part.added", std::move(e), out);
  }
}

void ResponsesStream::close(std::string& out, const char* status) {
  if (open_ == Item::none) return;
  const int index = static_cast<int>(output_.size()) - 1;
  json& item = output_.back();
  const json base = {{"item_id", item["id"]}, {"output_index", index}, {"content_index", 0}};
  if (open_ == Item::message) {
    if (logprobs_)
      for (json& e : held_logprobs_) text_logprobs_.push_back(std::move(e));
    held_logprobs_ = json::array();
    json e = base;
    e["text"] = text_;
    e["logprobs"] = text_logprobs_;
    emit("response.output_text.done", std::move(e), out);
    const json part = output_text_part(text_, text_logprobs_);
    e = base;
    e["part"] = part;
    emit("response.content_part.done", std::move(e), out);
    item["content"] = json::array({part});
  } else if (open_ == Item::reasoning) {
    json e = base;
    e["text"] = text_;
    emit("response.reasoning_text.done", std::move(e), out);
    const json part = {{"type", "reasoning_text"}, {"text", text_}};
    e = base;
    e["part"] = part;
    emit("response.content_part.done", std::move(e), out);
    item["content"] = json::array({part});
  } else {
    emit("response.function_call_arguments.done",
         {{"item_id", item["id"]},
          {"output_index", index},
          {"name", item["name"]},
          {"arguments", text_}},
         out);
    item["arguments"] = text_;
  }
  item["status"] = status;
  emit("response.output_item.done", {{"output_index", index}, {"item", item}}, out);
  open_ = Item::none;
}

std::string ResponsesStream::events(const std::vector<json>& chunks) {
  std::string out;
  for (const json& chunk : chunks) {
    if (!started_) start(chunk, out);
    if (const auto ext = chunk.find("logitscope"); ext != chunk.end() && ext->contains("trace"))
      for (const json& step : (*ext)["trace"]) logitscope_["trace"].push_back(step);
    const auto choices = chunk.find("choices");
    if (choices == chunk.end() || !choices->is_array() || choices->empty()) continue;
    const json& choice = (*choices)[0];
    const json delta = choice.value("delta", json::object());
    const json* logprobs = nullptr;
    if (const auto l = choice.find("logprobs"); l != choice.end() && l->is_object())
      if (const auto c = l->find("content"); c != l->end() && c->is_array()) logprobs = &*c;
    if (const std::string* r = text_at(delta, "reasoning_content")) {
      if (open_ != Item::reasoning)
        open(Item::reasoning,
             {{"id", item_id("rs")},
              {"type", "reasoning"},
              {"status", "in_progress"},
              {"summary", json::array()},
              {"content", json::array()}},
             out);
      text_ += *r;
      emit("response.reasoning_text.delta",
           {{"item_id", output_.back()["id"]},
            {"output_index", output_.size() - 1},
            {"content_index", 0},
            {"delta", *r}},
           out);
      logprobs = nullptr;  // the reasoning's tokens: not the text's
    }
    if (const std::string* c = text_at(delta, "content")) {
      if (open_ != Item::message) {
        open(Item::message,
             {{"id", item_id("msg")},
              {"type", "message"},
              {"status", "in_progress"},
              {"role", "assistant"},
              {"content", json::array()}},
             out);
      }
      // Tokens held back (a possible tag, a split character) come out with this text.
      json entries = json::array();
      if (logprobs_) {
        for (json& e : held_logprobs_) entries.push_back(std::move(e));
        if (logprobs != nullptr)
          for (const json& e : *logprobs) entries.push_back(e);
      }
      held_logprobs_ = json::array();
      for (const json& e : entries) text_logprobs_.push_back(e);
      text_ += *c;
      emit("response.output_text.delta",
           {{"item_id", output_.back()["id"]},
            {"output_index", output_.size() - 1},
            {"content_index", 0},
            {"delta", *c},
            {"logprobs", std::move(entries)}},
           out);
    } else if (logprobs != nullptr && logprobs_) {
      for (const json& e : *logprobs) held_logprobs_.push_back(e);
    }
    if (const auto calls = delta.find("tool_calls"); calls != delta.end() && calls->is_array()) {
      for (const json& call : *calls) {
        const json fn = call.value("function", json::object());
        if (call.contains("id")) {         // a call's head: a new function_call item
          held_logprobs_ = json::array();  // the call's own tokens
          open(Item::function_call,
               {{"id", item_id("fc")},
                {"type", "function_call"},
                {"status", "in_progress"},
                {"call_id", call["id"]},
                {"name", fn.value("name", std::string())},
                {"arguments", ""}},
               out);
        }
        const std::string args = fn.value("arguments", std::string());
        if (!args.empty() && open_ == Item::function_call) {
          text_ += args;
          emit("response.function_call_arguments.delta",
               {{"item_id", output_.back()["id"]},
                {"output_index", output_.size() - 1},
                {"delta", args}},
               out);
        }
      }
    }
    if (const auto f = choice.find("finish_reason"); f != choice.end() && f->is_string())
      finish_reason_ = f->get<std::string>();
  }
  return out;
}

std::string ResponsesStream::finish(const json& chat_usage, std::size_t reasoning_tokens,
                                    const std::optional<std::string>& error, std::int64_t now) {
  std::string out;
  if (!started_) start(json::object(), out);
  const bool cut = finish_reason_ == "length";
  close(out, error || cut ? "incomplete" : "completed");
  const char* status = error ? "failed" : cut ? "incomplete" : "completed";
  final_ = object(status);
  final_["usage"] = responses_usage(chat_usage, reasoning_tokens);
  if (error) {
    final_["error"] = {{"code", "server_error"}, {"message", *error}};
  } else if (cut) {
    final_["incomplete_details"] = {{"reason", "max_output_tokens"}};
  } else {
    final_["completed_at"] = now;
  }
  emit(error ? "response.failed"
       : cut ? "response.incomplete"
             : "response.completed",
       {{"response", final_}}, out);
  return out;
}

nlohmann::ordered_json ResponsesStream::output_messages() const {
  std::string text;
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  for (const json& item : output_) {
    if (item["type"] == "message") {
      for (const json& part : item["content"]) text += part.value("text", std::string());
    } else if (item["type"] == "function_call") {
      calls.push_back({{"id", item["call_id"]},
                       {"type", "function"},
                       {"function", {{"name", item["name"]}, {"arguments", item["arguments"]}}}});
    }
  }
  nlohmann::ordered_json m = {{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) m["tool_calls"] = std::move(calls);
  return nlohmann::ordered_json::array({std::move(m)});
}

}  // namespace ls::server
