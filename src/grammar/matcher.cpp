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

std::size_t hash_state(const std::vector<std::uint32_t>& stacks, std::uint32_t partial,
                       std::uint8_t left) {
  std::size_t h = 1469598103934665603ull ^ partial ^ (std::size_t{left} << 40);
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
  states_.push_back({});  // kDead
  state_ids_.emplace(hash_state({}, 0, 0), kDead);
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
  const std::size_t h = hash_state(s.stacks, s.partial, s.left);
  const auto [lo, hi] = state_ids_.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (states_[it->second] == s) return it->second;
  const auto id = static_cast<std::uint32_t>(states_.size());
  states_.push_back(std::move(s));
  state_ids_.emplace(h, id);
  return id;
}

std::uint32_t StateSpace::advance_char(std::uint32_t state, std::uint32_t cp) {
  State next;
  const std::vector<std::uint32_t> stacks = states_[state].stacks;  // (intern may reallocate)
  for (std::uint32_t stack : stacks) {
    if (stack == kComplete) continue;
    const Node n = nodes_[stack];
    if (!element_[n.place]->matches(cp)) continue;
    const std::uint32_t moved = push(n.place + 1, n.rest);
    const auto& more = moved == kComplete ? std::vector<std::uint32_t>{kComplete} : expand(moved);
    next.stacks.insert(next.stacks.end(), more.begin(), more.end());
  }
  if (next.stacks.empty()) return kDead;
  std::sort(next.stacks.begin(), next.stacks.end());
  next.stacks.erase(std::unique(next.stacks.begin(), next.stacks.end()), next.stacks.end());
  return intern(std::move(next));
}

bool StateSpace::any_takes(const State& s, std::uint32_t lo, std::uint32_t hi) const {
  for (std::uint32_t stack : s.stacks)
    if (stack != kComplete && element_[nodes_[stack].place]->matches_any(lo, hi)) return true;
  return false;
}

std::uint32_t StateSpace::next(std::uint32_t state, std::uint8_t byte) {
  if (state == kDead) return kDead;
  const std::uint64_t k = std::uint64_t{state} << 8 | byte;
  if (const auto it = transitions_.find(k); it != transitions_.end()) return it->second;
  std::uint32_t result = kDead;
  const State& s = states_[state];
  if (s.left == 0) {
    if (byte < 0x80) {
      result = advance_char(state, byte);
    } else {
      // A lead byte: 110xxxxx (2 bytes, C0 and C1 overlong), 1110xxxx (3), 11110xxx up to F4 (4).
      const int length = byte >= 0xC2 && byte <= 0xDF   ? 2
                         : byte >= 0xE0 && byte <= 0xEF ? 3
                         : byte >= 0xF0 && byte <= 0xF4 ? 4
                                                        : 0;
      if (length != 0) {
        State p;
        p.stacks = s.stacks;
        p.partial = byte & (0x7Fu >> length);
        p.left = static_cast<std::uint8_t>(length - 1);
        p.length = static_cast<std::uint8_t>(length);
        const std::uint32_t span = 6u * p.left;
        const std::uint32_t lo = std::max(p.partial << span, length == 3   ? 0x800u
                                                             : length == 4 ? 0x10000u
                                                                           : 0x80u);
        const std::uint32_t hi = std::min((p.partial << span) | ((1u << span) - 1), 0x10FFFFu);
        if (lo <= hi && any_takes(p, lo, hi)) result = intern(std::move(p));
      }
    }
  } else if ((byte & 0xC0) == 0x80) {
    const std::uint32_t partial = s.partial << 6 | (byte & 0x3Fu);
    const auto left = static_cast<std::uint8_t>(s.left - 1);
    if (left == 0) {
      const std::uint32_t min = s.length == 2 ? 0x80 : s.length == 3 ? 0x800 : 0x10000;
      const bool valid =
          partial >= min && partial <= 0x10FFFF && (partial < 0xD800 || partial > 0xDFFF);
      if (valid) {
        // The stacks without the pending character, as an interned state to advance.
        State base;
        base.stacks = s.stacks;
        result = advance_char(intern(std::move(base)), partial);
      }
    } else {
      State p{s.stacks, partial, left, s.length};
      const std::uint32_t span = 6u * left;
      const std::uint32_t min = s.length == 3 ? 0x800u : 0x10000u;
      const std::uint32_t lo = std::max(partial << span, min);
      const std::uint32_t hi = std::min((partial << span) | ((1u << span) - 1), 0x10FFFFu);
      if (lo <= hi && any_takes(p, lo, hi)) result = intern(std::move(p));
    }
  }
  transitions_.emplace(k, result);
  return result;
}

bool StateSpace::can_end(std::uint32_t state) const {
  const State& s = states_[state];
  return s.left == 0 && std::binary_search(s.stacks.begin(), s.stacks.end(), kComplete);
}

bool StateSpace::can_continue(std::uint32_t state) const {
  const State& s = states_[state];
  return s.left != 0 || std::any_of(s.stacks.begin(), s.stacks.end(),
                                    [](std::uint32_t x) { return x != kComplete; });
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
