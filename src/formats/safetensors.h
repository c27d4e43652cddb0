// Reader for one .safetensors file: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets}}, then the tensor bytes. The file is memory-mapped and
// every header field is validated against the file before a view is handed out, so a truncated
// or malicious file is an ls::Error, never an out-of-bounds read.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace ls::formats {

class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return file_.path(); }
  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;

 private:
  MappedFile file_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

// Parses a safetensors dtype name; throws naming `where` for dtypes this engine cannot use.
DType parse_safetensors_dtype(std::string_view name, const std::string& where);

}  // namespace ls::formats
