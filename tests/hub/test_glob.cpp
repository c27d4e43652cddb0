// --include/--exclude match as huggingface_hub's fnmatch does: '*' crosses '/', sets, "dir/".
#include <gtest/gtest.h>

#include "hub/glob.h"

namespace ls::hub {

TEST(Glob, StarCrossesSlashAsPythonFnmatch) {
  EXPECT_TRUE(glob_match("*.json", "config.json"));
  EXPECT_TRUE(glob_match("*.json", "sub/dir/config.json"));  // fnmatch: '*' matches '/'
  EXPECT_FALSE(glob_match("*.json", "config.json.bak"));
  EXPECT_TRUE(glob_match("model-*-of-*.safetensors", "model-00001-of-00002.safetensors"));
  EXPECT_FALSE(glob_match("model-*-of-*.safetensors", "model.safetensors"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("a?c", "ac"));
}

TEST(Glob, Sets) {
  EXPECT_TRUE(glob_match("*[0-9].gguf", "q4.gguf"));
  EXPECT_FALSE(glob_match("*[0-9].gguf", "qx.gguf"));
  EXPECT_TRUE(glob_match("[!t]*", "config.json"));
  EXPECT_FALSE(glob_match("[!t]*", "tokenizer.json"));
  EXPECT_TRUE(glob_match("[]]", "]"));    // a leading ']' is a member
  EXPECT_TRUE(glob_match("a[b", "a[b"));  // no closing ']': literal
  EXPECT_FALSE(glob_match("a[b", "ab"));
}

TEST(Glob, KeepIncludeExcludeAndFolders) {
  const std::vector<std::string> none;
  EXPECT_TRUE(glob_keep("anything", none, none));
  EXPECT_TRUE(glob_keep("notes/a/b.txt", {"notes/"}, none));  // "dir/" means "dir/*"
  EXPECT_FALSE(glob_keep("notesx", {"notes/"}, none));
  EXPECT_TRUE(glob_keep("config.json", {"*.json"}, {"tokenizer*"}));
  EXPECT_FALSE(glob_keep("tokenizer.json", {"*.json"}, {"tokenizer*"}));
  EXPECT_FALSE(glob_keep("model.bin", {"*.json", "*.safetensors"}, none));
  EXPECT_FALSE(glob_keep("original/x.pth", none, {"original/"}));
}

}  // namespace ls::hub
