// A loaded model: its config, generation defaults, memory-mapped tensors, bound weights and the
// KV element type chosen at load. A Model is immutable after load and may be shared by many
// sequences (engine::Engine's, engine::Session's).
#pragma once

#include <memory>
#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "formats/tensor_store.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/repack.h"
#include "model/weights.h"

namespace ls::model {

// How a model is opened and checked.
struct LoadOptions {
  DType kv_type = DType::F32;    // the KV cache element type of its sequences (F32, F16, BF16)
  bool validate = true;          // scan norms and GGML block scales for NaN/inf at load
  bool debug_nonfinite = false;  // check every layer's outputs (ForwardChecks::nonfinite)
  // Matrices into huge-page memory at load, Q8_0/Q4_0/Q5_0/Q5_1 ones into the kernels'
  // interleaved layout (model/repack.h); false: read in place from the file's map.
  bool repack = true;
  // With repack: float and K-quant matrices move into the huge-page buffer too (their bytes
  // unchanged): faster decode, slower load (model/repack.h). The long-running commands set it.
  bool huge_pages = false;
  // BF16 matrices multiply activations rounded to BF16 (kernels/bf16_dot.h), as llama.cpp and
  // torch's bf16 compute do: about 1.5x the prefill speed on CPUs with AVX512_BF16. The logits
  // move by a few hundredths (0.02-0.05 on the reference tests' models) from the exact
  // float32-activation results, which are the default.
  bool bf16_activations = false;
};

class Model {
 public:
  // `path`: a Hugging Face model directory (config.json, *.safetensors, ...) or a .gguf file.
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& options = {});
  // A GGUF file already open (the engine reads its tokenizer and template from it first).
  static std::unique_ptr<Model> from_gguf(std::unique_ptr<formats::GgufFile> file,
                                          const LoadOptions& options = {});

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const Architecture& architecture() const { return *arch_; }
  const Weights& weights() const { return weights_; }
  // Bytes of weights interleaved at load (LoadOptions::repack), 0 when none were.
  std::size_t repacked_bytes() const { return repacked_bytes_; }
  // generation_config.json as written, or an empty object when the file is absent.
  const nlohmann::json& generation_config() const { return generation_config_; }
  std::size_t weight_bytes() const { return store_.total_bytes(); }
  // Name of the dtype most weights are stored in ("BF16", ...), for reports.
  std::string weight_dtype() const;
  // The KV cache element type of this model's sequences, fixed at load.
  DType kv_type() const { return kv_type_; }

  // model::forward over this model's weights, with the checks chosen at load.
  void forward(std::span<const SequenceInput> batch, Activations& acts, ThreadPool& pool) const {
    model::forward(*arch_, config_, weights_, batch, acts, pool, checks_);
  }
  // The logit lens: residual-stream rows ([rows, hidden], as SequenceInput::residuals captures
  // them) through the final norm and lm_head into `logits` ([rows, vocab]).
  void lens_logits(std::span<const float> residuals, std::size_t rows, std::span<float> logits,
                   ThreadPool& pool) const;

 private:
  Model(std::string path, ModelConfig config, formats::TensorStore store,
        const LoadOptions& options);
  std::string path_;
  ModelConfig config_;
  formats::TensorStore store_;
  const Architecture* arch_;
  Weights weights_;
  HugePageBuffer repacked_;  // what repacked views of weights_ point into
  std::size_t repacked_bytes_ = 0;
  nlohmann::json generation_config_ = nlohmann::json::object();
  DType kv_type_ = DType::F32;
  ForwardChecks checks_;
};

}  // namespace ls::model
