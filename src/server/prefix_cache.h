// Prompt prefixes kept in the engine for later requests (automatic prefix caching, as vLLM
// does): chat requests share the template's system prompt and often a whole conversation so
// far. An entry is a sequence of its own (negative ids) holding the KV of a prompt prefix; a new
// prompt forks the entry with the longest common prefix and cuts the copy to what they share,
// so only the rest is prefilled. Forks share KV blocks, so an entry costs memory only for
// blocks no running sequence holds. Entries are evicted least recently used when the cached
// positions exceed the budget. Reuse changes no bit: every KV row is computed the same way
// whatever the batch it was computed in.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <vector>

#include "engine/engine.h"

namespace ls::server {

class PrefixCache {
 public:
  // `budget`: cached positions kept in all (0 turns the cache off).
  PrefixCache(engine::Engine& engine, std::size_t budget) : engine_(engine), budget_(budget) {}
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  // A cached prefix of `prompt`: the entry's sequence and how many tokens it shares (at most
  // `limit`); {0, 0} when none shares any.
  struct Match {
    int seq = 0;
    std::size_t tokens = 0;
  };
  Match find(std::span<const std::int32_t> prompt, std::size_t limit);
  // Keeps `tokens` (held by sequence `seq` at its first positions) for later prompts.
  void remember(std::span<const std::int32_t> tokens, int seq);

  std::size_t entries() const { return entries_.size(); }
  std::size_t positions() const { return positions_; }
  // KV blocks in the entries' tables (a block two entries share counts twice): with no request
  // running, the pool holds at most this many.
  std::size_t blocks() const;

 private:
  struct Entry {
    int seq;
    std::vector<std::int32_t> tokens;
  };
  void evict_to(std::size_t budget);

  engine::Engine& engine_;
  std::size_t budget_;
  std::list<Entry> entries_;  // most recently used first
  std::size_t positions_ = 0;
  int next_seq_ = -1;
};

// The number of leading tokens `a` and `b` share.
std::size_t common_prefix(std::span<const std::int32_t> a, std::span<const std::int32_t> b);

}  // namespace ls::server
