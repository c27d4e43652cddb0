// What CPU a figure came from: its model name (/proc/cpuinfo) and the x86 features the kernels
// can use, as detected at run time. Benchmarks print both with every figure, since the machines
// this runs on change (an AVX2-only AMD EPYC, an AVX-512 Intel Xeon with AMX, ...).
#pragma once

#include <string>
#include <vector>

namespace ls::kernels {

// "Intel(R) Xeon(R) Processor @ 2.80GHz", or "unknown CPU" when /proc/cpuinfo has no name.
std::string cpu_model_name();
// The features of interest this CPU has, in a fixed order: "avx2", "fma", "f16c", "avx512f",
// "avx512bw", "avx512vl", "avx512vnni", "avx512bf16", "avx512fp16", "amx-tile", "amx-int8",
// "amx-bf16".
std::vector<std::string> cpu_features();

}  // namespace ls::kernels
