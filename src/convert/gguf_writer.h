// Writer for GGUF v3 files tensor by tensor, without holding the model in memory: metadata and
// tensor infos are collected first, then write() emits the header and streams each tensor's
// bytes (padded to the alignment) from a caller-supplied fill function. The file is written
// under a temporary name and renamed at the end, so a failed run leaves no partial .gguf.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "convert/safetensors_writer.h"
#include "formats/gguf.h"

namespace ls::convert {

class GgufWriter {
 public:
  explicit GgufWriter(std::uint32_t alignment = formats::kGgufDefaultAlignment);

  // Metadata, in the order added. Keys must be unique.
  void add_uint32(const std::string& key, std::uint32_t v);
  void add_int32(const std::string& key, std::int32_t v);
  void add_float32(const std::string& key, float v);
  void add_bool(const std::string& key, bool v);
  void add_string(const std::string& key, const std::string& v);
  void add_string_array(const std::string& key, const std::vector<std::string>& v);
  void add_int32_array(const std::string& key, const std::vector<std::int32_t>& v);

  // A tensor; shape outermost first (as TensorView), written in GGML order (innermost first).
  void add_tensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape);

  // fill(i, sink) must pass exactly the byte size of tensor i (in add order) to sink.
  void write(const std::string& path,
             const std::function<void(std::size_t, const ByteSink&)>& fill) const;

 private:
  struct Tensor {
    std::string name;
    DType dtype;
    std::vector<std::int64_t> shape;
    std::uint64_t nbytes, offset;
  };
  void key(const std::string& k, formats::GgufType t);
  template <typename T>
  void put(const T& v) {
    const std::size_t at = kv_bytes_.size();  // not insert(ptr range): GCC 12 -O3 false positive
    kv_bytes_.resize(at + sizeof(T));
    std::memcpy(kv_bytes_.data() + at, &v, sizeof(T));
  }
  void put_string(const std::string& s);

  std::uint32_t alignment_;
  std::vector<std::string> keys_;
  std::vector<std::uint8_t> kv_bytes_;  // the encoded key/value section
  std::vector<Tensor> tensors_;
  std::uint64_t data_size_ = 0;
};

}  // namespace ls::convert
