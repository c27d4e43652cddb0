// Grammars composed at the level of rules (compose.h): new rules appended, references
// renumbered, literals as single-character elements. No text is re-parsed.
#include "grammar/compose.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.h"

namespace ls::grammar {

namespace {

// The characters of UTF-8 `text` as single-character elements.
Sequence literal(std::string_view text, std::string_view origin) {
  Sequence out;
  for (std::uint32_t cp : utf8_to_code_points(text, fmt::format("{}: a literal", origin))) {
    Element e;
    e.ranges = {{cp, cp}};
    out.push_back(std::move(e));
  }
  return out;
}

Element rule_ref(int rule) {
  Element e;
  e.kind = Element::Kind::rule;
  e.rule = rule;
  return e;
}

}  // namespace

Grammar enclose(Grammar g, std::string_view prefix, std::string_view suffix, bool repeat,
                std::string_view separator) {
  Sequence one = literal(prefix, g.origin);
  one.push_back(rule_ref(g.root));
  const Sequence tail = literal(suffix, g.origin);
  one.insert(one.end(), tail.begin(), tail.end());
  const int item = static_cast<int>(g.rules.size());
  g.rules.push_back({"enclosed", {one}});
  if (!repeat) {
    g.root = item;
    return g;
  }
  // more ::= separator item more | (empty); root ::= item more
  const int more = static_cast<int>(g.rules.size());
  Sequence again = literal(separator, g.origin);
  again.push_back(rule_ref(item));
  again.push_back(rule_ref(more));
  g.rules.push_back({"enclosed-more", {again, {}}});
  g.rules.push_back({"enclosed-all", {{rule_ref(item), rule_ref(more)}}});
  g.root = static_cast<int>(g.rules.size()) - 1;
  return g;
}

Grammar any_of(const std::vector<Grammar>& grammars, std::string origin) {
  Grammar out;
  out.origin = std::move(origin);
  Rule root{"any-of", {}};
  for (std::size_t i = 0; i < grammars.size(); ++i) {
    const int base = static_cast<int>(out.rules.size());
    for (Rule r : grammars[i].rules) {
      r.name = fmt::format("g{}-{}", i, r.name);
      for (Sequence& s : r.alternatives)
        for (Element& e : s)
          if (e.kind == Element::Kind::rule) e.rule += base;
      out.rules.push_back(std::move(r));
    }
    root.alternatives.push_back({rule_ref(base + grammars[i].root)});
  }
  out.rules.push_back(std::move(root));
  out.root = static_cast<int>(out.rules.size()) - 1;
  return out;
}

Grammar after_thinking(Grammar g) {
  // The answer: up to 4 whitespace characters, then the root (nested optionals).
  Element ws;
  ws.ranges = {{'\t', '\n'}, {'\r', '\r'}, {' ', ' '}};
  int after = g.root;
  for (int k = 0; k < 4; ++k) {
    g.rules.push_back(
        {fmt::format("think-space-{}", k), {{ws, rule_ref(after)}, {rule_ref(after)}}});
    after = static_cast<int>(g.rules.size()) - 1;
  }
  // s_i: the block's text so far ends with i characters of "</think>" (and holds no whole one).
  // The next character either extends the match, restarts it ('<'), or drops to s_0.
  const std::u32string close = U"</think>";
  const int n = static_cast<int>(close.size());
  const int first = static_cast<int>(g.rules.size());
  const auto chars = [](std::vector<CharRange> ranges, bool negated) {
    std::sort(ranges.begin(), ranges.end(),
              [](const CharRange& x, const CharRange& y) { return x.lo < y.lo; });
    Element e;
    e.ranges = std::move(ranges);
    e.negated = negated;
    return e;
  };
  for (int i = 0; i < n; ++i) {
    const std::uint32_t want = close[i];
    Rule r{fmt::format("think-{}", i), {}};
    r.alternatives.push_back(
        {chars({{want, want}}, false), rule_ref(i + 1 == n ? after : first + i + 1)});
    if (want != '<') {
      r.alternatives.push_back({chars({{'<', '<'}}, false), rule_ref(first + 1)});
      r.alternatives.push_back({chars({{want, want}, {'<', '<'}}, true), rule_ref(first)});
    } else {
      r.alternatives.push_back({chars({{'<', '<'}}, true), rule_ref(first)});
    }
    g.rules.push_back(std::move(r));
  }
  Sequence open = literal("<think>", g.origin);
  open.push_back(rule_ref(first));
  g.rules.push_back({"think-start", {open}});
  g.root = static_cast<int>(g.rules.size()) - 1;
  return g;
}

}  // namespace ls::grammar
