// OpenAI's Responses API requests (POST /v1/responses) as the chat route's request: instructions
// and input items become chat messages after a stored previous response's, flat tools, tool_choice,
// text.format and include their chat forms; parse_chat_request runs it, its errors renamed to the
// Responses fields. A field that would change the output and is not supported is a 400 naming
// it (docs/server-api.md).
#pragma once

#include <nlohmann/json.hpp>

#include "server/request.h"
#include "server/response_store.h"

namespace ls::server {

// A Responses body as the chat route's body, and what only the Responses route uses.
struct ResponsesTranslation {
  nlohmann::ordered_json chat;          // an OpenAI chat request body, keys in written order
  nlohmann::ordered_json conversation;  // its messages without the instructions' (to store)
  nlohmann::json echo;                  // request fields the Response object repeats
  bool stream = false;
  bool store = true;
};

// Checks `body` and translates it; previous_response_id is looked up in `store` (null: none).
ResponsesTranslation translate_responses(const nlohmann::ordered_json& body, ResponseStore* store);

struct ResponsesRequest {
  ParsedRequest parsed;  // the chat request; parsed.stream is true: chunks are always made
  ResponsesTranslation t;
};

// The generation request of a Responses body: parse_chat_request over its translation, with
// echo.temperature and echo.top_p the values in force.
ResponsesRequest parse_responses_request(const nlohmann::ordered_json& body,
                                         const ServerLimits& limits, ResponseStore* store);

}  // namespace ls::server
