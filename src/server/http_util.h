// What every HTTP handler of `logitscope serve` shares: JSON bodies parsed with errors that give
// the byte offset, OpenAI (or Anthropic) error objects, JSON answers, response ids and the
// guard that turns a handler's exceptions into those errors (ApiError as it is, the library's
// ls::Error as a 400, anything else a 500).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "server/request.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ls::server {

// JSON text with invalid UTF-8 replaced (a token's bytes may be a partial character).
std::string dump(const nlohmann::json& j);
nlohmann::json error_json(const std::string& message, const std::string& type,
                          const std::string& param, const std::string& code);
// The Messages routes answer errors in Anthropic's shape, every other route in OpenAI's.
bool anthropic_route(const std::string& path);
void send_error(httplib::Response& res, const ApiError& e, bool anthropic = false);
void send_json(httplib::Response& res, const nlohmann::json& j);
// The body as a JSON object; ApiError 400 "invalid_json" naming the byte of a fault.
nlohmann::json parse_body(const httplib::Request& req);
std::string random_id(const char* prefix);  // prefix + 24 random hex digits
std::int64_t unix_time();

// Runs a handler body, turning ApiError and other failures into OpenAI (or Anthropic) errors.
template <typename F>
void guarded(httplib::Response& res, bool anthropic, F&& body) {
  try {
    body();
  } catch (const ApiError& e) {
    send_error(res, e, anthropic);
  } catch (const Error& e) {
    // The library's refusals of what was asked (a lens step mirostat cannot re-run alone, ...).
    send_error(res, ApiError(400, e.what()), anthropic);
  } catch (const std::exception& e) {
    send_error(res, ApiError(500, e.what(), "", "internal_error", "server_error"), anthropic);
  }
}

template <typename F>
void guarded(httplib::Response& res, F&& body) {
  guarded(res, false, std::forward<F>(body));
}

}  // namespace ls::server
