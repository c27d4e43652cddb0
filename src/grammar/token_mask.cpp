// The vocabulary tries and the walk that turns a grammar state into a token mask (token_mask.h).
// A trie is built from tokens sorted by their bytes: a node's children are consecutive, so the
// walk is an explicit stack over arrays, no pointers.
#include "grammar/token_mask.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace ls::grammar {

namespace {

void set_bit(std::vector<std::uint64_t>& bits, std::int32_t id) {
  const auto u = static_cast<std::uint32_t>(id);
  bits[u / 64] |= std::uint64_t{1} << (u % 64);
}

}  // namespace

void Vocabulary::Trie::build(const std::vector<std::string>& bytes,
                             const std::vector<std::int32_t>& ids) {
  // Sorted strings inserted one by one create their nodes in preorder: each new string shares
  // a prefix with the one before and adds nodes below it.
  byte.push_back(0);
  depth.push_back(0);
  token.push_back(-1);
  std::vector<std::uint32_t> path{0};  // path[d]: the node of the previous string's prefix d
  const std::string* prev = nullptr;
  for (std::int32_t id : ids) {
    const std::string& b = bytes[static_cast<std::size_t>(id)];
    if (b.size() > 0xFFFF) fail("grammar vocabulary: token {} is {} bytes long", id, b.size());
    std::size_t common = 0;
    if (prev != nullptr)
      while (common < prev->size() && common < b.size() && (*prev)[common] == b[common]) ++common;
    path.resize(common + 1);
    for (std::size_t d = common; d < b.size(); ++d) {
      path.push_back(static_cast<std::uint32_t>(byte.size()));
      byte.push_back(static_cast<std::uint8_t>(b[d]));
      depth.push_back(static_cast<std::uint16_t>(d + 1));
      max_depth = std::max<std::size_t>(max_depth, d + 1);
      token.push_back(-1);
    }
    const std::uint32_t at = path[b.size()];
    if (token[at] < 0)
      token[at] = id;
    else
      more_tokens.insert(more_tokens.end(), {static_cast<std::int32_t>(at), id});
    prev = &b;
  }
  // Subtree ends: a node's subtree stops at the next node no deeper than it.
  const std::size_t n = byte.size();
  end.assign(n, static_cast<std::uint32_t>(n));
  std::vector<std::uint32_t> open;
  for (std::size_t i = 0; i < n; ++i) {
    while (!open.empty() && depth[open.back()] >= depth[i]) {
      end[open.back()] = static_cast<std::uint32_t>(i);
      open.pop_back();
    }
    open.push_back(static_cast<std::uint32_t>(i));
  }
}

void Vocabulary::Trie::walk(StateSpace& space, std::uint32_t state,
                            std::vector<std::uint64_t>& bits) const {
  if (state == StateSpace::kDead) return;
  std::vector<std::uint32_t> at_depth(max_depth + 1u);
  at_depth[0] = state;
  const std::size_t n = byte.size();
  bool any = false;
  for (std::size_t i = 1; i < n;) {
    const std::uint32_t s = space.next(at_depth[depth[i] - 1], byte[i]);
    if (s == StateSpace::kDead) {
      i = end[i];
      continue;
    }
    at_depth[depth[i]] = s;
    if (token[i] >= 0) {
      set_bit(bits, token[i]);
      any = true;
    }
    ++i;
  }
  // Tokens with the bytes of another (rare): allowed with it.
  if (any)
    for (std::size_t k = 0; k < more_tokens.size(); k += 2) {
      const auto node = static_cast<std::size_t>(more_tokens[k]);
      const auto first = static_cast<std::uint32_t>(token[node]);
      if (bits[first / 64] >> (first % 64) & 1) set_bit(bits, more_tokens[k + 1]);
    }
}

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, const std::vector<bool>& special,
                       std::size_t short_limit)
    : bytes_(std::move(token_bytes)), short_limit_(short_limit) {
  if (special.size() != bytes_.size())
    fail("grammar vocabulary: {} special flags for {} tokens", special.size(), bytes_.size());
  std::vector<std::int32_t> order;
  short_bits_.assign((bytes_.size() + 63) / 64, 0);
  for (std::size_t i = 0; i < bytes_.size(); ++i) {
    if (special[i] || bytes_[i].empty()) continue;
    order.push_back(static_cast<std::int32_t>(i));
    if (bytes_[i].size() <= short_limit_) set_bit(short_bits_, static_cast<std::int32_t>(i));
  }
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b);
  });
  all_.build(bytes_, order);
  std::vector<std::int32_t> sorted_long;
  for (std::int32_t id : order)
    if (bytes_[static_cast<std::size_t>(id)].size() > short_limit_) sorted_long.push_back(id);
  long_.build(bytes_, sorted_long);
}

void Vocabulary::allowed(StateSpace& space, std::uint32_t state,
                         std::vector<std::uint64_t>& bits) const {
  bits.assign((bytes_.size() + 63) / 64, 0);
  all_.walk(space, state, bits);
}

void Vocabulary::add_allowed_long(StateSpace& space, std::uint32_t state,
                                  std::vector<std::uint64_t>& bits) const {
  long_.walk(space, state, bits);
}

}  // namespace ls::grammar
