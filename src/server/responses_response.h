// OpenAI's Responses API answers, made from the chat route's streamed chunks (a Responses
// request always runs as a chat stream): its output items (reasoning, message with output_text,
// function_call) and the SSE events that build them (response.created ... response.completed,
// each with a sequence_number). The non-streamed Response is the same object the events end
// with, so streamed and not give the same items. docs/server-api.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::server {

// A chat usage object as the Responses usage: input_tokens (cached included), output_tokens,
// their details (cached_tokens, reasoning_tokens), total_tokens.
nlohmann::json responses_usage(const nlohmann::json& chat_usage, std::size_t reasoning_tokens);

class ResponsesStream {
 public:
  // `echo`: the request fields a Response repeats (ResponsesTranslation::echo); `logprobs`:
  // output_text carries the logprobs of its tokens.
  ResponsesStream(std::string id, std::string model, std::int64_t created, nlohmann::json echo,
                  bool logprobs);

  // The events of `chunks` (chat chunks of one choice), as SSE text ("event: T\ndata: J\n\n").
  std::string events(const std::vector<nlohmann::json>& chunks);
  // The end: the open item's done events, then response.completed (response.incomplete when the
  // reply was cut by max_output_tokens or the context, response.failed on `error`).
  std::string finish(const nlohmann::json& chat_usage, std::size_t reasoning_tokens,
                     const std::optional<std::string>& error, std::int64_t now);
  // The Response object finish() ended with.
  const nlohmann::json& response() const { return final_; }
  // The output as chat messages (the reply's text and tool calls), for previous_response_id.
  nlohmann::ordered_json output_messages() const;

 private:
  enum class Item { none, reasoning, message, function_call };
  nlohmann::json object(const std::string& status) const;
  void emit(const char* type, nlohmann::json data, std::string& out);
  void open(Item kind, nlohmann::json item, std::string& out);
  void close(std::string& out, const char* status = "completed");
  void start(const nlohmann::json& chunk, std::string& out);
  std::string item_id(const char* prefix) const;

  std::string id_, model_;
  std::int64_t created_;
  nlohmann::json echo_;
  bool logprobs_;
  bool started_ = false;
  int sequence_ = 0;
  nlohmann::json output_ = nlohmann::json::array();  // items; the last is open when open_ != none
  Item open_ = Item::none;
  std::string text_;  // the open item's text (message, reasoning) or arguments (function_call)
  nlohmann::json text_logprobs_ = nlohmann::json::array();  // the open message's
  nlohmann::json held_logprobs_ = nlohmann::json::array();  // of tokens that had no text yet
  nlohmann::json logitscope_ = nlohmann::json::object();    // header and trace
  std::string finish_reason_;
  nlohmann::json final_;
};

}  // namespace ls::server
