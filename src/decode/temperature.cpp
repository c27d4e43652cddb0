// Temperature scaling (see temperature.h).
#include "decode/temperature.h"

#include <fmt/format.h>

#include "core/error.h"

namespace ls::decode {

Temperature::Temperature(double temperature) : t_(temperature) {
  if (!(temperature > 0.0) || !std::isfinite(temperature)) {
    fail("temperature must be a finite number > 0 for the temperature stage, got {}", temperature);
  }
}

void Temperature::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  for (float& s : scores) s = static_cast<float>(static_cast<double>(s) / t_);
}

std::string Temperature::describe() const {
  return fmt::format("temperature(t={})", t_);
}

}  // namespace ls::decode
