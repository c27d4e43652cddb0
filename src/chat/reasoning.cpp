// Reasoning and answer of a reply (see reasoning.h).
#include "chat/reasoning.h"

#include <algorithm>

namespace ls::chat {

namespace {

constexpr std::string_view kOpen = "<think>", kClose = "</think>";

bool is_space(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

// Length of the longest tail of `s` that is a proper prefix of `tag` (may still become it).
std::size_t partial_tag(std::string_view s, std::string_view tag) {
  for (std::size_t n = std::min(s.size(), tag.size() - 1); n > 0; --n)
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  return 0;
}

}  // namespace

void ReasoningSplitter::process(ReasoningDelta& out) {
  while (true) {
    switch (state_) {
      case State::start: {
        std::size_t lead = 0;
        while (lead < held_.size() && is_space(held_[lead])) ++lead;
        const std::string_view rest = std::string_view(held_).substr(lead);
        if (rest.size() < kOpen.size() && kOpen.substr(0, rest.size()) == rest) return;  // wait
        if (rest.substr(0, kOpen.size()) == kOpen) {
          held_.erase(0, lead + kOpen.size());
          state_ = State::reasoning;
        } else {
          state_ = State::answer;
        }
        continue;
      }
      case State::reasoning: {
        const std::size_t close = held_.find(kClose);
        if (close == std::string::npos) {
          const std::size_t keep = partial_tag(held_, kClose);
          out.reasoning += held_.substr(0, held_.size() - keep);
          held_.erase(0, held_.size() - keep);
          return;
        }
        out.reasoning += held_.substr(0, close);
        held_.erase(0, close + kClose.size());
        state_ = State::answer_start;
        continue;
      }
      case State::answer_start: {
        std::size_t lead = 0;
        while (lead < held_.size() && is_space(held_[lead])) ++lead;
        held_.erase(0, lead);
        if (held_.empty()) return;
        state_ = State::answer;
        continue;
      }
      case State::answer:
        out.content += held_;
        held_.clear();
        return;
    }
  }
}

ReasoningDelta ReasoningSplitter::push(std::string_view text) {
  ReasoningDelta out;
  held_ += text;
  process(out);
  return out;
}

ReasoningDelta ReasoningSplitter::finish() {
  ReasoningDelta out;
  if (state_ == State::reasoning)
    out.reasoning += held_;
  else if (state_ != State::answer_start)
    out.content += held_;
  held_.clear();
  return out;
}

ReasoningDelta split_reasoning(std::string_view reply) {
  ReasoningSplitter s;
  ReasoningDelta out = s.push(reply);
  const ReasoningDelta end = s.finish();
  out.reasoning += end.reasoning;
  out.content += end.content;
  return out;
}

bool reply_opens_thinking(std::string_view template_source, std::string_view prompt) {
  if (template_source.find("</think>") == std::string_view::npos) return false;
  const std::size_t turn = prompt.rfind("<|im_start|>assistant");
  if (turn == std::string_view::npos) return false;  // not a chat prompt awaiting a reply
  return prompt.find("</think>", turn) == std::string_view::npos;
}

}  // namespace ls::chat
