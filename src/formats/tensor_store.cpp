// Single-file or sharded safetensors loading, or one GGUF file; in the sharded case every tensor
// the index names must be in the shard it names, and no tensor may appear in two shards.
#include "formats/tensor_store.h"

#include <algorithm>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"
#include "formats/gguf_split.h"

namespace ls::formats {

namespace fs = std::filesystem;

TensorStore TensorStore::open_hf_dir(const std::string& dir) {
  TensorStore s;
  s.source_ = dir;
  const fs::path single = fs::path(dir) / "model.safetensors";
  const fs::path index = fs::path(dir) / "model.safetensors.index.json";
  std::unordered_map<std::string, std::string> expected;  // tensor -> shard file (sharded only)
  if (fs::exists(single)) {
    s.files_.push_back(std::make_unique<SafetensorsFile>(single.string()));
  } else if (fs::exists(index)) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(read_text_file(index.string()));
    } catch (const nlohmann::json::exception& e) {
      fail("{}: invalid JSON: {}", index.string(), e.what());
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail("{}: missing object field 'weight_map'", index.string());
    std::vector<std::string> shards;
    for (const auto& [name, file] : j["weight_map"].items()) {
      if (!file.is_string()) fail("{}: weight_map['{}'] must be a file name", index.string(), name);
      const auto f = file.get<std::string>();
      if (f.find('/') != std::string::npos || f == "..")
        fail("{}: weight_map['{}'] = '{}' must be a file in the model directory", index.string(),
             name, f);
      expected[name] = f;
      if (std::find(shards.begin(), shards.end(), f) == shards.end()) shards.push_back(f);
    }
    // A shard the index names but the folder lacks (an interrupted or filtered download) is
    // named with the index and the count, before any shard is opened.
    std::size_t missing = 0;
    std::string first_missing;
    for (const auto& f : shards)
      if (!fs::exists(fs::path(dir) / f) && missing++ == 0) first_missing = f;
    if (missing > 0)
      fail(
          "{}: '{}' is listed in model.safetensors.index.json but is not in the folder ({} of {} "
          "shards missing): download the model again (logitscope pull, without an --exclude "
          "that drops shards)",
          dir, first_missing, missing, shards.size());
    for (const auto& f : shards)
      s.files_.push_back(std::make_unique<SafetensorsFile>((fs::path(dir) / f).string()));
  } else {
    fail("{}: no model.safetensors or model.safetensors.index.json in this directory", dir);
  }
  for (const auto& file : s.files_) {
    for (const auto& t : file->tensors()) {
      if (s.by_name_.count(t.name))
        fail("{}: tensor '{}' appears in more than one shard", file->path(), t.name);
      s.by_name_[t.name] = &t;
    }
  }
  for (const auto& [name, shard] : expected) {
    const TensorView* t = s.find(name);
    if (t == nullptr)
      fail("{}: the index lists tensor '{}' in '{}' but that shard does not contain it", dir, name,
           shard);
  }
  return s;
}

TensorStore TensorStore::open_gguf(const std::string& path) {
  return from_gguf(std::make_unique<GgufFile>(path, GgufArrays::Skip));  // no arrays needed
}

TensorStore TensorStore::from_gguf(std::unique_ptr<GgufFile> file) {
  TensorStore s;
  s.source_ = file->path();
  s.gguf_ = std::move(file);
  for (const auto& t : s.gguf_->tensors()) s.by_name_[t.name] = &t;
  s.gguf_parts_ = open_gguf_split_parts(*s.gguf_);
  for (const auto& part : s.gguf_parts_)
    for (const auto& t : part->tensors()) s.by_name_[t.name] = &t;
  return s;
}

const TensorView* TensorStore::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<std::string> TensorStore::names() const {
  std::vector<std::string> out;
  for (const auto& [n, t] : by_name_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t TensorStore::total_bytes() const {
  std::size_t n = 0;
  for (const auto& [name, t] : by_name_) n += t->nbytes();
  return n;
}

}  // namespace ls::formats
