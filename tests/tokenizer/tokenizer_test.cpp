// Unit tests of the tokenizer: the qwen2-vectors fixture (tests/fixtures, ids from Hugging Face),
// the public API on the real Qwen tokenizer.json, the streaming detokenizer, the pieces of the
// pre-tokenizer, the two BPE merge loops, the Unicode tables, added-token flags and the errors
// for unsupported tokenizer.json features (on small synthetic files).
#include <gtest/gtest.h>
#include <utf8proc.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/bpe.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using json = nlohmann::json;
using Ids = std::vector<std::int32_t>;

const std::string kQwenJson = std::string(LS_QWEN_TOKENIZER_DIR) + "/tokenizer.json";

const ls::tok::Tokenizer& qwen() {
  static const ls::tok::Tokenizer tok = ls::tok::Tokenizer::load(kQwenJson);
  return tok;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool valid_utf8(const std::string& s) {
  return ls::tok::utf8_validate(s) == s.size();
}

// ---- the fixture ------------------------------------------------------------------------------

TEST(QwenVectors, EveryCaseMatchesHuggingFace) {
  const std::string dir = std::string(LS_FIXTURES_DIR) + "/";
  const std::string inp = read_file(dir + "qwen2-vectors.inp");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> cases;
  for (std::size_t pos = 0;;) {
    const std::size_t q = inp.find(sep, pos);
    if (q == std::string::npos) break;
    cases.push_back(inp.substr(pos, q - pos));
    pos = q + sep.size();
  }
  std::ifstream out(dir + "qwen2-vectors.out");
  std::string line;
  std::size_t i = 0, mismatches = 0;
  while (std::getline(out, line)) {
    ASSERT_LT(i, cases.size());
    Ids want;
    std::istringstream ls(line);
    for (std::int32_t id; ls >> id;) want.push_back(id);
    const Ids got = qwen().encode(cases[i]);
    if (got != want) ++mismatches;
    EXPECT_EQ(got, want) << "case " << i << ": " << json(cases[i]).dump();
    EXPECT_EQ(qwen().decode(got), cases[i]) << "case " << i;  // the fixture texts are NFC
    ++i;
  }
  EXPECT_EQ(i, cases.size());
  EXPECT_GE(i, 40u);
  std::printf("qwen2-vectors: %zu cases, %zu mismatches\n", i, mismatches);
}

// ---- the public API on the real tokenizer ------------------------------------------------------

TEST(Tokenizer, SizeAndLookups) {
  const auto& t = qwen();
  EXPECT_EQ(t.size(), 151669);
  EXPECT_EQ(t.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(t.token_to_id("<|endoftext|>"), 151643);
  EXPECT_EQ(t.token_to_id("<think>"), 151667);
  EXPECT_EQ(t.token_to_id("Ġworld"), 1879);
  EXPECT_EQ(t.token_to_id("ä¸"), 3490);
  EXPECT_EQ(t.token_to_id("no such token"), std::nullopt);
  EXPECT_TRUE(t.is_special(151645));
  EXPECT_TRUE(t.is_special(151643));
  EXPECT_FALSE(t.is_special(151657));  // <tool_call> is an added token but not special
  EXPECT_FALSE(t.is_special(9707));
  EXPECT_FALSE(t.is_special(-1));
  EXPECT_FALSE(t.is_special(152000));
}

TEST(Tokenizer, KnownEncodings) {
  const auto& t = qwen();
  EXPECT_EQ(t.encode("中国的首都是"), (Ids{105538, 59975, 100132}));
  EXPECT_EQ(t.encode("😀"), (Ids{141334}));
  EXPECT_EQ(t.encode("Hello world 中国的首都是 <|im_end|> 12345"),
            (Ids{9707, 1879, 220, 105538, 59975, 100132, 220, 151645, 220, 16, 17, 18, 19, 20}));
  EXPECT_EQ(t.encode("<|im_start|>user\nHi<|im_end|>"), (Ids{151644, 872, 198, 13048, 151645}));
  EXPECT_EQ(t.encode(""), Ids{});
}

TEST(Tokenizer, SplitSpecialTreatsSpecialTokenTextAsPlainText) {
  const auto& t = qwen();
  EXPECT_EQ(t.encode("<|im_end|>"), (Ids{151645}));
  EXPECT_EQ(t.encode("<|im_end|>", true), (Ids{27, 91, 318, 6213, 91, 29}));
  // The text stays part of its surroundings (" <|" is one piece), and non-special added tokens
  // such as <tool_call> still match.
  EXPECT_EQ(t.encode("a <|im_end|> b<tool_call>x", true),
            (Ids{64, 82639, 318, 6213, 91, 29, 293, 151657, 87}));
  EXPECT_EQ(t.encode("a <|im_end|> b<tool_call>x"), (Ids{64, 220, 151645, 293, 151657, 87}));
}

TEST(Tokenizer, RejectsInvalidUtf8) {
  EXPECT_THROW(qwen().encode("abc\xFF"), ls::Error);
  EXPECT_THROW(qwen().encode("\xE4\xB8"), ls::Error);
  EXPECT_THROW(qwen().encode("\xED\xA0\x80"), ls::Error);  // a surrogate
  EXPECT_THROW(qwen().encode("\xC0\xAF"), ls::Error);      // overlong
  EXPECT_NO_THROW(qwen().encode(std::string("a\0b", 3)));
}

TEST(Tokenizer, EmbeddedNulIsOrdinaryText) {
  const Ids ids = qwen().encode(std::string("a\0b", 3));
  EXPECT_EQ(qwen().decode(ids), std::string("a\0b", 3));
}

TEST(Tokenizer, DecodeAndSkipSpecial) {
  const auto& t = qwen();
  const Ids ids{151644, 872, 198, 13048, 151645, 151657};
  EXPECT_EQ(t.decode(ids), "<|im_start|>user\nHi<|im_end|><tool_call>");
  EXPECT_EQ(t.decode(ids, true), "user\nHi<tool_call>");
}

TEST(Tokenizer, IdsWithoutTextAreEmpty) {
  const auto& t = qwen();
  for (std::int32_t id : {151669, 151700, 151935, 152063, -1, -100}) {
    EXPECT_EQ(t.token_bytes(id), "") << id;
    EXPECT_EQ(t.token_text(id), "") << id;
    EXPECT_FALSE(t.is_special(id));
  }
  EXPECT_EQ(t.decode(Ids{9707, 151700, -5, 151935, 1879}), "Hello world");
}

TEST(Tokenizer, TokenBytesAndText) {
  const auto& t = qwen();
  EXPECT_EQ(t.token_bytes(1879), " world");
  EXPECT_EQ(t.token_text(1879), " world");
  EXPECT_EQ(t.token_bytes(3490), "\xE4\xB8");
  EXPECT_EQ(t.token_text(3490), "\\xE4\\xB8");
  EXPECT_EQ(t.token_text(151645), "<|im_end|>");
  EXPECT_EQ(t.token_text(198), "\n");
  EXPECT_EQ(t.token_text(105538), "中国的");
  // Every id's text is valid UTF-8, and the bytes of every id round-trip through decode.
  for (std::int32_t id = 0; id < t.size(); ++id) {
    ASSERT_TRUE(valid_utf8(t.token_text(id))) << id;
    const std::string b = t.token_bytes(id);
    ASSERT_FALSE(b.empty()) << id;
    if (valid_utf8(b)) {
      ASSERT_EQ(t.decode(Ids{id}), b) << id;
    }
  }
}

TEST(Tokenizer, DecodeReplacesIllFormedBytes) {
  const auto& t = qwen();
  const std::int32_t e4 = *t.token_to_id("ä");  // the byte 0xE4 alone
  const std::int32_t b8 = *t.token_to_id("¸");  // 0xB8
  const std::int32_t a = *t.token_to_id("A");
  EXPECT_EQ(t.decode(Ids{e4, b8}), "\xEF\xBF\xBD");  // one maximal subpart
  EXPECT_EQ(t.decode(Ids{e4, a}),
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(t.decode(Ids{b8, b8}), "\xEF\xBF\xBD\xEF\xBF\xBD");  // two lone continuation bytes
  EXPECT_EQ(t.decode(Ids{e4, b8, *t.token_to_id("Ń")}), "中");
}

TEST(Tokenizer, IsCopyableAndSharable) {
  ls::tok::Tokenizer copy = qwen();
  EXPECT_EQ(copy.encode("Hello world"), (Ids{9707, 1879}));
  EXPECT_EQ(copy.source(), kQwenJson);
}

// ---- the streaming detokenizer -----------------------------------------------------------------

TEST(StreamDecoder, HoldsBackPartialCharacters) {
  const auto& t = qwen();
  const Ids bytes = {*t.token_to_id("ð"), *t.token_to_id("Ł"), *t.token_to_id("ĺ"),
                     *t.token_to_id("Ģ")};  // F0 9F 98 80 = 😀
  ls::tok::StreamDecoder d(t);
  EXPECT_EQ(d.push(bytes[0]), "");
  EXPECT_EQ(d.push(bytes[1]), "");
  EXPECT_EQ(d.push(bytes[2]), "");
  EXPECT_EQ(d.pending(), 3u);
  EXPECT_EQ(d.push(bytes[3]), "😀");
  EXPECT_EQ(d.pending(), 0u);
  EXPECT_EQ(d.flush(), "");
}

TEST(StreamDecoder, FlushReplacesAnIncompleteTail) {
  const auto& t = qwen();
  ls::tok::StreamDecoder d(t);
  EXPECT_EQ(d.push(9707), "Hello");
  EXPECT_EQ(d.push(3490), "");  // E4 B8: the first two bytes of 中
  EXPECT_EQ(d.flush(), "\xEF\xBF\xBD");
  EXPECT_EQ(d.push(1879), " world");  // usable again after flush
}

TEST(StreamDecoder, ReplacesInvalidBytesAsSoonAsTheyAreInvalid) {
  const auto& t = qwen();
  ls::tok::StreamDecoder d(t);
  EXPECT_EQ(d.push(*t.token_to_id("ä")), "");
  EXPECT_EQ(d.push(*t.token_to_id("A")),
            "\xEF\xBF\xBD"
            "A");
  EXPECT_EQ(d.push(*t.token_to_id("¸")), "\xEF\xBF\xBD");  // a lone continuation byte
}

TEST(StreamDecoder, SkipSpecialAndIdsWithoutText) {
  const auto& t = qwen();
  ls::tok::StreamDecoder d(t, true);
  EXPECT_EQ(d.push(151644), "");
  EXPECT_EQ(d.push(872), "user");
  EXPECT_EQ(d.push(151700), "");
  EXPECT_EQ(d.push(151657), "<tool_call>");
  ls::tok::StreamDecoder keep(t);
  EXPECT_EQ(keep.push(151644), "<|im_start|>");
}

TEST(StreamDecoder, RandomIdSequencesMatchDecode) {
  const auto& t = qwen();
  std::mt19937 rng(7);
  std::vector<std::int32_t> byte_tokens;
  for (int b = 0; b < 256; ++b) {
    std::string bytes(1, static_cast<char>(b));
    for (std::int32_t id = 0; id < 256 + 2000 && id < t.size(); ++id) {
      if (t.token_bytes(id) == bytes) {
        byte_tokens.push_back(id);
        break;
      }
    }
  }
  ASSERT_EQ(byte_tokens.size(), 256u);
  for (int round = 0; round < 2000; ++round) {
    Ids ids;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      const unsigned k = rng() % 10;
      if (k < 5) {
        ids.push_back(byte_tokens[rng() % 256]);
      } else if (k < 9) {
        ids.push_back(static_cast<std::int32_t>(rng() % 151669));
      } else {
        ids.push_back(151669 + static_cast<std::int32_t>(rng() % 300));
      }
    }
    for (bool skip : {false, true}) {
      ls::tok::StreamDecoder d(t, skip);
      std::string all;
      for (std::int32_t id : ids) {
        const std::string piece = d.push(id);
        ASSERT_TRUE(valid_utf8(piece));
        all += piece;
      }
      all += d.flush();
      ASSERT_EQ(all, t.decode(ids, skip)) << "round " << round;
    }
  }
}

// ---- the pre-tokenizer -------------------------------------------------------------------------

std::vector<std::string> pieces(std::string_view s) {
  std::vector<std::string> out;
  ls::tok::qwen2_pretokenize(
      s, [&](std::size_t b, std::size_t e) { out.emplace_back(s.substr(b, e - b)); });
  return out;
}
using Pieces = std::vector<std::string>;

TEST(PreTokenizer, RegexAlternatives) {
  EXPECT_EQ(pieces("Hello world"), (Pieces{"Hello", " world"}));
  EXPECT_EQ(pieces("I'm you'LL it's"), (Pieces{"I", "'m", " you", "'LL", " it", "'s"}));
  EXPECT_EQ(pieces("12345"), (Pieces{"1", "2", "3", "4", "5"}));
  EXPECT_EQ(pieces("a   b"), (Pieces{"a", "  ", " b"}));
  EXPECT_EQ(pieces("a  \n\n  b"), (Pieces{"a", "  \n\n", " ", " b"}));
  EXPECT_EQ(pieces("x !!\n\ny"), (Pieces{"x", " !!\n\n", "y"}));
  EXPECT_EQ(pieces("   "), (Pieces{"   "}));
  EXPECT_EQ(pieces(" 1"), (Pieces{" ", "1"}));
  EXPECT_EQ(pieces("$hello ..world"), (Pieces{"$hello", " ..", "world"}));
  EXPECT_EQ(pieces("中国，北京"), (Pieces{"中国", "，北京"}));
  EXPECT_EQ(pieces("\r\nabc"), (Pieces{"\r\n", "abc"}));
  EXPECT_EQ(pieces("\tabc"), (Pieces{"\tabc"}));
  EXPECT_EQ(pieces("\u3000\u3000x"), (Pieces{"\u3000", "\u3000x"}));
  EXPECT_EQ(pieces("''s"), (Pieces{"''", "s"}));
}

TEST(PreTokenizer, FollowsOnigurumaWhereJavaScriptDiffers) {
  // U+0085 (NEL) is \s for Oniguruma (Hugging Face) but not for JavaScript.
  EXPECT_EQ(pieces("a\u0085\u0085b"), (Pieces{"a", "\u0085", "\u0085b"}));
  // U+FEFF is \s for JavaScript only.
  EXPECT_EQ(pieces("a \uFEFF"), (Pieces{"a", " \uFEFF"}));
  // (?i:'s) also matches U+017F LATIN SMALL LETTER LONG S under Oniguruma's case folding.
  EXPECT_EQ(pieces("it'ſ"), (Pieces{"it", "'ſ"}));
}

// ---- BPE: the array scan and the heap give the same result --------------------------------------

TEST(Bpe, ScanAndHeapAgree) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    ls::tok::BpeModel bpe;
    std::int32_t byte_ids[256];
    for (int b = 0; b < 256; ++b) byte_ids[b] = b;
    bpe.set_byte_ids(byte_ids);
    std::vector<std::int32_t> tokens;
    for (int b = 'a'; b <= 'f'; ++b) tokens.push_back(b);
    std::int32_t next = 256;
    for (int m = 0; m < 200; ++m) {
      const std::int32_t l = tokens[rng() % tokens.size()];
      const std::int32_t r = tokens[rng() % tokens.size()];
      if (bpe.lookup(l, r) != ls::tok::BpeModel::kNoRank) continue;
      bpe.add_merge(l, r, next, static_cast<std::uint32_t>(m));
      tokens.push_back(next++);
    }
    bpe.finalize();
    for (int w = 0; w < 300; ++w) {
      std::string word;
      const std::size_t n = 1 + rng() % (w < 200 ? 40 : 255);
      for (std::size_t i = 0; i < n; ++i) word.push_back(static_cast<char>('a' + rng() % 6));
      Ids scan, heap;
      bpe.encode_word_scan(word, scan);
      bpe.encode_word_heap(word, heap);
      ASSERT_EQ(scan, heap) << word;
    }
  }
}

TEST(Bpe, VeryLongWordsAreFast) {
  // 200 KB single words must not be quadratic (they go through the heap).
  const std::string a(200000, 'a');
  const std::string han = [] {
    std::string s;
    for (int i = 0; i < 50000; ++i) s += "中";
    return s;
  }();
  const Ids ia = qwen().encode(a);
  const Ids ih = qwen().encode(han);
  EXPECT_EQ(qwen().decode(ia), a);
  EXPECT_EQ(qwen().decode(ih), han);
}

// ---- Unicode tables ----------------------------------------------------------------------------

TEST(Unicode, Classes) {
  using namespace ls::tok;
  EXPECT_TRUE(char_flags(U'a') & kLetter);
  EXPECT_TRUE(char_flags(U'中') & kLetter);
  EXPECT_TRUE(char_flags(U'7') & kNumber);
  EXPECT_TRUE(char_flags(0x2460) & kNumber);  // ① (No)
  EXPECT_TRUE(char_flags(0x216B) & kNumber);  // Ⅻ (Nl)
  for (char32_t c : {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x200A, 0x2028,
                     0x2029, 0x202F, 0x205F, 0x3000}) {
    EXPECT_TRUE(char_flags(c) & kSpace) << std::hex << static_cast<std::uint32_t>(c);
  }
  for (char32_t c : {0x200B, 0xFEFF, 0x180E, 0x1C, 0x1F}) {
    EXPECT_FALSE(char_flags(c) & kSpace) << std::hex << static_cast<std::uint32_t>(c);
  }
  EXPECT_FALSE(char_flags(0x0301) & (kLetter | kNumber | kSpace));
}

TEST(Unicode, NfcSafeCodePointsAreStable) {
  // Every code point marked NFC-safe is unchanged by NFC, alone and next to other safe ones.
  using namespace ls::tok;
  std::vector<char32_t> safe;
  for (char32_t c = 0; c <= 0x10FFFF; ++c) {
    if (c >= 0xD800 && c <= 0xDFFF) continue;
    if (!(char_flags(c) & kNfcUnsafe)) safe.push_back(c);
  }
  ASSERT_GT(safe.size(), 1000000u);
  std::mt19937 rng(3);
  std::string s;
  for (std::size_t i = 0; i < safe.size(); ++i) {
    append_utf8(s, safe[i]);
    if (s.size() > 4000) {
      ASSERT_EQ(nfc(s), s);
      s.clear();
    }
  }
  for (int i = 0; i < 200000; ++i) {
    s.clear();
    append_utf8(s, safe[rng() % safe.size()]);
    append_utf8(s, safe[rng() % safe.size()]);
    ASSERT_EQ(nfc(s), s);
  }
  for (char32_t c : {0x0301, 0x1161, 0x11A8, 0x212B, 0xF900, 0x0958, 0x0344, 0x0CD5, 0x0B3E}) {
    EXPECT_TRUE(char_flags(c) & kNfcUnsafe) << std::hex << static_cast<std::uint32_t>(c);
  }
  for (char32_t c : {U'é', U'Å', U'가', U'中', U'a'}) EXPECT_FALSE(char_flags(c) & kNfcUnsafe);
  EXPECT_EQ(nfc("e\u0301"), "é");
  EXPECT_EQ(nfc("\u1100\u1161\u11A8"), "각");
  EXPECT_EQ(nfc("\u212B"), "Å");
}

TEST(Unicode, LossyDecodeUsesMaximalSubparts) {
  // The example of the Unicode Standard, section 3.9 (U+FFFD substitution of maximal subparts).
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(ls::tok::utf8_lossy(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(ls::tok::utf8_lossy("\xF0\x80\x80"), r + r + r);          // F0 80 is not a valid prefix
  EXPECT_EQ(ls::tok::utf8_lossy("\xED\xA0\x80"), r + r + r);          // surrogate
  EXPECT_EQ(ls::tok::utf8_lossy("\xF4\x90\x80\x80"), r + r + r + r);  // > U+10FFFF
  EXPECT_EQ(ls::tok::utf8_lossy("\xE4\xB8\xAD"), "中");
}

// ---- the JSON reader
// -------------------------------------------------------------------------------

json tiny_tokenizer_for_json_test();

// nlohmann's own tree builder behind the SAX interface read_json drives.
struct DomBuilder : nlohmann::json_sax<json> {
  explicit DomBuilder(json& out) : dom(out, false) {}
  nlohmann::detail::json_sax_dom_parser<json> dom;
  bool null() override { return dom.null(); }
  bool boolean(bool v) override { return dom.boolean(v); }
  bool number_integer(number_integer_t v) override { return dom.number_integer(v); }
  bool number_unsigned(number_unsigned_t v) override { return dom.number_unsigned(v); }
  bool number_float(number_float_t v, const string_t& s) override { return dom.number_float(v, s); }
  bool string(string_t& v) override { return dom.string(v); }
  bool binary(binary_t& v) override { return dom.binary(v); }
  bool start_object(std::size_t n) override { return dom.start_object(n); }
  bool key(string_t& k) override { return dom.key(k); }
  bool end_object() override { return dom.end_object(); }
  bool start_array(std::size_t n) override { return dom.start_array(n); }
  bool end_array() override { return dom.end_array(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

json read_with_ours(const std::string& text, bool* ok, std::string* error) {
  json out;
  DomBuilder builder(out);
  *ok = ls::tok::read_json(text, builder, error);
  return out;
}

TEST(JsonReader, SameTreesAsNlohmann) {
  const std::vector<std::string> docs = {
      "{}",
      "[]",
      "0",
      "-0",
      "12",
      "-7",
      "18446744073709551615",
      "123456789012345678901",
      "1.5",
      "-2.5e-3",
      "1E+2",
      "true",
      "false",
      "null",
      "\"\"",
      "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
      "\"\\u00e9\\u4e2d\\ud83d\\ude00\"",
      "\"é中😀\"",
      " { \"a\" : [1, 2, {\"b\": null}], \"c\": \"d\" } ",
      "[[[[]]]]",
      "{\"k\":{\"k\":{}}}",
  };
  for (const std::string& d : docs) {
    bool ok;
    std::string error;
    const json ours = read_with_ours(d, &ok, &error);
    ASSERT_TRUE(ok) << d << ": " << error;
    EXPECT_EQ(ours, json::parse(d)) << d;
  }
  // The tiny tokenizer written with every non-ASCII character escaped loads the same.
  const json t = tiny_tokenizer_for_json_test();
  bool ok;
  std::string error;
  EXPECT_EQ(read_with_ours(t.dump(2, ' ', true), &ok, &error), t);
  EXPECT_TRUE(ok);
}

TEST(JsonReader, RejectsInvalidJson) {
  for (const std::string d : {"",         "{",           "[1,]",         "{\"a\":1,}",
                              "{a:1}",    "[1 2]",       "01",           "1.",
                              "-",        ".5",          "+1",           "\"abc",
                              "\"a\\x\"", "\"\\ud800\"", "\"\\udc00\"",  "\"\\ud800\\u0041\"",
                              "\"\x01\"", "\"\xff\"",    "\"\xe4\xb8\"", "tru",
                              "nul",      "[] []",       "{\"a\" 1}"}) {
    bool ok;
    std::string error;
    read_with_ours(d, &ok, &error);
    EXPECT_FALSE(ok) << json(d).dump(-1, ' ', false, json::error_handler_t::replace);
    EXPECT_FALSE(error.empty());
  }
  std::string deep(1000, '[');
  bool ok;
  std::string error;
  read_with_ours(deep + std::string(1000, ']'), &ok, &error);
  EXPECT_FALSE(ok);
  EXPECT_NE(error.find("deep"), std::string::npos) << error;
}

// ---- synthetic tokenizer.json: added-token flags and errors
// --------------------------------------

json tiny_tokenizer() {
  json vocab = json::object();
  // The byte-level alphabet (ids 0..255 in byte order), then a few merges.
  auto byte_str = [](int b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    int extra = 0;
    for (int x = 0; x < b; ++x) {
      if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) ++extra;
    }
    std::string s;
    ls::tok::append_utf8(s, printable ? char32_t(b) : char32_t(256 + extra));
    return s;
  };
  for (int b = 0; b < 256; ++b) vocab[byte_str(b)] = b;
  vocab["ab"] = 256;
  vocab["abc"] = 257;
  vocab["Ġa"] = 258;
  json added = json::array();
  auto add = [&](int id, const std::string& content, bool special, bool lstrip, bool rstrip,
                 bool single_word, bool normalized) {
    added.push_back({{"id", id},
                     {"content", content},
                     {"special", special},
                     {"lstrip", lstrip},
                     {"rstrip", rstrip},
                     {"single_word", single_word},
                     {"normalized", normalized}});
  };
  add(300, "<L>", true, true, false, false, false);
  add(301, "<R>", true, false, true, false, false);
  add(302, "<W>", false, false, false, true, false);
  add(303, "\u00e9t\u00e9", false, false, false, false, true);  // "été", matched after NFC
  add(304, "<s>", true, false, false, false, false);
  add(305, "<s><s>", true, false, false, false, false);  // leftmost-longest
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "NFC"}}},
      {"pre_tokenizer",
       {{"type", "Sequence"},
        {"pretokenizers",
         json::array({{{"type", "Split"},
                       {"pattern", {{"Regex", std::string(ls::tok::kQwen2SplitPattern)}}},
                       {"behavior", "Isolated"},
                       {"invert", false}},
                      {{"type", "ByteLevel"},
                       {"add_prefix_space", false},
                       {"trim_offsets", false},
                       {"use_regex", false}}})}}},
      {"post_processor",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", false},
        {"use_regex", false}}},
      {"decoder",
       {{"type", "ByteLevel"},
        {"add_prefix_space", false},
        {"trim_offsets", false},
        {"use_regex", false}}},
      {"model",
       {{"type", "BPE"},
        {"dropout", nullptr},
        {"unk_token", nullptr},
        {"continuing_subword_prefix", ""},
        {"end_of_word_suffix", ""},
        {"fuse_unk", false},
        {"byte_fallback", false},
        {"ignore_merges", false},
        {"vocab", vocab},
        {"merges", json::array({"a b", json::array({"ab", "c"}), "Ġ a"})}}},
  };
}

json tiny_tokenizer_for_json_test() {
  return tiny_tokenizer();
}

ls::tok::Tokenizer tiny(const json& j = tiny_tokenizer()) {
  return ls::tok::Tokenizer::from_json(j.dump(), "tiny.json");
}

TEST(TinyTokenizer, MergesAndSize) {
  const auto t = tiny();
  EXPECT_EQ(t.size(), 306);
  EXPECT_EQ(t.encode("abc"), (Ids{257}));
  EXPECT_EQ(t.encode("ab a"), (Ids{256, 258}));
  EXPECT_EQ(t.encode("abd"), (Ids{256, 'd'}));
  EXPECT_EQ(t.decode(Ids{257, 258}), "abc a");
}

TEST(TinyTokenizer, AddedTokenFlags) {
  const auto t = tiny();
  // lstrip: white space on the left belongs to the token.
  EXPECT_EQ(t.encode("x  <L>y"), (Ids{'x', 300, 'y'}));
  // rstrip: white space on the right belongs to the token.
  EXPECT_EQ(t.encode("x<R>  y"), (Ids{'x', 301, 'y'}));
  // single_word: only when not inside a word.
  EXPECT_EQ(t.encode("a <W> b"), (Ids{'a', ' ', 302, ' ', 'b'}));
  EXPECT_NE(t.encode("a<W>b")[1], 302);
  // normalized: matched after NFC, so the decomposed form matches too.
  EXPECT_EQ(t.encode("e\u0301te\u0301"), (Ids{303}));
  EXPECT_EQ(t.encode("\u00e9t\u00e9"), (Ids{303}));
  // leftmost-longest.
  EXPECT_EQ(t.encode("<s><s><s>"), (Ids{305, 304}));
  // split_special: special tokens become text, the non-special ones still match.
  EXPECT_EQ(t.encode("<s><W>", true), (Ids{'<', 's', '>', 302}));
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(302));
  EXPECT_EQ(t.decode(Ids{'x', 300, 302}, true), "x<W>");
}

TEST(TinyTokenizer, IgnoreMerges) {
  json j = tiny_tokenizer();
  j["model"]["vocab"]["bc"] = 259;
  j["model"]["vocab"]["abcbc"] = 260;  // in the vocabulary, but no merge builds it
  j["model"]["merges"].push_back("b c");
  EXPECT_EQ(tiny(j).encode("abcbc"), (Ids{257, 259}));
  j["model"]["ignore_merges"] = true;
  EXPECT_EQ(tiny(j).encode("abcbc"), (Ids{260}));
}

void expect_error(const json& j, const std::string& field) {
  try {
    ls::tok::Tokenizer::from_json(j.dump(), "tiny.json");
    ADD_FAILURE() << "no error for " << field;
  } catch (const ls::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("tiny.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << "expected '" << field << "' in: " << msg;
  }
}

TEST(TinyTokenizer, UnsupportedFeaturesAreErrorsNamingTheField) {
  const json base = tiny_tokenizer();
  json j;
  j = base;
  j["model"]["type"] = "WordPiece";
  expect_error(j, "model.type");
  j = base;
  j["model"]["byte_fallback"] = true;
  expect_error(j, "model.byte_fallback");
  j = base;
  j["model"]["dropout"] = 0.1;
  expect_error(j, "model.dropout");
  j = base;
  j["model"]["continuing_subword_prefix"] = "##";
  expect_error(j, "model.continuing_subword_prefix");
  j = base;
  j["model"]["merges"].push_back("a zz");
  expect_error(j, "model.merges[3]");
  j = base;
  j["model"]["merges"].push_back("a b c");
  expect_error(j, "model.merges[3]");
  j = base;
  j["model"]["merges"].push_back(7);
  expect_error(j, "model.merges[3]");
  j = base;
  j["model"]["vocab"]["x"] = "seven";
  expect_error(j, "model.vocab");
  j = base;
  j["model"].erase("vocab");
  expect_error(j, "model.vocab");
  j = base;
  j["model"]["vocab"].erase("Ā");
  expect_error(j, "model.vocab");  // byte 0x00 missing
  j = base;
  j["normalizer"] = {{"type", "NFKC"}};
  expect_error(j, "normalizer.type");
  j = base;
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "Lowercase"}}})}};
  expect_error(j, "normalizer.normalizers[0].type");
  j = base;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  expect_error(j, "pre_tokenizer.type");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\s+";
  expect_error(j, "pre_tokenizer.pretokenizers[0].pattern.Regex");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "Removed";
  expect_error(j, "pre_tokenizer.pretokenizers[0].behavior");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = true;
  expect_error(j, "pre_tokenizer.pretokenizers[1].use_regex");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][1]["add_prefix_space"] = true;
  expect_error(j, "pre_tokenizer.pretokenizers[1].add_prefix_space");
  j = base;
  j["pre_tokenizer"] = nullptr;
  expect_error(j, "pre_tokenizer");
  j = base;
  j["decoder"] = {{"type", "WordPiece"}};
  expect_error(j, "decoder.type");
  j = base;
  j["post_processor"] = {{"type", "TemplateProcessing"}};
  expect_error(j, "post_processor.type");
  j = base;
  j["truncation"] = {{"max_length", 5}};
  expect_error(j, "truncation");
  j = base;
  j["added_tokens"][0]["content"] = "";
  expect_error(j, "added_tokens[0].content");
  j = base;
  j["added_tokens"][0].erase("id");
  expect_error(j, "added_tokens[0].id");
  j = base;
  j["something_new"] = 1;
  expect_error(j, "something_new");
}

TEST(TinyTokenizer, EscapedJsonLoadsTheSame) {
  const json j = tiny_tokenizer();
  const auto a = ls::tok::Tokenizer::from_json(j.dump(), "raw.json");
  const auto b = ls::tok::Tokenizer::from_json(j.dump(1, '\t', true), "escaped.json");
  for (const std::string text :
       {"abc ab a", "x  <L>y", "e\u0301te\u0301 <s><s>", "\u4e2d\u00e9\U0001F600"}) {
    EXPECT_EQ(a.encode(text), b.encode(text)) << text;
  }
  EXPECT_EQ(a.size(), b.size());
}

TEST(TinyTokenizer, BadFiles) {
  EXPECT_THROW(ls::tok::Tokenizer::from_json("{not json", "bad.json"), ls::Error);
  try {
    ls::tok::Tokenizer::from_json("{not json", "bad.json");
  } catch (const ls::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos);
  }
  try {
    ls::tok::Tokenizer::load("/nonexistent/dir/tokenizer.json");
    ADD_FAILURE();
  } catch (const ls::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/tokenizer.json"), std::string::npos)
        << e.what();
  }
}

}  // namespace
