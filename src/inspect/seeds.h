// Seed study: the statistics of N seeded generations of one prompt. Distinct outputs with their
// counts, the first step at which any two runs differ, mean and spread of the sequence
// log-probability and length, and how many runs fall into a repetition loop. The loop rule is
// stated by LoopRule::describe() and printed with the results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ls::inspect {

struct SeedRun {
  std::uint64_t seed = 0;
  std::vector<std::int32_t> tokens;
  std::string text;
  double logprob = 0;  // sum of raw (model) logprobs of the tokens
  std::string finish;
};

// A run loops when some block of n tokens (1 <= n <= max_ngram) occurs min_repeats times or
// more back to back, e.g. "a b a b a b" (n = 2, 3 repeats).
struct LoopRule {
  int max_ngram = 8;
  int min_repeats = 3;
  std::string describe() const;
};

struct Loop {
  std::size_t start = 0;  // index of the first token of the run
  int ngram = 0;
  int repeats = 0;
};

// The first (leftmost, then shortest n-gram) loop under the rule, if any.
std::optional<Loop> find_loop(const std::vector<std::int32_t>& tokens, const LoopRule& rule);

struct DistinctOutput {
  std::vector<std::int32_t> tokens;
  std::string text;
  int count = 0;
  std::vector<std::uint64_t> seeds;
};

struct SeedSummary {
  int runs = 0;
  std::vector<DistinctOutput> distinct;  // most frequent first; ties by first occurrence
  // First step (0-based) at which not every run has the same token (a run that already ended
  // counts as different); none when all runs are identical.
  std::optional<int> first_divergence;
  double mean_logprob = 0, std_logprob = 0;  // population standard deviation
  double mean_length = 0, std_length = 0;
  int loops = 0;
  double loop_rate = 0;
  std::vector<std::optional<Loop>> loop_of_run;
};

SeedSummary summarize_seeds(const std::vector<SeedRun>& runs, const LoopRule& rule);

}  // namespace ls::inspect
