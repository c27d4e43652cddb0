// A flat open-addressing map from strings to token ids (the vocabulary has 150k entries; a
// node-based std::unordered_map makes loading noticeably slower).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"

namespace ls::tok {

class StringIdMap {
 public:
  void reserve(std::size_t n) {
    if (slots_.size() < n * 2) rehash(n * 2);
  }

  // Returns false (and changes nothing) if the key is already present.
  bool insert(std::string_view key, std::int32_t id) {
    if ((count_ + 1) * 2 > slots_.size()) rehash(std::max<std::size_t>(64, slots_.size() * 2));
    const std::uint64_t h = WordCache::hash(key);
    std::size_t i = h & mask_;
    while (slots_[i].hash != 0) {
      if (slots_[i].hash == h && view(slots_[i]) == key) return false;
      i = (i + 1) & mask_;
    }
    slots_[i] = Slot{h, static_cast<std::uint32_t>(arena_.size()),
                     static_cast<std::uint32_t>(key.size()), id};
    arena_.append(key);
    ++count_;
    return true;
  }

  std::optional<std::int32_t> find(std::string_view key) const {
    if (slots_.empty()) return std::nullopt;
    const std::uint64_t h = WordCache::hash(key);
    std::size_t i = h & mask_;
    while (slots_[i].hash != 0) {
      if (slots_[i].hash == h && view(slots_[i]) == key) return slots_[i].id;
      i = (i + 1) & mask_;
    }
    return std::nullopt;
  }

  std::size_t size() const { return count_; }

  // Calls f(key, id) for every entry (in no particular order).
  template <typename F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.hash != 0) f(view(s), s.id);
    }
  }

 private:
  struct Slot {
    std::uint64_t hash;  // 0: empty (WordCache::hash is never 0)
    std::uint32_t offset;
    std::uint32_t length;
    std::int32_t id;
  };
  std::string_view view(const Slot& s) const { return {arena_.data() + s.offset, s.length}; }
  void rehash(std::size_t want) {
    std::size_t size = 64;
    while (size < want) size <<= 1;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(size, Slot{0, 0, 0, 0});
    mask_ = size - 1;
    for (const Slot& s : old) {
      if (s.hash == 0) continue;
      std::size_t i = s.hash & mask_;
      while (slots_[i].hash != 0) i = (i + 1) & mask_;
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t count_ = 0;
  std::string arena_;
};

}  // namespace ls::tok
