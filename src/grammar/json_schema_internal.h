// The pieces json_schema.cpp builds its GBNF from, shared by its source files: sets of code points,
// the rule table, JSON string spellings (every one for strings the model writes: raw, \n-style or
// \uXXXX escapes in either hex case; only the canonical one for strings the schema fixes), digit
// grammars for exact integer ranges, regular expressions, and the allOf merge. Internal to
// ls_grammar: nothing outside src/grammar includes it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::grammar::detail {

// The schema as converted: ordered_json, so that an object's `properties` keep the order they were
// written in (the order the grammar asks for them).
using Json = nlohmann::ordered_json;

constexpr std::uint32_t kMaxCodePoint = 0x10FFFF;

struct CpRange {
  std::uint32_t lo = 0, hi = 0;  // inclusive
  bool operator==(const CpRange&) const = default;
};
// A set of code points: sorted, disjoint, non-adjacent ranges.
using CpSet = std::vector<CpRange>;

CpSet cp_normalize(CpSet s);
CpSet cp_union(const CpSet& a, const CpSet& b);
CpSet cp_complement(const CpSet& s);  // within [0, U+10FFFF]
CpSet cp_intersect(const CpSet& a, const CpSet& b);
CpSet cp_minus(const CpSet& a, const CpSet& b);
bool cp_contains(const CpSet& s, std::uint32_t cp);

// A GBNF literal ("...") for UTF-8 text, escaping what the GBNF parser needs escaped.
std::string gbnf_literal(std::string_view utf8);
std::vector<std::uint32_t> utf8_to_code_points(std::string_view utf8);  // throws on bad UTF-8

// The rules of the grammar being built. Rules with equal bodies are shared (add() returns the
// first one's name); names are made unique and kept to GBNF's [a-zA-Z0-9-].
class RuleSet {
 public:
  // A rule for `body` named after `hint`; the name of an existing rule with this body if any.
  std::string add(std::string_view hint, const std::string& body);
  // A name for a rule whose body comes later (define()), so that it can refer to itself.
  std::string reserve(std::string_view hint);
  void define(const std::string& name, const std::string& body);
  bool has(const std::string& name) const { return index_.count(name) != 0; }
  // The GBNF text: `root` first, then the rules in the order they were named.
  std::string text() const;

 private:
  std::string unique_name(std::string_view hint);
  std::vector<std::pair<std::string, std::string>> rules_;  // name, body ("" while reserved)
  std::map<std::string, std::size_t> index_;
  std::map<std::string, std::string> by_body_;
};

// Adds the fixed rules (ws, char, string, number, integer, boolean, null, value, object, array)
// that `name` needs and returns `name`.
std::string primitive(RuleSet& rules, const std::string& name);
// Whitespace between tokens (the `ws` rule): nothing, one space, or a line feed followed by at most
// this many spaces or tabs (an indentation). Bounded and with one way to write each run, so a
// model constrained by the grammar cannot loop on whitespace.
constexpr int kMaxIndent = 20;

// One character of a JSON string (between the quotes), in every spelling JSON allows, whose
// decoded code point is in `set` (lone surrogate escapes are never accepted). An expression.
std::string json_chars(RuleSet& rules, const CpSet& set);
// Strings the schema fixes (listed keys, enum and const strings) take their canonical spelling
// only: each character raw when JSON allows it, else its two-character escape
// (\" \\ \b \f \n \r \t), else \u00xx in lowercase, as Python's json.dumps(s,
// ensure_ascii=False) writes it; other spellings are left out so that a model cannot wander
// through escapes of a fixed string.
// The JSON string (quotes included) whose decoded value is `utf8`, canonically spelled.
std::string json_string_literal(RuleSet& rules, std::string_view utf8);
// The JSON strings (quotes included) whose decoded value is one of `values`, canonically spelled.
std::string json_string_one_of(RuleSet& rules, const std::vector<std::string>& values,
                               std::string_view hint);
// Any JSON string (quotes included), in every spelling, whose decoded value is none of `excluded`
// (an extra key: it never decodes to a listed key, however escaped).
std::string json_string_except(RuleSet& rules, const std::vector<std::string>& excluded,
                               std::string_view hint);

// The digit strings of width lo.size() (== hi.size()) in [lo, hi] in `base`, as alternatives of
// per-position digit spans [first, second]; digits most significant first.
using DigitSpans = std::vector<std::pair<int, int>>;
std::vector<DigitSpans> fixed_width_range(const std::vector<int>& lo, const std::vector<int>& hi,
                                          int base);

// An integer as decimal digits with an optional sign (leading zeros never), for big bounds too.
struct BigInt {
  bool negative = false;
  std::string magnitude = "0";  // digits, no leading zeros ("0" for zero, never negative)
};
int compare(const BigInt& a, const BigInt& b);
BigInt plus_one(BigInt v);
BigInt minus_one(BigInt v);
BigInt big_int_from_string(std::string_view decimal);  // "-12", "40"
// The JSON integer texts (`-0` included when 0 is in range) of the values in [lo, hi], a missing
// bound being unbounded. An expression.
std::string integer_range_gbnf(const std::optional<BigInt>& lo, const std::optional<BigInt>& hi);

// A regular expression (the subset json_schema.h lists) turned into the content of a JSON string
// that matches it (the quotes included). Throws RegexError with what is not supported.
struct RegexError {
  std::string what;
};
std::string regex_string_gbnf(RuleSet& rules, std::string_view pattern, std::string_view hint);

// allOf: one schema that means the same as all of `parts` (keyword by keyword: types and enums
// intersected, bounds tightened, properties and items combined per key and index), looking up
// "$ref"s with `resolve`. Throws MergeError saying why when that is not simple (two different
// patterns, two anyOf). Annotations are dropped; the result may be `false` (no value).
struct MergeError {
  std::string what;
};
using Resolver = std::function<const Json&(const std::string& ref)>;
Json merge_schemas(const std::vector<Json>& parts, const Resolver& resolve);

// Keywords that only annotate a schema (ignored), and those that hold schemas without applying
// them ($defs).
bool is_annotation(std::string_view keyword);
bool is_container(std::string_view keyword);

}  // namespace ls::grammar::detail
