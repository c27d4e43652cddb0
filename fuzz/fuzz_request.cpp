// Fuzz target: an HTTP request body through the server's checking (src/server/request.h). Each
// input is parsed as the server parses a body (parse_body: JSON, an object) and then given to
// parse_chat_request and parse_completion_request with a tiny synthetic model (the real Qwen
// tokenizer and the built-in Qwen2.5 template), synthesized once. Only ApiError may escape (as
// in RequestTest.FuzzedBodiesOnlyRaiseApiError): any other exception is a finding.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "engine/loaded_model.h"
#include "fuzz_util.h"
#include "model/synth.h"
#include "server/request.h"

namespace {

namespace fs = std::filesystem;

// The model: synthesized on first use into a directory kept between runs (a marker file says
// it is complete), or LS_FUZZ_MODEL_DIR.
const ls::engine::LoadedModel& model() {
  static const ls::engine::LoadedModel m = [] {
    const char* env = std::getenv("LS_FUZZ_MODEL_DIR");
    const fs::path dir = env ? fs::path(env)
                             : fs::temp_directory_path() /
                                   ("logitscope_fuzz_tiny_" + std::to_string(::getuid()));
    if (!fs::exists(dir / ".complete")) {
      fs::remove_all(dir);
      ls::SynthOptions o;
      o.shape = "tiny";
      o.dtype = ls::DType::BF16;
      o.seed = 3;
      o.tokenizer_from = LS_QWEN_TOKENIZER_DIR;
      o.out_dir = dir.string();
      ls::synthesize_model(o);
      std::ofstream(dir / ".complete") << "synthesized by fuzz_request\n";
    }
    return ls::engine::LoadedModel::open(dir.string());
  }();
  return m;
}

const ls::server::ServerLimits& limits() {
  static std::mutex mutex;
  static const ls::server::ServerLimits l = [] {
    ls::server::ServerLimits s;
    s.model = &model();
    s.served_name = "tiny";
    s.ctx = 256;
    s.parallel = 4;
    s.defaults = ls::server::server_defaults(model());
    s.template_mutex = &mutex;
    return s;
  }();
  return l;
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
      ls::fuzz::finding(std::string(chat ? "chat" : "completion") + ": not an ApiError: " +
                        e.what());
    } catch (...) {
      ls::fuzz::finding("a non-std::exception escaped");
    }
  }
  return 0;
}
