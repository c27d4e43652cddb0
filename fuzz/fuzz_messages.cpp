// Fuzz target: an Anthropic Messages body (POST /v1/messages and /v1/messages/count_tokens)
// through its translation and the chat route's checking (src/server/anthropic_request.h), with
// the tiny synthetic model of server_model.h. Each input is parsed as the server parses a body
// (JSON, an object, keys in written order). Only ApiError may escape, and a body that is
// accepted must count the same prompt tokens as its generation request prefills.
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz_util.h"
#include "server/anthropic_request.h"
#include "server_model.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)ls::fuzz::server_limits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto body = nlohmann::ordered_json::parse(data, data + size, nullptr, false);
  if (body.is_discarded() || !body.is_object()) return 0;
  const auto& limits = ls::fuzz::server_limits();
  try {
    const ls::server::ParsedRequest r = ls::server::parse_messages_request(body, limits);
    const std::size_t counted = ls::server::count_message_tokens(body, limits);
    if (counted != r.jobs.at(0).prompt.size())
      ls::fuzz::finding("count_tokens counted " + std::to_string(counted) +
                        " tokens, the request prefills " +
                        std::to_string(r.jobs.at(0).prompt.size()));
  } catch (const ls::server::ApiError&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ApiError: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  // count_tokens alone: the same body without max_tokens.
  try {
    auto counted = body;
    counted.erase("max_tokens");
    (void)ls::server::count_message_tokens(counted, limits);
  } catch (const ls::server::ApiError&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("count_tokens: not an ApiError: ") + e.what());
  }
  return 0;
}
