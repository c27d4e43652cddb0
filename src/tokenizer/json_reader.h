// A fast, strict JSON reader that drives an nlohmann SAX handler. tokenizer.json is 11 MB of
// mostly short strings; nlohmann's own lexer spends about four times longer on it than this one.
// Same grammar as RFC 8259 (no comments, no trailing commas); strings must be valid UTF-8 and
// \u escapes valid UTF-16 (surrogate pairs combined, lone surrogates rejected).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace ls::tok {

// Calls the handler for every value of `text`. Returns true when the whole text was one valid
// JSON value and the handler accepted every event; otherwise false, with *error describing a
// syntax error and its position ("" when the handler refused an event).
bool read_json(std::string_view text, nlohmann::json_sax<nlohmann::json>& sax, std::string* error);

}  // namespace ls::tok
