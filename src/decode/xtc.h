// llama.cpp's XTC, "exclude top choices" (p-e-w, text-generation-webui #6335): with chance
// `probability` per step, when two or more tokens reach `threshold` probability, all of them but
// the least likely are removed, pushing the choice off the most predictable path. threshold > 0.5
// (at most one token can reach it) or probability 0 turns it off. The coin is counter-based, a
// pure function of (seed, sequence stream, step), so replays and re-scoring see the same coins.
#pragma once

#include <cstdint>

#include "decode/processor.h"

namespace ls::decode {

// The step's coin in [0, 1): x = seed xor "xtc-coin"; x = splitmix64(x) xor stream;
// x = splitmix64(x) xor step (tokens generated so far); the top 53 bits of splitmix64(x) x 2^-53,
// splitmix64(x) being rng.h's output for state x.
double xtc_coin(std::uint64_t seed, int stream, std::size_t step);

class Xtc final : public LogitsProcessor {
 public:
  Xtc(double probability, double threshold, int min_keep, std::uint64_t seed, int stream);
  // When the coin is <= probability: the tokens with softmax probability >= threshold (in double
  // over the tokens still in), if two or more and at least min_keep would remain, lose all but
  // the last of them in score order (ties: the higher id is last, as ids_by_score_desc lists).
  void apply(std::span<float> scores, const TokenHistory& history) override;
  std::string name() const override { return "xtc"; }
  std::string describe() const override;

 private:
  double probability_, threshold_;
  int min_keep_;
  std::uint64_t seed_;
  int stream_;
};

}  // namespace ls::decode
