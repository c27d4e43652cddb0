// Anthropic's Messages API requests (POST /v1/messages and /v1/messages/count_tokens) turned
// into the chat route's request: system and content blocks become chat messages (tool_use ->
// an assistant's tool_calls, tool_result -> tool messages), tools and tool_choice their OpenAI
// forms, so the chat machinery (template, forced calls, sampling) runs them unchanged. Every field
// is checked under its Anthropic name; a bad one throws ApiError naming it. docs/server-api.md.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/request.h"

namespace ls::server {

// A Messages request as the chat route's body, and what that body cannot carry.
struct MessagesTranslation {
  nlohmann::ordered_json chat;              // an OpenAI chat request body, keys in written order
  std::vector<std::string> stop_sequences;  // any number (the chat route's `stop` takes 4)
};

// Checks `body` and translates it. `count_only`: count_tokens' body (max_tokens not required,
// sampling fields ignored).
MessagesTranslation translate_messages(const nlohmann::ordered_json& body, bool count_only);

// The generation request of a Messages body: parse_chat_request over its translation.
ParsedRequest parse_messages_request(const nlohmann::ordered_json& body,
                                     const ServerLimits& limits);

// The prompt's token count for count_tokens: the tokens parse_messages_request would prefill.
std::size_t count_message_tokens(const nlohmann::ordered_json& body, const ServerLimits& limits);

// An OpenAI tool call id ("call_ab12_0") as a tool_use id ("toolu_ab12_0").
std::string tool_use_id(const std::string& call_id);

}  // namespace ls::server
