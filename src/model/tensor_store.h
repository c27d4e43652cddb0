// All tensors of a Hugging Face model directory, by file name: model.safetensors, or the shards
// listed in model.safetensors.index.json. Owns the memory maps; hands out non-owning views.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/safetensors.h"

namespace ls {

class TensorStore {
 public:
  static TensorStore open_hf_dir(const std::string& dir);

  const TensorView* find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::size_t total_bytes() const;  // bytes of all tensor data
  const std::string& source() const { return source_; }

 private:
  std::string source_;  // the directory, for messages
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::unordered_map<std::string, const TensorView*> by_name_;
};

}  // namespace ls
