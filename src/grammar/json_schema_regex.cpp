// A JSON Schema `pattern` (ECMA-262 syntax, matched on code points as with the u flag) as the GBNF
// of a JSON string: literals, `.`, classes, \d \w \s and their negations, groups, |, * + ? {m,n}
// (lazy or not: the language is the same), and ^ / $ only at the start / end of a top-level
// alternative; an unanchored side may have any text. Each regex character becomes every JSON
// spelling of it. Lookaround, backreferences, \b and the like are refused, never approximated.
#include <fmt/format.h>

#include "grammar/json_schema_internal.h"

namespace ls::grammar::detail {
namespace {

constexpr int kMaxRepeat = 10000;  // as parse_gbnf allows
constexpr int kMaxDepth = 100;

struct Node {
  enum class Kind { chars, seq, alt, repeat };
  Kind kind = Kind::seq;
  CpSet set;               // chars
  std::vector<Node> kids;  // seq, alt; repeat: one
  int min = 1, max = 1;    // repeat; max -1: unbounded
};

const CpSet kDigit = {{'0', '9'}};
const CpSet kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
// ECMA-262 WhiteSpace and LineTerminator.
const CpSet kSpace = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                      {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                      {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const CpSet kDot = cp_complement({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}});

Node chars(CpSet s) {
  Node n;
  n.kind = Node::Kind::chars;
  n.set = std::move(s);
  return n;
}

struct Branch {
  bool anchored_start = false, anchored_end = false;
  Node seq;
};

class Parser {
 public:
  explicit Parser(std::vector<std::uint32_t> p) : p_(std::move(p)) {}

  std::vector<Branch> parse() {
    std::vector<Branch> out;
    for (;;) {
      Branch b;
      b.seq = parse_seq(0, &b);
      out.push_back(std::move(b));
      if (at_end()) return out;
      if (peek() == ')') error("unmatched ')'");
      ++i_;  // '|'
    }
  }

 private:
  bool at_end() const { return i_ >= p_.size(); }
  std::uint32_t peek(std::size_t ahead = 0) const {
    return i_ + ahead < p_.size() ? p_[i_ + ahead] : 0;
  }
  [[noreturn]] static void error(std::string what) { throw RegexError{std::move(what)}; }

  // top: the branch being read at the top level (anchors allowed), else null.
  Node parse_seq(int depth, Branch* top) {
    Node seq;
    while (!at_end() && peek() != '|' && peek() != ')') {
      const std::uint32_t c = peek();
      if (c == '^') {
        if (!top || !seq.kids.empty() || top->anchored_start)
          error("'^' is supported only at the start of the pattern (or of a top-level |)");
        top->anchored_start = true;
        ++i_;
        continue;
      }
      if (c == '$') {
        ++i_;
        if (!top || (!at_end() && peek() != '|'))
          error("'$' is supported only at the end of the pattern (or of a top-level |)");
        top->anchored_end = true;
        break;
      }
      Node atom = parse_atom(depth);
      seq.kids.push_back(parse_quantifier(std::move(atom)));
    }
    return seq;
  }

  Node parse_alt(int depth) {
    Node alt;
    alt.kind = Node::Kind::alt;
    alt.kids.push_back(parse_seq(depth, nullptr));
    while (!at_end() && peek() == '|') {
      ++i_;
      alt.kids.push_back(parse_seq(depth, nullptr));
    }
    return alt;
  }

  Node parse_atom(int depth) {
    const std::uint32_t c = p_[i_++];
    switch (c) {
      case '(': {
        if (depth >= kMaxDepth) error(fmt::format("groups nest deeper than {}", kMaxDepth));
        if (peek() == '?') {
          if (peek(1) == ':') {
            i_ += 2;
          } else if (peek(1) == '<' && peek(2) != '=' && peek(2) != '!') {
            i_ += 2;  // a named group: only grouping here
            while (!at_end() && peek() != '>') ++i_;
            if (at_end()) error("unterminated group name");
            ++i_;
          } else {
            error("lookaround and group flags '(?' are not supported");
          }
        }
        Node inner = parse_alt(depth + 1);
        if (at_end() || peek() != ')') error("missing ')'");
        ++i_;
        return inner;
      }
      case '[':
        return chars(parse_class());
      case '.':
        return chars(kDot);
      case '\\':
        return chars(parse_escape(false));
      case '*':
      case '+':
      case '?':
        error(fmt::format("nothing to repeat before '{}'", static_cast<char>(c)));
      case '{':
        --i_;
        if (quantifier_ahead()) error("nothing to repeat before '{'");
        ++i_;
        return chars({{c, c}});
      default:
        return chars({{c, c}});  // ] and } alone are literal (ECMA-262 Annex B)
    }
  }

  bool quantifier_ahead() const {  // \{\d+(,\d*)?\} at i_
    std::size_t k = i_ + 1;
    const auto digits = [&] {
      const std::size_t s = k;
      while (k < p_.size() && p_[k] >= '0' && p_[k] <= '9') ++k;
      return k > s;
    };
    if (!digits()) return false;
    if (k < p_.size() && p_[k] == ',') {
      ++k;
      digits();
    }
    return k < p_.size() && p_[k] == '}';
  }

  int parse_count() {
    long v = 0;
    while (!at_end() && peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<long>(peek() - '0');
      if (v > kMaxRepeat) error(fmt::format("a repetition count above {}", kMaxRepeat));
      ++i_;
    }
    return static_cast<int>(v);
  }

  Node parse_quantifier(Node atom) {
    if (at_end()) return atom;
    const std::uint32_t c = peek();
    int min = 0, max = -1;
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      if (c == '+') min = 1;
      if (c == '?') max = 1;
    } else if (c == '{' && quantifier_ahead()) {
      ++i_;
      min = max = parse_count();
      if (peek() == ',') {
        ++i_;
        max = peek() == '}' ? -1 : parse_count();
      }
      ++i_;  // '}'
      if (max >= 0 && max < min)
        error(fmt::format("the repetition {{{},{}}} is reversed", min, max));
    } else {
      return atom;
    }
    if (!at_end() && peek() == '?') ++i_;  // lazy: the same language
    if (!at_end() &&
        (peek() == '*' || peek() == '+' || peek() == '?' || (peek() == '{' && quantifier_ahead())))
      error("a quantifier after a quantifier");
    Node rep;
    rep.kind = Node::Kind::repeat;
    rep.min = min;
    rep.max = max;
    rep.kids.push_back(std::move(atom));
    return rep;
  }

  std::uint32_t parse_hex(int n) {
    std::uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const std::uint32_t c = peek();
      const int d = c >= '0' && c <= '9'   ? static_cast<int>(c - '0')
                    : c >= 'a' && c <= 'f' ? static_cast<int>(c - 'a' + 10)
                    : c >= 'A' && c <= 'F' ? static_cast<int>(c - 'A' + 10)
                                           : -1;
      if (at_end() || d < 0) error(fmt::format("expected {} hexadecimal digits in an escape", n));
      v = v << 4 | static_cast<std::uint32_t>(d);
      ++i_;
    }
    return v;
  }

  // After a backslash: the set it stands for.
  CpSet parse_escape(bool in_class) {
    if (at_end()) error("a trailing backslash");
    const std::uint32_t c = p_[i_++];
    const auto one = [](std::uint32_t cp) { return CpSet{{cp, cp}}; };
    switch (c) {
      case 'd':
        return kDigit;
      case 'D':
        return cp_complement(kDigit);
      case 'w':
        return kWord;
      case 'W':
        return cp_complement(kWord);
      case 's':
        return kSpace;
      case 'S':
        return cp_complement(kSpace);
      case 't':
        return one('\t');
      case 'n':
        return one('\n');
      case 'r':
        return one('\r');
      case 'v':
        return one(0x0B);
      case 'f':
        return one(0x0C);
      case 'b':
        if (in_class) return one(0x08);
        error("the word boundary \\b is not supported");
      case '0':
        if (peek() >= '0' && peek() <= '9') error("octal escapes are not supported");
        return one(0);
      case 'x':
        return one(parse_hex(2));
      case 'u': {
        if (peek() == '{') error("\\u{...} escapes are not supported");
        std::uint32_t cp = parse_hex(4);
        if (cp >= 0xD800 && cp <= 0xDBFF && peek() == '\\' && peek(1) == 'u') {
          i_ += 2;
          const std::uint32_t lo = parse_hex(4);
          if (lo < 0xDC00 || lo > 0xDFFF) error("a high surrogate escape without a low one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xD800 && cp <= 0xDFFF) {
          error("a lone surrogate escape");
        }
        return one(cp);
      }
      default:
        break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
      error(fmt::format("the escape '\\{}' is not supported", static_cast<char>(c)));
    return one(c);  // an escaped punctuation character stands for itself
  }

  CpSet parse_class() {
    const bool negated = !at_end() && peek() == '^';
    if (negated) ++i_;
    if (!at_end() && peek() == ']') error("empty classes [] and [^] are not supported");
    CpSet set;
    const auto atom = [&](bool* single) {
      if (at_end()) error("missing ']'");
      if (p_[i_] == '\\') {
        ++i_;
        const std::uint32_t escape = peek();
        CpSet s = parse_escape(true);
        *single = !(escape == 'd' || escape == 'D' || escape == 'w' || escape == 'W' ||
                    escape == 's' || escape == 'S');
        return s;
      }
      *single = true;
      const std::uint32_t c = p_[i_++];
      return CpSet{{c, c}};
    };
    for (;;) {
      if (at_end()) error("missing ']'");
      if (peek() == ']') {
        ++i_;
        break;
      }
      bool single_a = false;
      CpSet a = atom(&single_a);
      if (peek() == '-' && i_ + 1 < p_.size() && peek(1) != ']') {
        ++i_;
        bool single_b = false;
        const CpSet b = atom(&single_b);
        if (!single_a || !single_b) error("a class range between a class escape and a character");
        if (a[0].lo > b[0].lo) error("a reversed class range");
        a = {{a[0].lo, b[0].lo}};
      }
      set = cp_union(set, a);
    }
    return negated ? cp_complement(set) : set;
  }

  std::vector<std::uint32_t> p_;
  std::size_t i_ = 0;
};

bool nullable(const Node& n) {
  switch (n.kind) {
    case Node::Kind::chars:
      return false;
    case Node::Kind::seq:
      for (const Node& k : n.kids)
        if (!nullable(k)) return false;
      return true;
    case Node::Kind::alt:
      for (const Node& k : n.kids)
        if (nullable(k)) return true;
      return false;
    case Node::Kind::repeat:
      return n.min == 0 || n.max == 0 || nullable(n.kids[0]);
  }
  return false;
}

// The node's language without the empty string (none if that is all it has): what a repetition
// repeats, so that no repeated rule can match nothing (the matcher's rule).
std::optional<Node> nonempty(const Node& n) {
  if (!nullable(n)) return n;
  Node alt;
  alt.kind = Node::Kind::alt;
  switch (n.kind) {
    case Node::Kind::chars:
      return n;
    case Node::Kind::seq:
      // A nonempty A B is A+ B, or (A empty) B+.
      for (std::size_t i = 0; i < n.kids.size(); ++i) {
        if (auto first = nonempty(n.kids[i])) {
          Node s;
          s.kids.push_back(std::move(*first));
          s.kids.insert(s.kids.end(), n.kids.begin() + static_cast<long>(i) + 1, n.kids.end());
          alt.kids.push_back(std::move(s));
        }
        if (!nullable(n.kids[i])) break;
      }
      break;
    case Node::Kind::alt:
      for (const Node& k : n.kids)
        if (auto ne = nonempty(k)) alt.kids.push_back(std::move(*ne));
      break;
    case Node::Kind::repeat: {
      if (n.max == 0) return std::nullopt;
      auto body = nonempty(n.kids[0]);
      if (!body) return std::nullopt;
      Node rep;
      rep.kind = Node::Kind::repeat;
      rep.min = 1;
      rep.max = n.max;
      rep.kids.push_back(std::move(*body));
      return rep;
    }
  }
  if (alt.kids.empty()) return std::nullopt;
  return alt;
}

// GBNF for a node: an atom (a rule name or a parenthesised group), or "" for the empty string.
std::string emit(RuleSet& rules, const Node& n) {
  switch (n.kind) {
    case Node::Kind::chars: {
      const CpSet s = cp_minus(n.set, {{0xD800, 0xDFFF}});
      if (s.empty()) throw RegexError{"a class that matches no character"};
      return json_chars(rules, s);
    }
    case Node::Kind::seq: {
      std::vector<std::string> parts;
      for (const Node& k : n.kids)
        if (std::string e = emit(rules, k); !e.empty()) parts.push_back(std::move(e));
      if (parts.size() <= 1) return parts.empty() ? "" : parts[0];
      std::string out;
      for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
      return "(" + out + ")";
    }
    case Node::Kind::alt: {
      std::vector<std::string> alts;
      bool empty = false;
      for (const Node& k : n.kids) {
        std::string e = emit(rules, k);
        if (e.empty())
          empty = true;
        else
          alts.push_back(std::move(e));
      }
      if (alts.empty()) return "";
      std::string out;
      for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
      if (alts.size() > 1) out = "(" + out + ")";
      return empty ? out + "?" : out;
    }
    case Node::Kind::repeat: {
      if (n.max == 0) return "";
      const Node* body = &n.kids[0];
      int min = n.min;
      std::optional<Node> ne;
      if (n.max < 0 && nullable(*body)) {
        ne = nonempty(*body);
        if (!ne) return "";
        body = &*ne;
        min = 0;
      }
      std::string e = emit(rules, *body);
      if (e.empty()) return "";
      // A repeated repetition ("x?" or "(x)*") is grouped first: GBNF takes one postfix.
      if (e.back() == '?' || e.back() == '*' || e.back() == '+' || e.back() == '}')
        e = "(" + e + ")";
      if (min == 1 && n.max == 1) return e;
      if (n.max < 0)
        return min == 0 ? e + "*" : min == 1 ? e + "+" : fmt::format("{}{{{},}}", e, min);
      if (min == 0 && n.max == 1) return e + "?";
      if (min == n.max) return fmt::format("{}{{{}}}", e, min);
      return fmt::format("{}{{{},{}}}", e, min, n.max);
    }
  }
  return "";
}

}  // namespace

std::string regex_string_gbnf(RuleSet& rules, std::string_view pattern, std::string_view hint) {
  std::vector<Branch> branches;
  try {
    branches = Parser(utf8_to_code_points(pattern)).parse();
  } catch (const std::runtime_error& e) {  // bad UTF-8
    throw RegexError{e.what()};
  }
  const std::string quote = "\"\\\"\"";
  std::vector<std::string> alts;
  for (const Branch& b : branches) {
    std::string body = quote;
    if (!b.anchored_start) body += " " + primitive(rules, "char") + "*";
    if (std::string e = emit(rules, b.seq); !e.empty()) body += " " + e;
    if (!b.anchored_end) body += " " + primitive(rules, "char") + "*";
    alts.push_back(body + " " + quote);
  }
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return rules.add(hint, out);
}

}  // namespace ls::grammar::detail
