// Layout written: "GGUF", version 3, tensor count, key/value count, the key/values, the tensor
// infos (name, dims innermost first, GGML type, offset), zero padding to the alignment, then
// each tensor's bytes followed by zero padding to the alignment.
#include "convert/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "core/output_file.h"

namespace ls::convert {

GgufWriter::GgufWriter(std::uint32_t alignment) : alignment_(alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    fail("GGUF alignment must be a power of two, got {}", alignment);
  if (alignment != formats::kGgufDefaultAlignment) add_uint32("general.alignment", alignment);
}

void GgufWriter::key(const std::string& k, formats::GgufType t) {
  for (const auto& have : keys_)
    if (have == k) fail("GGUF writer: metadata key '{}' added twice", k);
  keys_.push_back(k);
  put_string(k);
  put(static_cast<std::uint32_t>(t));
}

void GgufWriter::put_string(const std::string& s) {
  put(static_cast<std::uint64_t>(s.size()));
  kv_bytes_.insert(kv_bytes_.end(), s.begin(), s.end());
}

void GgufWriter::add_uint32(const std::string& k, std::uint32_t v) {
  key(k, formats::GgufType::UInt32);
  put(v);
}
void GgufWriter::add_int32(const std::string& k, std::int32_t v) {
  key(k, formats::GgufType::Int32);
  put(v);
}
void GgufWriter::add_float32(const std::string& k, float v) {
  key(k, formats::GgufType::Float32);
  put(v);
}
void GgufWriter::add_bool(const std::string& k, bool v) {
  key(k, formats::GgufType::Bool);
  put(static_cast<std::uint8_t>(v ? 1 : 0));
}
void GgufWriter::add_string(const std::string& k, const std::string& v) {
  key(k, formats::GgufType::String);
  put_string(v);
}
void GgufWriter::add_string_array(const std::string& k, const std::vector<std::string>& v) {
  key(k, formats::GgufType::Array);
  put(static_cast<std::uint32_t>(formats::GgufType::String));
  put(static_cast<std::uint64_t>(v.size()));
  for (const auto& s : v) put_string(s);
}
void GgufWriter::add_int32_array(const std::string& k, const std::vector<std::int32_t>& v) {
  key(k, formats::GgufType::Array);
  put(static_cast<std::uint32_t>(formats::GgufType::Int32));
  put(static_cast<std::uint64_t>(v.size()));
  for (auto x : v) put(x);
}

void GgufWriter::add_tensor(const std::string& name, DType dtype,
                            const std::vector<std::int64_t>& shape) {
  for (const auto& t : tensors_)
    if (t.name == name) fail("GGUF writer: tensor '{}' added twice", name);
  if (shape.empty() || shape.size() > 4)
    fail("GGUF writer: tensor '{}' has {} dimensions (1 to 4 allowed)", name, shape.size());
  formats::ggml_type_of(dtype);  // throws for types GGUF cannot hold
  std::int64_t numel = 1;
  for (auto d : shape) {
    if (d <= 0) fail("GGUF writer: tensor '{}' has shape {}", name, shape_str(shape));
    numel *= d;
  }
  if (shape.back() % static_cast<std::int64_t>(dtype_block_elems(dtype)) != 0)
    fail(
        "GGUF writer: tensor '{}' {} has rows of {} elements, not a multiple of the {} block "
        "size {}",
        name, shape_str(shape), shape.back(), dtype_name(dtype), dtype_block_elems(dtype));
  const std::uint64_t nbytes = dtype_bytes(dtype, numel);
  tensors_.push_back({name, dtype, shape, nbytes, data_size_});
  data_size_ += (nbytes + alignment_ - 1) / alignment_ * alignment_;
}

void GgufWriter::write(const std::string& path,
                       const std::function<void(std::size_t, const ByteSink&)>& fill) const {
  std::vector<std::uint8_t> head;
  // resize + memcpy rather than insert(ptr range): GCC 12 at -O3 misreports the latter
  // (-Wstringop-overflow false positive).
  auto put = [&](const auto& v) {
    const std::size_t at = head.size();
    head.resize(at + sizeof(v));
    std::memcpy(head.data() + at, &v, sizeof(v));
  };
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  put(std::uint32_t{3});
  put(static_cast<std::uint64_t>(tensors_.size()));
  put(static_cast<std::uint64_t>(keys_.size()));
  head.insert(head.end(), kv_bytes_.begin(), kv_bytes_.end());
  for (const auto& t : tensors_) {
    put(static_cast<std::uint64_t>(t.name.size()));
    head.insert(head.end(), t.name.begin(), t.name.end());
    put(static_cast<std::uint32_t>(t.shape.size()));
    for (auto d = t.shape.size(); d-- > 0;) put(static_cast<std::uint64_t>(t.shape[d]));
    put(formats::ggml_type_of(t.dtype));
    put(t.offset);
  }
  head.resize((head.size() + alignment_ - 1) / alignment_ * alignment_, 0);

  OutputFile file(path, "");
  std::ofstream& out = file.stream();
  {
    out.write(reinterpret_cast<const char*>(head.data()),
              static_cast<std::streamsize>(head.size()));
    static const char zeros[64] = {};
    for (std::size_t i = 0; i < tensors_.size(); ++i) {
      std::uint64_t written = 0;
      fill(i, [&](std::span<const std::uint8_t> bytes) {
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
        written += bytes.size();
      });
      if (written != tensors_[i].nbytes)
        fail("{}: tensor '{}' was given {} bytes, expected {}", path, tensors_[i].name, written,
             tensors_[i].nbytes);
      const std::uint64_t pad = (alignment_ - written % alignment_) % alignment_;
      for (std::uint64_t p = 0; p < pad; p += sizeof(zeros))
        out.write(zeros,
                  static_cast<std::streamsize>(std::min<std::uint64_t>(sizeof(zeros), pad - p)));
      if (!out) fail("{}: write failed: {}", path, std::strerror(errno));
    }
  }
  file.commit();
}

}  // namespace ls::convert
