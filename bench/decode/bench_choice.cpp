// Microseconds per token choice, one thread, at vocab 151,936: the sampler chain, the choice and
// (optionally) top_logprobs 20, for the chains people run (greedy, the OpenAI defaults,
// temperature 0.8 + top_p 0.95, Qwen's generation_config), over two kinds of logits: an
// instruct model's (a wide spread, a few strong candidates) and a random-weight model's (nearly
// flat: top_p keeps most of the vocabulary). Beside each, the reference path measured in the
// same run: top_p by sorting the candidates, min_p by the exact softmax comparison, the sums by
// a std::exp loop (what every choice did before the linear-time paths), with the ratio.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "decode/choose.h"
#include "decode/distribution.h"
#include "decode/exp_sum.h"
#include "decode/generation_config.h"
#include "decode/min_p.h"
#include "decode/penalties.h"
#include "decode/sampler.h"
#include "decode/temperature.h"
#include "decode/top_k.h"
#include "decode/top_p.h"
#include "kernels/cpu_info.h"

namespace {

using namespace ls::decode;
using Clock = std::chrono::steady_clock;

struct Chain {
  const char* name;
  bool sample;
  double temperature, top_p, repetition_penalty;
  int top_k;
  double min_p;
};

std::vector<float> logits(bool flat, std::size_t vocab, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, flat ? 0.4f : 2.5f);
  std::vector<float> s(vocab);
  for (float& v : s) v = normal(rng);
  if (!flat)
    for (int i = 0; i < 5; ++i) s[rng() % vocab] += 14.0f - 2.0f * static_cast<float>(i);
  return s;
}

// The chain as the sort-based paths ran it: each stage's reference, then the std::exp walk.
std::int32_t choose_reference(const Chain& c, std::vector<float>& work, const TokenHistory& history,
                              bool logprobs, std::size_t vocab) {
  if (c.repetition_penalty != 1.0) RepetitionPenalty(c.repetition_penalty).apply(work, history);
  if (c.sample && c.temperature != 1.0) Temperature(c.temperature).apply(work, history);
  if (c.sample && c.top_k > 0 && static_cast<std::size_t>(c.top_k) < vocab)
    TopK(c.top_k, 1, false).apply(work, history);
  if (c.sample && c.top_p < 1.0) TopP(c.top_p, 1, TopPRule::hf).apply_sorted(work, history);
  if (c.sample && c.min_p > 0.0) MinP(c.min_p, 1).apply_exact(work, history);
  const float m = *std::max_element(work.begin(), work.end());
  double total = exp_sum_plain(work, m);  // the walk's sum: the same loop
  std::int32_t token = 0;
  if (c.sample) {
    double cum = 0;
    const double target = 0.5 * total;
    for (std::size_t i = 0; i < work.size(); ++i) {
      if (work[i] == -std::numeric_limits<float>::infinity()) continue;
      cum += std::exp(static_cast<double>(work[i]) - m);
      if (cum > target) {
        token = static_cast<std::int32_t>(i);
        break;
      }
    }
  } else {
    token = static_cast<std::int32_t>(std::max_element(work.begin(), work.end()) - work.begin());
  }
  if (logprobs) {
    (void)exp_sum_plain(work, m);  // the raw log-sum-exp (the raw row, as large as this one)
    (void)top_logprobs(work, 20, std::log(total));
  }
  return token;
}

GenerationConfig config_of(const Chain& c) {
  GenerationConfig g;
  g.do_sample = c.sample;
  g.temperature = c.temperature;
  g.top_p = c.top_p;
  g.top_k = c.top_k;
  g.min_p = c.min_p;
  g.repetition_penalty = c.repetition_penalty;
  g.suppress_tokens.clear();
  return g;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t vocab = 151936;
  int iterations = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--vocab") == 0) vocab = std::strtoul(argv[i + 1], nullptr, 10);
    if (std::strcmp(argv[i], "--iterations") == 0) iterations = std::atoi(argv[i + 1]);
  }
  const Chain chains[] = {
      {"greedy", false, 1.0, 1.0, 1.0, 0, 0.0},
      {"OpenAI defaults (t 1, top_p 1)", true, 1.0, 1.0, 1.0, 0, 0.0},
      {"t 0.8, top_p 0.95", true, 0.8, 0.95, 1.0, 0, 0.0},
      {"Qwen (rp 1.05, t 0.7, top_p 0.8, top_k 20)", true, 0.7, 0.8, 1.05, 20, 0.0},
      {"t 1, min_p 0.05", true, 1.0, 1.0, 1.0, 0, 0.05},
  };
  std::printf("CPU: %s; one thread; vocab %zu; median of %d choices (us)\n",
              ls::kernels::cpu_model_name().c_str(), vocab, iterations);
  std::printf("%-44s %-8s %-9s %10s %10s %7s\n", "chain", "logits", "logprobs", "ours", "sorted",
              "ratio");
  std::vector<std::int32_t> history_tokens(64);
  for (std::size_t i = 0; i < history_tokens.size(); ++i)
    history_tokens[i] = static_cast<std::int32_t>((i * 7919) % vocab);
  const TokenHistory history{history_tokens, 16};
  for (const Chain& c : chains) {
    for (const bool flat : {false, true}) {
      for (const bool logprobs : {false, true}) {
        Sampler sampler(config_of(c), c.sample ? DecodeMode::sample : DecodeMode::greedy,
                        static_cast<std::int32_t>(vocab), 1);
        ChoiceOptions options;
        options.logprobs.wanted = logprobs;
        options.accept = false;
        std::vector<double> ours, reference;
        std::vector<float> work;
        for (int it = 0; it < iterations; ++it) {
          const auto raw = logits(flat, vocab, static_cast<unsigned>(it % 8));
          auto t0 = Clock::now();
          const Choice choice = sampler.choose(raw, history, options);
          if (logprobs) (void)top_logprobs(raw, 20, choice.raw_log_sum_exp);
          auto t1 = Clock::now();
          ours.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
          if (it % 4 != 0) continue;  // the reference is slow: a quarter of the iterations
          work = raw;
          t0 = Clock::now();
          (void)choose_reference(c, work, history, logprobs, vocab);
          t1 = Clock::now();
          reference.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        const double a = median(ours), b = median(reference);
        std::printf("%-44s %-8s %-9s %10.1f %10.1f %6.1fx\n", c.name, flat ? "flat" : "peaked",
                    logprobs ? "top 20" : "-", a, b, b / a);
      }
    }
  }
  return 0;
}
