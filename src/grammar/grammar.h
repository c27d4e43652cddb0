// A context-free grammar over Unicode code points, as llama.cpp's GBNF writes one (so a user's
// .gbnf files work): rules of alternatives, each a sequence of character sets and rule references.
// parse_gbnf() turns the text into this form, with groups and repetitions (* + ? {m,n}) made into
// rules of their own, and rejects what the matcher cannot run (an undefined rule, no `root`, left
// recursion) with the file, line and column.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::grammar {

struct CharRange {
  std::uint32_t lo = 0, hi = 0;  // inclusive code points
};

// One step of a sequence: a character from a set (ranges, or all but them when negated), or a
// whole match of another rule.
struct Element {
  enum class Kind { chars, rule };
  Kind kind = Kind::chars;
  std::vector<CharRange> ranges;  // chars: sorted, disjoint
  bool negated = false;           // chars: every code point outside the ranges
  int rule = -1;                  // rule: its index

  bool matches(std::uint32_t cp) const;
  // Whether some code point in [lo, hi] matches (a partial UTF-8 character's possible values).
  bool matches_any(std::uint32_t lo, std::uint32_t hi) const;
};

using Sequence = std::vector<Element>;

struct Rule {
  std::string name;                    // as written; generated rules are "name-N"
  std::vector<Sequence> alternatives;  // an empty sequence matches the empty string
};

struct Grammar {
  std::vector<Rule> rules;
  int root = -1;
  std::string origin;  // where it came from ("--grammar FILE", "response_format.json_schema")
};

// Parses GBNF: `name ::= alternatives` lines; "literals" and [character classes] with \n \r \t
// \\ \" \] \xHH \uHHHH \UHHHHHHHH escapes, [^negated], `.` (any character), ( groups ), |, and
// postfix *, +, ?, {m}, {m,}, {m,n}; # comments. The start rule is `root`. Throws ls::Error
// "origin:line:col: what was expected".
Grammar parse_gbnf(std::string_view text, std::string_view origin);

// One code point as GBNF writes it in a "literal" or, with in_class, in a [class].
std::string escape_gbnf_char(std::uint32_t cp, bool in_class);
// The code points of UTF-8 `s`; throws ls::Error "invalid UTF-8 in {what}".
std::vector<std::uint32_t> utf8_to_code_points(std::string_view s, std::string_view what);

// The grammar as GBNF text again (generated rules included): tests and --verbose.
std::string to_gbnf(const Grammar& grammar);

}  // namespace ls::grammar
