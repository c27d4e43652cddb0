// Fuzz target: tokenizer.json loading (src/tokenizer/: parse_tokenizer_json, the SAX reader and
// every structural check, then Tokenizer::from_spec's checks of the content). Each input is the
// text of a tokenizer.json; it must load or throw ls::Error. A tokenizer that loads encodes a
// few fixed texts, and decoding (whole or streamed) must agree; anything else is a finding.
#include <cstdint>
#include <exception>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ls::tok::Tokenizer tok = ls::tok::Tokenizer::from_json(text, "fuzz/tokenizer.json");
    for (const char* sample : {"Hello world", "  \n\t x", "你好 e\u0301", "<|im_end|>a<think>"}) {
      for (bool split : {false, true}) {
        std::vector<std::int32_t> ids;
        try {
          ids = tok.encode(sample, split);
        } catch (const ls::Error&) {
          continue;
        }
        for (auto id : ids)
          if (id < 0 || id >= tok.size()) ls::fuzz::finding("encode gave an id out of range");
        const std::string whole = tok.decode(ids);
        ls::tok::StreamDecoder stream(tok);
        std::string streamed;
        for (auto id : ids) streamed += stream.push(id);
        streamed += stream.flush();
        if (streamed != whole) ls::fuzz::finding("StreamDecoder differs from decode");
      }
    }
  } catch (const ls::Error&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ls::Error: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  return 0;
}
