// Shared helpers of the inspection-lab commands (see lab_common.h).
#include "app/lab_common.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

#include "app/common.h"
#include "core/error.h"
#include "core/npy.h"

namespace ls::app {

namespace {
std::vector<std::string> split_commas(const std::string& text, const char* flag) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const auto b = item.find_first_not_of(' ');
    const auto e = item.find_last_not_of(' ');
    if (b == std::string::npos) fail("{} has an empty item in '{}'", flag, text);
    items.push_back(item.substr(b, e - b + 1));
  }
  if (items.empty()) fail("{} is empty: give one value or a comma-separated list", flag);
  return items;
}
}  // namespace

namespace {
// Parses every item of a comma-separated list with `parse` (nullopt: not a valid item).
template <typename T, typename Parse>
std::vector<T> parse_list(const std::string& text, const char* flag, const char* what,
                          Parse parse) {
  std::vector<T> out;
  for (const auto& item : split_commas(text, flag)) {
    std::optional<T> v;
    try {
      v = parse(item);
    } catch (const std::exception&) {
      v.reset();
    }
    if (!v) fail("{} must be {} or a comma-separated list of them, got '{}'", flag, what, item);
    out.push_back(*v);
  }
  return out;
}
}  // namespace

std::vector<double> parse_number_list(const std::string& text, const char* flag) {
  return parse_list<double>(text, flag, "a number", [](const std::string& item) {
    std::size_t used = 0;
    const double v = std::stod(item, &used);
    return used == item.size() && std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
  });
}

std::vector<int> parse_int_list(const std::string& text, const char* flag) {
  return parse_list<int>(text, flag, "a non-negative integer", [](const std::string& item) {
    std::size_t used = 0;
    const long v = std::stol(item, &used);
    return used == item.size() && v >= 0 && v <= 100000000 ? std::optional<int>(static_cast<int>(v))
                                                           : std::nullopt;
  });
}

std::string clip_utf8(const std::string& s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "…";
}

void print_json_line(const nlohmann::json& j) {
  fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::fflush(stdout);
}

void print_json_pretty(const nlohmann::ordered_json& j) {
  fmt::print("{}\n", j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace));
  std::fflush(stdout);
}

std::string token_cell(const LoadedModel& lm, std::int32_t id) {
  return fmt::format("\"{}\"#{}", printable(lm.token_bytes(id)), id);
}

std::string token_label(const LoadedModel& lm, std::int32_t id, std::size_t max_chars) {
  return fmt::format("{}#{}", printable(clip_utf8(lm.token_text(id), max_chars)), id);
}

void write_rows_npy(const std::string& path, const std::vector<float>& rows, std::int64_t vocab) {
  write_npy_f32(path, rows, {static_cast<std::int64_t>(rows.size()) / vocab, vocab});
}

}  // namespace ls::app
