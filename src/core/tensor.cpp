// Formatting of tensor shapes for messages.
#include "core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ls {

std::string shape_str(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace ls
