// The seeded generator behind sampling, specified so that a seed gives the same draws on every
// machine, compiler and thread count: xoshiro256** (Blackman & Vigna, 2018) whose 256-bit state
// is filled by four successive splitmix64 outputs of the seed. A uniform draw in [0, 1) is the
// top 53 bits of one 64-bit output times 2^-53 (exact in a double). The trace records each draw.
// Sequences sampled side by side use streams of one seed: stream i is the generator advanced by
// i jumps of 2^128 draws (xoshiro256**'s jump polynomial), so the streams never overlap and
// stream 0 is Rng(seed) itself.
#pragma once

#include <array>
#include <cstdint>

namespace ls::decode {

// splitmix64: advances `state` by the golden-ratio increment and returns the mixed value.
std::uint64_t splitmix64(std::uint64_t& state);

class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  static Rng stream(std::uint64_t seed, int index);
  std::uint64_t next_u64();
  double uniform();  // (next_u64() >> 11) * 2^-53, in [0, 1)
  void jump();       // advances by 2^128 draws

 private:
  std::array<std::uint64_t, 4> s_{};
};

}  // namespace ls::decode
