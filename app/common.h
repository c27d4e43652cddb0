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
  // A Hugging Face model directory, a .gguf file, or a model id ("Qwen/Qwen2.5-0.5B-Instruct",
  // "Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m"); resolve_model (app/model_source.h) turns an id
  // into the path in the cache.
  std::string model;
  std::string revision = "main";  // --revision: the id's branch, tag or commit
  bool pull = false;              // --pull: download the id first when the cache lacks it
  std::string model_id;           // after resolve_model: the id's repo ("" for a path)
  bool resolved = false;
  int threads = 0;               // 0: all hardware threads
  std::string kv_type = "f32";   // --kv-type f32|f16|bf16
  bool no_validate = false;      // --no-validate: skip the finite-weights scan at load
  bool debug_nonfinite = false;  // --debug-nonfinite: check every layer's outputs
  bool no_repack = false;   // --no-repack: run Q8_0/Q4_0/Q5_0/Q5_1 matrices in the file's layout
  bool huge_pages = false;  // --huge-pages: float/K-quant matrices onto huge pages too
  bool bf16_activations = false;  // --bf16-activations: BF16 matrices take BF16 activations
};

// A check for an integer option: "expected an integer in [0, 1024], got 'abc'" for a word or
// a number out of range (CLI::Range calls both "not in range").
CLI::Validator integer_in(std::int64_t lo, std::int64_t hi);

// --model, --revision, --pull, --threads, --kv-type, --no-validate, --debug-nonfinite,
// --no-repack, --huge-pages (its default: o.huge_pages as given, true for the long-running
// commands serve, chat and bench).
void add_model_options(CLI::App& cmd, ModelOptions& o);

// How --kv-type, --no-validate, --debug-nonfinite and --no-repack open the model; throws naming
// --kv-type for anything but f32, f16, bf16.
model::LoadOptions load_options(const ModelOptions& o);

// "1,2, 3" -> {1, 2, 3}; throws naming --tokens on anything else.
std::vector<std::int32_t> parse_token_list(const std::string& text, const char* flag = "--tokens");

// --experts N|all (generate, next): of each layer's chosen experts in a mixture of experts, how
// many the text output lists (decode::kAllExperts for "all"); throws naming --experts.
std::size_t parse_experts_shown(const std::string& text);

// A token's text made safe for a one-line table cell: control characters and invalid UTF-8
// bytes escaped (\n, \t, \xE4), everything else as is.
std::string printable(const std::string& bytes);

}  // namespace ls::app
