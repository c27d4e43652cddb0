#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <queue>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace ls::tok {
namespace {

// Words up to this many bytes use the array scan; longer ones the heap.
constexpr std::size_t kScanLimit = 96;

}  // namespace

void BpeModel::set_byte_ids(const std::int32_t (&byte_ids)[256]) {
  std::memcpy(byte_ids_, byte_ids, sizeof(byte_ids_));
}

void BpeModel::rehash(std::size_t capacity) {
  std::vector<std::uint64_t> old = std::move(slots_);
  std::size_t size = 16;
  int bits = 4;
  while (size < capacity + capacity / 2) {
    size <<= 1;
    ++bits;
  }
  slots_.assign(size, kEmpty);
  mask_ = size - 1;
  shift_ = 64 - bits;
  for (const std::uint64_t s : old) {
    if (s == kEmpty) continue;
    std::size_t slot = ((s >> 24) * 0x9E3779B97F4A7C15ULL) >> shift_;
    while (slots_[slot] != kEmpty) slot = (slot + 1) & mask_;
    slots_[slot] = s;
  }
}

void BpeModel::reserve_merges(std::size_t count) {
  rehash(count);
  rank_to_id_.reserve(count);
}

void BpeModel::add_merge(std::int32_t left, std::int32_t right, std::int32_t merged,
                         std::uint32_t rank) {
  if ((count_ + 1) * 4 > slots_.size() * 3) rehash(std::max<std::size_t>(count_ + 1, 1024) * 2);
  const std::uint64_t key = (std::uint64_t(std::uint32_t(left)) << 20) | std::uint32_t(right);
  const std::uint64_t value = (key << 24) | rank;
  if (rank_to_id_.size() <= rank) rank_to_id_.resize(rank + 1, -1);
  const std::uint64_t f = (key * 0xD6E8FEB86659FD93ULL) >> (64 - kFilterBits);
  filter_[f >> 6] |= std::uint64_t{1} << (f & 63);
  rank_to_id_[rank] = merged;
  std::size_t slot = (key * 0x9E3779B97F4A7C15ULL) >> shift_;
  while (true) {
    std::uint64_t& s = slots_[slot];
    if (s != kEmpty && (s >> 24) == key) {
      s = value;
      return;
    }
    if (s == kEmpty) {
      s = value;
      ++count_;
      return;
    }
    slot = (slot + 1) & mask_;
  }
}

void BpeModel::finalize() {
  byte_pair_rank_.resize(65536);
  for (int a = 0; a < 256; ++a) {
    for (int b = 0; b < 256; ++b)
      byte_pair_rank_[(a << 8) | b] = lookup(byte_ids_[a], byte_ids_[b]);
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<std::int32_t>& out,
                           std::uint64_t* pair_cache) const {
  if (word.size() == 1) {
    out.push_back(byte_ids_[static_cast<std::uint8_t>(word[0])]);
  } else if (word.size() <= kScanLimit) {
    encode_word_scan(word, out, pair_cache);
  } else {
    encode_word_heap(word, out, pair_cache);
  }
}

namespace {

// The scan keeps one signed key per pair: (rank << 8) | position, so that the minimum key is the
// lowest rank and, among equal ranks, the leftmost pair; kNone marks no merge / a dead position.
constexpr std::int32_t kNone = 0x7FFFFFFF;
constexpr std::size_t kScanMax = 255;  // positions must fit in 8 bits

// Minimum of r[0, n); n is a multiple of 4 (callers pad with kNone).
inline std::int32_t min_key(const std::int32_t* r, std::size_t n) {
#if defined(__SSE2__)
  __m128i best = _mm_set1_epi32(kNone);
  for (std::size_t i = 0; i < n; i += 4) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(r + i));
    const __m128i lower = _mm_cmpgt_epi32(best, v);
    best = _mm_or_si128(_mm_and_si128(lower, v), _mm_andnot_si128(lower, best));
  }
  alignas(16) std::int32_t lanes[4];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), best);
  return std::min(std::min(lanes[0], lanes[1]), std::min(lanes[2], lanes[3]));
#else
  std::int32_t m = kNone;
  for (std::size_t i = 0; i < n; ++i) m = std::min(m, r[i]);
  return m;
#endif
}

}  // namespace

// Short words: the symbols stay at their byte positions (a merged-away position is dead and its
// key kNone), linked by next/prev; each step takes the minimum key with SIMD.
void BpeModel::encode_word_scan(std::string_view word, std::vector<std::int32_t>& out,
                                std::uint64_t* pair_cache) const {
  const std::size_t n = word.size();
  if (n == 0) return;
  if (n == 1) {
    out.push_back(byte_ids_[static_cast<std::uint8_t>(word[0])]);
    return;
  }
  if (n > kScanMax) {
    encode_word_heap(word, out, pair_cache);
    return;
  }
  const std::size_t padded = (n + 3) & ~std::size_t{3};
  std::int32_t sym[kScanMax + 1];
  alignas(16) std::int32_t key[kScanMax + 1];  // key[i]: pair (i, next[i])
  std::int16_t next[kScanMax + 1], prev[kScanMax + 1];
  const auto* w = reinterpret_cast<const std::uint8_t*>(word.data());
  for (std::size_t i = 0; i < n; ++i) {
    sym[i] = byte_ids_[w[i]];
    next[i] = static_cast<std::int16_t>(i + 1);
    prev[i] = static_cast<std::int16_t>(static_cast<int>(i) - 1);
  }
  next[n - 1] = -1;
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const std::uint32_t r = byte_pair_rank_[(w[i] << 8) | w[i + 1]];
    key[i] = r == kNoRank ? kNone : static_cast<std::int32_t>((r << 8) | i);
  }
  for (std::size_t i = n - 1; i < padded; ++i) key[i] = kNone;
  auto pair_key = [&](std::int32_t a, std::int32_t b, std::int32_t pos) {
    const std::uint32_t r = rank_of(a, b, pair_cache);
    return r == kNoRank ? kNone
                        : static_cast<std::int32_t>((r << 8) | static_cast<std::uint32_t>(pos));
  };
  while (true) {
    const std::int32_t best = min_key(key, padded);
    if (best == kNone) break;
    const std::int32_t at = best & 0xFF;
    const std::int16_t dead = next[at];
    sym[at] = rank_to_id_[static_cast<std::uint32_t>(best) >> 8];
    key[dead] = kNone;
    const std::int16_t after = next[dead];
    next[at] = after;
    if (after >= 0) prev[after] = static_cast<std::int16_t>(at);
    const std::int16_t before = prev[at];
    if (before >= 0) key[before] = pair_key(sym[before], sym[at], before);
    key[at] = after >= 0 ? pair_key(sym[at], sym[after], at) : kNone;
  }
  for (std::int32_t i = 0; i >= 0; i = next[i]) out.push_back(sym[i]);
}

void BpeModel::encode_word_heap(std::string_view word, std::vector<std::int32_t>& out,
                                std::uint64_t* pair_cache) const {
  const std::size_t n = word.size();
  if (n == 0) return;
  struct Node {
    std::int32_t sym;
    std::int32_t prev;  // -1: none
    std::int32_t next;  // -1: none
    bool alive;
  };
  const auto* w = reinterpret_cast<const std::uint8_t*>(word.data());
  std::vector<Node> nodes(n);
  for (std::size_t i = 0; i < n; ++i) {
    nodes[i] = Node{byte_ids_[w[i]], static_cast<std::int32_t>(i) - 1,
                    i + 1 < n ? static_cast<std::int32_t>(i + 1) : -1, true};
  }
  // Heap entries: (rank << 32) | position of the pair's left symbol; min first, so the lowest
  // rank wins and, among equal ranks, the leftmost pair.
  std::vector<std::uint64_t> storage;
  storage.reserve(n);
  std::priority_queue<std::uint64_t, std::vector<std::uint64_t>, std::greater<>> heap(
      std::greater<>{}, std::move(storage));
  auto push_pair = [&](std::int32_t pos) {
    const std::int32_t next = nodes[pos].next;
    if (next < 0) return;
    const std::uint32_t r = rank_of(nodes[pos].sym, nodes[next].sym, pair_cache);
    if (r == kNoRank) return;
    heap.push((std::uint64_t(r) << 32) | std::uint32_t(pos));
  };
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const std::uint32_t r = byte_pair_rank_[(w[i] << 8) | w[i + 1]];
    if (r != kNoRank) heap.push((std::uint64_t(r) << 32) | std::uint32_t(i));
  }
  while (!heap.empty()) {
    const std::uint64_t top = heap.top();
    heap.pop();
    const auto pos = static_cast<std::int32_t>(top & 0xFFFFFFFFu);
    const auto r = static_cast<std::uint32_t>(top >> 32);
    Node& left = nodes[pos];
    if (!left.alive || left.next < 0) continue;
    Node& right = nodes[left.next];
    if (rank_of(left.sym, right.sym, pair_cache) != r) continue;  // stale entry
    left.sym = rank_to_id_[r];
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) nodes[right.next].prev = pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(pos);
  }
  for (std::int32_t i = 0; i >= 0; i = nodes[i].next) out.push_back(nodes[i].sym);
}

// ---------------------------------------------------------------------------------------------

WordCache& WordCache::for_thread(std::uint64_t owner) {
  // A few caches per thread, so that alternating between two tokenizers (compare two models)
  // does not empty a cache on every call; the least recently used one is recycled.
  constexpr int kPerThread = 3;
  thread_local WordCache caches[kPerThread];
  thread_local std::uint64_t last_used[kPerThread] = {};
  thread_local std::uint64_t clock = 0;
  int victim = 0;
  for (int i = 0; i < kPerThread; ++i) {
    if (caches[i].owner_ == owner) {
      last_used[i] = ++clock;
      return caches[i];
    }
    if (last_used[i] < last_used[victim]) victim = i;
  }
  WordCache& cache = caches[victim];
  cache.clear();
  std::fill(cache.pairs_.begin(), cache.pairs_.end(), ~std::uint64_t{0});
  cache.owner_ = owner;
  last_used[victim] = ++clock;
  return cache;
}

void WordCache::clear() {
  slots_.assign(kSlots, Entry{0, 0, 0, 0, 0});
  keys_.clear();
  ids_.clear();
  entries_ = 0;
}

std::uint64_t WordCache::hash(std::string_view word) {
  const auto* p = reinterpret_cast<const unsigned char*>(word.data());
  const std::size_t n = word.size();
  std::uint64_t h = 0x243F6A8885A308D3ULL ^ (n * 0x9E3779B97F4A7C15ULL);
  std::uint64_t w;
  if (n >= 8) {
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
      h ^= h >> 29;
    }
    std::memcpy(&w, p + n - 8, 8);  // the last 8 bytes (overlapping what was hashed)
  } else if (n >= 4) {
    std::uint32_t a, b;
    std::memcpy(&a, p, 4);
    std::memcpy(&b, p + n - 4, 4);
    w = (std::uint64_t(a) << 32) | b;
  } else {
    w = n == 0 ? 0 : (std::uint64_t(p[0]) << 16) | (std::uint64_t(p[n / 2]) << 8) | p[n - 1];
  }
  h = (h ^ w) * 0x94D049BB133111EBULL;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 32;
  return h | 1;  // 0 marks an empty slot
}

bool WordCache::find(std::string_view word, std::uint64_t hash, const std::int32_t** ids,
                     std::size_t* count) const {
  if (slots_.empty()) return false;
  std::size_t slot = hash & (kSlots - 1);
  while (true) {
    const Entry& e = slots_[slot];
    if (e.hash == 0) return false;
    if (e.hash == hash && e.key_length == word.size() &&
        std::memcmp(keys_.data() + e.key_offset, word.data(), word.size()) == 0) {
      *ids = ids_.data() + e.ids_offset;
      *count = e.ids_count;
      return true;
    }
    slot = (slot + 1) & (kSlots - 1);
  }
}

void WordCache::insert(std::string_view word, std::uint64_t hash, const std::int32_t* ids,
                       std::size_t count) {
  if (word.size() > kMaxWordBytes) return;
  if (slots_.empty() || entries_ + 1 > kMaxEntries || keys_.size() + word.size() > kMaxKeyBytes) {
    clear();
  }
  std::size_t slot = hash & (kSlots - 1);
  while (slots_[slot].hash != 0) slot = (slot + 1) & (kSlots - 1);
  Entry e;
  e.hash = hash;
  e.key_offset = static_cast<std::uint32_t>(keys_.size());
  e.key_length = static_cast<std::uint16_t>(word.size());
  e.ids_offset = static_cast<std::uint32_t>(ids_.size());
  e.ids_count = static_cast<std::uint16_t>(count);
  keys_.insert(keys_.end(), word.begin(), word.end());
  ids_.insert(ids_.end(), ids, ids + count);
  slots_[slot] = e;
  ++entries_;
}

}  // namespace ls::tok
