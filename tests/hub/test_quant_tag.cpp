// GGUF files picked by quant tag: case-insensitive, after a separator, splits kept together.
#include <gtest/gtest.h>

#include "core/error.h"
#include "hub/quant_tag.h"

namespace ls::hub {

namespace {

std::string error_of(const std::vector<std::string>& files, const std::string& tag) {
  try {
    pick_gguf(files, tag, "org/repo-GGUF");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(QuantTag, TagOfAFileName) {
  EXPECT_EQ(quant_tag_of("qwen2.5-0.5b-instruct-q4_k_m.gguf"), "q4_k_m");
  EXPECT_EQ(quant_tag_of("sub/Qwen2.5-7B-Instruct-Q8_0.gguf"), "q8_0");
  EXPECT_EQ(quant_tag_of("qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf"), "q4_k_m");
  EXPECT_EQ(quant_tag_of("model.f16.gguf"), "f16");
  EXPECT_EQ(quant_tag_of("config.json"), "");
  EXPECT_EQ(quant_tag_of("model.gguf"), "");
}

TEST(QuantTag, MatchesCaseInsensitivelyAfterASeparator) {
  EXPECT_TRUE(matches_quant_tag("qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"));
  EXPECT_TRUE(matches_quant_tag("Qwen2.5-0.5B-Instruct-Q4_K_M.GGUF", "q4_k_m"));
  EXPECT_FALSE(matches_quant_tag("qwen2.5-0.5b-instruct-q4_k_m.gguf", "q4_k"));  // not a prefix
  EXPECT_FALSE(matches_quant_tag("qwen2.5-0.5b-instruct-q4_k_m.gguf", "k_m"));   // '_' inside a tag
  EXPECT_TRUE(matches_quant_tag("qwen2.5-0.5b-instruct-q4_k_m.gguf", "instruct-q4_k_m"));
  EXPECT_FALSE(matches_quant_tag("q4_k_m.gguf", "q4_k_m"));  // no separator before it
  EXPECT_FALSE(matches_quant_tag("qwen-q4_k_m.bin", "q4_k_m"));
}

TEST(QuantTag, PicksOneFileOrOneSplitSet) {
  const std::vector<std::string> files = {"README.md", "qwen2.5-7b-instruct-q8_0.gguf",
                                          "qwen2.5-7b-instruct-q4_k_m-00002-of-00002.gguf",
                                          "qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf",
                                          "qwen2.5-7b-instruct-fp16.gguf"};
  EXPECT_EQ(pick_gguf(files, "Q8_0", "r"),
            std::vector<std::string>{"qwen2.5-7b-instruct-q8_0.gguf"});
  const auto split = pick_gguf(files, "q4_k_m", "r");
  ASSERT_EQ(split.size(), 2u);
  EXPECT_EQ(split[0], "qwen2.5-7b-instruct-q4_k_m-00001-of-00002.gguf");
  EXPECT_EQ(available_quant_tags(files), "fp16, q4_k_m, q8_0");
}

TEST(QuantTag, MissingAndAmbiguousTagsListTheAvailableOnes) {
  const std::string missing = error_of({"m-q4_0.gguf", "m-q8_0.gguf"}, "q6_k");
  EXPECT_NE(missing.find("no .gguf file has the quant tag 'q6_k'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("available tags: q4_0, q8_0"), std::string::npos) << missing;
  const std::string ambiguous = error_of({"a-q8_0.gguf", "b-Q8_0.gguf"}, "q8_0");
  EXPECT_NE(ambiguous.find("ambiguous"), std::string::npos) << ambiguous;
  EXPECT_NE(ambiguous.find("a-q8_0.gguf"), std::string::npos) << ambiguous;
  EXPECT_NE(ambiguous.find("b-Q8_0.gguf"), std::string::npos) << ambiguous;
  EXPECT_NE(error_of({"README.md"}, "q4_0").find("no .gguf file"), std::string::npos);
}

}  // namespace ls::hub
