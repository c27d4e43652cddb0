// The text-level pieces of the JSON Schema converter: sets of code points, GBNF literals and
// classes, the rule table, the fixed rules (whitespace, strings, numbers, any value), and the
// spellings of string characters: every JSON spelling for strings the model writes freely (so a
// length counts decoded characters and an extra key is never a listed one however it is escaped),
// the one canonical spelling for strings the schema fixes (keys, enum and const strings), so that
// a model cannot wander through "\u0063ity"-style escapes of them.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema_internal.h"

namespace ls::grammar::detail {

// --- sets of code points ---

CpSet cp_normalize(CpSet s) {
  std::sort(s.begin(), s.end(), [](const CpRange& a, const CpRange& b) { return a.lo < b.lo; });
  CpSet out;
  for (const CpRange& r : s) {
    if (r.lo > r.hi) continue;
    if (!out.empty() && r.lo <= out.back().hi + 1)
      out.back().hi = std::max(out.back().hi, r.hi);
    else
      out.push_back(r);
  }
  return out;
}

CpSet cp_union(const CpSet& a, const CpSet& b) {
  CpSet all = a;
  all.insert(all.end(), b.begin(), b.end());
  return cp_normalize(std::move(all));
}

CpSet cp_complement(const CpSet& s) {
  CpSet out;
  std::uint32_t next = 0;  // the first code point not yet covered
  bool done = false;
  for (const CpRange& r : s) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    if (r.hi >= kMaxCodePoint) {
      done = true;
      break;
    }
    next = r.hi + 1;
  }
  if (!done) out.push_back({next, kMaxCodePoint});
  return out;
}

CpSet cp_intersect(const CpSet& a, const CpSet& b) {
  return cp_complement(cp_union(cp_complement(a), cp_complement(b)));
}

CpSet cp_minus(const CpSet& a, const CpSet& b) {
  return cp_intersect(a, cp_complement(b));
}

bool cp_contains(const CpSet& s, std::uint32_t cp) {
  return std::any_of(s.begin(), s.end(),
                     [&](const CpRange& r) { return r.lo <= cp && cp <= r.hi; });
}

// --- GBNF text ---

namespace {

std::string gbnf_class(const CpSet& s, bool negated) {
  std::string out = negated ? "[^" : "[";
  for (const CpRange& r : s) {
    out += escape_gbnf_char(r.lo, true);
    if (r.hi != r.lo) out += (r.hi == r.lo + 1 ? "" : "-") + escape_gbnf_char(r.hi, true);
  }
  return out + "]";
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += parts[i];
  }
  return out;
}

// A sequence of GBNF items with adjacent literal characters joined into one literal.
class SeqText {
 public:
  void literal(std::uint32_t cp) { pending_ += escape_gbnf_char(cp, false); }
  void item(std::string expr) {
    flush();
    parts_.push_back(std::move(expr));
  }
  std::string str() {
    flush();
    return parts_.empty() ? "\"\"" : join(parts_, " ");
  }

 private:
  void flush() {
    if (!pending_.empty()) parts_.push_back("\"" + pending_ + "\"");
    pending_.clear();
  }
  std::string pending_;
  std::vector<std::string> parts_;
};

std::string group(const std::vector<std::string>& alts) {
  return alts.size() == 1 ? alts[0] : "(" + join(alts, " | ") + ")";
}

}  // namespace

std::vector<std::uint32_t> utf8_to_code_points(std::string_view s) {
  return grammar::utf8_to_code_points(s, "a schema string");
}

std::string gbnf_literal(std::string_view utf8) {
  std::string out = "\"";
  for (std::uint32_t cp : utf8_to_code_points(utf8)) out += escape_gbnf_char(cp, false);
  return out + "\"";
}

// --- the rule table ---

std::string RuleSet::unique_name(std::string_view hint) {
  std::string base;
  for (char c : hint) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok)
      base += c;
    else if (!base.empty() && base.back() != '-')
      base += '-';
  }
  while (!base.empty() && base.back() == '-') base.pop_back();
  if (base.size() > 48) base = base.substr(0, 48);
  if (base.empty()) base = "r";
  std::string name = base;
  for (int n = 2; index_.count(name) != 0; ++n) name = fmt::format("{}-v{}", base, n);
  return name;
}

std::string RuleSet::add(std::string_view hint, const std::string& body) {
  if (const auto it = by_body_.find(body); it != by_body_.end()) return it->second;
  const std::string name = reserve(hint);
  define(name, body);
  return name;
}

std::string RuleSet::reserve(std::string_view hint) {
  const std::string name = unique_name(hint);
  index_[name] = rules_.size();
  rules_.push_back({name, ""});
  return name;
}

void RuleSet::define(const std::string& name, const std::string& body) {
  rules_[index_.at(name)].second = body;
  by_body_.emplace(body, name);
}

std::string RuleSet::text() const {
  std::string out;
  const auto root = index_.find("root");
  if (root != index_.end()) out += "root ::= " + rules_[root->second].second + "\n";
  for (const auto& [name, body] : rules_)
    if (name != "root") out += name + " ::= " + body + "\n";
  return out;
}

// --- string characters ---

namespace {

// JSON's two-character escapes: the character and the letter after the backslash.
constexpr std::pair<std::uint32_t, char> kShortEscapes[] = {{'"', '"'},  {'\\', '\\'}, {'/', '/'},
                                                            {0x08, 'b'}, {0x0C, 'f'},  {'\n', 'n'},
                                                            {'\r', 'r'}, {'\t', 't'}};

// What may appear unescaped in a JSON string: all but ", \, the controls (and surrogates, which
// UTF-8 cannot carry).
const CpSet kRaw = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, kMaxCodePoint}};
const CpSet kSurrogates = {{0xD800, 0xDFFF}};
const CpSet kAllChars = cp_minus({{0, kMaxCodePoint}}, kSurrogates);

// A hex digit whose value is in [lo, hi], either case.
std::string hex_digit_class(int lo, int hi) {
  if (lo == hi && lo < 10) return fmt::format("\"{}\"", static_cast<char>('0' + lo));
  CpSet s;
  if (lo < 10)
    s.push_back(
        {static_cast<std::uint32_t>('0' + lo), static_cast<std::uint32_t>('0' + std::min(hi, 9))});
  if (hi >= 10) {
    const auto a = static_cast<std::uint32_t>(std::max(lo, 10) - 10),
               b = static_cast<std::uint32_t>(hi - 10);
    s.push_back({'A' + a, 'A' + b});
    s.push_back({'a' + a, 'a' + b});
  }
  return gbnf_class(cp_normalize(s), false);
}

// Four hex digits spelling a value in [lo, hi], any case, as alternatives.
void hex4_range(std::uint32_t lo, std::uint32_t hi, std::vector<std::string>& out) {
  std::vector<int> a(4), b(4);
  for (int i = 0; i < 4; ++i) {
    a[i] = static_cast<int>(lo >> (12 - 4 * i) & 0xF);
    b[i] = static_cast<int>(hi >> (12 - 4 * i) & 0xF);
  }
  for (const auto& spans : fixed_width_range(a, b, 16)) {
    SeqText seq;
    for (std::size_t i = 0; i < spans.size();) {
      if (spans[i].first == 0 && spans[i].second == 15) {
        std::size_t j = i;
        while (j < spans.size() && spans[j].first == 0 && spans[j].second == 15) ++j;
        seq.item(j - i == 1 ? "[0-9a-fA-F]" : fmt::format("[0-9a-fA-F]{{{}}}", j - i));
        i = j;
      } else if (spans[i].first == spans[i].second && spans[i].first < 10) {
        seq.literal(static_cast<std::uint32_t>('0' + spans[i].first));
        ++i;
      } else {
        seq.item(hex_digit_class(spans[i].first, spans[i].second));
        ++i;
      }
    }
    out.push_back(seq.str());
  }
}

std::string hex4_set(const CpSet& s) {
  std::vector<std::string> alts;
  for (const CpRange& r : s) hex4_range(r.lo, r.hi, alts);
  return group(alts);
}

// Astral code points as \uD8xx\uDCxx pairs: the text after the first "\u".
std::string surrogate_pairs(const CpSet& s) {
  std::vector<std::string> alts;
  const auto pair = [&](std::uint32_t hlo, std::uint32_t hhi, std::uint32_t llo,
                        std::uint32_t lhi) {
    alts.push_back(hex4_set({{hlo, hhi}}) + " \"\\\\u\" " + hex4_set({{llo, lhi}}));
  };
  for (const CpRange& r : s) {
    const std::uint32_t ha = 0xD800 + ((r.lo - 0x10000) >> 10),
                        la = 0xDC00 + ((r.lo - 0x10000) & 0x3FF);
    const std::uint32_t hb = 0xD800 + ((r.hi - 0x10000) >> 10),
                        lb = 0xDC00 + ((r.hi - 0x10000) & 0x3FF);
    if (ha == hb) {
      pair(ha, ha, la, lb);
      continue;
    }
    std::uint32_t first = ha, last = hb;
    if (la != 0xDC00) pair(ha, ha, la, 0xDFFF), ++first;
    if (lb != 0xDFFF) --last;
    if (first <= last) pair(first, last, 0xDC00, 0xDFFF);
    if (lb != 0xDFFF) pair(hb, hb, 0xDC00, lb);
  }
  return group(alts);
}

}  // namespace

std::string json_chars(RuleSet& rules, const CpSet& set) {
  const CpSet s = cp_minus(set, kSurrogates);
  if (s == kAllChars) return primitive(rules, "char");
  if (s.empty()) fail("internal: an empty set of string characters");
  std::vector<std::string> alts;
  if (const CpSet raw = cp_intersect(s, kRaw); !raw.empty()) {
    // The shorter of the class and its negation (a negation also excludes ", \ and controls).
    const CpSet missing = cp_minus(kRaw, raw);
    if (raw.size() == 1 && raw[0].lo == raw[0].hi)
      alts.push_back("\"" + escape_gbnf_char(raw[0].lo, false) + "\"");
    else if (missing.size() + 3 < raw.size())
      alts.push_back(gbnf_class(
          cp_union(missing, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}, {0xD800, 0xDFFF}}), true));
    else
      alts.push_back(gbnf_class(raw, false));
  }
  std::vector<std::string> escapes;
  CpSet letters;
  for (const auto& [cp, letter] : kShortEscapes)
    if (cp_contains(s, cp))
      letters.push_back({static_cast<std::uint32_t>(letter), static_cast<std::uint32_t>(letter)});
  if (letters.size() == 1)
    escapes.push_back(gbnf_literal(std::string(1, static_cast<char>(letters[0].lo))));
  if (letters.size() > 1) escapes.push_back(gbnf_class(cp_normalize(letters), false));
  if (const CpSet bmp = cp_intersect(s, {{0, 0xD7FF}, {0xE000, 0xFFFF}}); !bmp.empty())
    escapes.push_back("\"u\" " + hex4_set(bmp));
  if (const CpSet astral = cp_intersect(s, {{0x10000, kMaxCodePoint}}); !astral.empty())
    escapes.push_back("\"u\" " + surrogate_pairs(astral));
  if (!escapes.empty()) alts.push_back("\"\\\\\" " + group(escapes));
  return rules.add("char-set", join(alts, " | "));
}

namespace {

// The canonical spelling of one code point as GBNF literal text (no quotes): raw where JSON allows
// it, else the two-character escape, else \u00xx in lowercase, as Python's
// json.dumps(s, ensure_ascii=False) writes it. `/` stays raw: its escape is optional.
std::string canonical(std::uint32_t cp) {
  if (cp_contains(kRaw, cp)) return escape_gbnf_char(cp, false);
  for (const auto& [c, letter] : kShortEscapes)
    if (c == cp) return "\\\\" + escape_gbnf_char(static_cast<std::uint32_t>(letter), false);
  return fmt::format("\\\\u{:04x}", cp);  // a control character: below U+0020
}

// Every spelling of one code point, as an expression: what an extra key must avoid.
std::string spellings(std::uint32_t cp) {
  std::vector<std::string> alts;
  if (cp_contains(kRaw, cp)) alts.push_back("\"" + escape_gbnf_char(cp, false) + "\"");
  for (const auto& [c, letter] : kShortEscapes)
    if (c == cp)
      alts.push_back("\"\\\\" + escape_gbnf_char(static_cast<std::uint32_t>(letter), false) + "\"");
  const auto hex4 = [](std::uint32_t v) {
    std::vector<std::string> one;
    hex4_range(v, v, one);
    return one[0];
  };
  // "\\u" joined with the escape's leading literal digits: "\\u00e" [9] reads better.
  const auto escape = [](const std::string& digits) {
    return digits[0] == '"' ? "\"\\\\u" + digits.substr(1) : "\"\\\\u\" " + digits;
  };
  if (cp <= 0xFFFF) {
    alts.push_back(escape(hex4(cp)));
  } else {
    const std::uint32_t hi = 0xD800 + ((cp - 0x10000) >> 10),
                        lo = 0xDC00 + ((cp - 0x10000) & 0x3FF);
    alts.push_back(escape(hex4(hi)) + " " + escape(hex4(lo)));
  }
  return "(" + join(alts, " | ") + ")";
}

struct TrieNode {
  bool terminal = false;
  std::vector<std::pair<std::uint32_t, std::size_t>> children;  // code point, node index
};

// The strings' code points as a trie (node 0 the root), so that strings sharing a prefix share
// its rule: a parse then follows one branch, not one per string.
std::vector<TrieNode> trie_of(const std::vector<std::string>& strings) {
  std::vector<TrieNode> trie(1);
  for (const std::string& s : strings) {
    std::size_t at = 0;
    for (std::uint32_t cp : utf8_to_code_points(s)) {
      if (cp >= 0xD800 && cp <= 0xDFFF) fail("a schema string holds a lone surrogate U+{:04X}", cp);
      auto& kids = trie[at].children;
      const auto it =
          std::find_if(kids.begin(), kids.end(), [&](const auto& k) { return k.first == cp; });
      if (it != kids.end()) {
        at = it->second;
      } else {
        kids.push_back({cp, trie.size()});
        at = trie.size();
        trie.emplace_back();
      }
    }
    trie[at].terminal = true;
  }
  return trie;
}

}  // namespace

std::string json_string_literal(RuleSet& /*rules*/, std::string_view utf8) {
  std::string out = "\"\\\"";
  for (std::uint32_t cp : utf8_to_code_points(utf8)) {
    if (cp >= 0xD800 && cp <= 0xDFFF) fail("a schema string holds a lone surrogate U+{:04X}", cp);
    out += canonical(cp);
  }
  return out + "\\\"\"";
}

std::string json_string_except(RuleSet& rules, const std::vector<std::string>& excluded,
                               std::string_view hint) {
  if (excluded.empty()) return primitive(rules, "string");
  const std::vector<TrieNode> trie = trie_of(excluded);
  const std::string rest = rules.add("string-rest", primitive(rules, "char") + "* \"\\\"\"");
  // The rest of a string (closing quote included) that has read node n's prefix so far: it may
  // end unless the prefix is excluded, go on to a child, or leave the trie with any other
  // character (then nothing more is excluded).
  std::vector<std::string> names(trie.size());
  for (std::size_t n = trie.size(); n-- > 0;) {
    std::vector<std::string> alts;
    if (!trie[n].terminal) alts.push_back("\"\\\"\"");
    CpSet taken;
    for (const auto& [cp, child] : trie[n].children) {
      alts.push_back(spellings(cp) + " " + names[child]);
      taken.push_back({cp, cp});
    }
    alts.push_back(json_chars(rules, cp_minus(kAllChars, cp_normalize(taken))) + " " + rest);
    names[n] = rules.add(fmt::format("{}-k{}", hint, n), join(alts, " | "));
  }
  return "\"\\\"\" " + names[0];
}

std::string json_string_one_of(RuleSet& rules, const std::vector<std::string>& values,
                               std::string_view hint) {
  const std::vector<TrieNode> trie = trie_of(values);
  // rest(n): the rest of the string after node n's prefix, closing quote included, in canonical
  // spelling; a rule where it branches, single-child runs (and a final quote) in one literal.
  std::function<std::string(std::size_t)> rest = [&](std::size_t n) -> std::string {
    std::vector<std::string> alts;
    if (trie[n].terminal) alts.push_back("\"\\\"\"");
    for (auto [cp, child] : trie[n].children) {
      std::string text = canonical(cp);
      while (!trie[child].terminal && trie[child].children.size() == 1) {
        text += canonical(trie[child].children[0].first);
        child = trie[child].children[0].second;
      }
      if (trie[child].children.empty())  // the string ends here
        alts.push_back("\"" + text + "\\\"\"");
      else
        alts.push_back("\"" + text + "\" " + rest(child));
    }
    return alts.size() == 1 ? alts[0] : rules.add(fmt::format("{}-s", hint), join(alts, " | "));
  };
  return "\"\\\"\" " + rest(0);
}

// --- the fixed rules ---

std::string primitive(RuleSet& rules, const std::string& name) {
  if (rules.has(name)) return name;
  const auto fixed = [&](const std::string& n, const std::string& body) {
    rules.reserve(n);
    rules.define(n, body);
  };
  if (name == "ws") {
    // Nothing, one space, or a line break and its indentation: what compact and pretty-printed
    // JSON use, and no run a model can loop on.
    fixed(name, fmt::format("(\" \" | \"\\n\" [ \\t]{{0,{}}})?", kMaxIndent));
  } else if (name == "char") {
    // Unescaped (all but ", \ and controls), a two-character escape, \uXXXX outside the
    // surrogates, or a surrogate pair: one decoded code point each.
    fixed(name, "[^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" " +
                    hex4_set({{0, 0xD7FF}, {0xE000, 0xFFFF}}) + " | \"u\" " +
                    surrogate_pairs({{0x10000, kMaxCodePoint}}) + ")");
  } else if (name == "string") {
    fixed(name, "\"\\\"\" " + primitive(rules, "char") + "* \"\\\"\"");
  } else if (name == "integer") {
    fixed(name, "\"-\"? (\"0\" | [1-9] [0-9]*)");
  } else if (name == "number") {
    fixed(name, "\"-\"? (\"0\" | [1-9] [0-9]*) (\".\" [0-9]+)? ([eE] [-+]? [0-9]+)?");
  } else if (name == "boolean") {
    fixed(name, "\"true\" | \"false\"");
  } else if (name == "null") {
    fixed(name, "\"null\"");
  } else if (name == "value" || name == "object" || name == "array") {
    for (const char* n : {"value", "object", "member", "array"}) rules.reserve(n);
    const std::string ws = primitive(rules, "ws");
    rules.define("value", "object | array | " + primitive(rules, "string") + " | " +
                              primitive(rules, "number") + " | " + primitive(rules, "boolean") +
                              " | " + primitive(rules, "null"));
    rules.define("object", "\"{\" ws (member (ws \",\" ws member)* ws)? \"}\"");
    rules.define("member", "string ws \":\" ws value");
    rules.define("array", "\"[\" ws (value (ws \",\" ws value)* ws)? \"]\"");
  } else {
    fail("internal: no primitive rule '{}'", name);
  }
  return name;
}

}  // namespace ls::grammar::detail
