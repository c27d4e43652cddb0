// Mirostat 1 and 2 (see mirostat.h).
#include "decode/mirostat.h"

#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "decode/distribution.h"

namespace ls::decode {

namespace {
constexpr int kMirostatM = 100;  // llama.cpp's m: the best tokens version 1 fits s over
}

Mirostat::Mirostat(int version, double tau, double eta, std::int32_t vocab_size)
    : version_(version), tau_(tau), eta_(eta), mu_(2.0 * tau), vocab_size_(vocab_size) {
  if (version != 1 && version != 2) fail("mirostat must be 0 (off), 1 or 2, got {}", version);
  if (!std::isfinite(tau) || tau < 0.0)
    fail("mirostat_tau must be a finite number >= 0, got {}", tau);
  if (!std::isfinite(eta) || eta < 0.0)
    fail("mirostat_eta must be a finite number >= 0, got {}", eta);
}

std::int64_t Mirostat::v1_k(std::span<const double> p, std::int32_t vocab_size, double mu) {
  double sum_tb = 0, sum_tt = 0;
  for (std::size_t i = 0; i + 1 < static_cast<std::size_t>(kMirostatM) && i + 1 < p.size(); ++i) {
    const double t = std::log(static_cast<double>(i + 2) / static_cast<double>(i + 1));
    const double b = std::log(p[i] / p[i + 1]);
    sum_tb += t * b;
    sum_tt += t * t;
  }
  const double s = sum_tb / sum_tt, e = s - 1;
  const double k =
      std::pow(e * std::pow(2.0, mu) / (1 - std::pow(static_cast<double>(vocab_size), -e)), 1 / s);
  if (!(k >= -2147483648.0 && k < 2147483648.0)) return 1;
  return std::max<std::int64_t>(static_cast<std::int64_t>(k), 1);
}

void Mirostat::apply(std::span<float> scores, const TokenHistory& /*history*/) {
  require_sortable(scores, "mirostat");
  const std::vector<std::int32_t> order = ids_by_score_desc(scores, -1, true);
  if (order.size() > 1) {
    const SoftmaxNormalizer norm = softmax_normalizer(scores);
    std::vector<double> p(order.size());
    for (std::size_t i = 0; i < order.size(); ++i)
      p[i] = norm.prob(scores[static_cast<std::size_t>(order[i])]);
    std::size_t keep = 1;
    if (version_ == 2) {
      // The best tokens while their surprise stays within mu, the best one always (equal
      // scores: all or none).
      while (keep < order.size() && -std::log2(p[keep]) <= mu_) ++keep;
    } else {
      keep = static_cast<std::size_t>(
          std::min<std::int64_t>(v1_k(p, vocab_size_, mu_), static_cast<std::int64_t>(p.size())));
    }
    for (std::size_t i = keep; i < order.size(); ++i)
      scores[static_cast<std::size_t>(order[i])] = kFilterValue;
  }
  kept_.assign(scores.begin(), scores.end());
  kept_lse_ = log_sum_exp(scores);
}

void Mirostat::accept(std::int32_t token) {
  if (token < 0 || static_cast<std::size_t>(token) >= kept_.size()) return;
  const float s = kept_[static_cast<std::size_t>(token)];
  if (!(s > kFilterValue)) return;
  const double surprise = -(static_cast<double>(s) - kept_lse_) / std::log(2.0);
  mu_ -= eta_ * (surprise - tau_);
}

void Mirostat::reset() {
  mu_ = 2.0 * tau_;
  kept_.clear();
}

std::string Mirostat::describe() const {
  return fmt::format("mirostat(version={}, tau={}, eta={}, mu={:.6g})", version_, tau_, eta_, mu_);
}

}  // namespace ls::decode
