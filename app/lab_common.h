// Helpers shared by the commands that print tables and JSON (sweep, seeds, compare, replay,
// eval, next, generate): number lists for sweep flags, JSON printing, token cells for tables,
// UTF-8-safe clipping and raw logit rows written as .npy (for --dump-logits).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/prompt.h"

namespace ls::app {

// "0.2,0.7, 1" -> {0.2, 0.7, 1}; throws naming `flag` on anything else or an empty list.
std::vector<double> parse_number_list(const std::string& text, const char* flag);
std::vector<int> parse_int_list(const std::string& text, const char* flag);

// Prints one JSON value on its own line (invalid UTF-8 replaced).
void print_json_line(const nlohmann::json& j);
void print_json_pretty(const nlohmann::ordered_json& j);

// `s` cut to at most `max_bytes` bytes at a UTF-8 character boundary, "…" added when cut.
std::string clip_utf8(const std::string& s, std::size_t max_bytes);

// "\"text\"#id" with control characters escaped, for one table cell.
std::string token_cell(const LoadedModel& lm, std::int32_t id);
// The token's text clipped to `max_chars` bytes at a character boundary (for SVG labels).
std::string token_label(const LoadedModel& lm, std::int32_t id, std::size_t max_chars = 14);

// Rows of `vocab` floats, written as [rows, vocab] float32 .npy.
void write_rows_npy(const std::string& path, const std::vector<float>& rows, std::int64_t vocab);

}  // namespace ls::app
