// Reads the float32 .npy files logitscope writes (format 1.0/2.0, little-endian '<f4', C order):
// the logits a generation dumped, which replay re-scores without running the model again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ls::inspect {

struct NpyF32 {
  std::vector<std::int64_t> shape;
  std::vector<float> data;
};

// Throws ls::Error naming the file for anything else (dtype, fortran order, truncated data).
NpyF32 read_npy_f32(const std::string& path);

}  // namespace ls::inspect
