// Which tokens of a vocabulary a grammar state allows: every token whose bytes the grammar can
// take from that state, found by walking a trie of the vocabulary's byte strings with the state
// (a subtree is skipped as soon as its prefix is refused). Special tokens (<|im_end|>, ...) are
// never grammar text; the caller decides about end-of-sequence tokens with can_end().
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
  struct Node {
    std::uint32_t first_edge = 0, edges = 0;    // children: edge_byte_/edge_child_[first, +edges)
    std::uint32_t first_token = 0, tokens = 0;  // tokens ending here: token_ids_[first, +tokens)
  };
  std::vector<std::string> bytes_;
  std::vector<Node> nodes_;  // node 0: the empty prefix
  std::vector<std::uint8_t> edge_byte_;
  std::vector<std::uint32_t> edge_child_;
  std::vector<std::int32_t> token_ids_;
};

}  // namespace ls::grammar
