// The model and limits the server's request fuzzers (fuzz_request, fuzz_messages, fuzz_native,
// fuzz_responses) check bodies against: a tiny synthetic model (the real Qwen tokenizer, the
// built-in Qwen2.5 template) synthesized on first use into a directory kept between runs (a
// marker file says it is complete), or LS_FUZZ_MODEL_DIR.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "convert/synth.h"
#include "engine/loaded_model.h"
#include "server/request.h"

namespace ls::fuzz {

inline const engine::LoadedModel& server_model() {
  namespace fs = std::filesystem;
  static const engine::LoadedModel m = [] {
    const char* env = std::getenv("LS_FUZZ_MODEL_DIR");
    const fs::path dir =
        env ? fs::path(env)
            : fs::temp_directory_path() / ("logitscope_fuzz_tiny_" + std::to_string(::getuid()));
    if (!fs::exists(dir / ".complete")) {
      fs::remove_all(dir);
      convert::SynthOptions o;
      o.shape = "tiny";
      o.dtype = DType::BF16;
      o.seed = 3;
      o.tokenizer_from = LS_QWEN_TOKENIZER_DIR;
      o.out_dir = dir.string();
      convert::synthesize_model(o);
      std::ofstream(dir / ".complete") << "synthesized by a server fuzzer\n";
    }
    return engine::LoadedModel::open(dir.string());
  }();
  return m;
}

inline const server::ServerLimits& server_limits() {
  static std::mutex mutex;
  static const server::ServerLimits l = [] {
    server::ServerLimits s;
    s.model = &server_model();
    s.served_name = "tiny";
    s.ctx = 256;
    s.parallel = 4;
    s.defaults = server::server_defaults(server_model());
    s.template_mutex = &mutex;
    return s;
  }();
  return l;
}

}  // namespace ls::fuzz
