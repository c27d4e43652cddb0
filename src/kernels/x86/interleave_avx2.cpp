// The interleaved Q8_0 / Q4_0 kernels compiled for AVX2 + FMA + F16C (maddubs/madd integer
// sums); the code is interleave_simd.inc, shared with the AVX-512 VNNI build.
#define LS_IL_ATTR __attribute__((target("avx2,fma,f16c")))
#define LS_IL_VNNI 0
#define LS_IL_ENTRY interleaved_avx2
#include "kernels/x86/interleave_simd.inc"
