// The block layouts of GGML's quantized formats, byte for byte as GGUF files store them (the
// element counts and byte sizes are core/dtype.cpp's table; tests/kernels checks the structs
// against it). Two families: 32-element blocks (Q8_0 also the activation format of their dot
// products) and k-quants (256-element super-blocks; Q8_K their activation format).
#pragma once

#include <cstdint>

namespace ls::kernels {

// ---- 32-element blocks ------------------------------------------------------------------------

// 32 weights: value[i] = d * qs[i].
struct BlockQ8_0 {
  std::uint16_t d;  // f16 scale
  std::int8_t qs[32];
};

// 32 weights: byte j holds element j (low nibble) and element j + 16 (high nibble);
// value = d * (nibble - 8).
struct BlockQ4_0 {
  std::uint16_t d;  // f16 scale
  std::uint8_t qs[16];
};

// 32 weights: value = d * q + m with q in 0..15 (nibbles laid out as Q4_0's).
struct BlockQ4_1 {
  std::uint16_t d;  // f16 scale
  std::uint16_t m;  // f16 minimum (added)
  std::uint8_t qs[16];
};

// 32 weights: q = nibble | (bit j of qh) << 4 for element j (nibbles laid out as Q4_0's);
// value = d * (q - 16).
struct BlockQ5_0 {
  std::uint16_t d;  // f16 scale
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};

// 32 weights: q as Q5_0's, value = d * q + m.
struct BlockQ5_1 {
  std::uint16_t d;  // f16 scale
  std::uint16_t m;  // f16 minimum (added)
  std::uint8_t qh[4];
  std::uint8_t qs[16];
};

// 32 weights: value = d * kIq4nlValues[nibble] (nibbles laid out as Q4_0's).
struct BlockIQ4_NL {
  std::uint16_t d;  // f16 scale
  std::uint8_t qs[16];
};
inline constexpr std::int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                                 1,    13,   25,  38,  53,  69,  89,  113};

// ---- k-quants: 256-element super-blocks --------------------------------------------------------

// 256 weights in 16 sub-blocks of 16; scales[j] holds sub-block j's 4-bit scale (low nibble) and
// 4-bit min (high); element e = 128h + 32j + l has q = (qs[32h + l] >> 2j) & 3, sub-block e / 16;
// value = d * scale * q - dmin * min.
struct BlockQ2_K {
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  std::uint16_t d;     // f16 super-block scale of the scales
  std::uint16_t dmin;  // f16 super-block scale of the mins
};

// 256 weights in 16 sub-blocks of 16 with 6-bit scales (stored + 32); element e = 128h + 32j + l
// (l < 32) has low bits (qs[32h + l] >> 2j) & 3 and high bit (hmask[l] >> (4h + j)) & 1;
// value = d * (scale - 32) * (low + 4 * high - 4).
struct BlockQ3_K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  std::uint16_t d;  // f16
};

// 256 weights in 8 sub-blocks of 32, each with a 6-bit scale and 6-bit min packed in `scales`;
// value = d * scale_j * nibble - dmin * min_j. qs: 4 groups of 32 bytes; group g holds sub-block
// 2g in its low nibbles and sub-block 2g + 1 in its high nibbles.
struct BlockQ4_K {
  std::uint16_t d;     // f16 super-block scale of the scales
  std::uint16_t dmin;  // f16 super-block scale of the mins
  std::uint8_t scales[12];
  std::uint8_t qs[128];
};

// 256 weights as Q4_K's, with a fifth bit per weight: sub-block 2g + h (h = 0, 1) takes bit
// 2g + h of qh[l] for its element l; value = d * scale_j * q - dmin * min_j, q in 0..31.
struct BlockQ5_K {
  std::uint16_t d;     // f16 super-block scale of the scales
  std::uint16_t dmin;  // f16 super-block scale of the mins
  std::uint8_t scales[12];
  std::uint8_t qh[32];
  std::uint8_t qs[128];
};

// 256 weights in 16 sub-blocks of 16, each with an int8 scale; 6-bit values from 4 low bits in
// ql and 2 high bits in qh; value = d * scales[j] * (q - 32).
struct BlockQ6_K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint16_t d;  // f16
};

// Activations for the K-quant dot products: value[i] = d * qs[i]; bsums[j] = sum of qs over
// elements 16j .. 16j + 15 (lets the Q4_K minimum term be applied per sub-block).
struct BlockQ8_K {
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};

}  // namespace ls::kernels
