// Fuzz target: an HTTP request body through the server's checking (src/server/request.h). Each
// input is parsed as the server parses a body (parse_body: JSON, an object) and then given to
// parse_chat_request and parse_completion_request with the tiny synthetic model of
// server_model.h (the real Qwen tokenizer and the built-in Qwen2.5 template). Only ApiError may
// escape (as in RequestTest.FuzzedBodiesOnlyRaiseApiError): any other exception is a finding.
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz_util.h"
#include "server/request.h"
#include "server_model.h"

namespace {

const ls::server::ServerLimits& limits() {
  return ls::fuzz::server_limits();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)limits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // As http_server.cpp's parse_body: anything but a JSON object is a 400 before these run.
  const nlohmann::json body = nlohmann::json::parse(data, data + size, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return 0;
  for (bool chat : {true, false}) {
    try {
      if (chat)
        (void)ls::server::parse_chat_request(body, limits());
      else
        (void)ls::server::parse_completion_request(body, limits());
    } catch (const ls::server::ApiError&) {
    } catch (const std::exception& e) {
      ls::fuzz::finding(std::string(chat ? "chat" : "completion") +
                        ": not an ApiError: " + e.what());
    } catch (...) {
      ls::fuzz::finding("a non-std::exception escaped");
    }
  }
  return 0;
}
