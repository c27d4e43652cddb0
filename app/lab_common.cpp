// Shared helpers of the inspection-lab commands (see lab_common.h).
#include "app/lab_common.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
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

std::vector<double> parse_number_list(const std::string& text, const char* flag) {
  std::vector<double> out;
  for (const auto& item : split_commas(text, flag)) {
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || !std::isfinite(v))
      fail("{} must be a number or a comma-separated list of numbers, got '{}'", flag, item);
    out.push_back(v);
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const char* flag) {
  std::vector<int> out;
  for (const auto& item : split_commas(text, flag)) {
    std::size_t used = 0;
    long v = 0;
    try {
      v = std::stol(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size() || v < 0 || v > 100000000)
      fail("{} must be a non-negative integer or a comma-separated list of them, got '{}'", flag,
           item);
    out.push_back(static_cast<int>(v));
  }
  return out;
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
  return fmt::format("\"{}\"#{}", printable(token_bytes(lm, id)), id);
}

std::string token_label(const LoadedModel& lm, std::int32_t id, std::size_t max_chars) {
  std::string t = token_text(lm, id);
  if (t.size() > max_chars) {
    std::size_t cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(t[cut]) & 0xC0) == 0x80) --cut;
    t = t.substr(0, cut) + "…";
  }
  return fmt::format("{}#{}", printable(t), id);
}

void write_rows_npy(const std::string& path, const std::vector<float>& rows, std::int64_t vocab) {
  write_npy_f32(path, rows, {static_cast<std::int64_t>(rows.size()) / vocab, vocab});
}

}  // namespace ls::app
