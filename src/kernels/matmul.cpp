// Row-parallel matrix product over the dtype-specific dot kernels.
#include "kernels/matmul.h"

#include <cstring>

#include "core/error.h"
#include "kernels/dot.h"

namespace ls::kernels {

namespace {

using DotFn = float (*)(const std::uint8_t* row, const float* x, std::size_t n);

DotFn dot_for(DType t) {
  switch (t) {
    case DType::F32:
      return [](const std::uint8_t* r, const float* x, std::size_t n) {
        return dot_f32(reinterpret_cast<const float*>(r), x, n);
      };
    case DType::BF16:
      return [](const std::uint8_t* r, const float* x, std::size_t n) {
        return dot_bf16(reinterpret_cast<const std::uint16_t*>(r), x, n);
      };
    case DType::F16:
      return [](const std::uint8_t* r, const float* x, std::size_t n) {
        return dot_f16(reinterpret_cast<const std::uint16_t*>(r), x, n);
      };
    default:
      break;
  }
  fail("matmul: unsupported dtype {}", dtype_name(t));
}

}  // namespace

void matmul(const TensorView& w, std::span<const float> x, int n_tokens, std::span<float> y,
            ThreadPool& pool) {
  if (w.shape.size() != 2)
    fail("matmul: weight '{}' must be 2-D, got {}", w.name, shape_str(w.shape));
  const auto rows = static_cast<std::size_t>(w.shape[0]);
  const auto cols = static_cast<std::size_t>(w.shape[1]);
  const auto t_count = static_cast<std::size_t>(n_tokens);
  if (x.size() < t_count * cols || y.size() < t_count * rows)
    fail("matmul: '{}' {} needs x of {} and y of {} floats, got {} and {}", w.name,
         shape_str(w.shape), t_count * cols, t_count * rows, x.size(), y.size());
  const DotFn dot = dot_for(w.dtype);
  const std::size_t row_bytes = w.row_bytes();
  pool.parallel_for(
      rows,
      [&](std::size_t begin, std::size_t end) {
        for (std::size_t r = begin; r < end; ++r) {
          const std::uint8_t* row = w.data + r * row_bytes;
          for (std::size_t t = 0; t < t_count; ++t) y[t * rows + r] = dot(row, &x[t * cols], cols);
        }
      },
      16);
}

void row_to_f32(const TensorView& w, std::int64_t row, std::span<float> out) {
  const auto cols = static_cast<std::size_t>(w.shape.back());
  if (out.size() < cols) fail("row_to_f32: '{}' row needs {} floats", w.name, cols);
  const std::uint8_t* p = w.row(row);
  switch (w.dtype) {
    case DType::F32:
      std::memcpy(out.data(), p, cols * sizeof(float));
      return;
    case DType::BF16:
    case DType::F16: {
      const bool bf = w.dtype == DType::BF16;
      for (std::size_t i = 0; i < cols; ++i) {
        std::uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = bf ? bf16_to_f32(h) : f16_to_f32(h);
      }
      return;
    }
    default:
      fail("row_to_f32: '{}' has unsupported dtype {}", w.name, dtype_name(w.dtype));
  }
}

void tensor_to_f32(const TensorView& t, std::span<float> out) {
  TensorView flat = t;
  flat.shape = {1, t.numel()};
  row_to_f32(flat, 0, out);
}

}  // namespace ls::kernels
