// Streaming parser for Qwen2.5 `<tool_call>` blocks (see tool_calls.h). Tags are ASCII, so
// cutting the stream only at tag boundaries and whitespace keeps every delta valid UTF-8.
#include "server/tool_calls.h"

#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>

namespace ls::server {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Length of the longest suffix of `s` that is a proper prefix of the open tag: those bytes
// must wait, since the next push may complete the tag.
std::size_t partial_open_len(std::string_view s) {
  for (std::size_t n = std::min(s.size(), kOpen.size() - 1); n > 0; --n) {
    if (s.substr(s.size() - n) == kOpen.substr(0, n)) return n;
  }
  return 0;
}

// The call in a block's inner text, or false when it is not a well-formed call.
bool parse_call(std::string_view inner, ToolCall& call) {
  try {
    const auto j = nlohmann::json::parse(trim(inner), nullptr, /*allow_exceptions=*/false);
    if (!j.is_object()) return false;
    const auto name = j.find("name");
    if (name == j.end() || !name->is_string()) return false;
    const auto args = j.find("arguments");
    if (args == j.end()) {
      call.arguments = "{}";
    } else if (args->is_string()) {
      call.arguments = args->get<std::string>();
    } else if (args->is_object()) {
      call.arguments = args->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      return false;
    }
    call.name = name->get<std::string>();
    return true;
  } catch (...) {  // nothing the model writes may take the server down
    return false;
  }
}

}  // namespace

ToolCallParser::ToolCallParser(std::string id_prefix) : id_prefix_(std::move(id_prefix)) {}

ToolDelta ToolCallParser::push(std::string_view text) {
  buf_.append(text);
  process();
  return take();
}

ToolDelta ToolCallParser::finish() {
  // An unterminated block or a partial tag was never a call: give it back verbatim.
  if (in_block_) {
    out_.content += buf_;
  } else {
    emit_text(buf_);
  }
  buf_.clear();
  in_block_ = false;
  pending_ws_.clear();  // whitespace after the last block is Qwen's layout, not content
  after_block_ = false;
  return take();
}

void ToolCallParser::process() {
  for (;;) {
    if (in_block_) {
      const auto end = buf_.find(kClose, scan_from_);
      if (end == std::string::npos) {
        scan_from_ = std::max(kOpen.size(), buf_.size() - std::min(buf_.size(), kClose.size()));
        return;
      }
      end_block(end);
      continue;
    }
    const auto open = buf_.find(kOpen);
    if (open == std::string::npos) {
      const auto keep = partial_open_len(buf_);
      emit_text(std::string_view(buf_).substr(0, buf_.size() - keep));
      buf_.erase(0, buf_.size() - keep);
      return;
    }
    emit_text(std::string_view(buf_).substr(0, open));
    pending_ws_.clear();  // only whitespace separated this block from the previous one
    after_block_ = false;
    buf_.erase(0, open);
    in_block_ = true;
    scan_from_ = kOpen.size();
  }
}

void ToolCallParser::end_block(std::size_t end) {
  const std::size_t block_len = end + kClose.size();
  ToolCall call;
  if (parse_call(std::string_view(buf_).substr(kOpen.size(), end - kOpen.size()), call)) {
    call.id = "call_" + id_prefix_ + "_" + std::to_string(count_++);
    out_.calls.push_back(std::move(call));
  } else {
    out_.content.append(buf_, 0, block_len);
  }
  buf_.erase(0, block_len);
  in_block_ = false;
  after_block_ = count_ > 0;
}

void ToolCallParser::emit_text(std::string_view text) {
  // Whitespace right after a block is held: it is dropped if another block or the end follows.
  if (after_block_) {
    std::size_t n = 0;
    while (n < text.size() && is_space(text[n])) ++n;
    pending_ws_.append(text.substr(0, n));
    if (n == text.size()) return;
    out_.content += pending_ws_;
    pending_ws_.clear();
    after_block_ = false;
    text.remove_prefix(n);
  }
  out_.content.append(text);
}

ToolDelta ToolCallParser::take() {
  return std::exchange(out_, ToolDelta{});
}

}  // namespace ls::server
