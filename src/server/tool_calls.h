// Splits a streamed Qwen2.5 completion into content text and tool calls. Qwen writes each call
// as `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`; the server streams text as
// it is decoded, so a tag can arrive split across pushes. The parser holds back anything that
// may still turn into a tag, and returns every byte it cannot use as a call as content.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace ls::server {

struct ToolCall {
  std::string id;         // "call_" + id_prefix + "_" + index, e.g. "call_ab12_0"
  std::string name;       // the "name" string
  std::string arguments;  // compact JSON text; a string "arguments" is used as is; missing: "{}"
};

struct ToolDelta {
  std::string content;          // text to emit as delta.content now (may be empty)
  std::vector<ToolCall> calls;  // calls completed by this push, in order
};

class ToolCallParser {
 public:
  explicit ToolCallParser(std::string id_prefix);

  ToolDelta push(std::string_view text);  // a new piece of model output (valid UTF-8)
  ToolDelta finish();                     // end of output: flush what is held
  std::size_t call_count() const { return count_; }

 private:
  void process();
  void emit_text(std::string_view text);
  void end_block(std::size_t end);
  ToolDelta take();

  std::string id_prefix_;
  std::string buf_;            // outside: a possible partial open tag; inside: the block so far
  bool in_block_ = false;      // buf_ starts with "<tool_call>"
  std::size_t scan_from_ = 0;  // where to look for the close tag next (avoids rescans)
  bool after_block_ = false;   // only whitespace seen since a block ended, with calls parsed
  std::string pending_ws_;     // that whitespace: dropped before a block or at the end
  std::size_t count_ = 0;
  ToolDelta out_;
};

}  // namespace ls::server
