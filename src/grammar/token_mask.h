// Which tokens of a vocabulary a grammar state allows: every token whose bytes the grammar can
// take from that state, found by walking a trie of the vocabulary's byte strings with the state
// (a subtree is skipped as soon as its prefix is refused). The trie is stored in preorder, so the
// walk is one forward scan that jumps over refused subtrees, one table lookup per node.
// A second trie holds only the long tokens: a state with many repetitions left takes the short
// tokens exactly as a state with fewer does (StateSpace::clamped), so its mask is a cached one
// for the short tokens plus a walk of the few long ones.
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
  // Tokens of at most `short_limit` bytes are the short ones.
  Vocabulary(std::vector<std::string> token_bytes, const std::vector<bool>& special,
             std::size_t short_limit = 16);

  std::int32_t size() const { return static_cast<std::int32_t>(bytes_.size()); }
  const std::string& bytes(std::int32_t id) const { return bytes_[static_cast<std::size_t>(id)]; }

  // bits (size() bits, 64 per word, resized here): bit id set when the token may come next.
  void allowed(StateSpace& space, std::uint32_t state, std::vector<std::uint64_t>& bits) const;
  // The tokens of at most short_limit() bytes (a bit set like allowed()'s).
  std::size_t short_limit() const { return short_limit_; }
  const std::vector<std::uint64_t>& short_tokens() const { return short_bits_; }
  // Sets in `bits` (already sized) the tokens longer than short_limit() that `state` allows.
  void add_allowed_long(StateSpace& space, std::uint32_t state,
                        std::vector<std::uint64_t>& bits) const;

 private:
  // Nodes in preorder; node 0 is the empty prefix. Node i's subtree is [i, end[i]).
  struct Trie {
    std::vector<std::uint8_t> byte;    // the byte on the edge into node i
    std::vector<std::uint16_t> depth;  // its prefix length
    std::vector<std::uint32_t> end;
    std::vector<std::int32_t> token;        // the token whose bytes end here (-1: none)
    std::vector<std::int32_t> more_tokens;  // pairs (node, id) of further tokens, equal bytes
    std::size_t max_depth = 0;

    // `ids` sorted by their bytes (then id).
    void build(const std::vector<std::string>& bytes, const std::vector<std::int32_t>& ids);
    void walk(StateSpace& space, std::uint32_t state, std::vector<std::uint64_t>& bits) const;
  };

  std::vector<std::string> bytes_;
  Trie all_, long_;
  std::size_t short_limit_;
  std::vector<std::uint64_t> short_bits_;
};

}  // namespace ls::grammar
