// quant_dump OUTDIR: writes rows quantized by logitscope (quantize_row, quantize_activations,
// dequantize_row, dot_quantized, dot_quantized_ref) for every block format and a sweep of
// inputs, plus a manifest, so quant_ref.py can check them against its own numpy implementation
// of GGML's formats. Not a test by itself: the numpy script is the oracle.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "kernels/quant.h"

namespace {

using ls::DType;
namespace k = ls::kernels;

template <typename T>
void write(const std::string& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()),
          static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!f) throw std::runtime_error("cannot write " + path);
}

std::vector<float> make_row(const std::string& fill, std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0, 1);
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (fill == "normal") x[i] = nd(rng);
    if (fill == "zero") x[i] = 0;
    if (fill == "equal") x[i] = 0.3f;
    if (fill == "huge") x[i] = nd(rng) * 3e4f;
    if (fill == "tiny") x[i] = nd(rng) * 1e-5f;
    if (fill == "mixed") x[i] = nd(rng) * std::pow(10.0f, static_cast<float>((i / 32) % 7) - 3);
    if (fill == "ties")
      x[i] = (i % 32 == 0) ? -127.0f : static_cast<float>(static_cast<int>(i % 97) - 48) + 0.5f;
    if (fill == "sparse") x[i] = (i % 5 == 0) ? nd(rng) : 0.0f;
  }
  return x;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: quant_dump OUTDIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  std::mt19937 rng(1234);
  std::ofstream manifest(dir + "/manifest.txt");
  const char* fills[] = {"normal", "zero", "equal", "huge", "tiny", "mixed", "ties", "sparse"};
  int id = 0;
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K, DType::Q8_K, DType::Q5_0,
                  DType::Q5_1, DType::Q4_1, DType::IQ4_NL, DType::Q5_K, DType::Q3_K, DType::Q2_K}) {
    const bool small = ls::dtype_block_elems(t) == 32;
    const std::vector<std::size_t> lengths = small ? std::vector<std::size_t>{32, 64, 224, 896}
                                                   : std::vector<std::size_t>{256, 512, 1792};
    for (const char* fill : fills) {
      for (std::size_t n : lengths) {
        const std::string p = dir + "/c" + std::to_string(id);
        const auto x = make_row(fill, n, rng);
        std::vector<std::uint8_t> q(ls::dtype_bytes(t, static_cast<std::int64_t>(n)));
        k::quantize_row(t, x.data(), q.data(), n);
        std::vector<float> y(n);
        k::dequantize_row(t, q.data(), y.data(), n);
        write(p + "_x.f32", x);
        write(p + "_q.bin", q);
        write(p + "_deq.f32", y);
        if (t == DType::Q8_0 || t == DType::Q8_K) {  // also the SIMD activation quantizer
          std::vector<std::uint8_t> a(q.size());
          k::quantize_activations(t, x.data(), a.data(), n);
          write(p + "_act.bin", a);
        }
        if (t != DType::Q8_K) {  // a dot product with a normal activation row
          const DType at = k::dot_activation_type(t);
          const auto xa = make_row("normal", n, rng);
          std::vector<std::uint8_t> xq(ls::dtype_bytes(at, static_cast<std::int64_t>(n)));
          k::quantize_activations(at, xa.data(), xq.data(), n);
          write(p + "_xa.f32", xa);
          write(p + "_xq.bin", xq);
          write(p + "_dot.f64",
                std::vector<double>{k::dot_quantized(t, q.data(), xq.data(), n),
                                    k::dot_quantized_ref(t, q.data(), xq.data(), n)});
        }
        manifest << ls::dtype_name(t) << ' ' << fill << ' ' << n << ' ' << "c" << id << '\n';
        ++id;
      }
    }
  }
  std::printf("quant_dump: %d cases in %s (%s)\n", id, dir.c_str(), k::quant_simd_name());
  return 0;
}
