// NaN/inf replacement (see inf_nan.h).
#include "decode/inf_nan.h"

#include <cmath>
#include <limits>

namespace ls::decode {

void InfNanRemove::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  for (float& s : scores) {
    if (std::isnan(s)) {
      s = 0.0f;
    } else if (s == std::numeric_limits<float>::infinity()) {
      s = std::numeric_limits<float>::max();
    } else if (s == -std::numeric_limits<float>::infinity()) {
      s = std::numeric_limits<float>::lowest();
    }
  }
}

}  // namespace ls::decode
