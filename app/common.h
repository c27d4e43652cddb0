// Pieces shared by the subcommands: the options every model command takes (--model,
// --threads), parsing of --tokens lists, and formatting helpers for tables.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/dtype.h"
#include "model/model.h"

namespace ls::app {

struct ModelOptions {
  std::string model;             // a Hugging Face model directory or a .gguf file
  int threads = 0;               // 0: all hardware threads
  std::string kv_type = "f32";   // --kv-type f32|f16|bf16
  bool no_validate = false;      // --no-validate: skip the finite-weights scan at load
  bool debug_nonfinite = false;  // --debug-nonfinite: check every layer's outputs
};

void add_model_options(CLI::App& cmd, ModelOptions& o);

// How --kv-type, --no-validate and --debug-nonfinite open the model; throws naming --kv-type
// for anything but f32, f16, bf16.
LoadOptions load_options(const ModelOptions& o);

// "1,2, 3" -> {1, 2, 3}; throws naming --tokens on anything else.
std::vector<std::int32_t> parse_token_list(const std::string& text, const char* flag = "--tokens");

// A token's text made safe for a one-line table cell: control characters and invalid UTF-8
// bytes escaped (\n, \t, \xE4), everything else as is.
std::string printable(const std::string& bytes);

}  // namespace ls::app
