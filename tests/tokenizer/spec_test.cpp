// Tokenizer::from_spec: a TokenizerSpec built by hand for a tiny vocabulary (the 256 byte tokens,
// three merges, two added tokens) encodes and decodes as its merges say, and a bad spec is an
// ls::Error naming the source and the tokenizer.json field at fault.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_spec.h"
#include "tokenizer/unicode.h"

namespace {

using Ids = std::vector<std::int32_t>;

// GPT-2's byte-level alphabet: the token string of byte b.
std::string byte_token(int b) {
  auto printable = [](int x) {
    return (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || x >= 0xAE;
  };
  int extra = 0;
  for (int x = 0; x < b; ++x) extra += printable(x) ? 0 : 1;
  std::string s;
  ls::tok::append_utf8(s, printable(b) ? char32_t(b) : char32_t(256 + extra));
  return s;
}

ls::tok::TokenizerSpec tiny_spec() {
  ls::tok::TokenizerSpec spec;
  spec.nfc = true;
  for (int b = 0; b < 256; ++b) spec.vocab.push_back({byte_token(b), b});
  spec.vocab.push_back({"ab", 256});
  spec.vocab.push_back({"abc", 257});
  spec.vocab.push_back({"\u0120a", 258});  // "Ġa": " a"
  spec.merges = {{"a", "b"}, {"ab", "c"}, {"\u0120", "a"}};
  ls::tok::TokenizerSpec::AddedToken end;
  end.id = 300;
  end.content = "<|end|>";
  end.special = true;
  ls::tok::TokenizerSpec::AddedToken word;
  word.id = 301;
  word.content = "<w>";
  word.single_word = true;
  spec.added_tokens = {end, word};
  return spec;
}

void expect_error(const ls::tok::TokenizerSpec& spec, const std::string& message) {
  try {
    ls::tok::Tokenizer::from_spec(spec, "tiny.spec");
    ADD_FAILURE() << "no error; expected: " << message;
  } catch (const ls::Error& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(TokenizerSpec, HandBuiltSpecEncodes) {
  const ls::tok::Tokenizer t = ls::tok::Tokenizer::from_spec(tiny_spec(), "tiny.spec");
  EXPECT_EQ(t.source(), "tiny.spec");
  EXPECT_EQ(t.size(), 302);
  EXPECT_EQ(t.encode("abc"), (Ids{257}));
  EXPECT_EQ(t.encode("ab a"), (Ids{256, 258}));
  EXPECT_EQ(t.encode("abd"), (Ids{256, 'd'}));
  EXPECT_EQ(t.encode("abc<|end|>"), (Ids{257, 300}));
  EXPECT_EQ(t.encode("abc<|end|>", true), (Ids{257, '<', '|', 'e', 'n', 'd', '|', '>'}));
  EXPECT_EQ(t.encode("a <w> b"), (Ids{'a', ' ', 301, ' ', 'b'}));
  EXPECT_NE(t.encode("a<w>b")[1], 301);
  EXPECT_EQ(t.decode(Ids{257, 258, 300}), "abc a<|end|>");
  EXPECT_EQ(t.decode(Ids{257, 300}, true), "abc");
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(301));
  EXPECT_EQ(t.token_to_id("\u0120a"), 258);
  EXPECT_EQ(t.token_to_id("<w>"), 301);
  EXPECT_EQ(t.token_bytes(258), " a");
  EXPECT_EQ(t.token_bytes(299), "");  // an id without text
}

TEST(TokenizerSpec, IgnoreMerges) {
  ls::tok::TokenizerSpec spec = tiny_spec();
  spec.vocab.push_back({"abcabc", 259});  // in the vocabulary, but no merge builds it
  EXPECT_EQ(ls::tok::Tokenizer::from_spec(spec, "s").encode("abcabc"), (Ids{257, 257}));
  spec.ignore_merges = true;
  EXPECT_EQ(ls::tok::Tokenizer::from_spec(spec, "s").encode("abcabc"), (Ids{259}));
}

TEST(TokenizerSpec, BadSpecsAreErrorsNamingTheField) {
  ls::tok::TokenizerSpec s = tiny_spec();
  s.merges.push_back({"b", "c"});  // "bc" itself is not a token
  expect_error(s, "tiny.spec: model.merges[3]: token \"bc\" is not in model.vocab");
  s = tiny_spec();
  s.vocab.push_back({"ab", 259});
  expect_error(s, "tiny.spec: model.vocab: duplicate token");
  s = tiny_spec();
  s.vocab[256].id = -3;
  expect_error(s, "tiny.spec: model.vocab[\"ab\"]: expected a non-negative integer id");
  s = tiny_spec();
  s.vocab.push_back({"\xC3", 259});
  expect_error(s, "tiny.spec: model.vocab[\"\xEF\xBF\xBD\"]: not valid UTF-8");
  s = tiny_spec();
  s.vocab.erase(s.vocab.begin());  // byte 0x00
  expect_error(s,
               "tiny.spec: model.vocab: no token for byte 0x00 (expected \"\u0100\"); the "
               "byte-level alphabet must be complete");
  s = tiny_spec();
  s.added_tokens[1].content = "";
  expect_error(s, "tiny.spec: added_tokens[1].content: empty");
  s = tiny_spec();
  s.added_tokens[1].content = "<|end|>";
  expect_error(s, "tiny.spec: added_tokens[1].content: duplicate added token");
  s = tiny_spec();
  s.added_tokens[0].id = -1;
  expect_error(s, "tiny.spec: added_tokens[0].id: expected a non-negative integer");
  s = tiny_spec();
  s.added_tokens[0].content = "abc";
  expect_error(s,
               "tiny.spec: added_tokens[0]: content \"abc\" is vocabulary id 257 but the entry "
               "says 300");
  s = tiny_spec();
  s.added_tokens[0].id = 1 << 21;
  expect_error(s, "tiny.spec: model.vocab: ids above 1048574 are not supported");
}

}  // namespace
