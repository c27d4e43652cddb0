// Reading a request body's fields: each reader checks a value's type and range and throws
// ApiError 400 naming the field as a path ("logit_bias[2][0]") with what was expected and what
// came. Templates over nlohmann::json and ordered_json, so every route checks fields alike.
// Also what the Messages and Responses routes share in reading the chat route's answers and
// renaming its errors to their own field names.
#pragma once

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "server/request.h"

namespace ls::server::body {

// The chat route's sampling fields beyond OpenAI's (vLLM's, llama-server's, the extension
// object), which the Messages and Responses routes pass through under their own names: one
// list, so a sampler added to chat reaches every route.
inline constexpr const char* kSamplingExtensions[] = {"seed",
                                                      "min_p",
                                                      "top_n_sigma",
                                                      "dynatemp_range",
                                                      "dynatemp_exponent",
                                                      "typical_p",
                                                      "xtc_probability",
                                                      "xtc_threshold",
                                                      "repetition_penalty",
                                                      "presence_penalty",
                                                      "frequency_penalty",
                                                      "repeat_last_n",
                                                      "min_keep",
                                                      "dry_multiplier",
                                                      "dry_base",
                                                      "dry_allowed_length",
                                                      "dry_penalty_last_n",
                                                      "dry_sequence_breakers",
                                                      "mirostat",
                                                      "mirostat_tau",
                                                      "mirostat_eta",
                                                      "logit_bias",
                                                      "ignore_eos",
                                                      "min_tokens",
                                                      "stop_token_ids",
                                                      "bad_words",
                                                      "logitscope"};

[[noreturn]] inline void bad(const std::string& param, const std::string& message,
                             const std::string& code = "invalid_value") {
  throw ApiError(400, message, param, code);
}

// "an integer", "a number", "a string", "an object", "a list", ...
template <typename J>
std::string type_name(const J& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_object()) return "an object";
  if (v.is_array()) return "a list";
  return std::string("a ") + v.type_name();
}

// The field, or null when absent or JSON null (OpenAI treats both as "not given").
template <typename J>
const J* field(const J& obj, const char* key) {
  const auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

template <typename J>
double number(const J& v, const std::string& param, double lo, double hi, bool lo_open = false) {
  if (!v.is_number()) bad(param, fmt::format("'{}' must be a number, got {}", param, type_name(v)));
  const double d = v.template get<double>();
  if (!std::isfinite(d) || d < lo || d > hi || (lo_open && d == lo))
    bad(param, fmt::format("'{}' must be in {}{}, {}], got {}", param, lo_open ? "(" : "[", lo, hi,
                           v.dump()));
  return d;
}

// An integer in [lo, hi]; integral floats (3.0) pass, as JSON does not tell them apart.
template <typename J>
std::int64_t integer(const J& v, const std::string& param, std::int64_t lo, std::int64_t hi) {
  std::int64_t i = 0;
  if (v.is_number_integer() && !v.is_number_unsigned()) {
    i = v.template get<std::int64_t>();
  } else if (v.is_number_unsigned()) {
    if (v.template get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
      bad(param, fmt::format("'{}' must be in [{}, {}], got {}", param, lo, hi, v.dump()));
    i = static_cast<std::int64_t>(v.template get<std::uint64_t>());
  } else if (v.is_number_float() && std::isfinite(v.template get<double>()) &&
             v.template get<double>() == std::floor(v.template get<double>()) &&
             std::fabs(v.template get<double>()) < 9e15) {
    i = static_cast<std::int64_t>(v.template get<double>());
  } else {
    bad(param, fmt::format("'{}' must be an integer, got {}", param, type_name(v)));
  }
  if (i < lo || i > hi)
    bad(param, fmt::format("'{}' must be in [{}, {}], got {}", param, lo, hi, i));
  return i;
}

template <typename J>
bool boolean(const J& v, const std::string& param) {
  if (!v.is_boolean())
    bad(param, fmt::format("'{}' must be a boolean, got {}", param, type_name(v)));
  return v.template get<bool>();
}

template <typename J>
const std::string& string(const J& v, const std::string& param) {
  if (!v.is_string()) bad(param, fmt::format("'{}' must be a string, got {}", param, type_name(v)));
  return v.template get_ref<const std::string&>();
}

// The non-negative integer at `key` of an answer (a usage count); 0 when absent or not one.
inline std::size_t count_at(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  return it != obj.end() && (it->is_number_unsigned() || it->is_number_integer())
             ? it->get<std::size_t>()
             : 0;
}

// The string at `key` when it is a non-empty one (json::empty() is false for every string).
inline const std::string* text_at(const nlohmann::json& obj, const char* key) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_string() || it->get_ref<const std::string&>().empty())
    return nullptr;
  return &it->get_ref<const std::string&>();
}

// `s` with every occurrence of each `from` replaced by its `to`, pair by pair in order: a chat
// route's error message or field path in another API's names.
inline std::string replace_each(
    std::string s, std::initializer_list<std::pair<std::string_view, std::string_view>> pairs) {
  for (const auto& [from, to] : pairs)
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  return s;
}

}  // namespace ls::server::body
