// Turns token bytes into printable text for streaming: stop strings are matched on the decoded
// bytes (a stop string split across several tokens is caught) and are never emitted; bytes that
// could be the start of a stop string, or an incomplete UTF-8 character, are held back until the
// next token decides them. Everything emitted is valid UTF-8 (bytes that cannot become a
// character are U+FFFD each).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ls::decode {

class TextStream {
 public:
  explicit TextStream(std::vector<std::string> stop_strings);

  struct Update {
    std::string text;      // safe to print now
    bool stopped = false;  // a stop string appeared; it and everything after it are dropped
    std::string stop;      // which one
  };
  Update push(std::string_view token_bytes);
  // End of generation without a stop string: everything still held back (an incomplete
  // character's bytes as U+FFFD each).
  std::string finish();
  const std::string& emitted() const { return emitted_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  std::string emitted_;
};

// The number of trailing bytes of `text` that form an incomplete UTF-8 sequence (0 to 3).
std::size_t incomplete_utf8_tail(std::string_view text);

}  // namespace ls::decode
