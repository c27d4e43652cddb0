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

}  // namespace ls::chat
