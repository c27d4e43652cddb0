// The interleaved Q8_0 / Q4_0 kernels compiled for AVX-512 VNNI (vpdpbusd integer sums; one token
// per 256-bit vector, or two per 512-bit one); the code is interleave_simd.inc, shared with the
// AVX2 build.
#define LS_IL_ATTR __attribute__((target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")))
#define LS_IL_VNNI 1
#include "kernels/x86/avx512_warnings.h"
#define LS_IL_ENTRY interleaved_vnni
#include "kernels/x86/interleave_simd.inc"
