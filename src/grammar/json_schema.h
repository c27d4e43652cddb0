// JSON Schema (the subset OpenAI's strict structured outputs document, plus what llama.cpp's
// converter covers) turned into a GBNF grammar whose sentences are exactly the JSON texts the
// schema accepts, with bounded whitespace. A keyword the converter does not enforce is an error
// naming it and its path ("unsupported keyword 'patternProperties' at $.properties.a"), never
// silently dropped.
//
// Supported: type (one or a list), enum, const (any JSON values), anyOf, oneOf, allOf (merged
// keyword by keyword), $ref to a local JSON pointer ("#/$defs/x", "#/definitions/x", "#"; a
// recursive schema becomes a recursive rule), properties, required, additionalProperties
// (false, true or a schema), prefixItems, items, minItems, maxItems, uniqueItems false,
// minLength, maxLength, pattern, format (date, time, date-time, uuid), minimum, maximum,
// exclusiveMinimum, exclusiveMaximum; true/{} as any value. Ignored annotations: title,
// description, $schema, $id, default, examples, $comment, deprecated, readOnly, writeOnly
// ($defs/definitions hold schemas). Everything else is refused.
//
// Where the grammar is narrower or wider than the schema, deliberately:
// - Whitespace between tokens and around the text: nothing, one space, or a line feed followed by
//   at most 20 spaces or tabs (compact and pretty-printed JSON), so a model cannot loop on
//   whitespace or pad every token with it. Two spaces, "\r\n" or blank lines are rejected.
// - Objects: properties come in the order of `properties` (then required keys that are not
//   listed, then additional ones); any listed property may be left out unless required. Extra
//   keys (additionalProperties not false) come after the listed ones and are never a listed key,
//   but two extra members may repeat a key.
// - "integer" is written as an integer (1, -0), not as 1.0 or 1e2. enum/const numbers are
//   written as the schema's JSON writes them (nlohmann's shortest form); enum/const objects
//   keep the schema's key order.
// - Strings the schema fixes (listed keys: `properties` and `required`; enum and const strings,
//   keys and strings inside enum/const values too) are matched only in their canonical spelling:
//   each character raw when JSON allows it (all but ", \ and U+0000-U+001F), else its short
//   escape (\" \\ \b \f \n \r \t), else \u00xx in lowercase, as Python's
//   json.dumps(s, ensure_ascii=False) writes it: "city", never "\u0063ity". Strings the model
//   writes freely (type string, pattern and format texts, additional keys) take every JSON
//   spelling ("é", "\u00e9", "\u00E9", "\/") and are measured in decoded characters; an
//   additional key never decodes to a listed key, in any spelling. Escaped lone surrogates
//   ("\ud800") are never accepted.
// - oneOf is treated as anyOf, as llama.cpp does: a text valid under two branches is accepted
//   though oneOf rejects it. Exact when the branches do not overlap.
// - number bounds are enforced only when they are 0 (>= 0, > 0, <= 0, < 0): any other bound
//   on a number is refused (with type integer, every bound is exact, beyond 64 bits too; a
//   bound is the number nlohmann parsed: 1e100 is the double nearest it, 10^100 + 1.6e83).
// - $ref: a JSON pointer as written ("~0", "~1" decoded, "%xx" not).
// - pattern: ECMA-262 syntax matched on code points, unanchored unless ^ / $; literals, `.`,
//   classes, \d \w \s \D \W \S, groups, (?:), named groups, |, * + ? {m} {m,} {m,n} (lazy too).
//   Not beside minLength/maxLength. Lookaround, backreferences, \b and the like are refused.
// - format: date (real month lengths and leap years), time (HH:MM:SS, seconds up to 60, an
//   optional fraction, Z/z or +HH:MM), date-time (date, T or t, time), uuid (8-4-4-4-12 hex).
// - Counts (minLength .. maxItems, regex repetitions) are at most 10,000.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace ls::grammar {

// GBNF text with a `root` rule; `origin` prefixes error messages (e.g.
// "response_format.json_schema.schema"). Throws ls::Error. nlohmann::json keeps object keys
// sorted, so properties are asked for in key order; pass an ordered_json (parsed with
// nlohmann::ordered_json::parse) to keep the order the schema was written in.
std::string json_schema_to_gbnf(const nlohmann::json& schema, std::string_view origin);
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, std::string_view origin);

// Any JSON object (response_format {"type": "json_object"}): GBNF text with a `root` rule.
std::string json_object_gbnf();

}  // namespace ls::grammar
