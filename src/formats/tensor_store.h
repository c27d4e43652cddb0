// All tensors of a model, by file name: a Hugging Face directory (model.safetensors, or the
// shards listed in model.safetensors.index.json) or a GGUF file (with its later parts when it
// is the first of a split model). Owns the memory maps; hands out non-owning views.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "formats/gguf.h"
#include "formats/safetensors.h"

namespace ls::formats {

class TensorStore {
 public:
  static TensorStore open_hf_dir(const std::string& dir);
  static TensorStore open_gguf(const std::string& path);
  // A GGUF file already open (its metadata read for the config, tokenizer and template).
  static TensorStore from_gguf(std::unique_ptr<GgufFile> file);

  const TensorView* find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::size_t total_bytes() const;  // bytes of all tensor data
  const std::string& source() const { return source_; }
  // The GGUF file (its metadata) when opened with open_gguf, else nullptr.
  const GgufFile* gguf() const { return gguf_.get(); }

 private:
  std::string source_;  // the directory, for messages
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unique_ptr<GgufFile> gguf_;
  std::vector<std::unique_ptr<GgufFile>> gguf_parts_;  // parts 2.. of a split GGUF
  std::unordered_map<std::string, const TensorView*> by_name_;
};

}  // namespace ls::formats
