// The generated corpus (make_corpus.js: >= 5,000 strings of Chinese, Japanese, Korean, English,
// code, numbers, emoji and ZWJ sequences, combining marks, whitespace runs, special-token text,
// very long words, random characters) against the JavaScript oracle:
//   - encode(s) equals the oracle's ids, for every string (and with split_special);
//   - decode(encode(s)) == NFC(s), NFC computed by the oracle (JavaScript's normalize);
//   - the streaming detokenizer never emits invalid UTF-8, on every prefix of every string and
//     across the whole corpus as one stream, and what it emits adds up to decode().
// The corpus and the oracle's answers are produced at test time by the CTest fixture
// tokenizer_corpus_oracle into LS_TOKENIZER_CORPUS_DIR.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

using json = nlohmann::json;
using Ids = std::vector<std::int32_t>;

struct Case {
  std::string text;
  Ids ids;
  Ids split;
  std::string nfc;
};

const ls::tok::Tokenizer& qwen() {
  static const ls::tok::Tokenizer tok =
      ls::tok::Tokenizer::load(std::string(LS_QWEN_TOKENIZER_DIR) + "/tokenizer.json");
  return tok;
}

const std::vector<Case>& corpus() {
  static const std::vector<Case> cases = [] {
    const std::string dir = LS_TOKENIZER_CORPUS_DIR;
    std::ifstream c(dir + "/corpus.jsonl");
    std::ifstream o(dir + "/oracle.jsonl");
    if (!c || !o) {
      throw std::runtime_error("missing " + dir +
                               "/{corpus,oracle}.jsonl: run the CTest fixture "
                               "tokenizer_corpus_oracle first (ctest runs it automatically)");
    }
    std::vector<Case> out;
    std::string lc, lo;
    while (std::getline(c, lc)) {
      if (!std::getline(o, lo))
        throw std::runtime_error("oracle.jsonl is shorter than corpus.jsonl");
      const json jo = json::parse(lo);
      out.push_back(Case{json::parse(lc).get<std::string>(), jo.at("ids").get<Ids>(),
                         jo.at("split").get<Ids>(), jo.at("nfc").get<std::string>()});
    }
    return out;
  }();
  return cases;
}

std::string show(const Ids& ids, std::size_t limit = 40) {
  std::string s = "[";
  for (std::size_t i = 0; i < ids.size() && i < limit; ++i) {
    if (i) s += ',';
    s += std::to_string(ids[i]);
  }
  if (ids.size() > limit) s += ",...";
  return s + "]";
}

std::string preview(const std::string& text) {
  return json(text.size() > 120 ? text.substr(0, 120) : text)
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

void compare(bool split_special, const char* label) {
  const auto& cases = corpus();
  ASSERT_GE(cases.size(), 5000u);
  std::size_t mismatches = 0, bytes = 0, tokens = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const Ids got = qwen().encode(c.text, split_special);
    const Ids& want = split_special ? c.split : c.ids;
    bytes += c.text.size();
    tokens += want.size();
    if (got != want) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << label << " string " << i << " " << preview(c.text) << "\n  oracle "
                      << show(want) << "\n  ours   " << show(got);
      }
    }
  }
  std::printf(
      "%s: %zu strings, %zu bytes, %zu tokens, %zu mismatches against the JavaScript oracle\n",
      label, cases.size(), bytes, tokens, mismatches);
  EXPECT_EQ(mismatches, 0u);
}

TEST(TokenizerCorpus, EncodeMatchesJavaScriptOracle) {
  compare(false, "corpus");
}

TEST(TokenizerCorpus, SplitSpecialMatchesJavaScriptOracle) {
  compare(true, "corpus (split_special)");
}

TEST(TokenizerCorpus, DecodeOfEncodeIsNfc) {
  std::size_t failures = 0;
  for (const Case& c : corpus()) {
    for (bool split : {false, true}) {
      const std::string back = qwen().decode(qwen().encode(c.text, split));
      if (back != c.nfc && ++failures <= 10)
        ADD_FAILURE() << "decode(encode(s)) != NFC(s) for " << preview(c.text);
    }
  }
  std::printf("decode(encode(s)) == NFC(s): %zu failures\n", failures);
  EXPECT_EQ(failures, 0u);
}

TEST(TokenizerCorpus, StreamingNeverEmitsInvalidUtf8) {
  std::size_t prefixes = 0, invalid = 0, wrong = 0;
  ls::tok::StreamDecoder whole(qwen());  // the whole corpus as one stream
  std::string whole_out, whole_want;
  for (const Case& c : corpus()) {
    const Ids ids = qwen().encode(c.text);
    const std::string want = qwen().decode(ids);
    whole_want += want;
    ls::tok::StreamDecoder d(qwen());
    std::string out;
    const std::size_t step = ids.size() <= 400 ? 1 : 37;  // decode() of every prefix is O(n^2)
    for (std::size_t k = 0; k < ids.size(); ++k) {
      const std::string piece = d.push(ids[k]);
      const std::string wpiece = whole.push(ids[k]);
      ++prefixes;
      if (ls::tok::utf8_validate(piece) != piece.size() ||
          ls::tok::utf8_validate(wpiece) != wpiece.size()) {
        if (++invalid <= 10)
          ADD_FAILURE() << "invalid UTF-8 emitted for " << preview(c.text) << " at id " << k;
      }
      out += piece;
      whole_out += wpiece;
      if (k % step == 0 || k + 1 == ids.size()) {
        // What was emitted plus the held-back tail (as flush would give it) is decode(prefix).
        ls::tok::StreamDecoder copy = d;
        const std::string prefix_text = out + copy.flush();
        const std::string prefix_want =
            qwen().decode(std::span<const std::int32_t>(ids.data(), k + 1));
        if (prefix_text != prefix_want && ++wrong <= 10) {
          ADD_FAILURE() << "prefix " << k + 1 << " of " << preview(c.text)
                        << " decodes differently";
        }
      }
    }
    out += d.flush();
    if (out != want && ++wrong <= 10) ADD_FAILURE() << "stream != decode for " << preview(c.text);
    if (out != c.nfc && ++wrong <= 10) ADD_FAILURE() << "stream != NFC(s) for " << preview(c.text);
  }
  whole_out += whole.flush();
  EXPECT_EQ(whole_out, whole_want);
  std::printf("streaming: %zu prefixes, %zu invalid UTF-8 emissions, %zu wrong texts\n", prefixes,
              invalid, wrong);
  EXPECT_EQ(invalid, 0u);
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
