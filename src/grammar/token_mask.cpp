// The vocabulary trie and the walk that turns a grammar state into a token mask (token_mask.h).
// The trie is built once per model from the tokens sorted by their bytes: a node's children are
// consecutive, so the walk is an explicit stack over arrays, no pointers.
#include "grammar/token_mask.h"

#include <algorithm>
#include <numeric>

#include "core/error.h"

namespace ls::grammar {

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, const std::vector<bool>& special)
    : bytes_(std::move(token_bytes)) {
  if (special.size() != bytes_.size())
    fail("grammar vocabulary: {} special flags for {} tokens", special.size(), bytes_.size());
  std::vector<std::int32_t> order;
  for (std::size_t i = 0; i < bytes_.size(); ++i)
    if (!special[i] && !bytes_[i].empty()) order.push_back(static_cast<std::int32_t>(i));
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    return bytes_[a] < bytes_[b] || (bytes_[a] == bytes_[b] && a < b);
  });
  // Sorted strings inserted one by one create their nodes in preorder: each new string shares
  // a prefix with the one before and adds nodes below it.
  byte_.push_back(0);
  depth_.push_back(0);
  token_.push_back(-1);
  std::vector<std::uint32_t> path{0};  // path[d]: the node of the previous string's prefix d
  const std::string* prev = nullptr;
  for (std::int32_t id : order) {
    const std::string& b = bytes_[id];
    if (b.size() > 0xFFFF) fail("grammar vocabulary: token {} is {} bytes long", id, b.size());
    std::size_t common = 0;
    if (prev != nullptr)
      while (common < prev->size() && common < b.size() && (*prev)[common] == b[common]) ++common;
    path.resize(common + 1);
    for (std::size_t d = common; d < b.size(); ++d) {
      path.push_back(static_cast<std::uint32_t>(byte_.size()));
      byte_.push_back(static_cast<std::uint8_t>(b[d]));
      depth_.push_back(static_cast<std::uint16_t>(d + 1));
      max_depth_ = std::max<std::size_t>(max_depth_, d + 1);
      token_.push_back(-1);
    }
    const std::uint32_t at = path[b.size()];
    if (token_[at] < 0)
      token_[at] = id;
    else
      more_tokens_.insert(more_tokens_.end(), {static_cast<std::int32_t>(at), id});
    prev = &b;
  }
  // Subtree ends: a node's subtree stops at the next node no deeper than it.
  const std::size_t n = byte_.size();
  end_.assign(n, static_cast<std::uint32_t>(n));
  std::vector<std::uint32_t> open;
  for (std::size_t i = 0; i < n; ++i) {
    while (!open.empty() && depth_[open.back()] >= depth_[i]) {
      end_[open.back()] = static_cast<std::uint32_t>(i);
      open.pop_back();
    }
    open.push_back(static_cast<std::uint32_t>(i));
  }
}

void Vocabulary::allowed(StateSpace& space, std::uint32_t state,
                         std::vector<std::uint64_t>& bits) const {
  bits.assign((bytes_.size() + 63) / 64, 0);
  if (state == StateSpace::kDead) return;
  std::vector<std::uint32_t> at_depth(max_depth_ + 1u);
  at_depth[0] = state;
  const std::size_t n = byte_.size();
  const auto mark = [&](std::int32_t id) {
    const auto u = static_cast<std::uint32_t>(id);
    bits[u / 64] |= std::uint64_t{1} << (u % 64);
  };
  bool any = false;
  for (std::size_t i = 1; i < n;) {
    const std::uint32_t s = space.next(at_depth[depth_[i] - 1], byte_[i]);
    if (s == StateSpace::kDead) {
      i = end_[i];
      continue;
    }
    at_depth[depth_[i]] = s;
    if (token_[i] >= 0) {
      mark(token_[i]);
      any = true;
    }
    ++i;
  }
  // Tokens with the bytes of another (rare): allowed with it.
  if (any)
    for (std::size_t k = 0; k < more_tokens_.size(); k += 2) {
      const auto node = static_cast<std::size_t>(more_tokens_[k]);
      const auto first = static_cast<std::uint32_t>(token_[node]);
      if (bits[first / 64] >> (first % 64) & 1) mark(more_tokens_[k + 1]);
    }
}

}  // namespace ls::grammar
