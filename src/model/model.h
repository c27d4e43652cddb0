// A loaded model: its config, generation defaults, memory-mapped tensors, bound weights and the
// KV element type chosen at load, plus Session, one sequence decoded on its own (a batch of one
// with its own KV blocks and scratch; the engine runs many). A Model is immutable after load and
// may be shared by many sessions.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "model/config.h"
#include "model/decoder.h"
#include "model/kv_cache.h"
#include "model/tensor_store.h"
#include "model/weights.h"

namespace ls {

class Model {
 public:
  // `path`: a Hugging Face model directory (config.json, *.safetensors, ...) or a .gguf file;
  // kv_type: the KV cache element type of its sequences (F32, F16 or BF16).
  static std::unique_ptr<Model> load(const std::string& path, DType kv_type = DType::F32);
  // A GGUF file already open (the engine reads its tokenizer and template from it first).
  static std::unique_ptr<Model> from_gguf(std::unique_ptr<GgufFile> file,
                                          DType kv_type = DType::F32);

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  const Architecture& architecture() const { return *arch_; }
  const Weights& weights() const { return weights_; }
  // generation_config.json as written, or an empty object when the file is absent.
  const nlohmann::json& generation_config() const { return generation_config_; }
  std::size_t weight_bytes() const { return store_.total_bytes(); }
  // Name of the dtype most weights are stored in ("BF16", ...), for reports.
  std::string weight_dtype() const;
  // The KV cache element type of this model's sequences, fixed at load.
  DType kv_type() const { return kv_type_; }

 private:
  Model(std::string path, ModelConfig config, TensorStore store, DType kv_type);
  std::string path_;
  ModelConfig config_;
  TensorStore store_;
  const Architecture* arch_;
  Weights weights_;
  nlohmann::json generation_config_ = nlohmann::json::object();
  DType kv_type_ = DType::F32;
};

class Session {
 public:
  // max_chunk: tokens processed per forward chunk (bounds scratch memory during prefill).
  // kv_type: element type of the KV cache (F32, F16 or BF16); default: model.kv_type().
  Session(const Model& model, ThreadPool& pool, std::int64_t max_chunk = 64,
          std::optional<DType> kv_type = std::nullopt);

  // Appends tokens and returns the logits after the last one ([vocab]), or for every appended
  // token ([tokens, vocab]) when all_positions. The span stays valid until the next call.
  std::span<const float> feed(std::span<const std::int32_t> tokens, bool all_positions = false);

  std::int64_t length() const { return cache_.length; }
  void reset() { cache_.clear(); }
  const KVCache& cache() const { return cache_; }
  const Model& model() const { return model_; }

 private:
  const Model& model_;
  ThreadPool& pool_;
  KvBlockPool blocks_;
  KVCache cache_;
  Activations acts_;
  std::vector<float> logits_;
};

}  // namespace ls
