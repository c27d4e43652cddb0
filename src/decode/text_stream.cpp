// Stop-string matching and UTF-8-safe hold-back for streamed text (see text_stream.h).
#include "decode/text_stream.h"

#include "decode/trace_json.h"

#include <algorithm>

namespace ls::decode {

std::size_t incomplete_utf8_tail(std::string_view text) {
  // Walk back over at most 3 continuation bytes to the lead byte and compare lengths.
  const std::size_t n = text.size();
  for (std::size_t back = 1; back <= std::min<std::size_t>(4, n); ++back) {
    const auto c = static_cast<unsigned char>(text[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte
    std::size_t need = 1;
    if ((c & 0xE0) == 0xC0) {
      need = 2;
    } else if ((c & 0xF0) == 0xE0) {
      need = 3;
    } else if ((c & 0xF8) == 0xF0) {
      need = 4;
    }
    return back < need ? back : 0;
  }
  return 0;
}

TextStream::TextStream(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

TextStream::Update TextStream::push(std::string_view token_bytes) {
  pending_ += token_bytes;
  Update update;
  std::size_t first = std::string::npos;
  for (const auto& stop : stops_) {
    const std::size_t at = pending_.find(stop);
    if (at < first) {
      first = at;
      update.stop = stop;
    }
  }
  // What is emitted is valid UTF-8: bytes that can never become a character (a stray
  // continuation byte, a sequence cut by a stop string) are U+FFFD each, as sanitize_utf8 does.
  if (first != std::string::npos) {
    update.text = sanitize_utf8(pending_.substr(0, first));
    update.stopped = true;
    emitted_ += update.text;
    pending_.clear();
    return update;
  }
  // Hold back the longest tail that is a proper prefix of some stop string.
  std::size_t hold = incomplete_utf8_tail(pending_);
  for (const auto& stop : stops_) {
    for (std::size_t k = std::min(stop.size() - 1, pending_.size()); k > hold; --k) {
      if (pending_.compare(pending_.size() - k, k, stop, 0, k) == 0) {
        hold = k;
        break;
      }
    }
  }
  update.text = sanitize_utf8(pending_.substr(0, pending_.size() - hold));
  pending_.erase(0, pending_.size() - hold);
  emitted_ += update.text;
  return update;
}

std::string TextStream::finish() {
  // An incomplete character at the very end can no longer be completed: each of its bytes
  // becomes U+FFFD (as sanitize_utf8 does for JSON), so printed text is always valid UTF-8.
  std::string rest = sanitize_utf8(pending_);
  pending_.clear();
  emitted_ += rest;
  return rest;
}

}  // namespace ls::decode
