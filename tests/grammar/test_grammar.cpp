// GBNF parsing, the matcher and token masks, each against an independent reference: a
// memoised recursive recogniser over the Grammar (which end positions each rule can reach from
// each position) decides membership and viable prefixes by another algorithm than the matcher's
// stacks; masks are checked against advancing a copy of the matcher over each token's bytes.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>
#include <string>

#include "core/error.h"
#include "grammar/compose.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"

namespace ls::grammar {
namespace {

std::shared_ptr<const Grammar> compile(const std::string& text) {
  return std::make_shared<const Grammar>(parse_gbnf(text, "test.gbnf"));
}

bool accepts(const std::shared_ptr<const Grammar>& g, const std::string& text) {
  Matcher m(g);
  return m.advance(text) && m.can_end();
}

std::string error_of(const std::string& text) {
  try {
    parse_gbnf(text, "test.gbnf");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// The reference: ends(rule, i) = every j such that rule derives text[i, j), over code points.
class Reference {
 public:
  Reference(const Grammar& g, std::u32string text) : g_(g), text_(std::move(text)) {}
  bool accepts() { return ends(g_.root, 0).count(text_.size()) != 0; }

 private:
  std::set<std::size_t> ends(int rule, std::size_t i) {
    const auto k = std::make_pair(rule, i);
    if (auto it = memo_.find(k); it != memo_.end()) return it->second;
    memo_[k] = {};  // (no left recursion: parse_gbnf refused it)
    std::set<std::size_t> out;
    for (const Sequence& s : g_.rules[rule].alternatives) {
      std::set<std::size_t> at{i};
      for (const Element& e : s) {
        std::set<std::size_t> next;
        for (std::size_t p : at) {
          if (e.kind == Element::Kind::rule) {
            const auto more = ends(e.rule, p);
            next.insert(more.begin(), more.end());
          } else if (p < text_.size() && e.matches(text_[p])) {
            next.insert(p + 1);
          }
        }
        at = std::move(next);
      }
      out.insert(at.begin(), at.end());
    }
    return memo_[k] = out;
  }
  const Grammar& g_;
  std::u32string text_;
  std::map<std::pair<int, std::size_t>, std::set<std::size_t>> memo_;
};

std::string utf8(const std::u32string& s) {
  std::string out;
  for (char32_t c : s) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | c >> 6);
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | c >> 12);
      out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | c >> 18);
      out += static_cast<char>(0x80 | (c >> 12 & 0x3F));
      out += static_cast<char>(0x80 | (c >> 6 & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

TEST(Gbnf, ParsesLiteralsClassesGroupsAndRepetitions) {
  const auto g = compile(R"(
    # a comment
    root ::= "a" [b-d]+ ("x" | "yz")? tail{2,3}
    tail ::= [^a-z]
  )");
  EXPECT_TRUE(accepts(g, "ab12"));
  EXPECT_TRUE(accepts(g, "abcdx..."));
  EXPECT_TRUE(accepts(g, "abyz90"));
  EXPECT_FALSE(accepts(g, "a12"));     // + needs one
  EXPECT_FALSE(accepts(g, "abx1"));    // {2,3} needs two
  EXPECT_FALSE(accepts(g, "ab1234"));  // at most three
  EXPECT_FALSE(accepts(g, "abxq1"));   // q is in a-z
  EXPECT_FALSE(accepts(g, "ab"));
}

TEST(Gbnf, EscapesAndUnicode) {
  const auto g = compile(
      "root ::= \"\\n\\t\\\"\\\\\" [\\x41-\\x43] \"\\u00e9\" [\\U0001F600-\\U0001F64F] \"日本\"");
  EXPECT_TRUE(accepts(g, "\n\t\"\\B\xC3\xA9\xF0\x9F\x98\x80日本"));
  EXPECT_FALSE(accepts(g, "\n\t\"\\D\xC3\xA9\xF0\x9F\x98\x80日本"));
  EXPECT_FALSE(accepts(g, "\n\t\"\\B\xC3\xA9\xF0\x9F\x99\x90日本"));  // U+1F650
}

TEST(Gbnf, ErrorsNameTheLineColumnAndWhat) {
  EXPECT_NE(error_of("root ::= foo").find("test.gbnf:1:10: rule 'foo' is used but never defined"),
            std::string::npos);
  EXPECT_NE(error_of("start ::= \"a\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(error_of("root ::= root \"a\" | \"b\"").find("can reach itself"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("can reach itself"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nx ::= \"\\q\"").find("test.gbnf:2:9: unknown escape"),
            std::string::npos);
  EXPECT_NE(error_of("root ::= \"abc").find("missing '\"'"), std::string::npos);
  EXPECT_NE(error_of("root ::= [a-").find("missing ']'"), std::string::npos);
  EXPECT_NE(error_of("root ::= (\"a\"").find("missing ')'"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{3,2}").find("reversed"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"{99999}").find("at most 10000"), std::string::npos);
  EXPECT_NE(error_of("root ::= \"a\"\nroot ::= \"b\"").find("defined twice"), std::string::npos);
  EXPECT_NE(error_of("").find("empty grammar"), std::string::npos);
}

TEST(Gbnf, PrintsBackToAnEquivalentGrammar) {
  const auto g = compile("root ::= (\"ab\" | [x-z^\\]])* \"!\"");
  const auto again = compile(to_gbnf(*g));
  for (const std::string s : {"!", "ab!", "x^]ab!", "abx", "a!", "]]!"})
    EXPECT_EQ(accepts(g, s), accepts(again, s)) << s;
}

// Random grammars' members and non-members: the matcher agrees with the reference on whole
// strings, and a prefix is viable for the matcher exactly when some extension the reference
// accepts exists among the strings tried (checked one way: a reference member's prefixes are
// all viable).
TEST(Matcher, AgreesWithTheReferenceRecogniser) {
  const std::vector<std::string> grammars = {
      "root ::= (\"a\" root \"b\")?",
      "root ::= item (\",\" item)*\nitem ::= [a-b]+ | \"[\" root? \"]\"",
      "root ::= x{0,3} \"é\"? y\nx ::= \"a\" | \"ab\"\ny ::= \"b\"* | \"ba\"",
      "root ::= (\"é\" | [a-b] | \"日\"){1,4} | \"\"",
      "root ::= e\ne ::= t (\"+\" t)*\nt ::= f (\"*\" f)*\nf ::= \"a\" | \"(\" e \")\"",
  };
  const std::u32string alphabet = U"abé日,[]+*()";
  std::mt19937 rng(7);
  for (const auto& text : grammars) {
    const auto g = compile(text);
    int members = 0;
    for (int trial = 0; trial < 3000; ++trial) {
      std::u32string s;
      const int len = static_cast<int>(rng() % 9);
      for (int i = 0; i < len; ++i) s += alphabet[rng() % alphabet.size()];
      const bool want = Reference(*g, s).accepts();
      members += want;
      EXPECT_EQ(accepts(g, utf8(s)), want) << text << " on " << utf8(s);
      if (want) {
        const std::string bytes = utf8(s);
        Matcher m(g);
        for (char c : bytes) ASSERT_TRUE(m.advance(std::string(1, c))) << text << " " << bytes;
      }
    }
    EXPECT_GT(members, 5) << text;  // the trial strings reach members, not only rejections
  }
}

TEST(Matcher, RejectsInvalidUtf8AndChecksPartialCharacters) {
  const auto g = compile("root ::= [a-z\\u00e0-\\u00ff]*");
  Matcher m(g);
  EXPECT_FALSE(m.advance("\x80"));      // a lone continuation byte
  EXPECT_FALSE(m.advance("\xC0\xA1"));  // overlong
  EXPECT_TRUE(m.advance("\xC3"));       // U+00C0..U+00FF: some are allowed
  EXPECT_FALSE(m.can_end());            // a character is pending
  EXPECT_TRUE(m.advance("\xA9"));       // é
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.advance("\xE6"));          // U+6000..U+6FFF: none allowed
  EXPECT_FALSE(m.advance("\xED\xA0\x80"));  // a surrogate
}

TEST(Matcher, LongStringsStayOneState) {
  const auto g = compile("root ::= \"\\\"\" [^\"]* \"\\\"\"");
  Matcher m(g);
  ASSERT_TRUE(m.advance("\"a"));
  const std::uint32_t s = m.state();
  ASSERT_TRUE(m.advance("bcdefgh"));
  EXPECT_EQ(m.state(), s);  // tail positions are popped: no growth per character
  EXPECT_TRUE(m.advance("\""));
  EXPECT_TRUE(m.can_end());
  EXPECT_FALSE(m.can_continue());
}

TEST(TokenMask, EqualsAdvancingEachTokenAlone) {
  // Tokens that split characters (é = C3 A9, 日 = E6 97 A5) and a special token.
  std::vector<std::string> tokens = {"a",
                                     "b",
                                     "ab",
                                     "ba",
                                     "\xC3",
                                     "\xA9",
                                     "\xC3\xA9",
                                     "\xE6",
                                     "\x97\xA5",
                                     "\xE6\x97",
                                     "é日",
                                     ",",
                                     "[",
                                     "]",
                                     "[a",
                                     "a]",
                                     ",a",
                                     "<|end|>",
                                     "",
                                     "aaa",
                                     "\xA9"
                                     "a"};
  std::vector<bool> special(tokens.size(), false);
  special[17] = true;
  const Vocabulary vocab(tokens, special);
  const auto g =
      compile("root ::= \"[\" (item (\",\" item)*)? \"]\"\nitem ::= ([a-b] | \"é\" | \"日\")+");
  std::mt19937 rng(3);
  for (int walk = 0; walk < 200; ++walk) {
    Matcher m(g);
    std::vector<std::uint64_t> bits;
    for (int step = 0; step < 12; ++step) {
      vocab.allowed(m.space(), m.state(), bits);
      std::vector<std::int32_t> allowed;
      for (std::int32_t id = 0; id < vocab.size(); ++id) {
        Matcher copy = m;
        const bool want = !special[id] && !tokens[id].empty() && copy.advance(tokens[id]);
        const bool got = bits[id / 64] >> (id % 64) & 1;
        ASSERT_EQ(got, want) << "token " << id << " at walk " << walk << " step " << step;
        if (got) allowed.push_back(id);
      }
      if (allowed.empty()) break;
      ASSERT_TRUE(m.advance(tokens[allowed[rng() % allowed.size()]]));
    }
  }
}

TEST(Compose, EncloseRepeatsWithSeparators) {
  const auto inner = parse_gbnf("root ::= [0-9]+", "t");
  const auto once = std::make_shared<const Grammar>(enclose(inner, "<a>\n", "\n</a>", false, ""));
  EXPECT_TRUE(accepts(once, "<a>\n12\n</a>"));
  EXPECT_FALSE(accepts(once, "<a>\n12\n</a>\n<a>\n3\n</a>"));
  const auto many = std::make_shared<const Grammar>(enclose(inner, "<a>\n", "\n</a>", true, "\n"));
  EXPECT_TRUE(accepts(many, "<a>\n12\n</a>\n<a>\n3\n</a>"));
  EXPECT_FALSE(accepts(many, "<a>\n12\n</a><a>\n3\n</a>"));
  EXPECT_FALSE(accepts(many, ""));
}

TEST(Compose, AnyOfKeepsEachGrammarsRules) {
  const auto a = parse_gbnf("root ::= x x\nx ::= \"a\"", "a");
  const auto b = parse_gbnf("root ::= x\nx ::= \"b\"+", "b");
  const auto g = std::make_shared<const Grammar>(any_of({a, b}, "ab"));
  for (const std::string s : {"aa", "b", "bbb"}) EXPECT_TRUE(accepts(g, s)) << s;
  for (const std::string s : {"a", "ab", "aab", ""}) EXPECT_FALSE(accepts(g, s)) << s;
}

// After the reasoning block: any text without "</think>" inside, then the answer. Checked
// against the definition on strings built from the pieces of the closing tag.
TEST(Compose, AfterThinkingStartsTheGrammarAfterTheBlock) {
  const auto g = std::make_shared<const Grammar>(
      after_thinking(parse_gbnf("root ::= \"{\" [0-9]* \"}\"", "json")));
  EXPECT_TRUE(accepts(g, "<think>\nhmm</think>\n\n{12}"));
  EXPECT_TRUE(accepts(g, "<think></think>{}"));
  EXPECT_TRUE(accepts(g, "<think>a </thin <<//think </think {} </think>{1}"));
  EXPECT_FALSE(accepts(g, "{12}"));                          // no block
  EXPECT_FALSE(accepts(g, "<think>x</think>\n\n\n\n\n{}"));  // five spaces: at most four
  EXPECT_FALSE(accepts(g, "<think>x</think>{1"));
  const std::vector<std::string> pieces = {"<", "/", "t", "h", "i", "n", "k", ">", "x", "</think>"};
  std::mt19937 rng(11);
  for (int trial = 0; trial < 3000; ++trial) {
    std::string body;
    const int len = static_cast<int>(rng() % 12);
    for (int i = 0; i < len; ++i) body += pieces[rng() % (pieces.size() - 1)];
    const bool clean = body.find("</think>") == std::string::npos;
    EXPECT_EQ(accepts(g, "<think>" + body + "</think>{7}"), clean) << body;
  }
}

}  // namespace
}  // namespace ls::grammar
