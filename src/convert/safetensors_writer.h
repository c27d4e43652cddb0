// Writes a .safetensors file tensor by tensor without holding the whole model in memory: the
// header (names, dtypes, shapes, offsets) is written first, then each tensor's bytes are
// streamed in declaration order by a caller-supplied fill function.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace ls::convert {

struct TensorSpec {
  std::string name;
  DType dtype;
  std::vector<std::int64_t> shape;
  std::size_t nbytes() const;
};

// fill(i, sink) must pass exactly specs[i].nbytes() bytes to sink, in one or more calls.
using ByteSink = std::function<void(std::span<const std::uint8_t>)>;
void write_safetensors(const std::string& path, const std::vector<TensorSpec>& specs,
                       const std::function<void(std::size_t, const ByteSink&)>& fill,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace ls::convert
