// Synthetic models: real Qwen2.5 shapes and the real tokenizer with random weights fixed by a
// seed, written as a Hugging Face directory. Tests and benchmarks run on them, since no model
// hub is reachable; the numbers are meaningless but every code path is the real one.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/dtype.h"

namespace ls::convert {

struct SynthOptions {
  std::string shape = "tiny";  // tiny | qwen2.5-{0.5b,1.5b,3b,7b} | qwen3-{tiny,0.6b,1.7b,4b,8b}
                               // | qwen3-moe-tiny | qwen3-30b-a3b | qwen2-moe-tiny
                               // | qwen1.5-moe-a2.7b
  DType dtype = DType::BF16;
  std::uint64_t seed = 0;
  std::optional<bool> tied;    // default: the shape's own (7b untied, others tied)
  std::int64_t layers = 0;     // > 0 overrides the shape's layer count
  std::string tokenizer_from;  // folder with tokenizer.json + tokenizer_config.json ("" = none)
  std::string chat_template;   // template text; "" = the built-in Qwen2.5 Instruct template
                               // (Qwen3 shapes: the tokenizer_from folder's own template)
  std::string out_dir;
  // Called after each tensor is written, with the count done and the total (a progress line).
  std::function<void(std::size_t done, std::size_t total)> on_tensor;
};

std::vector<std::string> synth_shape_names();
// config.json contents for a shape (throws naming the shape if unknown).
nlohmann::ordered_json synth_config(const std::string& shape);

// Writes config.json, generation_config.json, model.safetensors and, when tokenizer_from is
// set, tokenizer.json and tokenizer_config.json (reduced to Qwen2.5's added tokens for Qwen2
// shapes; as given for Qwen3 ones).
void synthesize_model(const SynthOptions& options);

// The Qwen2.5 Instruct chat template, built into the binary from data/.
const std::string& builtin_qwen25_chat_template();

}  // namespace ls::convert
