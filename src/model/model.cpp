// Loading a Hugging Face model directory or a GGUF file and running sequences through it.
#include "model/model.h"

#include <filesystem>
#include <map>
#include <set>

#include "core/error.h"
#include "core/mapped_file.h"
#include "formats/gguf_split.h"
#include "formats/tensor_names.h"
#include "kernels/cpu_info.h"
#include "model/gguf_metadata.h"

namespace ls::model {

namespace fs = std::filesystem;

Model::Model(std::string path, ModelConfig config, formats::TensorStore store,
             const LoadOptions& options)
    : path_(std::move(path)),
      config_(std::move(config)),
      store_(std::move(store)),
      arch_(&ls::model::architecture(config_.model_type)),
      kv_type_(options.kv_type),
      checks_{.nonfinite = options.debug_nonfinite} {
  check_kv_type(kv_type_);
  std::set<std::string> used;
  weights_ = bind_weights(
      config_, arch_->qkv_bias, arch_->qk_norm,
      [&](const std::string& n) {
        used.insert(n);
        return store_.find(n);
      },
      store_.gguf() != nullptr, options.validate, path_);
  // Every tensor of the file is one the architecture uses: a layer more than num_hidden_layers
  // says, a bias a Qwen3 has not, or a misnamed tensor means the config and the weights
  // disagree, and running would silently compute another model. Tolerated: rotary inv_freq
  // buffers (old checkpoints) and an lm_head beside tied embeddings (transformers ignores it).
  const std::string lm_head = store_.gguf() ? formats::gguf_tensor_name(formats::WeightRole::LmHead)
                                            : formats::hf_tensor_name(formats::WeightRole::LmHead);
  for (const std::string& n : store_.names()) {
    if (used.contains(n) || n.ends_with("rotary_emb.inv_freq") ||
        (n == lm_head && config_.tie_word_embeddings))
      continue;
    fail(
        "{}: tensor '{}' is not a weight of this {} model ({} layers, head_dim {}): the config "
        "and the weights disagree (num_hidden_layers? model_type?)",
        path_, n, config_.model_type, config_.num_hidden_layers, config_.head_dim);
  }
  if (options.repack) repacked_bytes_ = repack_weights(weights_, repacked_, options.huge_pages);
  // Read here, on the caller's thread: a bad LS_DECODE_PREFETCH(_LEVEL) is a load error, not a
  // throw from the first product's worker threads.
  kernels::decode_ahead_bytes();
  kernels::decode_prefetch_to_l2();
  if (options.bf16_activations) {
    const auto mark = [](TensorView& t) { t.bf16_activations = t.dtype == DType::BF16; };
    mark(weights_.lm_head);
    for (LayerWeights& L : weights_.layers)
      for (TensorView* t : L.matrices()) mark(*t);
  }
}

std::unique_ptr<Model> Model::from_gguf(std::unique_ptr<formats::GgufFile> file,
                                        const LoadOptions& options) {
  // A GGUF file is the whole model: the config comes from its metadata (of the first part, when
  // split: a later part given alone is refused here, naming the first).
  (void)formats::gguf_split_count(*file);
  ModelConfig config = gguf_model_config(*file);
  std::string path = file->path();
  return std::unique_ptr<Model>(new Model(std::move(path), std::move(config),
                                          formats::TensorStore::from_gguf(std::move(file)),
                                          options));
}

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& options) {
  if (fs::path(path).extension() == ".gguf" && !fs::is_directory(path))
    return from_gguf(std::make_unique<formats::GgufFile>(path, formats::GgufArrays::Skip), options);
  if (!fs::is_directory(path))
    fail(
        "{}: not a model directory (expected config.json and *.safetensors inside) nor a .gguf "
        "file",
        path);
  if (!fs::exists(fs::path(path) / "config.json"))
    fail(
        "{}: not a model directory: it has no config.json (a Hugging Face model directory holds "
        "config.json and *.safetensors; or give a .gguf file, or a model id such as "
        "Qwen/Qwen2.5-0.5B-Instruct)",
        path);
  ModelConfig config = load_model_config((fs::path(path) / "config.json").string());
  formats::TensorStore store = formats::TensorStore::open_hf_dir(path);
  std::unique_ptr<Model> m(new Model(path, std::move(config), std::move(store), options));
  const fs::path gen = fs::path(path) / "generation_config.json";
  if (fs::exists(gen)) {
    try {
      m->generation_config_ = nlohmann::json::parse(read_text_file(gen.string()));
    } catch (const nlohmann::json::exception& e) {
      fail("{}: invalid JSON: {}", gen.string(), e.what());
    }
    if (!m->generation_config_.is_object()) fail("{}: expected a JSON object", gen.string());
  }
  return m;
}

std::string Model::weight_dtype() const {
  std::map<DType, std::size_t> bytes;
  for (const auto& n : store_.names()) {
    const TensorView* t = store_.find(n);
    bytes[t->dtype] += t->nbytes();
  }
  DType best = DType::F32;
  std::size_t most = 0;
  for (auto [d, b] : bytes)
    if (b > most) best = d, most = b;
  return std::string(dtype_name(best));
}

void Model::lens_logits(std::span<const float> residuals, std::size_t rows, std::span<float> logits,
                        ThreadPool& pool) const {
  std::vector<float> xn(rows * static_cast<std::size_t>(config_.hidden_size));
  kernels::MatmulScratch scratch;
  final_logits(config_, weights_, residuals, rows, xn, logits, pool, scratch);
}

}  // namespace ls::model
