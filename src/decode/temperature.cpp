// Temperature scaling (see temperature.h).
#include "decode/temperature.h"

#include <fmt/format.h>

#include "core/error.h"
#include "kernels/ops.h"

namespace ls::decode {

Temperature::Temperature(double temperature) : t_(temperature) {
  if (!(temperature > 0.0) || !std::isfinite(temperature)) {
    fail("temperature must be a finite number > 0 for the temperature stage, got {}", temperature);
  }
}

void Temperature::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  // float(double(s) / t) for every score, in vectors (kernels/ops.h).
  kernels::divide_to_float(scores.data(), scores.size(), t_, scores.data());
}

std::string Temperature::describe() const {
  return fmt::format("temperature(t={})", t_);
}

}  // namespace ls::decode
