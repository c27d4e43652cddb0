// The family's architectures by model_type: each has its own file (qwen2.cpp, qwen3.cpp).
#include <array>

#include "core/error.h"
#include "model/qwen2.h"
#include "model/qwen3.h"

namespace ls {

const Architecture& architecture(const std::string& model_type) {
  static const std::array<const Architecture*, 2> kAll = {&kQwen2, &kQwen3};
  for (const Architecture* a : kAll)
    if (model_type == a->model_type) return *a;
  fail("model_type '{}' is not supported (supported: qwen2, qwen3)", model_type);
}

bool has_weight(const Architecture& arch, WeightRole role) {
  switch (role) {
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
