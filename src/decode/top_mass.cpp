// top_mass (see top_mass.h). Error budget: the bucket masses are sums of weights within 2^-45 of
// exp (the lower bounds of kernels/exp_f64.h); the cumulative masses the sort-based rules compute
// differ from the exact sums by at most n * 2^-53 each (n terms, each rounded once when added, once
// when divided). For n <= 2^22 both are far below kDelta, so a crossing more than kDelta from p on
// both sides is the one the sort finds.
#include "decode/top_mass.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/exp_f64.h"
#include "kernels/ops.h"

namespace ls::decode {

namespace {

constexpr int kBuckets = 4096;
constexpr float kMaxRange = 64.0f;  // buckets of 1/64: scores further below the max share one
constexpr double kDelta = 1e-9;     // relative to the total mass
constexpr std::size_t kMaxTokens = std::size_t{1} << 22;
constexpr std::size_t kBlock = 1024;

struct Buckets {
  std::vector<std::uint16_t> of;  // each token's bucket; kBuckets for -inf
  std::array<double, kBuckets> mass{};
  std::array<std::int32_t, kBuckets> count{};
};

}  // namespace

bool top_mass(std::span<float> scores, double p, int min_keep, TieOrder ties) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const std::size_t n = scores.size();
  if (n > kMaxTokens) return false;
  const float m = kernels::max_not_nan(scores.data(), n);
  if (m == kNegInf) return true;  // nothing to keep, nothing to remove
  constexpr float scale = static_cast<float>(kBuckets) / kMaxRange;
  const auto bucket_of = [&](float s) {  // monotone: a higher score never gets a later bucket
    const float b = (m - s) * scale;
    return static_cast<std::uint16_t>(b < kBuckets - 1 ? static_cast<int>(b) : kBuckets - 1);
  };

  thread_local Buckets bk;
  bk.of.resize(n);
  bk.mass.fill(0.0);
  bk.count.fill(0);
  std::array<double, kBlock> w;  // each weight's lower bound (kernels/exp_f64.h)
  for (std::size_t begin = 0; begin < n; begin += kBlock) {
    const std::size_t len = std::min(kBlock, n - begin);
    kernels::exp_bounds_f64(scores.data() + begin, len, m, w.data(), nullptr);
    for (std::size_t j = 0; j < len; ++j) {
      const float s = scores[begin + j];
      if (s == kNegInf) {
        bk.of[begin + j] = kBuckets;
        continue;
      }
      const std::uint16_t b = bucket_of(s);
      bk.of[begin + j] = b;
      bk.mass[b] += w[j];
      ++bk.count[b];
    }
  }
  double total = 0.0;
  std::int64_t finite = 0;
  for (int b = 0; b < kBuckets; ++b) total += bk.mass[b], finite += bk.count[b];

  const auto before = [&](std::int32_t a, std::int32_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return ties == TieOrder::lower_id_first ? a < b : a > b;
  };
  // The ids of bucket `b`, best first.
  const auto sorted_bucket = [&](int b) {
    std::vector<std::int32_t> ids;
    ids.reserve(static_cast<std::size_t>(bk.count[b]));
    for (std::size_t i = 0; i < n; ++i)
      if (bk.of[i] == b) ids.push_back(static_cast<std::int32_t>(i));
    std::sort(ids.begin(), ids.end(), before);
    return ids;
  };

  // How many of the best tokens the mass needs: the bucket where it crosses p, then its tokens
  // one by one (their weights from std::exp: a few, against the bucket sums' many).
  const double threshold = p * total, delta = kDelta * total;
  double above = 0.0;
  std::int64_t above_count = 0;
  int b = 0;
  while (b < kBuckets && above + bk.mass[b] < threshold - delta) {
    above += bk.mass[b], above_count += bk.count[b];
    ++b;
  }
  if (b == kBuckets) return false;                 // p is within delta of the whole mass
  const std::int64_t above_count_b = above_count;  // tokens in the buckets before b
  std::int64_t keep = -1;
  double cumulative = above;
  const std::vector<std::int32_t> crossing = sorted_bucket(b);
  for (const std::int32_t id : crossing) {
    const double before_id = cumulative;
    cumulative += std::exp(static_cast<double>(scores[id]) - static_cast<double>(m));
    ++above_count;
    if (cumulative < threshold - delta) continue;
    if (!(before_id < threshold - delta && cumulative > threshold + delta)) return false;
    keep = above_count;
    break;
  }
  if (keep < 0) return false;  // the bucket sum and its terms disagree near p
  keep = std::min<std::int64_t>(std::max<std::int64_t>(keep, min_keep), finite);

  // The `keep` best: every bucket before the one holding the keep-th (b, unless min_keep reaches
  // further), and that one's best. The rest is removed.
  std::int64_t counted = above_count_b;
  int last = b;
  while (counted + bk.count[last] < keep) counted += bk.count[last++];
  const std::vector<std::int32_t> boundary = last == b ? crossing : sorted_bucket(last);
  for (std::size_t i = 0; i < n; ++i)
    if (bk.of[i] > last) scores[i] = kNegInf;  // -inf scores are bucket kBuckets: unchanged
  for (std::size_t k = static_cast<std::size_t>(keep - counted); k < boundary.size(); ++k)
    scores[static_cast<std::size_t>(boundary[k])] = kNegInf;
  return true;
}

}  // namespace ls::decode
