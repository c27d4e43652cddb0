// Constrained decoding as requests ask for it: OpenAI's `response_format` (json_object,
// json_schema) and forced tool calls (`tool_choice` "required" or a named function, in Qwen's
// <tool_call> format, arguments matching the tool's `parameters`), and llama-server's `grammar`
// and `json_schema` fields. Each becomes the grammar the decode chain's first stage enforces;
// a schema keyword that cannot be enforced is a 400 naming it, never silently dropped.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "grammar/constraint.h"
#include "server/request.h"

namespace ls::server {

// The constraint of a request (null: none). `tools` is the request's checked tool list (null
// when absent or tool_choice "none"); chat requests read response_format and tool_choice.
// `written`: the body with keys in written order (request.h), for schemas' property order.
// `thinking`: the reply opens with a reasoning block (a thinking template that did not close
// it in the prompt); the constraint then applies after "</think>".
std::shared_ptr<const grammar::Constraint> request_constraint(
    const nlohmann::json& body, bool chat, const nlohmann::json& tools, const ServerLimits& limits,
    bool thinking = false, const nlohmann::ordered_json* written = nullptr);

}  // namespace ls::server
