// ReasoningSplitter: Qwen3's <think> block split from the answer, the same whether the reply
// comes whole or in pieces cut at any byte (tags split across pushes).
#include <gtest/gtest.h>

#include <string>

#include "chat/reasoning.h"

namespace {

using ls::chat::ReasoningSplitter;
using ls::chat::split_reasoning;

// The reply pushed in pieces of `n` bytes.
ls::chat::ReasoningDelta in_pieces(const std::string& reply, std::size_t n) {
  ReasoningSplitter s;
  ls::chat::ReasoningDelta all;
  for (std::size_t i = 0; i < reply.size(); i += n) {
    const auto d = s.push(std::string_view(reply).substr(i, n));
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  const auto d = s.finish();
  all.reasoning += d.reasoning;
  all.content += d.content;
  return all;
}

TEST(Reasoning, SplitsThinkFromAnswer) {
  const auto d = split_reasoning("<think>\nAdd them.\n</think>\n\nThe answer is 4.");
  EXPECT_EQ(d.reasoning, "\nAdd them.\n");
  EXPECT_EQ(d.content, "The answer is 4.");
}

TEST(Reasoning, NoThinkIsAllAnswer) {
  EXPECT_EQ(split_reasoning("Paris.").content, "Paris.");
  EXPECT_EQ(split_reasoning("Paris.").reasoning, "");
  EXPECT_EQ(split_reasoning("<thin").content, "<thin");  // a prefix that never became the tag
  EXPECT_EQ(split_reasoning("a <think> b").content, "a <think> b");  // not at the start
}

TEST(Reasoning, EmptyThinkBlockAndUnclosedThink) {
  const auto empty = split_reasoning("<think>\n\n</think>\n\nHi");
  EXPECT_EQ(empty.reasoning, "\n\n");
  EXPECT_EQ(empty.content, "Hi");
  const auto cut = split_reasoning("<think>\nstill thinking");  // max_tokens ran out
  EXPECT_EQ(cut.reasoning, "\nstill thinking");
  EXPECT_EQ(cut.content, "");
}

TEST(Reasoning, PiecesAtEveryByteGiveTheWholeSplit) {
  for (const std::string reply :
       {"<think>\n中国的首都</think>\n\n北京。</think>", "  <think>x</thi</think>y", "<thinking>no",
        "</think>", "<think></think>"}) {
    const auto whole = split_reasoning(reply);
    for (std::size_t n = 1; n <= reply.size(); ++n) {
      const auto parts = in_pieces(reply, n);
      EXPECT_EQ(parts.reasoning, whole.reasoning) << reply << " in pieces of " << n;
      EXPECT_EQ(parts.content, whole.content) << reply << " in pieces of " << n;
    }
  }
  EXPECT_EQ(split_reasoning("  <think>x</thi</think>y").reasoning, "x</thi");
  EXPECT_EQ(split_reasoning("<think>\n中国的首都</think>\n\n北京。</think>").content,
            "北京。</think>");
}

}  // namespace

// When a constraint must wait for "</think>": a thinking template, a prompt awaiting the
// assistant's reply, no block closed in that turn.
TEST(ReplyOpensThinking, OnlyForAThinkingTemplatesOpenAssistantTurn) {
  const std::string thinking = "{{ '<think>' }}...{{ '</think>' }}";
  const std::string plain = "{{ messages }}";
  const std::string asks = "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n";
  EXPECT_TRUE(ls::chat::reply_opens_thinking(thinking, asks));
  EXPECT_FALSE(ls::chat::reply_opens_thinking(plain, asks));
  // enable_thinking false: the prompt closes an empty block itself.
  EXPECT_FALSE(ls::chat::reply_opens_thinking(thinking, asks + "<think>\n\n</think>\n\n"));
  // An earlier turn's closed block does not count.
  EXPECT_TRUE(ls::chat::reply_opens_thinking(
      thinking, "<|im_start|>assistant\n<think>a</think>b<|im_end|>\n" + asks));
  EXPECT_FALSE(ls::chat::reply_opens_thinking(thinking, "plain text, no chat"));
}
