// The family's architectures by model_type: each has its own file (qwen2.cpp, qwen3.cpp,
// qwen2_moe.cpp, qwen3_moe.cpp).
#include <array>

#include "core/error.h"
#include "model/qwen2.h"
#include "model/qwen2_moe.h"
#include "model/qwen3.h"
#include "model/qwen3_moe.h"

namespace ls::model {

const Architecture& architecture(const std::string& model_type) {
  static const std::array<const Architecture*, 4> kAll = {&kQwen2, &kQwen3, &kQwen2Moe, &kQwen3Moe};
  for (const Architecture* a : kAll)
    if (model_type == a->model_type) return *a;
  fail("model_type '{}' is not supported (supported: qwen2, qwen3, qwen2_moe, qwen3_moe)",
       model_type);
}

bool has_weight(const Architecture& arch, const ModelConfig& config, formats::WeightRole role,
                std::int64_t layer) {
  const bool sparse = layer >= 0 && config.sparse_layer(layer);
  switch (role) {
    case formats::WeightRole::WGate:
    case formats::WeightRole::WUp:
    case formats::WeightRole::WDown:
      return !sparse;
    case formats::WeightRole::Router:
    case formats::WeightRole::ExpertGate:
    case formats::WeightRole::ExpertUp:
    case formats::WeightRole::ExpertDown:
      return sparse;
    case formats::WeightRole::SharedGate:
    case formats::WeightRole::SharedUp:
    case formats::WeightRole::SharedDown:
    case formats::WeightRole::SharedExpertGate:
      return sparse && config.moe.shared_intermediate > 0;
    case formats::WeightRole::Bq:
    case formats::WeightRole::Bk:
    case formats::WeightRole::Bv:
      return arch.qkv_bias;
    case formats::WeightRole::QNorm:
    case formats::WeightRole::KNorm:
      return arch.qk_norm;
    default:
      return true;
  }
}

}  // namespace ls::model
