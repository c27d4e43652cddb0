// CPU name and features (see cpu_info.h).
#include "kernels/cpu_info.h"

#include <cpuid.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string_view>

#include "core/error.h"

namespace ls::kernels {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("model name")) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) break;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown CPU" : line.substr(start);
  }
  return "unknown CPU";
}

std::vector<std::string> cpu_features() {
  // CPUID leaf 7 (sub-leaf 0 and 1) bits, read directly: GCC 12's __builtin_cpu_supports lacks
  // some of these names and clang 14's lacks others.
  unsigned a = 0, b = 0, c = 0, d = 0;
  unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d) != 0) b7 = b, c7 = c, d7 = d;
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d) != 0) a71 = a;
  unsigned c1 = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) != 0) c1 = c;
  // The OS must save the AVX (and AVX-512) registers: XCR0 bits 1-2 (and 5-7).
  unsigned long long xcr0 = 0;
  if ((c1 & bit_OSXSAVE) != 0) {
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool avx_os = (xcr0 & 0x6) == 0x6, avx512_os = avx_os && (xcr0 & 0xe0) == 0xe0;
  struct Feature {
    const char* name;
    bool has;
  };
  const Feature all[] = {
      {"avx2", avx_os && (b7 & bit_AVX2) != 0},
      {"fma", avx_os && (c1 & bit_FMA) != 0},
      {"f16c", avx_os && (c1 & bit_F16C) != 0},
      {"avx512f", avx512_os && (b7 & bit_AVX512F) != 0},
      {"avx512bw", avx512_os && (b7 & bit_AVX512BW) != 0},
      {"avx512vl", avx512_os && (b7 & bit_AVX512VL) != 0},
      {"avx512vnni", avx512_os && (c7 & (1u << 11)) != 0},
      {"avx512bf16", avx512_os && (a71 & (1u << 5)) != 0},
      {"avx512fp16", avx512_os && (d7 & (1u << 23)) != 0},
      {"amx-tile", (d7 & (1u << 24)) != 0},
      {"amx-int8", (d7 & (1u << 25)) != 0},
      {"amx-bf16", (d7 & (1u << 22)) != 0},
  };
  std::vector<std::string> out;
  for (const Feature& f : all)
    if (f.has) out.emplace_back(f.name);
  return out;
}

namespace {
// CPUID leaf 0's vendor string is "GenuineIntel" (in EBX, EDX, ECX).
bool is_intel() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return false;
  return b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e;  // "Genu" "ineI" "ntel"
}

std::size_t choose_decode_ahead_bytes() {
  if (const char* env = std::getenv("LS_DECODE_PREFETCH")) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(env, &end, 10);
    if (end == env || *end != '\0' || v < 64 || v > 65536 || v % 64 != 0)
      fail("LS_DECODE_PREFETCH: expected bytes, a multiple of 64 from 64 to 65536, got '{}'", env);
    return static_cast<std::size_t>(v);
  }
  const long l1d = sysconf(_SC_LEVEL1_DCACHE_SIZE);  // 0 or -1 when unknown
  if (l1d < 48 * 1024) return 4096;
  return is_intel() ? 16384 : 8192;
}
bool choose_prefetch_to_l2() {
  if (const char* env = std::getenv("LS_DECODE_PREFETCH_LEVEL")) {
    const std::string_view v = env;
    if (v != "l1" && v != "l2") fail("LS_DECODE_PREFETCH_LEVEL: expected l1 or l2, got '{}'", env);
    return v == "l2";
  }
  return is_intel();
}
}  // namespace

std::size_t decode_ahead_bytes() {
  static const std::size_t bytes = choose_decode_ahead_bytes();
  return bytes;
}

bool decode_prefetch_to_l2() {
  static const bool l2 = choose_prefetch_to_l2();
  return l2;
}

}  // namespace ls::kernels
