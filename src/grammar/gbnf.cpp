// GBNF text -> Grammar (grammar.h): a recursive-descent parser over the text, repetitions and
// groups made into generated rules, then the checks that keep the matcher finite: every rule
// defined, a `root`, and no rule that can reach itself before consuming a character.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "grammar/grammar.h"

namespace ls::grammar {

bool Element::matches(std::uint32_t cp) const {
  const auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                                   [](std::uint32_t c, const CharRange& r) { return c < r.lo; });
  const bool in = it != ranges.begin() && cp <= std::prev(it)->hi;
  return in != negated;
}

bool Element::matches_any(std::uint32_t lo, std::uint32_t hi) const {
  if (!negated) {
    for (const CharRange& r : ranges)
      if (r.lo <= hi && lo <= r.hi) return true;
    return false;
  }
  // Negated: some code point of [lo, hi] lies outside every range.
  std::uint32_t c = lo;
  for (const CharRange& r : ranges) {
    if (r.hi < c) continue;
    if (r.lo > c) return true;
    if (r.hi >= hi) return false;
    c = r.hi + 1;
  }
  return c <= hi;
}

namespace {

// The most repetitions a {m,n} may ask for: each is a rule of its own.
constexpr int kMaxRepeat = 10000;
// Rule definitions nest groups; a text nesting them deeper than this is refused, not recursed.
constexpr int kMaxDepth = 200;

class Parser {
 public:
  Parser(std::string_view text, std::string_view origin) : text_(text), origin_(origin) {}

  Grammar parse() {
    g_.origin = std::string(origin_);
    skip_space();
    if (at_end()) error("expected at least one rule `name ::= ...`, got an empty grammar");
    while (!at_end()) {
      const std::size_t start = pos_;
      const std::string name = parse_name();
      skip_space();
      if (!consume("::=")) error(fmt::format("expected '::=' after the rule name '{}'", name));
      const int r = rule_id(name, start);
      base_ = name;
      if (defined_[r]) error_at(start, fmt::format("rule '{}' is defined twice", name));
      defined_[r] = true;
      g_.rules[r].alternatives = parse_alternatives(0);
      if (!at_end() && peek() == ')') error("unmatched ')'");
    }
    check();
    return std::move(g_);
  }

 private:
  // --- the text ---
  bool at_end() const { return pos_ >= text_.size(); }
  char peek(std::size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool consume(std::string_view s) {
    if (text_.substr(pos_, s.size()) != s) return false;
    pos_ += s.size();
    return true;
  }
  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else {
        break;
      }
    }
  }
  [[noreturn]] void error_at(std::size_t at, const std::string& what) const {
    std::size_t line = 1, col = 1;
    for (std::size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    fail("{}:{}:{}: {}", origin_, line, col, what);
  }
  [[noreturn]] void error(const std::string& what) const { error_at(pos_, what); }

  static bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
  }
  std::string parse_name() {
    const std::size_t start = pos_;
    while (!at_end() && name_char(peek())) ++pos_;
    if (pos_ == start) {
      error(at_end() ? "expected a rule name, got the end of the text"
                     : fmt::format("expected a rule name, got '{}'", peek()));
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  // Whether a rule definition `name ::=` starts here (it ends the rule before it).
  bool definition_ahead() const {
    std::size_t p = pos_;
    while (p < text_.size() && name_char(text_[p])) ++p;
    if (p == pos_) return false;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t')) ++p;
    return text_.substr(p, 3) == "::=";
  }

  // One UTF-8 character of the text.
  std::uint32_t parse_utf8() {
    const auto b0 = static_cast<unsigned char>(peek());
    const int len = b0 < 0x80         ? 1
                    : (b0 >> 5) == 6  ? 2
                    : (b0 >> 4) == 14 ? 3
                    : (b0 >> 3) == 30 ? 4
                                      : 0;
    if (len == 0 || pos_ + len > text_.size()) error("invalid UTF-8 in the grammar text");
    std::uint32_t cp = len == 1 ? b0 : b0 & (0x7Fu >> len);
    for (int i = 1; i < len; ++i) {
      const auto b = static_cast<unsigned char>(text_[pos_ + i]);
      if ((b & 0xC0) != 0x80) error("invalid UTF-8 in the grammar text");
      cp = cp << 6 | (b & 0x3F);
    }
    pos_ += len;
    return cp;
  }
  std::uint32_t parse_hex(int digits) {
    std::uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const char c = peek();
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) error(fmt::format("expected {} hexadecimal digits in the escape", digits));
      v = v << 4 | static_cast<std::uint32_t>(d);
      ++pos_;
    }
    if (v > 0x10FFFF) error("the escape is beyond U+10FFFF");
    return v;
  }
  // One character of a literal or a class, escapes decoded.
  std::uint32_t parse_char() {
    if (at_end()) error("unexpected end of the text inside a literal or class");
    if (peek() != '\\') return parse_utf8();
    ++pos_;
    const char c = peek();
    ++pos_;
    switch (c) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case 'x':
        return parse_hex(2);
      case 'u':
        return parse_hex(4);
      case 'U':
        return parse_hex(8);
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
        return static_cast<unsigned char>(c);
      default:
        --pos_;
        error(
            fmt::format("unknown escape '\\{}' (expected one of \\n \\r \\t \\\\ \\\" \\[ \\] "
                        "\\- \\^ \\/ \\xHH \\uHHHH \\UHHHHHHHH)",
                        c == '\0' ? ' ' : c));
    }
  }

  // --- rules ---
  int rule_id(const std::string& name, std::size_t at) {
    const auto [it, added] = ids_.emplace(name, static_cast<int>(g_.rules.size()));
    if (added) {
      g_.rules.push_back({name, {}});
      defined_.push_back(false);
      first_use_.push_back(at);
    }
    return it->second;
  }
  // A group's or a repetition's rule, named after the rule being defined.
  int generated_rule(std::vector<Sequence> alternatives) {
    const int r = static_cast<int>(g_.rules.size());
    g_.rules.push_back({fmt::format("{}-{}", base_, r), std::move(alternatives)});
    defined_.push_back(true);
    first_use_.push_back(pos_);
    return r;
  }
  static Element ref(int rule) {
    Element e;
    e.kind = Element::Kind::rule;
    e.rule = rule;
    return e;
  }
  static Element chars(std::vector<CharRange> ranges, bool negated) {
    std::sort(ranges.begin(), ranges.end(),
              [](const CharRange& a, const CharRange& b) { return a.lo < b.lo; });
    std::vector<CharRange> merged;
    for (const CharRange& r : ranges) {
      if (!merged.empty() && r.lo <= merged.back().hi + 1)
        merged.back().hi = std::max(merged.back().hi, r.hi);
      else
        merged.push_back(r);
    }
    Element e;
    e.ranges = std::move(merged);
    e.negated = negated;
    return e;
  }

  std::vector<Sequence> parse_alternatives(int depth) {
    if (depth > kMaxDepth) error(fmt::format("groups nest deeper than {}", kMaxDepth));
    std::vector<Sequence> alts;
    alts.push_back(parse_sequence(depth));
    while (!at_end() && peek() == '|') {
      ++pos_;
      alts.push_back(parse_sequence(depth));
    }
    return alts;
  }

  Sequence parse_sequence(int depth) {
    Sequence seq;
    for (;;) {
      skip_space();
      if (at_end() || peek() == '|' || peek() == ')' || definition_ahead()) return seq;
      std::vector<Element> item = parse_item(depth);
      skip_space();
      item = parse_postfix(std::move(item));
      seq.insert(seq.end(), item.begin(), item.end());
    }
  }
  std::vector<Element> parse_item(int depth) {
    const char c = peek();
    if (c == '"') {
      ++pos_;
      std::vector<Element> lit;
      while (!at_end() && peek() != '"') {
        if (peek() == '\n') error("a literal must end on its line: missing '\"'");
        const std::uint32_t cp = parse_char();
        lit.push_back(chars({{cp, cp}}, false));
      }
      if (!consume("\"")) error("missing '\"' at the end of the literal");
      return lit;
    }
    if (c == '[') {
      ++pos_;
      const bool negated = consume("^");
      std::vector<CharRange> ranges;
      while (!at_end() && peek() != ']') {
        if (peek() == '\n') break;  // a class ends on its line
        const std::uint32_t lo = parse_char();
        std::uint32_t hi = lo;
        if (peek() == '-' && peek(1) != ']' && peek(1) != '\0') {
          ++pos_;
          if (peek() == '\n') break;
          hi = parse_char();
          if (hi < lo) error(fmt::format("the class range U+{:04X}-U+{:04X} is reversed", lo, hi));
        }
        ranges.push_back({lo, hi});
      }
      if (!consume("]")) error("missing ']' at the end of the character class");
      return {chars(std::move(ranges), negated)};
    }
    if (c == '.') {
      ++pos_;
      return {chars({}, true)};
    }
    if (c == '(') {
      ++pos_;
      std::vector<Sequence> alts = parse_alternatives(depth + 1);
      skip_space();
      if (!consume(")")) error("missing ')' at the end of the group");
      return {ref(generated_rule(std::move(alts)))};
    }
    if (name_char(c)) {
      const std::size_t start = pos_;
      return {ref(rule_id(parse_name(), start))};
    }
    error(fmt::format("expected a literal, a class, '.', '(' or a rule name, got '{}'", c));
  }

  int parse_count() {
    const std::size_t start = pos_;
    long v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + (peek() - '0');
      if (v > kMaxRepeat)
        error_at(start, fmt::format("a repetition count is at most {}", kMaxRepeat));
      ++pos_;
    }
    if (pos_ == start) error("expected a number in the repetition {m,n}");
    return static_cast<int>(v);
  }

  // item, then a postfix operator if one follows: the item as one rule, repeated.
  std::vector<Element> parse_postfix(std::vector<Element> item) {
    const char c = peek();
    if (c != '*' && c != '+' && c != '?' && c != '{') return item;
    ++pos_;
    int min = 0, max = -1;  // max -1: unbounded
    if (c == '+') min = 1;
    if (c == '?') max = 1;
    if (c == '{') {
      skip_space();
      min = parse_count();
      skip_space();
      max = min;
      if (consume(",")) {
        skip_space();
        max = peek() == '}' ? -1 : parse_count();
        skip_space();
      }
      if (!consume("}")) error("expected '}' at the end of the repetition {m,n}");
      if (max >= 0 && max < min)
        error(fmt::format("the repetition {{{},{}}} is reversed", min, max));
    }
    skip_space();
    // x{min} then: unbounded -> R ::= x R | (empty); bounded -> (max - min) nested optionals.
    std::vector<Element> out;
    for (int i = 0; i < min; ++i) out.insert(out.end(), item.begin(), item.end());
    if (max < 0) {
      const int r = generated_rule({});
      Sequence again = item;
      again.push_back(ref(r));
      g_.rules[r].alternatives = {std::move(again), {}};
      out.push_back(ref(r));
    } else if (max > min) {
      int tail = -1;
      for (int i = 0; i < max - min; ++i) {
        Sequence more = item;
        if (tail >= 0) more.push_back(ref(tail));
        tail = generated_rule({std::move(more), {}});
      }
      out.push_back(ref(tail));
    }
    return out;
  }

  // --- checks ---
  void check() {
    for (std::size_t r = 0; r < g_.rules.size(); ++r)
      if (!defined_[r])
        error_at(first_use_[r],
                 fmt::format("rule '{}' is used but never defined", g_.rules[r].name));
    const auto root = ids_.find("root");
    if (root == ids_.end()) fail("{}: the grammar has no 'root' rule (where it starts)", origin_);
    g_.root = root->second;
    // Nullable rules, to a fixed point.
    const std::size_t n = g_.rules.size();
    std::vector<bool> nullable(n, false);
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t r = 0; r < n; ++r) {
        if (nullable[r]) continue;
        for (const Sequence& s : g_.rules[r].alternatives) {
          const bool all = std::all_of(s.begin(), s.end(), [&](const Element& e) {
            return e.kind == Element::Kind::rule && nullable[e.rule];
          });
          if (all) {
            nullable[r] = changed = true;
            break;
          }
        }
      }
    }
    // Left corners: r -> s when s can start r before any character is consumed.
    std::vector<std::vector<int>> left(n);
    for (std::size_t r = 0; r < n; ++r)
      for (const Sequence& s : g_.rules[r].alternatives)
        for (const Element& e : s) {
          if (e.kind != Element::Kind::rule) break;
          left[r].push_back(e.rule);
          if (!nullable[e.rule]) break;
        }
    std::vector<int> mark(n, 0), path;  // 0 new, 1 on the path, 2 done
    std::function<void(int)> visit = [&](int r) {
      mark[r] = 1;
      path.push_back(r);
      for (int s : left[r]) {
        if (mark[s] == 1) {
          std::string cycle;
          auto it = std::find(path.begin(), path.end(), s);
          for (; it != path.end(); ++it) cycle += g_.rules[*it].name + " -> ";
          cycle += g_.rules[s].name;
          fail(
              "{}: rule '{}' can reach itself without consuming a character ({}): left "
              "recursion, or a repetition of something that can be empty",
              origin_, g_.rules[s].name, cycle);
        }
        if (mark[s] == 0) visit(s);
      }
      path.pop_back();
      mark[r] = 2;
    };
    for (std::size_t r = 0; r < n; ++r)
      if (mark[r] == 0) visit(static_cast<int>(r));
  }

  std::string_view text_, origin_;
  std::size_t pos_ = 0;
  std::string base_;  // the rule being defined
  Grammar g_;
  std::map<std::string, int> ids_;
  std::vector<bool> defined_;
  std::vector<std::size_t> first_use_;
};

}  // namespace

std::string escape_gbnf_char(std::uint32_t cp, bool in_class) {
  switch (cp) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case '\\':
      return "\\\\";
    case '"':
      return in_class ? "\"" : "\\\"";
    case ']':
    case '[':
    case '-':
    case '^':
      if (in_class) return fmt::format("\\{}", static_cast<char>(cp));
      break;
    default:
      break;
  }
  if (cp < 0x20 || cp == 0x7F) return fmt::format("\\x{:02X}", cp);
  if (cp < 0x80) return std::string(1, static_cast<char>(cp));
  return cp <= 0xFFFF ? fmt::format("\\u{:04X}", cp) : fmt::format("\\U{:08X}", cp);
}

std::vector<std::uint32_t> utf8_to_code_points(std::string_view s, std::string_view what) {
  std::vector<std::uint32_t> out;
  for (std::size_t i = 0; i < s.size();) {
    const auto b0 = static_cast<unsigned char>(s[i]);
    const int len = b0 < 0x80         ? 1
                    : (b0 >> 5) == 6  ? 2
                    : (b0 >> 4) == 14 ? 3
                    : (b0 >> 3) == 30 ? 4
                                      : 0;
    if (len == 0 || i + len > s.size()) fail("invalid UTF-8 in {}", what);
    std::uint32_t cp = len == 1 ? b0 : b0 & (0x7Fu >> len);
    for (int k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) fail("invalid UTF-8 in {}", what);
      cp = cp << 6 | (b & 0x3F);
    }
    out.push_back(cp);
    i += static_cast<std::size_t>(len);
  }
  return out;
}

Grammar parse_gbnf(std::string_view text, std::string_view origin) {
  return Parser(text, origin).parse();
}

std::string to_gbnf(const Grammar& g) {
  // Names made unique (composed grammars may hold two rules of one name) and `root` first.
  const auto name = [&](int r) { return fmt::format("r{}-{}", r, g.rules[r].name); };
  std::string out = fmt::format("root ::= {}\n", name(g.root));
  for (std::size_t r = 0; r < g.rules.size(); ++r) {
    out += name(static_cast<int>(r)) + " ::=";
    const Rule& rule = g.rules[r];
    for (std::size_t a = 0; a < rule.alternatives.size(); ++a) {
      if (a > 0) out += " |";
      if (rule.alternatives[a].empty()) out += " \"\"";
      for (const Element& e : rule.alternatives[a]) {
        if (e.kind == Element::Kind::rule) {
          out += " " + name(e.rule);
          continue;
        }
        out += e.negated ? " [^" : " [";
        for (const CharRange& c : e.ranges) {
          out += escape_gbnf_char(c.lo, true);
          if (c.hi != c.lo) out += "-" + escape_gbnf_char(c.hi, true);
        }
        out += "]";
      }
    }
    out += "\n";
  }
  return out;
}

}  // namespace ls::grammar
