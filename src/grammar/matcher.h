// Where a grammar's parse can be after some bytes, and how it moves on. A parse position is a
// stack of places in rule sequences (the innermost on top), always expanded until its top is a
// character set (or it is empty: the root is complete). Stacks are interned as shared-tail lists
// and sets of them as states, so a state is one integer and a byte moves it by one table lookup
// once seen: that is what makes a token mask over 151,936 tokens affordable (token_mask.h).
// Bytes are decoded as UTF-8; a character split over tokens is carried in the state and checked
// against the sets as far as its first bytes allow.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/grammar.h"

namespace ls::grammar {

// The interned stacks and states of one grammar, grown as parses reach them. Not thread-safe:
// each sequence's Matcher owns one.
class StateSpace {
 public:
  explicit StateSpace(std::shared_ptr<const Grammar> grammar);

  static constexpr std::uint32_t kDead = 0;  // the empty set: no parse survives
  std::uint32_t start() const { return start_; }
  // The state after one more byte (kDead when the byte cannot follow). Inline: a token mask
  // asks this once per trie node, some 333,000 times for Qwen's vocabulary.
  std::uint32_t next(std::uint32_t state, std::uint8_t byte) {
    const std::uint32_t known =
        state < kPartial ? transitions_[std::size_t{state} << 8 | byte]
        : (byte & 0xC0) != 0x80
            ? kDead
            : partial_next_[std::size_t{state - kPartial} << 6 | (byte & 0x3Fu)];
    return known != kUnknown ? known : compute_next(state, byte);
  }
  // Whether the root can be complete here (no partial character pending).
  bool can_end(std::uint32_t state) const;
  // Whether any byte at all may follow.
  bool can_continue(std::uint32_t state) const;
  const Grammar& grammar() const { return *grammar_; }
  std::size_t state_count() const { return states_.size(); }
  // The state with every bounded repetition (the rules of an x{m,n}, found by their shape) that
  // has more than `most` (>= 2) rounds left cut to `most` left: it takes every byte string of
  // fewer than `most` code points exactly as `state` does (a round takes at least one code point
  // or nothing), so a mask over short tokens can be shared by the positions of a long bounded
  // string. `state` itself when nothing is cut. (repetition_clamp.cpp)
  std::uint32_t clamped(std::uint32_t state, int most);

 private:
  struct Node {  // a stack: the place on top, then the rest (kNone at the bottom)
    std::uint32_t place, rest;
  };
  // A state with no character pending: its stacks, sorted and unique (kComplete: the root is
  // complete). Ids below kPartial.
  struct State {
    std::vector<std::uint32_t> stacks;
  };
  // A state inside a multi-byte character: the state before it and the character's bits so far.
  // Ids kPartial + index. Kept apart (a sparse table) because there are many: a 3-byte
  // character's first two bytes alone take up to 1,024 values after every state.
  // Where every stack of the base takes all characters above U+007F or none (a string's
  // body, any JSON value), the bits do not matter: `bits` then holds the range of the next
  // byte that keeps the UTF-8 valid (lo << 8 | hi), so a base has a handful of partial states.
  struct Partial {
    std::uint32_t base;   // a full state
    std::uint32_t bits;   // the character's bits so far (uniform: the next byte's range)
    std::uint8_t left;    // continuation bytes still to come (>= 1)
    std::uint8_t length;  // the character's length in bytes
    bool uniform;
  };
  static constexpr std::uint32_t kPartial = 0x80000000u;
  static constexpr std::uint32_t kUnknown = 0xFFFFFFFFu;  // a transition not computed yet
  std::uint32_t compute_next(std::uint32_t state, std::uint8_t byte);
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;      // below the bottom of a stack
  static constexpr std::uint32_t kComplete = 0xFFFFFFFEu;  // the empty stack
  // The stack `place` over `rest`, with places at the end of their sequence popped first.
  std::uint32_t push(std::uint32_t place, std::uint32_t rest);
  // The stacks `stack` stands for once its top is a character set (or kComplete).
  const std::vector<std::uint32_t>& expand(std::uint32_t stack);
  void expand_into(std::uint32_t stack, std::vector<std::uint32_t>& out, int depth);
  std::uint32_t intern(State s);
  std::uint32_t advance_char(std::uint32_t state, std::uint32_t cp);
  // Whether some stack of full state `state` could take a character in [lo, hi].
  bool any_takes(std::uint32_t state, std::uint32_t lo, std::uint32_t hi) const;
  // The partial state of `p` (kDead when no character it may become is taken).
  std::uint32_t partial(const Partial& p);
  std::uint32_t next_in_character(std::uint32_t state, std::uint8_t byte);
  // Whether each stack of the full state takes all characters above U+007F or none (cached).
  bool uniform_above_ascii(std::uint32_t state);
  // clamped()'s parts: the repetition chains, and a stack or a place with its rounds cut.
  void find_repetitions();
  int rounds_left(int rule, std::vector<int>& visiting);
  std::uint32_t clamped_stack(std::uint32_t stack);
  std::uint32_t clamped_place(std::uint32_t place);

  std::shared_ptr<const Grammar> grammar_;
  std::vector<const Element*> element_;     // place -> its element (nullptr: end of a sequence)
  std::vector<std::uint32_t> first_place_;  // every alternative's first place, rule by rule
  std::vector<std::uint32_t> alt_begin_;    // rule r's: first_place_[alt_begin_[r] .. [r + 1])
  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, std::uint32_t> node_ids_;
  std::vector<std::vector<std::uint32_t>> expanded_;  // per node, once computed
  std::vector<bool> has_expanded_;
  std::vector<State> states_;
  std::unordered_multimap<std::size_t, std::uint32_t> state_ids_;  // hash -> state
  // 256 entries per state (kUnknown until asked): a byte costs one load once seen. 1 KiB per
  // state; a JSON schema's generation reaches hundreds to a few thousand states.
  std::vector<std::uint32_t> transitions_;
  // Per state (of up to 64 stacks): the result for each set of stacks that took a character.
  std::vector<std::vector<std::pair<std::uint64_t, std::uint32_t>>> by_taken_;
  std::vector<std::int8_t> uniform_;  // per state: -1 not known yet, 0, 1
  std::vector<Partial> partials_;
  std::unordered_map<std::uint64_t, std::uint32_t> partial_ids_;
  std::vector<std::uint32_t> partial_next_;  // 64 per partial state: continuation bytes only
  std::uint32_t start_ = kDead;
  // Bounded repetitions: per rule, the rounds it has left (0: not such a rule) and the rule of
  // its chain with one round fewer (-1: none); per place, its rule. Filled on first use.
  std::vector<int> left_, down_;
  std::vector<std::uint32_t> rule_of_place_;
  int clamp_most_ = 0;  // the `most` the memos below hold
  std::unordered_map<std::uint32_t, std::uint32_t> clamped_stacks_, clamped_states_;
};

// One parse moving over generated text: the state space plus the current state.
class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> grammar);
  // Consumes the bytes if the grammar allows them all (true); otherwise leaves the state as it
  // was and returns false.
  bool advance(std::string_view bytes);
  bool can_end() const { return space_.can_end(state_); }
  bool can_continue() const { return space_.can_continue(state_); }
  void reset() { state_ = space_.start(); }
  std::uint32_t state() const { return state_; }
  StateSpace& space() { return space_; }

 private:
  StateSpace space_;
  std::uint32_t state_;
};

}  // namespace ls::grammar
