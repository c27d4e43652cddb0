// Splits a chat reply into its reasoning and its answer as Qwen3 writes them:
// "<think>\n...reasoning...\n</think>\n\nanswer" (the answer's leading whitespace dropped). A
// reply that does not open with <think> is all answer. Streamed text can split a tag across
// pushes, so the splitter holds back any tail that may still become one.
#pragma once

#include <string>
#include <string_view>

namespace ls::chat {

struct ReasoningDelta {
  std::string reasoning;  // text inside <think>...</think>, tags excluded
  std::string content;    // the answer
};

class ReasoningSplitter {
 public:
  ReasoningDelta push(std::string_view text);  // a new piece of the reply (valid UTF-8)
  ReasoningDelta finish();  // the reply ended: flush what is held (an unclosed think: reasoning)

 private:
  enum class State { start, reasoning, answer_start, answer };
  void process(ReasoningDelta& out);
  State state_ = State::start;
  std::string held_;
};

// The whole reply at once.
ReasoningDelta split_reasoning(std::string_view reply);

// Whether the reply to `prompt` (a rendered chat prompt) opens with a reasoning block: the
// template writes <think> blocks (its source mentions "</think>"), the prompt ends in an
// assistant turn ("<|im_start|>assistant") and that turn has not closed a block already (Qwen3 with
// enable_thinking false ends its prompt with an empty block). A constraint on such a reply starts
// after "</think>".
bool reply_opens_thinking(std::string_view template_source, std::string_view prompt);

}  // namespace ls::chat
