// Writes float32 arrays in NumPy's .npy format (version 1.0, little-endian, C order), so that
// logits can be inspected with numpy.load.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ls {

void write_npy_f32(const std::string& path, std::span<const float> data,
                   const std::vector<std::int64_t>& shape);

}  // namespace ls
