// A non-owning view of a tensor stored in a memory-mapped file: element type, shape (row-major,
// outermost first, as safetensors and PyTorch write it) and the bytes. Views never own memory;
// the file that maps the bytes must outlive them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace ls {

struct TensorView {
  std::string name;  // the name in its file, for error messages
  DType dtype = DType::F32;
  std::vector<std::int64_t> shape;
  const std::uint8_t* data = nullptr;
  // 0: rows one after another, as in the file. 8: rows interleaved in groups of 8, the layout of
  // kernels/interleave.h that the model repacks Q8_0/Q4_0/Q5_0/Q5_1 matrices to at load (same bytes;
  // row() is meaningless then: kernels::row_to_f32 and matmul know the layout).
  int interleaved = 0;
  // BF16 matrices only: matmul multiplies them with the activations rounded to BF16
  // (kernels/bf16_dot.h, vdpbf16ps's arithmetic) instead of float32 ones. The model sets it at
  // load when LoadOptions::bf16_activations asks.
  bool bf16_activations = false;

  std::int64_t numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
  }
  std::size_t nbytes() const { return dtype_bytes(dtype, numel()); }
  bool empty() const { return data == nullptr; }
  // For a 2-D weight [rows, cols]: the bytes of one row.
  std::size_t row_bytes() const { return dtype_bytes(dtype, shape.back()); }
  const std::uint8_t* row(std::int64_t r) const {
    return data + static_cast<std::size_t>(r) * row_bytes();
  }
};

std::string shape_str(const std::vector<std::int64_t>& shape);  // "[151936, 896]"

}  // namespace ls
