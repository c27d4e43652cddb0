// AVX2 activation quantizers: float32 -> Q8_0 / Q8_K blocks with the exact rounding of the
// scalar definitions, quantize_row_q8_0 (quant/blocks32.cpp: roundf) and quantize_row_q8_k
// (quant/kquants.cpp: round-half-even; the same float scale arithmetic), so their bytes are equal.
// Chosen at run time like the dot kernels.
#include <cpuid.h>

#include <cmath>
#include <cstring>

#include "kernels/quant.h"
#include "kernels/x86/quant_x86.h"

namespace ls::kernels::quant_detail {
namespace {

LS_AVX2 inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// 32 int32 lanes (four vectors, in order) -> 32 int8, in order.
LS_AVX2 inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  const __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// roundf (half away from zero), exactly: truncate, then step away if the dropped part >= 0.5.
LS_AVX2 inline __m256 round_away(__m256 v) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
  const __m256 step = _mm256_or_ps(_mm256_and_ps(v, sign), _mm256_set1_ps(1.0f));
  return _mm256_add_ps(t,
                       _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), step));
}

LS_AVX2 void q8_0_rows(const float* x, std::uint8_t* out, std::size_t nb) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (std::size_t b = 0; b < nb; ++b, x += 32, out += sizeof(BlockQ8_0)) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 8 * k);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[k]));
    }
    const float d = hmax(amax) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t d16 = f32_to_f16(d);
    std::memcpy(out, &d16, 2);
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
#pragma GCC unroll 8
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(round_away(_mm256_mul_ps(v[k], vid)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2), pack32(q[0], q[1], q[2], q[3]));
  }
}

LS_AVX2 void q8_k_rows(const float* x, std::uint8_t* out, std::size_t nb) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  for (std::size_t b = 0; b < nb; ++b, x += 256, out += sizeof(BlockQ8_K)) {
    __m256 amax = _mm256_setzero_ps();
#pragma GCC unroll 8
    for (int k = 0; k < 32; ++k)
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k)));
    const float am = hmax(amax);
    if (!(am > 0.0f)) {  // all zero (or NaN): leave it to the scalar definition
      BlockQ8_K blk;
      quantize_block_q8_k(x, &blk);
      std::memcpy(out, &blk, sizeof blk);
      continue;
    }
    // The first value of largest magnitude, as the scalar scan finds it: 8 compares at a time
    // (one at a time, the scan took about as long as the rest of the block).
    const __m256 vam = _mm256_set1_ps(am);
    int first = 0;
    for (int k = 0; k < 32; ++k) {
      const __m256 a = _mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * k));
      const int hits = _mm256_movemask_ps(_mm256_cmp_ps(a, vam, _CMP_EQ_OQ));
      if (hits != 0) {
        first = 8 * k + __builtin_ctz(static_cast<unsigned>(hits));
        break;
      }
    }
    const float max = x[first];
    const float iscale = -127.0f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    std::int16_t bsums[16];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      __m256i q[4];
#pragma GCC unroll 8
      for (int i = 0; i < 4; ++i) {
        const __m256 p = _mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * i), vs);
        q[i] = _mm256_min_epi32(
            _mm256_cvtps_epi32(_mm256_round_ps(p, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)),
            top);
      }
      bsums[2 * k] = static_cast<std::int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      bsums[2 * k + 1] = static_cast<std::int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 4 + 32 * k),
                          pack32(q[0], q[1], q[2], q[3]));
    }
    const float d = 1 / iscale;
    std::memcpy(out, &d, 4);
    std::memcpy(out + 4 + 256, bsums, sizeof bsums);
  }
}

// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 has no "f16c" in __builtin_cpu_supports.
// Its registers are AVX's, whose OS support the "avx2" check covers.
bool f16c_supported() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
}

}  // namespace

bool avx2_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c_supported();
}

void quantize_row_q8_0_avx2(const float* x, std::uint8_t* out, std::size_t nb) {
  q8_0_rows(x, out, nb);
}

void quantize_row_q8_k_avx2(const float* x, std::uint8_t* out, std::size_t nb) {
  q8_k_rows(x, out, nb);
}

}  // namespace ls::kernels::quant_detail
