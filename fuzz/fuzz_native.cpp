// Fuzz target: a llama-server native completion body (POST /completion) through its checking
// (src/server/native_request.h), with the tiny synthetic model of server_model.h. Only ApiError
// may escape, and an accepted body must give jobs the scheduler can run: a prompt that fits the
// context with room for at least one token, a config that validates and a chain that builds.
#include <cstdint>
#include <exception>
#include <string>

#include "decode/order.h"
#include "fuzz_util.h"
#include "server/native_request.h"
#include "server_model.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)ls::fuzz::server_limits();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto body = nlohmann::json::parse(data, data + size, nullptr, false);
  if (body.is_discarded()) return 0;
  const auto& limits = ls::fuzz::server_limits();
  try {
    const ls::server::NativeRequest r = ls::server::parse_native_request(body, limits);
    if (r.parsed.jobs.empty()) ls::fuzz::finding("an accepted body gave no job");
    for (const auto& job : r.parsed.jobs) {
      if (job.prompt.empty() || static_cast<int>(job.prompt.size()) >= limits.ctx)
        ls::fuzz::finding("a prompt of " + std::to_string(job.prompt.size()) +
                          " tokens was accepted with --ctx " + std::to_string(limits.ctx));
      // n_predict 0 asks for the prompt alone (0 new tokens), as llama-server's does.
      if (job.config.max_new_tokens < 0) ls::fuzz::finding("max_new_tokens below 0");
      ls::decode::validate(job.config);
      (void)ls::decode::build_chain(
          job.config,
          {.vocab_size = static_cast<std::int32_t>(limits.model->model().config().vocab_size)});
    }
  } catch (const ls::server::ApiError&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ApiError: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  return 0;
}
