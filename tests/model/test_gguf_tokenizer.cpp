// The tokenizer a GGUF carries (tok::gguf_tokenizer: tokenizer.ggml.* -> TokenizerSpec) is the
// same tokenizer as the Hugging Face tokenizer.json it was written from: the same ids for Hugging
// Face's own test vectors (checked against the ids Hugging Face gives), for the 6,018-string
// corpus of tests/tokenizer (also checked against the JavaScript oracle's ids), with and without
// split_special, and the same bytes and special flag for every id.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "convert/gguf_quantize.h"
#include "convert/synth.h"
#include "formats/gguf.h"
#include "test_util.h"
#include "tokenizer/gguf_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace ls {
namespace {

using Ids = std::vector<std::int32_t>;

struct Pair {
  tok::Tokenizer hf, gguf;
};

const Pair& tokenizers() {
  static const Pair p = [] {
    const auto root = test::scratch_dir("gguf_tokenizer");
    convert::SynthOptions o;
    o.shape = "tiny";
    o.dtype = DType::BF16;
    o.layers = 1;
    o.tokenizer_from = LS_QWEN_TOKENIZER_DIR;
    o.out_dir = (root / "m").string();
    convert::synthesize_model(o);
    convert::QuantizeOptions q;
    q.model_dir = o.out_dir;
    q.type = DType::BF16;
    q.out = (root / "m.gguf").string();
    convert::quantize_to_gguf(q);
    const formats::GgufFile f(q.out);
    return Pair{tok::Tokenizer::load(o.out_dir + "/tokenizer.json"), tok::gguf_tokenizer(f)};
  }();
  return p;
}

TEST(GgufTokenizer, EveryIdHasTheSameBytesAndFlags) {
  const auto& [hf, gg] = tokenizers();
  ASSERT_EQ(gg.size(), hf.size());
  EXPECT_EQ(gg.size(), 151665);
  for (std::int32_t id = 0; id < hf.size() + 300; ++id) {
    ASSERT_EQ(gg.token_bytes(id), hf.token_bytes(id)) << id;
    ASSERT_EQ(gg.is_special(id), hf.is_special(id)) << id;
  }
  EXPECT_EQ(gg.token_to_id("<|im_end|>"), 151645);
  EXPECT_EQ(gg.token_to_id("<think>"), std::nullopt);  // Qwen2.5 has no <think> token
}

TEST(GgufTokenizer, HuggingFaceVectors) {
  const auto& [hf, gg] = tokenizers();
  const std::string dir = std::string(LS_FIXTURES_DIR) + "/";
  const std::string inp = test::read_file(dir + "qwen2-vectors.inp");
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
  std::size_t i = 0;
  while (std::getline(out, line)) {
    ASSERT_LT(i, cases.size());
    Ids want;
    std::istringstream ls(line);
    for (std::int32_t id; ls >> id;) want.push_back(id);
    EXPECT_EQ(gg.encode(cases[i]), want) << "case " << i;
    EXPECT_EQ(gg.encode(cases[i], true), hf.encode(cases[i], true)) << "case " << i;
    ++i;
  }
  EXPECT_GT(i, 20u);
  // Added tokens, special and not, inside text.
  for (const std::string s :
       {"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "<tool_call>{\"a\":1}</tool_call>", "<|fim_prefix|>def f():<|fim_suffix|>\n<|fim_middle|>",
        "<think>x</think>", "[PAD151665]"}) {
    EXPECT_EQ(gg.encode(s), hf.encode(s)) << s;
    EXPECT_EQ(gg.encode(s, true), hf.encode(s, true)) << s;
  }
}

TEST(GgufTokenizer, Corpus) {
  const std::string dir = LS_TOKENIZER_CORPUS_DIR;
  std::ifstream c(dir + "/corpus.jsonl"), o(dir + "/oracle.jsonl");
  if (!c || !o)
    GTEST_SKIP() << "no corpus in " << dir << " (CTest fixture tokenizer_corpus_oracle)";
  const auto& [hf, gg] = tokenizers();
  std::string lc, lo;
  std::size_t n = 0, bad = 0;
  while (std::getline(c, lc) && std::getline(o, lo)) {
    const std::string text = nlohmann::json::parse(lc).get<std::string>();
    const auto oracle = nlohmann::json::parse(lo);
    const Ids ids = gg.encode(text);
    // The oracle is Qwen3's tokenizer: its four extra added tokens are plain text in Qwen2.5.
    bool qwen3_only = false;
    for (const char* t : {"<think>", "</think>", "<tool_response>", "</tool_response>"})
      qwen3_only = qwen3_only || text.find(t) != std::string::npos;
    if ((!qwen3_only && ids != oracle.at("ids").get<Ids>()) || ids != hf.encode(text) ||
        gg.encode(text, true) != hf.encode(text, true))
      if (++bad <= 5) ADD_FAILURE() << "corpus line " << n + 1;
    ++n;
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_GE(n, 5000u);
}

}  // namespace
}  // namespace ls
