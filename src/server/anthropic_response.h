// Anthropic's Messages API answers, made from what the chat route builds: a chat.completion
// becomes a Message (text, tool_use and thinking blocks, stop_reason, usage), and the streamed
// chat chunks become Anthropic's SSE events (message_start, content_block_start/delta/stop,
// message_delta, message_stop). Errors take Anthropic's {"type": "error", "error": {...}} shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::server {

// Anthropic's error type for an HTTP status: invalid_request_error, authentication_error,
// not_found_error, request_too_large, overloaded_error, api_error...
std::string anthropic_error_type(int status);
nlohmann::json anthropic_error(int status, const std::string& message);

// end_turn, max_tokens, stop_sequence or tool_use for a chat finish_reason and the stop string
// that ended the text ("" when none did).
std::string anthropic_stop_reason(const std::string& finish_reason, const std::string& stop);

// Anthropic's usage of a chat usage object: input_tokens without the cached prefix, which is
// cache_read_input_tokens (as Anthropic counts a cache hit).
nlohmann::json anthropic_usage(const nlohmann::json& chat_usage);

// The Message of a finished non-streamed chat.completion with one choice.
nlohmann::json anthropic_message(const nlohmann::json& chat, const std::string& id,
                                 const std::string& stop);

// A tool call's arguments (JSON text) as a tool_use input: the object they hold, or
// {"arguments": text} when they are not a JSON object.
nlohmann::json tool_input(const std::string& arguments);

// Streamed chat chunks of one choice turned into Anthropic's events, as SSE text
// ("event: NAME\ndata: JSON\n\n" each).
class MessagesStream {
 public:
  MessagesStream(std::string id, std::string model);

  // The events of `chunks`. `usage`: the chat usage so far (message_start's input_tokens).
  std::string events(const std::vector<nlohmann::json>& chunks, const nlohmann::json& usage);
  // The end: the open block's stop, message_delta (stop_reason, usage) and message_stop.
  std::string finish(const nlohmann::json& usage, const std::string& stop);
  // An error after the stream started: an `error` event.
  static std::string error(const std::string& message);

 private:
  enum class Block { none, text, thinking, tool_use };
  void start(Block kind, nlohmann::json content_block, std::string& out);
  void stop_block(std::string& out);
  void message_start(const nlohmann::json& chunk, const nlohmann::json& usage, std::string& out);

  std::string id_, model_;
  bool started_ = false;
  Block open_ = Block::none;
  int index_ = -1;  // the open (or last) block's index
  std::string finish_reason_;
};

}  // namespace ls::server
