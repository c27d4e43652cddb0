// JSON Schema (the subset OpenAI's strict structured outputs document, plus what llama.cpp's
// converter covers) turned into a GBNF grammar whose sentences are exactly the JSON texts the
// schema accepts, with bounded whitespace. A keyword the converter does not enforce is an error
// naming it and its path ("unsupported keyword 'patternProperties' at $.properties.a"), never
// silently dropped.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ls::grammar {

// GBNF text with a `root` rule; `origin` prefixes error messages (e.g.
// "response_format.json_schema.schema"). Throws ls::Error.
std::string json_schema_to_gbnf(const nlohmann::json& schema, std::string_view origin);

// Any JSON object (response_format {"type": "json_object"}): GBNF text with a `root` rule.
std::string json_object_gbnf();

}  // namespace ls::grammar
