// XTC, exclude top choices (see xtc.h).
#include "decode/xtc.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/rng.h"

namespace ls::decode {

double xtc_coin(std::uint64_t seed, int stream, std::size_t step) {
  // Each round hashes the last round's output (splitmix64's state alone only adds a constant).
  std::uint64_t x = seed ^ 0x7874632d636f696eULL;  // "xtc-coin"
  x = splitmix64(x) ^ static_cast<std::uint64_t>(stream);
  x = splitmix64(x) ^ static_cast<std::uint64_t>(step);
  return static_cast<double>(splitmix64(x) >> 11) * 0x1p-53;
}

Xtc::Xtc(double probability, double threshold, int min_keep, std::uint64_t seed, int stream)
    : probability_(probability),
      threshold_(threshold),
      min_keep_(min_keep),
      seed_(seed),
      stream_(stream) {
  if (!(probability >= 0.0 && probability <= 1.0))
    fail("xtc_probability must be in [0, 1], got {}", probability);
  if (!(threshold >= 0.0 && threshold <= 1.0))
    fail("xtc_threshold must be in [0, 1], got {}", threshold);
}

void Xtc::apply(std::span<float> scores, const TokenHistory& history) {
  require_sortable(scores, "xtc");
  if (probability_ <= 0.0 || threshold_ > 0.5) return;
  if (xtc_coin(seed_, stream_, history.generated().size()) > probability_) return;
  const SoftmaxNormalizer norm = softmax_normalizer(scores);
  std::vector<std::int32_t> above;  // few: at most 1 / threshold of them, or all when it is 0
  std::size_t live = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) {
    if (!(scores[i] > kFilterValue)) continue;
    ++live;
    if (norm.prob(scores[i]) >= threshold_) above.push_back(static_cast<std::int32_t>(i));
  }
  if (above.size() < 2 || live - (above.size() - 1) < static_cast<std::size_t>(min_keep_)) return;
  std::sort(above.begin(), above.end(), [&](std::int32_t a, std::int32_t b) {
    return scores[a] != scores[b] ? scores[a] > scores[b] : a < b;
  });
  for (std::size_t k = 0; k + 1 < above.size(); ++k) scores[above[k]] = kFilterValue;
}

std::string Xtc::describe() const {
  return fmt::format("xtc(probability={}, threshold={}, min_keep={})", probability_, threshold_,
                     min_keep_);
}

}  // namespace ls::decode
