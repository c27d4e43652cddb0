// Helpers for model tests: scratch directories, raw file writing and tiny synthetic models.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "convert/synth.h"

namespace ls::test {

// The scratch directories this process made, removed when it exits normally (each CTest case is
// a process of its own, so a run leaves nothing behind; a crashed case leaves its files to look
// at).
struct ScratchDirs {
  std::vector<std::filesystem::path> dirs;
  ~ScratchDirs() {
    for (const auto& d : dirs) {
      std::error_code ignored;  // best effort: never throw from a destructor at exit
      std::filesystem::remove_all(d, ignored);
    }
  }
};

// A fresh directory for one test. The process id is part of the name because CTest runs each
// GoogleTest case as its own process, in parallel: two cases of one binary must not share it.
inline std::filesystem::path scratch_dir(const std::string& name) {
  static ScratchDirs made;
  auto d = std::filesystem::temp_directory_path() /
           ("logitscope_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  made.dirs.push_back(d);
  return d;
}

// A tiny synthetic model (the "tiny" shape, real tokenizer vocabulary size, no tokenizer files)
// in a fresh scratch directory; returns the directory.
inline std::string synth_tiny(const std::string& name, DType dtype, std::uint64_t seed) {
  const auto d = scratch_dir(name);
  convert::SynthOptions o;
  o.shape = "tiny";
  o.dtype = dtype;
  o.seed = seed;
  o.out_dir = d.string();
  convert::synthesize_model(o);
  return d.string();
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream(p, std::ios::binary) << bytes;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// Expects `fn` to throw ls::Error whose message contains `needle`.
#define LS_EXPECT_ERROR(stmt, needle)                                            \
  do {                                                                           \
    try {                                                                        \
      stmt;                                                                      \
      ADD_FAILURE() << "no error thrown; expected one containing: " << (needle); \
    } catch (const ls::Error& e) {                                               \
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)           \
          << "message: " << e.what() << "\nexpected to contain: " << (needle);   \
    }                                                                            \
  } while (0)

}  // namespace ls::test
