// Byte-level BPE: the merges of tokenizer.json applied by rank to the bytes of one
// pre-tokenized word, exactly as Hugging Face's BPE model does it (lowest rank first, the
// leftmost occurrence first among equal ranks), plus a per-thread cache of word -> ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ls::tok {

class BpeModel {
 public:
  BpeModel() { rehash(16); }

  // Limits of the packed tables: token ids below 2^20 - 1, fewer than 2^23 - 1 merges.
  static constexpr std::int32_t kMaxId = (1 << 20) - 2;
  static constexpr std::size_t kMaxMerges = (std::size_t{1} << 23) - 1;
  static constexpr std::uint32_t kNoRank = 0xFFFFFFFFu;

  // byte_ids[b]: the id of the token that stands for byte b alone.
  void set_byte_ids(const std::int32_t (&byte_ids)[256]);
  void reserve_merges(std::size_t count);
  // Adds merge (left, right) -> merged with the given rank (ranks are the positions in the merges
  // list: each rank is used once). A later duplicate of the same pair replaces the earlier one,
  // as the HashMap that Hugging Face collects merges into does.
  void add_merge(std::int32_t left, std::int32_t right, std::int32_t merged, std::uint32_t rank);
  // Call once after the last add_merge (fills the byte-pair table).
  void finalize();
  std::size_t merge_count() const { return count_; }

  // A small direct-mapped cache of pair lookups, owned by one thread (see WordCache): the
  // pairs of frequent characters recur, and the cache keeps them out of the big table.
  static constexpr int kPairCacheBits = 12;
  static constexpr std::size_t kPairCacheSize = std::size_t{1} << kPairCacheBits;

  // Appends the ids of `word` (raw bytes, not empty) to out. pair_cache: kPairCacheSize entries
  // (initially all ~0) reused across calls by one thread for this model, or null.
  void encode_word(std::string_view word, std::vector<std::int32_t>& out,
                   std::uint64_t* pair_cache = nullptr) const;

  // The two algorithms behind encode_word (public for tests): an O(n^2) array scan for short
  // words (up to 255 bytes; longer ones go to the heap) and an O(n log n) heap for long ones.
  // Both give the same ids.
  void encode_word_scan(std::string_view word, std::vector<std::int32_t>& out,
                        std::uint64_t* pair_cache = nullptr) const;
  void encode_word_heap(std::string_view word, std::vector<std::int32_t>& out,
                        std::uint64_t* pair_cache = nullptr) const;

  // The rank of merge (left, right), or kNoRank.
  std::uint32_t lookup(std::int32_t left, std::int32_t right) const {
    const std::uint64_t key = (std::uint64_t(std::uint32_t(left)) << 20) | std::uint32_t(right);
    std::size_t slot = (key * 0x9E3779B97F4A7C15ULL) >> shift_;
    while (true) {
      const std::uint64_t s = slots_[slot];
      if ((s >> 24) == key) return static_cast<std::uint32_t>(s & 0xFFFFFF);
      if (s == kEmpty) return kNoRank;
      slot = (slot + 1) & mask_;
    }
  }
  // lookup() through the pair cache and the filter.
  std::uint32_t rank_of(std::int32_t left, std::int32_t right, std::uint64_t* pair_cache) const {
    const std::uint64_t key = (std::uint64_t(std::uint32_t(left)) << 20) | std::uint32_t(right);
    std::size_t c = 0;
    if (pair_cache != nullptr) {
      c = (key * 0xBF58476D1CE4E5B9ULL) >> (64 - kPairCacheBits);
      const std::uint64_t e = pair_cache[c];
      if ((e >> 24) == key) {
        const auto r = static_cast<std::uint32_t>(e & 0xFFFFFF);
        return r == 0xFFFFFF ? kNoRank : r;
      }
    }
    const std::uint64_t f = (key * 0xD6E8FEB86659FD93ULL) >> (64 - kFilterBits);
    const std::uint32_t r = ((filter_[f >> 6] >> (f & 63)) & 1) ? lookup(left, right) : kNoRank;
    if (pair_cache != nullptr) pair_cache[c] = (key << 24) | (r == kNoRank ? 0xFFFFFFu : r);
    return r;
  }
  // The token a merge of the given rank produces.
  std::int32_t merged(std::uint32_t rank) const { return rank_to_id_[rank]; }

 private:
  // A slot packs the pair (left: 20 bits, right: 20 bits) and the rank (24 bits).
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  // A one-hash Bloom filter over the pairs that have a merge: most lookups are for pairs
  // without one, and the filter (256 KB) answers those from cache.
  static constexpr int kFilterBits = 21;
  std::vector<std::uint64_t> filter_ =
      std::vector<std::uint64_t>((std::size_t{1} << kFilterBits) / 64, 0);
  void rehash(std::size_t capacity);

  std::int32_t byte_ids_[256] = {};
  std::vector<std::uint32_t> byte_pair_rank_;  // [(b1 << 8) | b2]: rank of (byte b1, byte b2)
  std::vector<std::uint64_t> slots_;
  std::vector<std::int32_t> rank_to_id_;
  std::size_t mask_ = 0;
  int shift_ = 63;
  std::size_t count_ = 0;
};

// A per-thread cache of word bytes -> ids, keyed by the owning tokenizer's serial number (each
// thread keeps a few, for the tokenizers it used last). Bounded: it is emptied when full.
class WordCache {
 public:
  static constexpr std::size_t kMaxWordBytes = 255;
  // The calling thread's cache for tokenizer `owner` (a recycled, emptied one if it has none).
  static WordCache& for_thread(std::uint64_t owner);

  // Returns true and sets ids/count when word is cached.
  bool find(std::string_view word, std::uint64_t hash, const std::int32_t** ids,
            std::size_t* count) const;
  void insert(std::string_view word, std::uint64_t hash, const std::int32_t* ids,
              std::size_t count);
  void clear();
  // The BpeModel pair cache of this thread for the owning tokenizer.
  std::uint64_t* pair_cache() { return pairs_.data(); }

  static std::uint64_t hash(std::string_view word);

 private:
  struct Entry {
    std::uint64_t hash;  // 0 = empty slot
    std::uint32_t key_offset;
    std::uint32_t ids_offset;
    std::uint16_t key_length;
    std::uint16_t ids_count;
  };
  static constexpr std::size_t kSlots = std::size_t{1} << 16;
  static constexpr std::size_t kMaxEntries = kSlots / 2;
  static constexpr std::size_t kMaxKeyBytes = std::size_t{4} << 20;

  std::uint64_t owner_ = 0;
  std::vector<Entry> slots_;
  std::vector<char> keys_;
  std::vector<std::int32_t> ids_;
  std::size_t entries_ = 0;
  std::vector<std::uint64_t> pairs_ =
      std::vector<std::uint64_t>(BpeModel::kPairCacheSize, ~std::uint64_t{0});
};

}  // namespace ls::tok
