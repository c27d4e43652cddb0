// Validation order: header length fits the file, header is a JSON object, each entry has a
// supported dtype, a non-negative shape whose byte size does not overflow, and data_offsets
// inside the data section matching that size; entries tile the data section exactly (no
// overlap, no gap, nothing after).
#include "formats/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ls::formats {

namespace {
constexpr std::uint64_t kMaxHeaderBytes = 100u << 20;  // the reference implementation's limit too
}

DType parse_safetensors_dtype(std::string_view name, const std::string& where) {
  if (name == "F32") return DType::F32;
  if (name == "BF16") return DType::BF16;
  if (name == "F16") return DType::F16;
  fail("{}: dtype '{}' is not supported (expected F32, BF16 or F16)", where, name);
}

SafetensorsFile::SafetensorsFile(const std::string& path) : file_(path) {
  const auto bytes = file_.bytes();
  if (bytes.size() < 8)
    fail("{}: file is {} bytes, too short for the 8-byte safetensors header length", path,
         bytes.size());
  std::uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[static_cast<std::size_t>(i)];
  if (header_len > kMaxHeaderBytes)
    fail("{}: header length {} exceeds the {} byte limit", path, header_len, kMaxHeaderBytes);
  if (header_len > bytes.size() - 8)
    fail("{}: header length {} runs past the end of the file ({} bytes): truncated?", path,
         header_len, bytes.size());
  const std::string_view header_text(reinterpret_cast<const char*>(bytes.data() + 8), header_len);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {
    fail("{}: header is not valid JSON: {}", path, e.what());
  }
  if (!header.is_object()) fail("{}: header must be a JSON object", path);

  const std::uint8_t* data = bytes.data() + 8 + header_len;
  const std::uint64_t data_len = bytes.size() - 8 - header_len;
  struct Range {
    std::uint64_t begin, end;
    std::size_t index;
  };
  std::vector<Range> ranges;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = fmt::format("{}: tensor '{}'", path, name);
    if (!entry.is_object()) fail("{}: entry must be an object", where);
    auto dt = entry.find("dtype");
    auto sh = entry.find("shape");
    auto off = entry.find("data_offsets");
    if (dt == entry.end() || !dt->is_string()) fail("{}: missing string field 'dtype'", where);
    if (sh == entry.end() || !sh->is_array()) fail("{}: missing array field 'shape'", where);
    if (off == entry.end() || !off->is_array() || off->size() != 2)
      fail("{}: field 'data_offsets' must be an array [begin, end]", where);
    TensorView t;
    t.name = name;
    t.dtype = parse_safetensors_dtype(dt->get<std::string>(), where);
    std::uint64_t numel = 1;
    for (const auto& d : *sh) {
      if (!d.is_number_unsigned())
        fail("{}: shape {} must hold non-negative integers", where, sh->dump());
      const auto v = d.get<std::uint64_t>();
      // Each dimension must fit TensorView's int64 (after a 0 the product no longer bounds it).
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ||
          (v != 0 && numel > (std::numeric_limits<std::uint64_t>::max() / 16) / v))
        fail("{}: shape {} is too large", where, sh->dump());
      numel *= v;
      t.shape.push_back(static_cast<std::int64_t>(v));
    }
    for (const auto& o : *off)
      if (!o.is_number_unsigned())
        fail("{}: data_offsets {} must be non-negative integers", where, off->dump());
    const auto begin = (*off)[0].get<std::uint64_t>();
    const auto end = (*off)[1].get<std::uint64_t>();
    if (begin > end || end > data_len)
      fail("{}: data_offsets [{}, {}] outside the data section of {} bytes: truncated file?", where,
           begin, end, data_len);
    const std::uint64_t want = numel * dtype_size(t.dtype);
    if (end - begin != want)
      fail("{}: data_offsets span {} bytes but {} {} needs {}", where, end - begin,
           dtype_name(t.dtype), shape_str(t.shape), want);
    t.data = data + begin;
    ranges.push_back({begin, end, tensors_.size()});
    by_name_[name] = tensors_.size();
    tensors_.push_back(std::move(t));
  }
  std::sort(ranges.begin(), ranges.end(), [](auto& a, auto& b) { return a.begin < b.begin; });
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].begin < ranges[i - 1].end)
      fail("{}: tensors '{}' and '{}' overlap in the data section", path,
           tensors_[ranges[i - 1].index].name, tensors_[ranges[i].index].name);
  // As the safetensors library validates: the tensors tile the data section exactly, so a
  // header length off by a byte (every tensor shifted) or stray bytes are an error.
  std::uint64_t at = 0;
  for (const auto& r : ranges) {
    if (r.begin != at)
      fail(
          "{}: tensor '{}' starts at data offset {}, expected {} (the tensors must cover the "
          "data section without gaps; is the header length {} right?)",
          path, tensors_[r.index].name, r.begin, at, header_len);
    at = r.end;
  }
  if (at != data_len)
    fail(
        "{}: the tensors cover {} bytes but the data section after the {}-byte header holds {}: "
        "a wrong header length or trailing bytes",
        path, at, header_len, data_len);
}

const TensorView* SafetensorsFile::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace ls::formats
