// JSON Lines output of a generation: one header object (mode, seed, stage order, every setting
// with its source) and one object per step, schema in docs/trace-format.md. Token text comes
// from a TokenBytesFn and is given both as text (invalid UTF-8 replaced by U+FFFD) and as hex
// bytes, since a token may hold part of a character.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "decode/generate.h"
#include "decode/trace.h"

namespace ls::decode {

nlohmann::json step_json(const StepTrace& step, const TokenBytesFn& token_bytes);
nlohmann::json header_json(const RunHeader& header);

// Valid UTF-8 with each invalid or incomplete sequence replaced by U+FFFD.
std::string sanitize_utf8(std::string_view bytes);
// "e5 8c 97".
std::string hex_bytes(std::string_view bytes);
// A token for a table: sanitized, with \n, \t, \r and other controls escaped.
std::string display_token(std::string_view bytes);

}  // namespace ls::decode
