// The family's architectures by model_type: each has its own file (qwen2.cpp, qwen3.cpp,
// qwen2_moe.cpp, qwen3_moe.cpp).
#include <array>

#include "core/error.h"
#include "model/qwen2.h"
#include "model/qwen2_moe.h"
#include "model/qwen3.h"
#include "model/qwen3_moe.h"

namespace ls {

const Architecture& architecture(const std::string& model_type) {
  static const std::array<const Architecture*, 4> kAll = {&kQwen2, &kQwen3, &kQwen2Moe, &kQwen3Moe};
  for (const Architecture* a : kAll)
    if (model_type == a->model_type) return *a;
  fail("model_type '{}' is not supported (supported: qwen2, qwen3, qwen2_moe, qwen3_moe)",
       model_type);
}

bool has_weight(const Architecture& arch, const ModelConfig& config, WeightRole role,
                std::int64_t layer) {
  const bool sparse = layer >= 0 && config.sparse_layer(layer);
  switch (role) {
    case WeightRole::WGate:
    case WeightRole::WUp:
    case WeightRole::WDown:
      return !sparse;
    case WeightRole::Router:
    case WeightRole::ExpertGate:
    case WeightRole::ExpertUp:
    case WeightRole::ExpertDown:
      return sparse;
    case WeightRole::SharedGate:
    case WeightRole::SharedUp:
    case WeightRole::SharedDown:
    case WeightRole::SharedExpertGate:
      return sparse && config.moe.shared_intermediate > 0;
    case WeightRole::Bq:
    case WeightRole::Bk:
    case WeightRole::Bv:
      return arch.qkv_bias;
    case WeightRole::QNorm:
    case WeightRole::KNorm:
      return arch.qk_norm;
    default:
      return true;
  }
}

}  // namespace ls
