// Validation order: magic, version, counts (capped, and each item must fit in what is left of
// the file), every metadata value read through a bounds-checked cursor, general.alignment, each
// tensor info (name unique, 1-4 dims, known type, whole blocks per row, size without overflow),
// then offsets: aligned, inside the data section, and not overlapping.
#include "formats/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace ls::formats {

namespace {

constexpr std::uint64_t kMaxTensors = 1u << 20;
constexpr std::uint64_t kMaxKVs = 1u << 20;
constexpr int kMaxArrayDepth = 4;  // arrays of arrays of ... (nothing real nests deeper than 2)
constexpr std::uint64_t kMaxDims = 4;

// Bytes in a message: printable ASCII as is, the rest as \xHH (keys and names of a corrupt
// file can be any bytes).
std::string printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f)
      out += static_cast<char>(c);
    else
      out += fmt::format("\\x{:02X}", c);
  }
  if (out.size() > 200) out = out.substr(0, 200) + "...";
  return out;
}

class Cursor {
 public:
  Cursor(const std::string& path, std::span<const std::uint8_t> bytes)
      : path_(path), bytes_(bytes) {}

  std::size_t pos() const { return pos_; }
  std::size_t left() const { return bytes_.size() - pos_; }

  template <typename T>
  T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, bytes_.data() + pos_, sizeof(T));  // little-endian host, as GGUF
    pos_ += sizeof(T);
    return v;
  }

  std::string read_string(std::string_view what) {
    const auto n = read<std::uint64_t>(what);
    if (n > left())
      fail("{}: {} is a string of {} bytes at offset {} but only {} bytes remain: truncated?",
           path_, what, n, pos_ - 8, left());
    std::string s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n;
    return s;
  }

  void need(std::size_t n, std::string_view what) const {
    if (n > left())
      fail("{}: file ends at byte {} while reading {} (needs {} more bytes): truncated?", path_,
           bytes_.size(), what, n - left());
  }

 private:
  const std::string& path_;
  std::span<const std::uint8_t> bytes_;
  std::size_t pos_ = 0;
};

// Smallest number of bytes one element of a type occupies, to bound array lengths by the file.
std::size_t min_bytes(GgufType t) {
  switch (t) {
    case GgufType::UInt8:
    case GgufType::Int8:
    case GgufType::Bool:
      return 1;
    case GgufType::UInt16:
    case GgufType::Int16:
      return 2;
    case GgufType::UInt32:
    case GgufType::Int32:
    case GgufType::Float32:
      return 4;
    case GgufType::String:
    case GgufType::UInt64:
    case GgufType::Int64:
    case GgufType::Float64:
      return 8;
    case GgufType::Array:
      return 12;
  }
  return 1;
}

bool known_type(std::uint32_t t) {
  return t <= static_cast<std::uint32_t>(GgufType::Float64);
}

// Reads (and validates) one value; an array is returned as null when !keep.
nlohmann::json read_value(Cursor& c, GgufType type, const std::string& what, int depth,
                          GgufType* elem_out, const std::string& path, bool keep = true) {
  switch (type) {
    case GgufType::UInt8:
      return c.read<std::uint8_t>(what);
    case GgufType::Int8:
      return c.read<std::int8_t>(what);
    case GgufType::UInt16:
      return c.read<std::uint16_t>(what);
    case GgufType::Int16:
      return c.read<std::int16_t>(what);
    case GgufType::UInt32:
      return c.read<std::uint32_t>(what);
    case GgufType::Int32:
      return c.read<std::int32_t>(what);
    case GgufType::UInt64:
      return c.read<std::uint64_t>(what);
    case GgufType::Int64:
      return c.read<std::int64_t>(what);
    case GgufType::Float32:
      return static_cast<double>(c.read<float>(what));
    case GgufType::Float64:
      return c.read<double>(what);
    case GgufType::Bool: {
      const auto b = c.read<std::uint8_t>(what);
      if (b > 1) fail("{}: {} is a bool with byte value {} (expected 0 or 1)", path, what, b);
      return b == 1;
    }
    case GgufType::String:
      return c.read_string(what);
    case GgufType::Array: {
      if (depth >= kMaxArrayDepth)
        fail("{}: {} nests arrays more than {} deep", path, what, kMaxArrayDepth);
      const auto et = c.read<std::uint32_t>(what + " (array element type)");
      if (!known_type(et)) fail("{}: {} is an array of unknown element type {}", path, what, et);
      const auto n = c.read<std::uint64_t>(what + " (array length)");
      const auto elem = static_cast<GgufType>(et);
      if (n > c.left() / min_bytes(elem))
        fail("{}: {} claims {} elements of type {} but only {} bytes remain: truncated?", path,
             what, n, gguf_type_name(elem), c.left());
      if (elem_out) *elem_out = elem;
      if (!keep) {
        for (std::uint64_t i = 0; i < n; ++i)
          read_value(c, elem, fmt::format("{}[{}]", what, i), depth + 1, nullptr, path);
        return nullptr;
      }
      nlohmann::json arr = nlohmann::json::array();
      arr.get_ref<nlohmann::json::array_t&>().reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i)
        arr.push_back(
            read_value(c, elem, fmt::format("{}[{}]", what, i), depth + 1, nullptr, path));
      return arr;
    }
  }
  fail("{}: {} has unknown value type {}", path, what, static_cast<std::uint32_t>(type));
}

bool is_integer_type(GgufType t) {
  switch (t) {
    case GgufType::UInt8:
    case GgufType::Int8:
    case GgufType::UInt16:
    case GgufType::Int16:
    case GgufType::UInt32:
    case GgufType::Int32:
    case GgufType::UInt64:
    case GgufType::Int64:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string_view gguf_type_name(GgufType t) {
  switch (t) {
    case GgufType::UInt8:
      return "uint8";
    case GgufType::Int8:
      return "int8";
    case GgufType::UInt16:
      return "uint16";
    case GgufType::Int16:
      return "int16";
    case GgufType::UInt32:
      return "uint32";
    case GgufType::Int32:
      return "int32";
    case GgufType::Float32:
      return "float32";
    case GgufType::Bool:
      return "bool";
    case GgufType::String:
      return "string";
    case GgufType::Array:
      return "array";
    case GgufType::UInt64:
      return "uint64";
    case GgufType::Int64:
      return "int64";
    case GgufType::Float64:
      return "float64";
  }
  return "unknown";
}

std::optional<DType> dtype_from_ggml_type(std::uint32_t id) {
  switch (id) {
    case 0:
      return DType::F32;
    case 1:
      return DType::F16;
    case 2:
      return DType::Q4_0;
    case 3:
      return DType::Q4_1;
    case 6:
      return DType::Q5_0;
    case 7:
      return DType::Q5_1;
    case 8:
      return DType::Q8_0;
    case 10:
      return DType::Q2_K;
    case 11:
      return DType::Q3_K;
    case 12:
      return DType::Q4_K;
    case 13:
      return DType::Q5_K;
    case 14:
      return DType::Q6_K;
    case 20:
      return DType::IQ4_NL;
    case 30:
      return DType::BF16;
    default:
      return std::nullopt;
  }
}

std::uint32_t ggml_type_of(DType t) {
  switch (t) {
    case DType::F32:
      return 0;
    case DType::F16:
      return 1;
    case DType::Q4_0:
      return 2;
    case DType::Q8_0:
      return 8;
    case DType::Q4_K:
      return 12;
    case DType::Q6_K:
      return 14;
    case DType::BF16:
      return 30;
    case DType::Q4_1:
      return 3;
    case DType::Q5_0:
      return 6;
    case DType::Q5_1:
      return 7;
    case DType::IQ4_NL:
      return 20;
    case DType::Q2_K:
      return 10;
    case DType::Q3_K:
      return 11;
    case DType::Q5_K:
      return 13;
    case DType::Q8_K:
      break;
  }
  fail("dtype {} cannot be stored in a GGUF file", dtype_name(t));
}

GgufFile::GgufFile(const std::string& path, GgufArrays arrays) : file_(path) {
  Cursor c(path, file_.bytes());
  if (file_.size() < 4 || std::memcmp(file_.bytes().data(), "GGUF", 4) != 0)
    fail("{}: not a GGUF file (the first 4 bytes are not \"GGUF\")", path);
  c.read<std::uint32_t>("magic");
  version_ = c.read<std::uint32_t>("version");
  if (version_ != 2 && version_ != 3)
    fail("{}: GGUF version {} is not supported (supported: 2, 3)", path, version_);
  const auto n_tensors = c.read<std::uint64_t>("tensor count");
  const auto n_kv = c.read<std::uint64_t>("metadata key/value count");
  if (n_tensors > kMaxTensors)
    fail("{}: tensor count {} exceeds the limit of {}", path, n_tensors, kMaxTensors);
  if (n_kv > kMaxKVs) fail("{}: metadata count {} exceeds the limit of {}", path, n_kv, kMaxKVs);
  // Each key/value takes at least 8 + 4 + 1 bytes, each tensor info at least 8 + 4 + 8 + 4 + 8.
  if (n_kv > c.left() / 13 || n_tensors > c.left() / 32)
    fail(
        "{}: header claims {} metadata entries and {} tensors but the file has only {} bytes: "
        "truncated?",
        path, n_kv, n_tensors, file_.size());

  kvs_.reserve(static_cast<std::size_t>(n_kv));
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    GgufKV kv;
    kv.key = c.read_string(fmt::format("the key of metadata entry {}", i));
    if (kv.key.empty()) fail("{}: metadata entry {} has an empty key", path, i);
    const std::string what = fmt::format("metadata '{}'", printable(kv.key));
    if (kv_by_key_.count(kv.key)) fail("{}: {} appears twice", path, what);
    const auto t = c.read<std::uint32_t>(what + " (value type)");
    if (!known_type(t)) fail("{}: {} has unknown value type {}", path, what, t);
    kv.type = static_cast<GgufType>(t);
    const bool keep = arrays == GgufArrays::Keep || kv.type != GgufType::Array;
    kv.value = read_value(c, kv.type, what, 0, &kv.elem_type, path, keep);
    kv.skipped = !keep;
    kv_by_key_[kv.key] = kvs_.size();
    kvs_.push_back(std::move(kv));
  }

  if (const GgufKV* a = find_kv("general.alignment")) {
    if (a->type != GgufType::UInt32)
      fail("{}: metadata 'general.alignment' must be uint32, got {}", path,
           gguf_type_name(a->type));
    const auto v = a->value.get<std::uint32_t>();
    if (v == 0 || (v & (v - 1)) != 0 || v > (1u << 16))
      fail("{}: metadata 'general.alignment' must be a power of two up to 65536, got {}", path, v);
    alignment_ = v;
  }

  struct Info {
    std::uint64_t offset, nbytes;
  };
  std::vector<Info> infos;
  tensors_.reserve(static_cast<std::size_t>(n_tensors));
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    TensorView t;
    t.name = c.read_string(fmt::format("the name of tensor {}", i));
    const std::string what = fmt::format("tensor '{}'", printable(t.name));
    if (t.name.empty()) fail("{}: tensor {} has an empty name", path, i);
    if (by_name_.count(t.name)) fail("{}: {} appears twice", path, what);
    const auto n_dims = c.read<std::uint32_t>(what + " (dimension count)");
    if (n_dims < 1 || n_dims > kMaxDims)
      fail("{}: {} has {} dimensions (expected 1 to {})", path, what, n_dims, kMaxDims);
    std::vector<std::uint64_t> ne(n_dims);
    std::uint64_t numel = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      ne[d] = c.read<std::uint64_t>(what + " (dimensions)");
      if (ne[d] == 0 || ne[d] > (std::uint64_t{1} << 40) ||
          numel > (std::uint64_t{1} << 40) / ne[d])
        fail("{}: {} has dimension {} = {} (expected 1 to 2^40 elements in all)", path, what, d,
             ne[d]);
      numel *= ne[d];
    }
    const auto type_id = c.read<std::uint32_t>(what + " (type)");
    const auto dtype = dtype_from_ggml_type(type_id);
    if (!dtype)
      fail(
          "{}: {} has GGML type {}, which is not supported (supported: 0 F32, 1 F16, 30 BF16, "
          "8 Q8_0, 2 Q4_0, 3 Q4_1, 6 Q5_0, 7 Q5_1, 20 IQ4_NL, 10 Q2_K, 11 Q3_K, 12 Q4_K, 13 Q5_K, "
          "14 Q6_K)",
          path, what, type_id);
    t.dtype = *dtype;
    const auto offset = c.read<std::uint64_t>(what + " (offset)");
    // GGML order is innermost first; TensorView.shape is outermost first.
    for (std::uint32_t d = n_dims; d-- > 0;) t.shape.push_back(static_cast<std::int64_t>(ne[d]));
    const std::size_t block = dtype_block_elems(t.dtype);
    if (ne[0] % block != 0)
      fail("{}: {} of type {} has rows of {} elements, not a multiple of its block size {}", path,
           what, dtype_name(t.dtype), ne[0], block);
    const std::uint64_t nbytes = numel / block * dtype_block_bytes(t.dtype);
    if (offset % alignment_ != 0)
      fail("{}: {} has offset {}, not a multiple of the alignment {}", path, what, offset,
           alignment_);
    infos.push_back({offset, nbytes});
    by_name_[t.name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }

  const std::size_t header_end = c.pos();
  data_offset_ = (header_end + alignment_ - 1) / alignment_ * alignment_;
  if (n_tensors > 0 && data_offset_ > file_.size())
    fail("{}: file ends at byte {} before the tensor data section (at {}): truncated?", path,
         file_.size(), data_offset_);
  const std::uint64_t data_len = n_tensors > 0 ? file_.size() - data_offset_ : 0;
  std::vector<std::size_t> order(tensors_.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    const Info& inf = infos[i];
    if (inf.offset > data_len || inf.nbytes > data_len - inf.offset)
      fail(
          "{}: tensor '{}' ({} {}, {} bytes at data offset {}) runs past the end of the file "
          "(data section of {} bytes): truncated?",
          path, printable(tensors_[i].name), dtype_name(tensors_[i].dtype),
          shape_str(tensors_[i].shape), inf.nbytes, inf.offset, data_len);
    tensors_[i].data = file_.bytes().data() + data_offset_ + inf.offset;
  }
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return infos[a].offset < infos[b].offset; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const Info& prev = infos[order[k - 1]];
    if (infos[order[k]].offset < prev.offset + prev.nbytes)
      fail("{}: tensors '{}' and '{}' overlap in the data section", path,
           printable(tensors_[order[k - 1]].name), printable(tensors_[order[k]].name));
  }
  // Everything above the tensor data is parsed into kvs_ and tensors_ now: drop its pages from
  // the resident set (the tokenizer's arrays are megabytes). A read-only mapping, so a later
  // read only faults them back in from the page cache.
  release_mapped_pages(file_.bytes().data(), std::min<std::size_t>(data_offset_, file_.size()));
}

const GgufKV* GgufFile::find_kv(std::string_view key) const {
  auto it = kv_by_key_.find(std::string(key));
  return it == kv_by_key_.end() ? nullptr : &kvs_[it->second];
}

const TensorView* GgufFile::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

std::optional<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufKV* kv = find_kv(key);
  if (!kv) return std::nullopt;
  if (kv->type != GgufType::String)
    fail("{}: metadata '{}' must be a string, got {}", path(), key, gguf_type_name(kv->type));
  return kv->value.get<std::string>();
}

std::optional<std::int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufKV* kv = find_kv(key);
  if (!kv) return std::nullopt;
  if (!is_integer_type(kv->type))
    fail("{}: metadata '{}' must be an integer, got {}", path(), key, gguf_type_name(kv->type));
  if (kv->type == GgufType::UInt64 &&
      kv->value.get<std::uint64_t>() >
          static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
    fail("{}: metadata '{}' = {} is too large", path(), key, kv->value.get<std::uint64_t>());
  return kv->value.get<std::int64_t>();
}

std::optional<double> GgufFile::get_float(std::string_view key) const {
  const GgufKV* kv = find_kv(key);
  if (!kv) return std::nullopt;
  if (kv->type != GgufType::Float32 && kv->type != GgufType::Float64)
    fail("{}: metadata '{}' must be a float32 or float64, got {}", path(), key,
         gguf_type_name(kv->type));
  return kv->value.get<double>();
}

std::optional<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufKV* kv = find_kv(key);
  if (!kv) return std::nullopt;
  if (kv->type != GgufType::Bool)
    fail("{}: metadata '{}' must be a bool, got {}", path(), key, gguf_type_name(kv->type));
  return kv->value.get<bool>();
}

std::string GgufFile::require_string(std::string_view key) const {
  auto v = get_string(key);
  if (!v) fail("{}: missing metadata '{}' (string)", path(), key);
  return *v;
}

std::int64_t GgufFile::require_int(std::string_view key) const {
  auto v = get_int(key);
  if (!v) fail("{}: missing metadata '{}' (integer)", path(), key);
  return *v;
}

double GgufFile::require_float(std::string_view key) const {
  auto v = get_float(key);
  if (!v) fail("{}: missing metadata '{}' (float)", path(), key);
  return *v;
}

void GgufFile::drop_arrays() {
  for (auto& kv : kvs_) {
    if (kv.type != GgufType::Array || kv.skipped) continue;
    kv.value = nlohmann::json();
    kv.skipped = true;
  }
}

const nlohmann::json* GgufFile::get_array(std::string_view key, GgufType elem) const {
  const GgufKV* kv = find_kv(key);
  if (!kv) return nullptr;
  const bool ok =
      kv->type == GgufType::Array && (elem == GgufType::String ? kv->elem_type == GgufType::String
                                                               : is_integer_type(kv->elem_type));
  if (!ok)
    fail("{}: metadata '{}' must be an array of {}, got {}{}", path(), key,
         elem == GgufType::String ? "strings" : "integers", gguf_type_name(kv->type),
         kv->type == GgufType::Array ? fmt::format(" of {}", gguf_type_name(kv->elem_type)) : "");
  if (kv->skipped)
    fail("{}: metadata '{}' was not kept in memory (the file was opened for its tensors only)",
         path(), key);
  return &kv->value;
}

}  // namespace ls::formats
