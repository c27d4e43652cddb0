// StateSpace::clamped (matcher.h): a bounded repetition x{m,n} is a chain of rules
// tail_k ::= x tail_(k-1) | "" (tail_1 ::= x | ""), so a place inside tail_k is a place inside
// x with k rounds left. Such a place with k > most is moved to the same place of tail_most:
// a byte string of fewer than `most` code points completes fewer than `most` rounds (each
// non-empty round takes a code point), and tail_k and tail_most accept the same such prefixes.
// The chains are found by their shape, so any grammar (GBNF, a JSON Schema's) gets it.
#include <algorithm>

#include "core/error.h"
#include "grammar/matcher.h"

namespace ls::grammar {

namespace {

bool same_element(const Element& a, const Element& b) {
  if (a.kind != b.kind || a.negated != b.negated || a.rule != b.rule) return false;
  if (a.ranges.size() != b.ranges.size()) return false;
  for (std::size_t i = 0; i < a.ranges.size(); ++i)
    if (a.ranges[i].lo != b.ranges[i].lo || a.ranges[i].hi != b.ranges[i].hi) return false;
  return true;
}

bool same_sequence(const Element* a, std::size_t na, const Sequence& b) {
  if (na != b.size()) return false;
  for (std::size_t i = 0; i < na; ++i)
    if (!same_element(a[i], b[i])) return false;
  return true;
}

}  // namespace

// The rounds rule `r` has left: 0 unless it is `x R' | ""` with R' of the same x and one round
// fewer, or `x | ""` (one round).
int StateSpace::rounds_left(int r, std::vector<int>& visiting) {
  if (left_[r] >= 0) return left_[r];
  if (visiting[r]) return 0;  // a cycle: not a chain
  visiting[r] = 1;
  const Rule& rule = grammar_->rules[static_cast<std::size_t>(r)];
  int left = 0;
  if (rule.alternatives.size() == 2 && rule.alternatives[1].empty() &&
      !rule.alternatives[0].empty()) {
    const Sequence& more = rule.alternatives[0];
    const Element& last = more.back();
    left = 1;
    if (last.kind == Element::Kind::rule && last.rule != r &&
        rounds_left(last.rule, visiting) >= 1) {
      const Rule& next = grammar_->rules[static_cast<std::size_t>(last.rule)];
      // The next rule's x: its first alternative, less its own reference when it has one.
      const Sequence& nx = next.alternatives[0];
      const std::size_t nx_len = down_[last.rule] >= 0 ? nx.size() - 1 : nx.size();
      if (same_sequence(more.data(), more.size() - 1, Sequence(nx.begin(), nx.begin() + nx_len))) {
        left = left_[last.rule] + 1;
        down_[r] = last.rule;
      }
    }
  }
  visiting[r] = 0;
  left_[r] = left;
  return left;
}

void StateSpace::find_repetitions() {
  const std::size_t n = grammar_->rules.size();
  left_.assign(n, -1);
  down_.assign(n, -1);
  std::vector<int> visiting(n, 0);
  for (std::size_t r = 0; r < n; ++r) rounds_left(static_cast<int>(r), visiting);
  rule_of_place_.assign(element_.size(), 0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::uint32_t a = alt_begin_[r]; a < alt_begin_[r + 1]; ++a) {
      const std::uint32_t end = a + 1 < first_place_.size()
                                    ? first_place_[a + 1]
                                    : static_cast<std::uint32_t>(element_.size());
      for (std::uint32_t p = first_place_[a]; p < end; ++p)
        rule_of_place_[p] = static_cast<std::uint32_t>(r);
    }
}

std::uint32_t StateSpace::clamped_place(std::uint32_t place) {
  int r = static_cast<int>(rule_of_place_[place]);
  if (left_[r] <= clamp_most_) return place;
  // Places of a chain's rules sit at the same offsets of their first alternatives (x, then the
  // reference: tail_most has one too, as most >= 2).
  const std::uint32_t offset = place - first_place_[alt_begin_[r]];
  while (left_[r] > clamp_most_) r = down_[r];
  return first_place_[alt_begin_[r]] + offset;
}

std::uint32_t StateSpace::clamped_stack(std::uint32_t stack) {
  if (stack == kComplete || stack == kNone) return stack;
  if (const auto it = clamped_stacks_.find(stack); it != clamped_stacks_.end()) return it->second;
  const Node n = nodes_[stack];  // (a copy: push() may grow nodes_)
  const std::uint32_t rest = clamped_stack(n.rest);
  const std::uint32_t place = clamped_place(n.place);
  const std::uint32_t out = place == n.place && rest == n.rest ? stack : push(place, rest);
  clamped_stacks_.emplace(stack, out);
  return out;
}

std::uint32_t StateSpace::clamped(std::uint32_t state, int most) {
  if (most < 2) fail("{}: a repetition clamp needs at least 2 rounds", grammar_->origin);
  if (left_.empty()) find_repetitions();
  if (most != clamp_most_) {
    clamp_most_ = most;
    clamped_stacks_.clear();
    clamped_states_.clear();
  }
  if (state == kDead) return state;
  if (const auto it = clamped_states_.find(state); it != clamped_states_.end()) return it->second;
  std::uint32_t out = state;
  if (state >= kPartial) {
    const Partial p = partials_[state - kPartial];
    const std::uint32_t base = clamped(p.base, most);
    if (base != p.base) out = partial(Partial{base, p.bits, p.left, p.length, p.uniform});
  } else {
    State s{states_[state].stacks};  // (a copy: intern() may grow states_)
    bool changed = false;
    for (std::uint32_t& stack : s.stacks) {
      const std::uint32_t c = clamped_stack(stack);
      changed |= c != stack;
      stack = c;
    }
    if (changed) {
      std::sort(s.stacks.begin(), s.stacks.end());
      s.stacks.erase(std::unique(s.stacks.begin(), s.stacks.end()), s.stacks.end());
      out = intern(std::move(s));
    }
  }
  clamped_states_.emplace(state, out);
  return out;
}

}  // namespace ls::grammar
