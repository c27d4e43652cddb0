// Converting a Hugging Face model directory into one GGUF file as llama.cpp lays it out: the
// standard tensor names (from the tensor-name table) and metadata keys (general.*, qwen2.*,
// tokenizer.ggml.*, tokenizer.chat_template), 2-D matrices in the requested type, norms and
// biases in F32. Tensors are converted and written one at a time, never the whole model twice.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "convert/gguf_mix.h"
#include "core/dtype.h"

namespace ls::convert {

struct QuantizeOptions {
  std::string model_dir;  // Hugging Face directory (config.json, *.safetensors, tokenizer.json)
  DType type = DType::Q8_0;
  // A llama-quantize mix (--type q4_k_m, ...): each matrix's type from quant_mix_tensor_type,
  // `type` being the mix's default type.
  std::optional<QuantMix> mix;
  std::string out;   // the .gguf to write
  std::string name;  // general.name; "" = the directory's name
  int threads = 0;   // rows converted in parallel (0: one thread per hardware thread)
  // Called after each tensor is written, with the count done and the total (a progress line).
  std::function<void(std::size_t done, std::size_t total)> on_tensor;
};

// The type a tensor is stored in for a requested type. 1-D tensors (norms, biases) are F32.
// A matrix whose rows are not a whole number of the requested block format's blocks falls back
// as llama-quantize's does: Q2_K and Q3_K to IQ4_NL, Q4_K to Q5_0, Q5_K to Q5_1 and Q6_K to Q8_0
// when rows are a multiple of 32, and any block format to F16 when they are not even that.
DType gguf_tensor_type(DType requested, const std::vector<std::int64_t>& shape);

// llama.cpp's general.file_type for a requested type (ALL_F32 0, MOSTLY_F16 1, MOSTLY_Q4_0 2,
// MOSTLY_Q4_1 3, MOSTLY_Q8_0 7, MOSTLY_Q5_0 8, MOSTLY_Q5_1 9, MOSTLY_Q2_K 10, MOSTLY_Q3_K_S 11,
// MOSTLY_Q4_K_S 14, MOSTLY_Q5_K_S 16, MOSTLY_Q6_K 18, MOSTLY_IQ4_NL 25, MOSTLY_BF16 32).
std::uint32_t gguf_file_type(DType requested);

// Whether this build can write a type (the block formats need the quantization kernels).
bool gguf_can_write(DType type);

struct QuantizeResult {
  struct Fallback {
    std::string tensor;
    std::vector<std::int64_t> shape;
    DType wanted;  // the type asked for (the mix's choice for this matrix)
    DType type;    // the type written
  };
  std::vector<Fallback> fallbacks;  // matrices not stored in the requested type
  std::size_t tensors = 0;
  std::uint64_t bytes = 0;  // tensor data bytes written
  bool tokenizer = false;   // tokenizer metadata written (the directory had tokenizer.json)
};

// Writes options.out; throws ls::Error naming the file or the field on bad input.
QuantizeResult quantize_to_gguf(const QuantizeOptions& options);

}  // namespace ls::convert
