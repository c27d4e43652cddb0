// Reader for GGUF files (versions 2 and 3, as llama.cpp writes them): a header, typed metadata
// key/values, tensor infos, then the aligned tensor data. The file is memory-mapped and every
// field is checked against the file before anything is handed out, so a truncated or malicious
// file is an ls::Error naming the file and the field, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "core/tensor.h"

namespace ls::formats {

// Metadata value types, with the numbers the format gives them.
enum class GgufType : std::uint32_t {
  UInt8 = 0,
  Int8 = 1,
  UInt16 = 2,
  Int16 = 3,
  UInt32 = 4,
  Int32 = 5,
  Float32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  UInt64 = 10,
  Int64 = 11,
  Float64 = 12,
};

std::string_view gguf_type_name(GgufType t);  // "uint32", "string", ...

// The GGML token types (the values of tokenizer.ggml.token_type).
enum class GgufTokenType : std::int32_t {
  Undefined = 0,
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6,
};

// GGML tensor type ids of the dtypes this engine stores (0 F32, 1 F16, 2 Q4_0, 3 Q4_1, 6 Q5_0,
// 7 Q5_1, 8 Q8_0, 10 Q2_K, 11 Q3_K, 12 Q4_K, 13 Q5_K, 14 Q6_K, 20 IQ4_NL, 30 BF16); nullopt for
// any other id.
std::optional<DType> dtype_from_ggml_type(std::uint32_t id);
std::uint32_t ggml_type_of(DType t);  // throws for Q8_K (not a storage type)

inline constexpr std::uint32_t kGgufDefaultAlignment = 32;

// One metadata entry. Integers are stored as JSON integers, floats as JSON numbers (a Float32
// as the exact double of its bits), strings as JSON strings (bytes as in the file), arrays as
// JSON arrays; `type` and, for arrays, `elem_type` keep the file's types.
struct GgufKV {
  std::string key;
  GgufType type = GgufType::UInt8;
  GgufType elem_type = GgufType::UInt8;  // arrays only (for nested arrays: Array)
  nlohmann::json value;
  bool skipped = false;  // an array validated but not kept (GgufArrays::Skip): value is null
};

// Whether metadata arrays are kept in memory. A model needs only the scalar keys; the tokenizer
// arrays (151,936 tokens, 151,387 merges) would cost ~40 MiB of parsed strings for its lifetime.
enum class GgufArrays : std::uint8_t { Keep, Skip };

class GgufFile {
 public:
  // Every byte is validated either way; with Skip, get_array of an array throws.
  explicit GgufFile(const std::string& path, GgufArrays arrays = GgufArrays::Keep);

  const std::string& path() const { return file_.path(); }
  std::uint32_t version() const { return version_; }
  std::size_t alignment() const { return alignment_; }
  std::size_t data_offset() const { return data_offset_; }  // start of the tensor data section

  const std::vector<GgufKV>& metadata() const { return kvs_; }
  // Frees the arrays kept in memory (as if opened with Skip), once what needed them is built.
  void drop_arrays();
  const GgufKV* find_kv(std::string_view key) const;

  // Typed access; each throws naming the file and the key when the key is missing (for the
  // require_* forms) or has another type. Integer getters accept any integer type whose value
  // fits; float getters accept Float32 and Float64.
  std::optional<std::string> get_string(std::string_view key) const;
  std::optional<std::int64_t> get_int(std::string_view key) const;
  std::optional<double> get_float(std::string_view key) const;
  std::optional<bool> get_bool(std::string_view key) const;
  std::string require_string(std::string_view key) const;
  std::int64_t require_int(std::string_view key) const;
  double require_float(std::string_view key) const;
  // An array whose elements have type `elem` (String, or Int32/UInt32 for "any integer").
  const nlohmann::json* get_array(std::string_view key, GgufType elem) const;

  const std::vector<TensorView>& tensors() const { return tensors_; }
  const TensorView* find(std::string_view name) const;

 private:
  MappedFile file_;
  std::uint32_t version_ = 0;
  std::size_t alignment_ = kGgufDefaultAlignment;
  std::size_t data_offset_ = 0;
  std::vector<GgufKV> kvs_;
  std::unordered_map<std::string, std::size_t> kv_by_key_;
  std::vector<TensorView> tensors_;
  std::unordered_map<std::string, std::size_t> by_name_;
};

}  // namespace ls::formats
