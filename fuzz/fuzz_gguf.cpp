// Fuzz target: the GGUF reader (src/formats/gguf.*) and what is built from its metadata: each
// input is a GGUF file (through an in-memory file), opened with arrays kept and skipped (both
// must accept or both refuse it), every key read through each typed getter, then the config
// (gguf_metadata), the tokenizer (tok::gguf_tokenizer, which encodes a text), the chat
// template and the model's weights (Model::from_gguf). Only ls::Error may be thrown.
#include <cstdint>
#include <exception>
#include <memory>

#include "core/error.h"
#include "formats/gguf.h"
#include "fuzz_util.h"
#include "model/gguf_metadata.h"
#include "model/model.h"
#include "tokenizer/gguf_tokenizer.h"

namespace {

template <typename F>
void allow_error(F&& f) {
  try {
    f();
  } catch (const ls::Error&) {
  }
}

// Reads everything the file holds through the public accessors: each key through the getter of
// its type, and the first key of each type through every getter (the error paths; a throw per
// key would cost more than the parse).
void read_all(const ls::formats::GgufFile& f) {
  std::uint32_t seen_types = 0;
  for (const ls::formats::GgufKV& kv : f.metadata()) {
    if (f.find_kv(kv.key) != &kv) ls::fuzz::finding("find_kv does not return its entry");
    const auto type_bit = 1u << static_cast<std::uint32_t>(kv.type);
    const bool all = (seen_types & type_bit) == 0;
    seen_types |= type_bit;
    using T = ls::formats::GgufType;
    const T t = kv.type;
    const bool integer = t == T::UInt8 || t == T::Int8 || t == T::UInt16 || t == T::Int16 ||
                         t == T::UInt32 || t == T::Int32 || t == T::UInt64 || t == T::Int64;
    if (all || t == T::String) allow_error([&] { (void)f.get_string(kv.key); });
    if (all || integer) allow_error([&] { (void)f.get_int(kv.key); });
    if (all || t == T::Float32 || t == T::Float64) allow_error([&] { (void)f.get_float(kv.key); });
    if (all || t == T::Bool) allow_error([&] { (void)f.get_bool(kv.key); });
    if (all || t == T::Array) {
      allow_error([&] { (void)f.get_array(kv.key, T::String); });
      allow_error([&] { (void)f.get_array(kv.key, T::Int32); });
    }
  }
  unsigned sum = 0;
  for (const ls::TensorView& t : f.tensors()) {
    if (f.find(t.name) != &t) ls::fuzz::finding("find() does not return tensor " + t.name);
    const std::size_t n = t.nbytes();
    if (n > 0) sum += t.data[0] + t.data[n - 1];  // past the mapping this faults
  }
  (void)sum;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static ls::fuzz::MemFile file;
  const std::string& path = file.write(data, size);
  try {
    bool skip_ok = true;
    try {
      const ls::formats::GgufFile skipped(path, ls::formats::GgufArrays::Skip);
      read_all(skipped);
    } catch (const ls::Error&) {
      skip_ok = false;
    }
    std::unique_ptr<ls::formats::GgufFile> f;
    try {
      f = std::make_unique<ls::formats::GgufFile>(path, ls::formats::GgufArrays::Keep);
    } catch (const ls::Error&) {
      if (skip_ok) ls::fuzz::finding("opened with GgufArrays::Skip but not with Keep");
      return 0;
    }
    if (!skip_ok) ls::fuzz::finding("opened with GgufArrays::Keep but not with Skip");
    read_all(*f);
    allow_error([&] { (void)ls::model::gguf_config_json(*f); });
    if (ls::model::gguf_has_tokenizer(*f)) {
      allow_error([&] {
        const ls::tok::Tokenizer tok = ls::tok::gguf_tokenizer(*f);
        const auto ids = tok.encode("Hello <|im_end|> world, 你好!");
        (void)tok.decode(ids);
      });
    }
    allow_error([&] { (void)ls::model::gguf_chat_template(*f); });
    f->drop_arrays();
    allow_error([&] { (void)ls::model::Model::from_gguf(std::move(f)); });
  } catch (const ls::Error&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ls::Error: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  return 0;
}
