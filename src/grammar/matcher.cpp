// The state space of a grammar's parses (matcher.h): interned stacks (a place over the rest, so
// stacks share their tails), their expansion until a character set is on top, and interned sets
// of them with any pending UTF-8 bytes. Tail positions are popped as soon as they are pushed, so
// right recursion (`chars ::= char chars | ""`) returns to the same stack after each character:
// a long string stays one state, which is what the token-mask cache keys on.
#include "grammar/matcher.h"

#include <algorithm>

#include "core/error.h"

namespace ls::grammar {
namespace {

// Expansion visits rules that can be entered before consuming a character; parse_gbnf() has
// ruled out cycles among them, so this only guards against a grammar built by hand.
constexpr int kMaxExpandDepth = 2000;

std::uint64_t key(std::uint32_t a, std::uint32_t b) {
  return std::uint64_t{a} << 32 | b;
}

std::size_t hash_stacks(const std::vector<std::uint32_t>& stacks) {
  std::size_t h = 1469598103934665603ull;
  for (std::uint32_t s : stacks) h = (h ^ s) * 1099511628211ull;
  return h;
}

}  // namespace

StateSpace::StateSpace(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  const Grammar& g = *grammar_;
  if (g.root < 0 || g.root >= static_cast<int>(g.rules.size()))
    fail("{}: the grammar has no root rule", g.origin);
  for (const Rule& r : g.rules) {
    alt_begin_.push_back(static_cast<std::uint32_t>(first_place_.size()));
    for (const Sequence& s : r.alternatives) {
      first_place_.push_back(static_cast<std::uint32_t>(element_.size()));
      for (const Element& e : s) element_.push_back(&e);
      element_.push_back(nullptr);
    }
  }
  alt_begin_.push_back(static_cast<std::uint32_t>(first_place_.size()));
  states_.push_back({});            // kDead
  transitions_.assign(256, kDead);  // (every byte leaves kDead dead)
  state_ids_.emplace(hash_stacks({}), kDead);
  // The start: every alternative of root, over nothing.
  State s;
  const auto root = static_cast<std::size_t>(g.root);
  for (std::uint32_t a = alt_begin_[root]; a < alt_begin_[root + 1]; ++a) {
    const std::uint32_t stack = push(first_place_[a], kNone);
    const auto& more = stack == kComplete ? std::vector<std::uint32_t>{kComplete} : expand(stack);
    s.stacks.insert(s.stacks.end(), more.begin(), more.end());
  }
  std::sort(s.stacks.begin(), s.stacks.end());
  s.stacks.erase(std::unique(s.stacks.begin(), s.stacks.end()), s.stacks.end());
  start_ = intern(std::move(s));
}

std::uint32_t StateSpace::push(std::uint32_t place, std::uint32_t rest) {
  while (element_[place] == nullptr) {  // the end of a sequence: continue with the rest
    if (rest == kNone) return kComplete;
    place = nodes_[rest].place;
    rest = nodes_[rest].rest;
  }
  const auto [it, added] =
      node_ids_.emplace(key(place, rest), static_cast<std::uint32_t>(nodes_.size()));
  if (added) {
    nodes_.push_back({place, rest});
    expanded_.emplace_back();
    has_expanded_.push_back(false);
  }
  return it->second;
}

const std::vector<std::uint32_t>& StateSpace::expand(std::uint32_t stack) {
  if (!has_expanded_[stack]) {
    std::vector<std::uint32_t> out;
    expand_into(stack, out, 0);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    expanded_[stack] = std::move(out);  // (expand_into may have grown nodes_: index again)
    has_expanded_[stack] = true;
  }
  return expanded_[stack];
}

void StateSpace::expand_into(std::uint32_t stack, std::vector<std::uint32_t>& out, int depth) {
  if (stack == kComplete) {
    out.push_back(kComplete);
    return;
  }
  if (depth > kMaxExpandDepth)
    fail("{}: the grammar nests rules deeper than {} without consuming a character",
         grammar_->origin, kMaxExpandDepth);
  const Node n = nodes_[stack];
  const Element& e = *element_[n.place];
  if (e.kind == Element::Kind::chars) {
    out.push_back(stack);
    return;
  }
  // A rule: each of its alternatives, continuing after the reference.
  const std::uint32_t after = n.place + 1;
  const auto r = static_cast<std::size_t>(e.rule);
  for (std::uint32_t a = alt_begin_[r]; a < alt_begin_[r + 1]; ++a) {
    // Pushing `after` first pops it when it ends the sequence (a tail call).
    const std::uint32_t cont = element_[after] == nullptr ? n.rest : push(after, n.rest);
    expand_into(push(first_place_[a], cont), out, depth + 1);
  }
}

std::uint32_t StateSpace::intern(State s) {
  const std::size_t h = hash_stacks(s.stacks);
  const auto [lo, hi] = state_ids_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (states_[it->second].stacks == s.stacks) return it->second;
  const auto id = static_cast<std::uint32_t>(states_.size());
  if (id >= kPartial) fail("{}: the grammar's parse reached 2^31 states", grammar_->origin);
  states_.push_back(std::move(s));
  state_ids_.emplace(h, id);
  transitions_.resize(states_.size() * 256, kUnknown);
  return id;
}

std::uint32_t StateSpace::advance_char(std::uint32_t state, std::uint32_t cp) {
  // Which stacks take the character decides the result, not the character itself: characters
  // that the same stacks take (all of a string's plain characters, say) share one computation.
  const std::vector<std::uint32_t>& stacks = states_[state].stacks;
  std::uint64_t taken = 0;
  const bool small = stacks.size() <= 64;
  for (std::size_t i = 0; i < stacks.size() && small; ++i)
    if (stacks[i] != kComplete && element_[nodes_[stacks[i]].place]->matches(cp))
      taken |= std::uint64_t{1} << i;
  if (small) {
    if (taken == 0) return kDead;
    if (by_taken_.size() < states_.size()) by_taken_.resize(states_.size());
    for (const auto& [mask, result] : by_taken_[state])
      if (mask == taken) return result;
  }
  State next;
  const std::vector<std::uint32_t> copy = stacks;  // (intern may reallocate states_)
  for (std::size_t i = 0; i < copy.size(); ++i) {
    const std::uint32_t stack = copy[i];
    if (stack == kComplete) continue;
    const bool takes = small ? (taken >> i & 1) != 0 : element_[nodes_[stack].place]->matches(cp);
    if (!takes) continue;
    const Node n = nodes_[stack];
    const std::uint32_t moved = push(n.place + 1, n.rest);
    const auto& more = moved == kComplete ? std::vector<std::uint32_t>{kComplete} : expand(moved);
    next.stacks.insert(next.stacks.end(), more.begin(), more.end());
  }
  std::uint32_t result = kDead;
  if (!next.stacks.empty()) {
    std::sort(next.stacks.begin(), next.stacks.end());
    next.stacks.erase(std::unique(next.stacks.begin(), next.stacks.end()), next.stacks.end());
    result = intern(std::move(next));
  }
  if (small) {
    if (by_taken_.size() < states_.size()) by_taken_.resize(states_.size());
    by_taken_[state].push_back({taken, result});
  }
  return result;
}

bool StateSpace::any_takes(std::uint32_t state, std::uint32_t lo, std::uint32_t hi) const {
  for (std::uint32_t stack : states_[state].stacks)
    if (stack != kComplete && element_[nodes_[stack].place]->matches_any(lo, hi)) return true;
  return false;
}

std::uint32_t StateSpace::partial(const Partial& p) {
  if (!p.uniform) {
    // The code points the character may still become, within the valid ones of its length.
    const std::uint32_t span = 6u * p.left;
    const std::uint32_t min = p.length == 2 ? 0x80u : p.length == 3 ? 0x800u : 0x10000u;
    const std::uint32_t lo = std::max(p.bits << span, min);
    const std::uint32_t hi = std::min((p.bits << span) | ((1u << span) - 1), 0x10FFFFu);
    if (lo > hi || !any_takes(p.base, lo, hi)) return kDead;
  }
  const std::uint64_t key = std::uint64_t{p.base} << 32 | std::uint64_t{p.bits} << 5 |
                            std::uint64_t{p.uniform} << 4 | std::uint64_t(p.length - 2) << 2 |
                            p.left;
  const auto [it, added] =
      partial_ids_.emplace(key, kPartial + static_cast<std::uint32_t>(partials_.size()));
  if (added) {
    partials_.push_back(p);
    partial_next_.resize(partials_.size() * 64, kUnknown);
  }
  return it->second;
}

bool StateSpace::uniform_above_ascii(std::uint32_t state) {
  if (uniform_.size() < states_.size()) uniform_.resize(states_.size(), -1);
  if (uniform_[state] < 0) {
    bool uniform = true;
    for (std::uint32_t stack : states_[state].stacks) {
      if (stack == kComplete) continue;
      Element other = *element_[nodes_[stack].place];  // its complement
      other.negated = !other.negated;
      const Element& e = *element_[nodes_[stack].place];
      const bool all = !other.matches_any(0x80, 0xD7FF) && !other.matches_any(0xE000, 0x10FFFF);
      const bool none = !e.matches_any(0x80, 0xD7FF) && !e.matches_any(0xE000, 0x10FFFF);
      uniform = uniform && (all || none);
    }
    uniform_[state] = uniform ? 1 : 0;
  }
  return uniform_[state] == 1;
}

std::uint32_t StateSpace::next_in_character(std::uint32_t state, std::uint8_t byte) {
  const Partial p = partials_[state - kPartial];
  std::uint32_t result = kDead;
  if (p.uniform) {
    if (byte >= (p.bits >> 8) && byte <= (p.bits & 0xFF)) {
      result =
          p.left > 1
              ? partial({p.base, 0x80BF, static_cast<std::uint8_t>(p.left - 1), p.length, true})
              : advance_char(p.base, 0x80);  // any character above U+007F
    }
  } else if ((byte & 0xC0) == 0x80) {
    const std::uint32_t bits = p.bits << 6 | (byte & 0x3Fu);
    if (p.left > 1) {
      result = partial({p.base, bits, static_cast<std::uint8_t>(p.left - 1), p.length, false});
    } else {
      const std::uint32_t min = p.length == 2 ? 0x80 : p.length == 3 ? 0x800 : 0x10000;
      if (bits >= min && bits <= 0x10FFFF && (bits < 0xD800 || bits > 0xDFFF))
        result = advance_char(p.base, bits);
    }
  }
  if ((byte & 0xC0) == 0x80)
    partial_next_[std::size_t{state - kPartial} << 6 | (byte & 0x3Fu)] = result;
  return result;
}

std::uint32_t StateSpace::compute_next(std::uint32_t state, std::uint8_t byte) {
  if (state >= kPartial) return next_in_character(state, byte);
  const std::size_t k = std::size_t{state} << 8 | byte;
  std::uint32_t result = kDead;
  if (byte < 0x80) {
    result = advance_char(state, byte);
  } else {
    // A lead byte: 110xxxxx (2 bytes; C0 and C1 would be overlong), 1110xxxx (3), 11110xxx up
    // to F4 (4). A continuation byte cannot start a character.
    const int length = byte >= 0xC2 && byte <= 0xDF   ? 2
                       : byte >= 0xE0 && byte <= 0xEF ? 3
                       : byte >= 0xF0 && byte <= 0xF4 ? 4
                                                      : 0;
    const auto left = static_cast<std::uint8_t>(length - 1);
    const auto len = static_cast<std::uint8_t>(length);
    if (length != 0 && uniform_above_ascii(state)) {
      // The range of the second byte that keeps the character valid UTF-8: no overlong forms
      // (E0, F0), no surrogates (ED), nothing above U+10FFFF (F4).
      const std::uint32_t range = byte == 0xE0   ? 0xA0BF
                                  : byte == 0xED ? 0x809F
                                  : byte == 0xF0 ? 0x90BF
                                  : byte == 0xF4 ? 0x808F
                                                 : 0x80BF;
      result = any_takes(state, 0x80, 0x10FFFF) ? partial({state, range, left, len, true}) : kDead;
    } else if (length != 0) {
      result = partial({state, byte & (0x7Fu >> length), left, len, false});
    }
  }
  transitions_[k] = result;  // (intern() may have grown the table: indexed again)
  return result;
}

bool StateSpace::can_end(std::uint32_t state) const {
  if (state >= kPartial) return false;
  const auto& s = states_[state].stacks;
  return std::binary_search(s.begin(), s.end(), kComplete);
}

bool StateSpace::can_continue(std::uint32_t state) const {
  if (state >= kPartial) return true;
  const auto& s = states_[state].stacks;
  return std::any_of(s.begin(), s.end(), [](std::uint32_t x) { return x != kComplete; });
}

Matcher::Matcher(std::shared_ptr<const Grammar> grammar)
    : space_(std::move(grammar)), state_(space_.start()) {}

bool Matcher::advance(std::string_view bytes) {
  std::uint32_t s = state_;
  for (char c : bytes) {
    s = space_.next(s, static_cast<std::uint8_t>(c));
    if (s == StateSpace::kDead) return false;
  }
  state_ = s;
  return true;
}

}  // namespace ls::grammar
