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
  // Build level by level is awkward with sorted strings; build a pointer trie first, then flatten.
  struct Build {
    std::vector<std::pair<std::uint8_t, std::uint32_t>> children;  // sorted by byte (input order)
    std::vector<std::int32_t> tokens;
  };
  std::vector<Build> tmp(1);
  for (std::int32_t id : order) {
    std::uint32_t at = 0;
    for (char c : bytes_[id]) {
      const auto b = static_cast<std::uint8_t>(c);
      auto& ch = tmp[at].children;
      if (!ch.empty() && ch.back().first == b) {
        at = ch.back().second;
      } else {
        const auto child = static_cast<std::uint32_t>(tmp.size());
        tmp[at].children.push_back({b, child});  // (tmp[at] before the push_back below)
        tmp.emplace_back();
        at = child;
      }
    }
    tmp[at].tokens.push_back(id);
  }
  nodes_.resize(tmp.size());
  for (std::size_t n = 0; n < tmp.size(); ++n) {
    nodes_[n].first_edge = static_cast<std::uint32_t>(edge_byte_.size());
    nodes_[n].edges = static_cast<std::uint32_t>(tmp[n].children.size());
    for (const auto& [b, child] : tmp[n].children) {
      edge_byte_.push_back(b);
      edge_child_.push_back(child);
    }
    nodes_[n].first_token = static_cast<std::uint32_t>(token_ids_.size());
    nodes_[n].tokens = static_cast<std::uint32_t>(tmp[n].tokens.size());
    token_ids_.insert(token_ids_.end(), tmp[n].tokens.begin(), tmp[n].tokens.end());
  }
}

void Vocabulary::allowed(StateSpace& space, std::uint32_t state,
                         std::vector<std::uint64_t>& bits) const {
  bits.assign((bytes_.size() + 63) / 64, 0);
  if (state == StateSpace::kDead) return;
  struct Item {
    std::uint32_t node, state;
  };
  std::vector<Item> todo{{0, state}};
  while (!todo.empty()) {
    const Item it = todo.back();
    todo.pop_back();
    const Node& n = nodes_[it.node];
    for (std::uint32_t e = n.first_edge; e < n.first_edge + n.edges; ++e) {
      const std::uint32_t s = space.next(it.state, edge_byte_[e]);
      if (s == StateSpace::kDead) continue;
      const Node& child = nodes_[edge_child_[e]];
      for (std::uint32_t t = child.first_token; t < child.first_token + child.tokens; ++t) {
        const auto id = static_cast<std::uint32_t>(token_ids_[t]);
        bits[id / 64] |= std::uint64_t{1} << (id % 64);
      }
      if (child.edges != 0) todo.push_back({edge_child_[e], s});
    }
  }
}

}  // namespace ls::grammar
