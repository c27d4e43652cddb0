// Cached prompt prefixes (see prefix_cache.h).
#include "server/prefix_cache.h"

#include <algorithm>

namespace ls::server {

std::size_t common_prefix(std::span<const std::int32_t> a, std::span<const std::int32_t> b) {
  const std::size_t n = std::min(a.size(), b.size());
  std::size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

PrefixCache::~PrefixCache() {
  evict_to(0);
}

PrefixCache::Match PrefixCache::find(std::span<const std::int32_t> prompt, std::size_t limit) {
  auto best = entries_.end();
  std::size_t best_tokens = 0;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    const std::size_t n = std::min(common_prefix(it->tokens, prompt), limit);
    if (n > best_tokens) best = it, best_tokens = n;
  }
  if (best == entries_.end()) return {};
  entries_.splice(entries_.begin(), entries_, best);  // most recently used
  return {best->seq, best_tokens};
}

void PrefixCache::remember(std::span<const std::int32_t> tokens, int seq) {
  if (budget_ == 0 || tokens.empty() || tokens.size() > budget_) return;
  // Already covered: an entry holding these tokens (or more) as its prefix.
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (common_prefix(it->tokens, tokens) == tokens.size()) {
      entries_.splice(entries_.begin(), entries_, it);
      return;
    }
  }
  // An entry that is a prefix of these tokens is replaced by the longer one.
  std::erase_if(entries_, [&](const Entry& e) {
    if (common_prefix(e.tokens, tokens) != e.tokens.size()) return false;
    engine_.release(e.seq);
    positions_ -= e.tokens.size();
    return true;
  });
  evict_to(budget_ - tokens.size());
  const int id = next_seq_--;
  engine_.fork(seq, id);
  engine_.truncate(id, static_cast<std::int64_t>(tokens.size()));
  entries_.push_front({id, std::vector<std::int32_t>(tokens.begin(), tokens.end())});
  positions_ += tokens.size();
}

std::size_t PrefixCache::blocks() const {
  std::size_t n = 0;
  for (const auto& e : entries_) n += engine_.blocks(e.seq);
  return n;
}

void PrefixCache::evict_to(std::size_t budget) {
  while (positions_ > budget && !entries_.empty()) {
    engine_.release(entries_.back().seq);
    positions_ -= entries_.back().tokens.size();
    entries_.pop_back();
  }
}

}  // namespace ls::server
