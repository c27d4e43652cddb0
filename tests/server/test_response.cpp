// Qwen3's thinking mode through the server without HTTP: chat_template_kwargs reach the
// template (enable_thinking false renders an empty <think> block), and a reply's <think> block
// becomes reasoning_content, whole (message) or streamed in pieces (delta.reasoning_content),
// with the same split either way.
#include <gtest/gtest.h>

#include "server/request.h"
#include "server/response.h"
#include "server_fixture.h"

namespace ls::server {
namespace {

using nlohmann::json;

class ThinkingTest : public test::ServerFixture<test::Qwen3TinyModel> {
 protected:
  static json body(json extra = json::object()) {
    json b = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}};
    for (auto& [k, v] : extra.items()) b[k] = v;
    return b;
  }
  // The reply in `pieces` through a builder; returns the response (non-streamed) or the
  // streamed chunks' reasoning and content concatenated.
  static std::pair<std::string, std::string> reply(const ParsedRequest& r,
                                                   const std::vector<std::string>& pieces,
                                                   json* message) {
    ResponseBuilder b(r, *model_, "chatcmpl-test0000", "qwen3", 0);
    std::vector<json> chunks;
    b.apply(0, HeaderEvent{}, chunks);
    for (const auto& p : pieces) b.apply(0, TextEvent{0, p}, chunks);
    b.apply(0, FinishEvent{0, decode::FinishReason::eos, "", pieces.size()}, chunks);
    b.apply(0, DoneEvent{}, chunks);
    if (message != nullptr) *message = b.response()["choices"][0]["message"];
    std::string reasoning, content;
    for (const auto& c : chunks)
      for (const auto& ch : c["choices"]) {
        if (!ch.contains("delta")) continue;
        reasoning += ch["delta"].value("reasoning_content", "");
        content += ch["delta"].value("content", "");
      }
    return {reasoning, content};
  }
};

TEST_F(ThinkingTest, TemplateKwargsReachTheTemplate) {
  const auto thinking = parse_chat_request(body(), limits());
  const auto plain =
      parse_chat_request(body({{"chat_template_kwargs", {{"enable_thinking", false}}}}), limits());
  const auto& a = thinking.jobs[0].prompt;
  const auto& b = plain.jobs[0].prompt;
  // enable_thinking false: the prompt ends with an empty think block, "<think>\n\n</think>\n\n".
  ASSERT_EQ(b.size(), a.size() + 4);
  EXPECT_EQ(std::vector<std::int32_t>(b.end() - 4, b.end()),
            (std::vector<std::int32_t>{151667, 271, 151668, 271}));
  EXPECT_TRUE(thinking.reasoning);
  try {
    parse_chat_request(body({{"chat_template_kwargs", 3}}), limits());
    ADD_FAILURE() << "accepted chat_template_kwargs: 3";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "chat_template_kwargs");
  }
}

TEST_F(ThinkingTest, ThinkBlockBecomesReasoningContent) {
  auto r = parse_chat_request(body(), limits());
  json message;
  reply(r, {"<think>\nThe capital.\n</think>\n\nBeijing."}, &message);
  EXPECT_EQ(message["reasoning_content"], "\nThe capital.\n");
  EXPECT_EQ(message["content"], "Beijing.");
  reply(r, {"Beijing."}, &message);  // no think block: no reasoning_content
  EXPECT_FALSE(message.contains("reasoning_content"));
  EXPECT_EQ(message["content"], "Beijing.");
}

TEST_F(ThinkingTest, StreamedPiecesSplitAsTheWhole) {
  auto r = parse_chat_request(body({{"stream", true}}), limits());
  const auto [reasoning, content] =
      reply(r, {"<thi", "nk>\n首都", "是</th", "ink>", "\n\n北京", "。"}, nullptr);
  EXPECT_EQ(reasoning, "\n首都是");
  EXPECT_EQ(content, "北京。");
}

}  // namespace
}  // namespace ls::server
