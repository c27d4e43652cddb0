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
  // The state after one more byte (kDead when the byte cannot follow).
  std::uint32_t next(std::uint32_t state, std::uint8_t byte);
  // Whether the root can be complete here (no partial character pending).
  bool can_end(std::uint32_t state) const;
  // Whether any byte at all may follow.
  bool can_continue(std::uint32_t state) const;
  const Grammar& grammar() const { return *grammar_; }
  std::size_t state_count() const { return states_.size(); }

 private:
  struct Node {  // a stack: the place on top, then the rest (kNone at the bottom)
    std::uint32_t place, rest;
  };
  struct State {
    std::vector<std::uint32_t> stacks;  // sorted, unique; kComplete: the root is complete
    std::uint32_t partial = 0;          // a pending character's bits so far
    std::uint8_t left = 0;              // its continuation bytes still to come (0: none pending)
    std::uint8_t length = 0;            // its whole length in bytes
    bool operator==(const State&) const = default;
  };
  static constexpr std::uint32_t kNone = 0xFFFFFFFFu;      // below the bottom of a stack
  static constexpr std::uint32_t kComplete = 0xFFFFFFFEu;  // the empty stack
  // The stack `place` over `rest`, with places at the end of their sequence popped first.
  std::uint32_t push(std::uint32_t place, std::uint32_t rest);
  // The stacks `stack` stands for once its top is a character set (or kComplete).
  const std::vector<std::uint32_t>& expand(std::uint32_t stack);
  void expand_into(std::uint32_t stack, std::vector<std::uint32_t>& out, int depth);
  std::uint32_t intern(State s);
  std::uint32_t advance_char(std::uint32_t state, std::uint32_t cp);
  // Whether some stack of `s` could take a character in [lo, hi].
  bool any_takes(const State& s, std::uint32_t lo, std::uint32_t hi) const;

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
  std::unordered_map<std::uint64_t, std::uint32_t> transitions_;
  std::uint32_t start_ = kDead;
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
