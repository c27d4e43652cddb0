// Which tokens of a vocabulary a grammar state allows: every token whose bytes the grammar can
// take from that state, found by walking a trie of the vocabulary's byte strings with the state
// (a subtree is skipped as soon as its prefix is refused). The trie is stored in preorder, so the
// walk is one forward scan that jumps over refused subtrees, one table lookup per node.
// Special tokens (<|im_end|>, ...) are never grammar text; the caller decides about
// end-of-sequence tokens with can_end().
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grammar/matcher.h"

namespace ls::grammar {

class Vocabulary {
 public:
  // token_bytes[id]: the bytes the token stands for; special[id]: never allowed by a grammar.
  Vocabulary(std::vector<std::string> token_bytes, const std::vector<bool>& special);

  std::int32_t size() const { return static_cast<std::int32_t>(bytes_.size()); }
  const std::string& bytes(std::int32_t id) const { return bytes_[static_cast<std::size_t>(id)]; }

  // bits (size() bits, 64 per word, resized here): bit id set when the token may come next.
  void allowed(StateSpace& space, std::uint32_t state, std::vector<std::uint64_t>& bits) const;

 private:
  // Nodes in preorder; node 0 is the empty prefix. Node i's subtree is [i, end_[i]).
  std::vector<std::string> bytes_;
  std::vector<std::uint8_t> byte_;    // the byte on the edge into node i
  std::vector<std::uint16_t> depth_;  // its prefix length
  std::vector<std::uint32_t> end_;
  std::vector<std::int32_t> token_;        // the token whose bytes end here (-1: none)
  std::vector<std::int32_t> more_tokens_;  // pairs (node, id) of further tokens with equal bytes
  std::size_t max_depth_ = 0;
};

}  // namespace ls::grammar
