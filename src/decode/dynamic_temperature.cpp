// Dynamic (entropy-scaled) temperature (see dynamic_temperature.h).
#include "decode/dynamic_temperature.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"
#include "kernels/ops.h"

namespace ls::decode {

DynamicTemperature::DynamicTemperature(double temperature, double range, double exponent)
    : t_(temperature), range_(range), exponent_(exponent) {
  if (!(temperature > 0.0) || !std::isfinite(temperature))
    fail("temperature must be a finite number > 0 for dynamic temperature, got {}", temperature);
  if (!(range > 0.0) || !std::isfinite(range))
    fail("dynatemp_range must be a finite number > 0 for dynamic temperature, got {}", range);
  if (!std::isfinite(exponent) || exponent < 0.0)
    fail("dynatemp_exponent must be a finite number >= 0, got {}", exponent);
}

double DynamicTemperature::temperature_for(std::span<const float> scores) const {
  double max = kFilterValue;
  std::size_t n = 0;
  for (const float s : scores)
    if (s > kFilterValue) max = std::max(max, static_cast<double>(s)), ++n;
  const double lo = std::max(0.0, t_ - range_), hi = t_ + range_;
  if (n <= 1) return t_;           // nothing to scale: llama.cpp leaves the scores as they are
  double total = 0, weighted = 0;  // entropy = log(total) - sum w (s - max) / total
  for (const float s : scores) {
    if (!(s > kFilterValue)) continue;
    const double d = static_cast<double>(s) - max, w = std::exp(d);
    total += w;
    weighted += w * d;
  }
  const double entropy = std::log(total) - weighted / total;
  const double normalized = std::clamp(entropy / std::log(static_cast<double>(n)), 0.0, 1.0);
  return lo + (hi - lo) * std::pow(normalized, exponent_);
}

void DynamicTemperature::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "temperature");
  std::size_t n = 0;
  for (const float s : scores) n += s > kFilterValue;
  if (n <= 1) return;
  const double t = temperature_for(scores);
  if (t > 0.0) {
    kernels::divide_to_float(scores.data(), scores.size(), t, scores.data());
    return;
  }
  const std::vector<std::int32_t> best = ids_by_score_desc(scores, 1, true);
  for (std::size_t i = 0; i < scores.size(); ++i)
    if (static_cast<std::int32_t>(i) != best[0]) scores[i] = kFilterValue;
}

std::string DynamicTemperature::describe() const {
  return fmt::format("temperature(t={}, dynamic: range={}, exponent={}, from {} to {} by entropy)",
                     t_, range_, exponent_, std::max(0.0, t_ - range_), t_ + range_);
}

}  // namespace ls::decode
