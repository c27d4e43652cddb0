// The shared HTTP helpers (see http_util.h).
#include "server/http_util.h"

#include <httplib.h>

#include <chrono>
#include <mutex>
#include <random>
#include <string_view>

#include <fmt/format.h>

#include "server/anthropic_response.h"

namespace ls::server {

using nlohmann::json;

namespace {

// nlohmann's text without its "[json.exception.parse_error.101] parse error at line 1, column
// 12: " prefix (the byte offset is given instead): "syntax error while parsing value - ...".
std::string json_error_reason(const json::exception& e) {
  std::string_view what = e.what();
  if (const std::size_t tag = what.find("] "); tag != std::string_view::npos)
    what.remove_prefix(tag + 2);
  if (what.starts_with("parse error"))
    if (const std::size_t colon = what.find(": "); colon != std::string_view::npos)
      what.remove_prefix(colon + 2);
  return std::string(what);
}

}  // namespace

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json error_json(const std::string& message, const std::string& type, const std::string& param,
                const std::string& code) {
  return {{"error",
           {{"message", message},
            {"type", type},
            {"param", param.empty() ? json(nullptr) : json(param)},
            {"code", code.empty() ? json(nullptr) : json(code)}}}};
}

bool anthropic_route(const std::string& path) {
  return path.rfind("/v1/messages", 0) == 0;
}

void send_error(httplib::Response& res, const ApiError& e, bool anthropic) {
  res.status = e.status;
  if (e.status == 503) res.set_header("Retry-After", "1");
  res.set_content(dump(anthropic ? anthropic_error(e.status, e.what())
                                 : error_json(e.what(), e.type, e.param, e.code)),
                  "application/json");
}

void send_json(httplib::Response& res, const json& j) {
  res.status = 200;
  res.set_content(dump(j), "application/json");
}

json parse_body(const httplib::Request& req) {
  json body;
  try {
    body = json::parse(req.body);
  } catch (const json::parse_error& e) {
    // The byte offset lets a client find the fault in a long body (invalid UTF-8 in a string,
    // a bare NaN, a trailing comma); nlohmann's own text says what it expected there.
    throw ApiError(400,
                   fmt::format("the request body is not valid JSON at byte {}: {}", e.byte,
                               json_error_reason(e)),
                   "", "invalid_json");
  } catch (const json::exception& e) {
    // A number past double's range (1e999) is out_of_range, which carries no position.
    throw ApiError(400, fmt::format("the request body is not valid JSON: {}", json_error_reason(e)),
                   "", "invalid_json");
  }
  if (!body.is_object())
    throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
  return body;
}

std::string random_id(const char* prefix) {
  static std::mutex mutex;
  static std::mt19937_64 rng(std::random_device{}());
  std::lock_guard lock(mutex);
  return fmt::format("{}{:016x}{:08x}", prefix, rng(), static_cast<std::uint32_t>(rng()));
}

std::int64_t unix_time() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace ls::server
