// ChatTemplate: loading the template and special tokens from tokenizer_config.json (string,
// named list, chat_template.jinja beside it, AddedToken objects), errors naming the file, and
// the prompt Qwen2.5 and Qwen3 produce for a single user message (text of the templates'
// own literals, written out by hand here; the full comparison with jinja2 is the
// chat_jinja_reference test).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_template.h"

namespace ls::chat {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("ls_chat_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name, std::ios::binary) << text;
    return (path_ / name).string();
  }
  std::string config(const nlohmann::ordered_json& j) const {
    return write("tokenizer_config.json", j.dump());
  }

 private:
  fs::path path_;
  static inline int counter_ = 0;
};

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

const std::string kQwenSystem =
    "You are Qwen, created by Alibaba Cloud. You are a helpful assistant.";

TEST(ChatTemplate, Qwen25DefaultSystemPrompt) {
  TempDir dir;
  std::string tpl = read(std::string(LS_SOURCE_DIR) + "/data/qwen2.5_chat_template.jinja");
  ASSERT_FALSE(tpl.empty());
  auto t = ChatTemplate::from_tokenizer_config(
      dir.config({{"chat_template", tpl}, {"eos_token", "<|im_end|>"}}));
  EXPECT_EQ(t.render(make_messages("中国的首都是", ""), nullptr, true),
            "<|im_start|>system\n" + kQwenSystem +
                "<|im_end|>\n<|im_start|>user\n中国的首都是<|im_end|>\n"
                "<|im_start|>assistant\n");
  EXPECT_EQ(t.render(make_messages("Hi", "Be brief."), nullptr, false),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplate, Qwen3FromTheNpmPackage) {
  auto t = ChatTemplate::from_tokenizer_config(std::string(LS_QWEN_TOKENIZER_DIR) +
                                               "/tokenizer_config.json");
  EXPECT_EQ(t.eos_token, "<|im_end|>");
  EXPECT_EQ(t.bos_token, "");  // null in Qwen's config
  EXPECT_EQ(t.special_tokens.value("pad_token", ""), "<|endoftext|>");
  EXPECT_TRUE(t.special_tokens.contains("additional_special_tokens"));
  EXPECT_FALSE(t.special_tokens.contains("bos_token"));
  EXPECT_EQ(t.render(make_messages("Hi", ""), nullptr, true),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(t.render(make_messages("Hi", ""), nullptr, true, {{"enable_thinking", false}}),
            "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplate, SpecialTokensReachTheTemplate) {
  TempDir dir;
  auto path = dir.config(
      {{"chat_template",
        "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}|{{ unk_token is defined }}|"
        "{{ additional_special_tokens | join(',') }}|{{ tools }}|{{ add_generation_prompt }}"},
       {"bos_token", {{"__type", "AddedToken"}, {"content", "<s>"}, {"lstrip", false}}},
       {"eos_token", "</s>"},
       {"pad_token", nullptr},
       {"additional_special_tokens", {"<a>", {{"content", "<b>"}}}}});
  auto t = ChatTemplate::from_tokenizer_config(path);
  EXPECT_EQ(t.bos_token, "<s>");
  EXPECT_EQ(t.eos_token, "</s>");
  EXPECT_EQ(t.render(nlohmann::ordered_json::array(), nullptr, true),
            "<s>|</s>||False|<a>,<b>|None|True");
  EXPECT_EQ(
      t.render(nlohmann::ordered_json::array(), nlohmann::ordered_json::array({{{"x", 1}}}), false),
      "<s>|</s>||False|<a>,<b>|[{'x': 1}]|False");
}

TEST(ChatTemplate, NamedTemplateList) {
  TempDir dir;
  auto path = dir.config({{"chat_template",
                           {{{"name", "tool_use"}, {"template", "TOOLS"}},
                            {{"name", "default"}, {"template", "DEFAULT"}}}}});
  auto t = ChatTemplate::from_tokenizer_config(path);
  EXPECT_EQ(t.render(nlohmann::ordered_json::array(), nullptr, true), "DEFAULT");
  EXPECT_EQ(t.render(nlohmann::ordered_json::array(), nlohmann::ordered_json::array(), true),
            "TOOLS");
  auto no_default = dir.config({{"chat_template", {{{"name", "rag"}, {"template", "R"}}}}});
  try {
    ChatTemplate::from_tokenizer_config(no_default);
    FAIL();
  } catch (const ls::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no template named 'default' (has: rag)"),
              std::string::npos)
        << e.what();
  }
}

TEST(ChatTemplate, JinjaFileBesideTheConfig) {
  TempDir dir;
  dir.write("chat_template.jinja", "from file {{ messages | length }}\n");
  auto t = ChatTemplate::from_tokenizer_config(dir.config({{"eos_token", "x"}}));
  EXPECT_EQ(t.render(make_messages("a", "b"), nullptr, false), "from file 2");
}

TEST(ChatTemplate, ErrorsNameTheFile) {
  TempDir dir;
  auto expect_error = [](const std::string& path, const std::string& part) {
    try {
      ChatTemplate::from_tokenizer_config(path);
      ADD_FAILURE() << "no error for " << path;
    } catch (const ls::Error& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find(part), std::string::npos) << what;
    }
  };
  expect_error(dir.write("missing_dir_marker", "") + ".nope", "cannot open");
  expect_error(dir.config({{"eos_token", "x"}}), "no 'chat_template'");
  expect_error(dir.write("bad.json", "{not json"), "invalid JSON");
  expect_error(dir.config({{"chat_template", 5}}), "must be a string or a list");
  expect_error(dir.config({{"chat_template", "x"}, {"bos_token", 3}}), "bos_token");
  expect_error(dir.config({{"chat_template", "line1\n{% if %}"}}), ":2: syntax error");
}

TEST(ChatTemplate, RenderChecksItsInputs) {
  ChatTemplate t;
  t.source = "{{ messages | length }}";
  EXPECT_EQ(t.render(make_messages("x", ""), nullptr, false), "1");  // parsed on demand
  EXPECT_THROW(t.render(nlohmann::ordered_json::object(), nullptr, false), ls::Error);
  EXPECT_THROW(t.render(nlohmann::ordered_json::array(), "tools", false), ls::Error);
}

TEST(ChatTemplate, MakeMessages) {
  EXPECT_EQ(make_messages("hi", "").dump(), R"([{"role":"user","content":"hi"}])");
  EXPECT_EQ(make_messages("hi", "sys").dump(),
            R"([{"role":"system","content":"sys"},{"role":"user","content":"hi"}])");
}

}  // namespace
}  // namespace ls::chat
