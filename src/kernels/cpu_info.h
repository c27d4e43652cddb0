// What CPU a figure came from: its model name (/proc/cpuinfo) and the x86 features the kernels
// can use, as detected at run time. Benchmarks print both with every figure, since the machines
// this runs on change (an AVX2-only AMD EPYC, an AVX-512 Intel Xeon with AMX, ...).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ls::kernels {

// "Intel(R) Xeon(R) Processor @ 2.80GHz", or "unknown CPU" when /proc/cpuinfo has no name.
std::string cpu_model_name();
// The features of interest this CPU has, in a fixed order: "avx2", "fma", "f16c", "avx512f",
// "avx512bw", "avx512vl", "avx512vnni", "avx512bf16", "avx512fp16", "amx-tile", "amx-int8",
// "amx-bf16".
std::vector<std::string> cpu_features();

// How far ahead (bytes) decode's kernels prefetch a stream of weights: far enough to cover the
// memory's latency at a core's streaming rate, near enough that the lines stay in L1 until used.
// 4 KiB on CPUs with a 32 KiB L1 (AMD Zen 4), 8 KiB with 48 KiB or more (Zen 5: decode 8-10%
// faster than at 4 KiB for Q4_0, Q4_K and Q5_K), 16 KiB on Intel ones with 48 KiB (a Xeon with
// AMX: Q4_K_M decode 16-25% faster than at 8 KiB, Q8_0 unchanged; bench/RESULTS.md).
// LS_DECODE_PREFETCH=<bytes> sets it (a multiple of 64 from 64 to 65536; anything else throws), for
// tuning a new machine.
std::size_t decode_ahead_bytes();

// Whether decode's prefetches fill L2 only (prefetcht2) rather than L1 too (prefetcht0). On Intel
// CPUs L2: the lines arrive in time either way, and the L1 fill buffers stay free for the loads
// (a Xeon with AMX, 16 KiB ahead: Q4_K_M decode of a Qwen3-30B-A3B shape 52-53 -> 58-62 tok/s,
// Q4_0 77-78 -> 84-85, Q8_0 49-51 -> 51-54; bench/RESULTS.md); AMD ones keep L1, as tuned there.
// LS_DECODE_PREFETCH_LEVEL=l1 or l2 sets it (anything else throws).
bool decode_prefetch_to_l2();

}  // namespace ls::kernels
