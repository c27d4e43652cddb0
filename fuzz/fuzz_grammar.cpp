// Fuzz target: grammars (src/grammar). The first byte picks the input's kind: GBNF text for
// parse_gbnf, or a JSON Schema for json_schema_to_gbnf (whose output must always parse). A
// grammar that parses is then run: a Matcher over probe texts and a token mask over a small
// byte-level vocabulary (which must equal advancing each token alone). Every failure must be
// ls::Error; another exception, a converter output parse_gbnf refuses, a mask that disagrees,
// a crash or a hang is a finding. Inputs are capped at 4 KiB so each runs in milliseconds.
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"

namespace {

const ls::grammar::Vocabulary& vocabulary() {
  static const ls::grammar::Vocabulary v = [] {
    std::vector<std::string> t = {"{",  "}",        "[",    "]",     "\"", ":",    ",",
                                  " ",  "\n",       "a",    "ab",    "1",  "12",   "-",
                                  ".",  "true",     "null", "\"a\"", "é",  "\xC3", "\xA9",
                                  "日", "\xE6\x97", "\xA5", "\\",    "u00"};
    return ls::grammar::Vocabulary(t, std::vector<bool>(t.size(), false));
  }();
  return v;
}

void run(const std::shared_ptr<const ls::grammar::Grammar>& g) {
  for (const char* probe : {"", "a", "{\"a\": 1}", "[1, 2]", "\"x\"", "true", "é日", "\xC3"}) {
    ls::grammar::Matcher m(g);
    (void)(m.advance(probe) && m.can_end());
  }
  ls::grammar::Matcher m(g);
  std::vector<std::uint64_t> bits;
  for (int step = 0; step < 4; ++step) {
    vocabulary().allowed(m.space(), m.state(), bits);
    std::int32_t first = -1;
    for (std::int32_t id = 0; id < vocabulary().size(); ++id) {
      ls::grammar::Matcher copy = m;
      const bool want = copy.advance(vocabulary().bytes(id));
      if (want != static_cast<bool>(bits[id / 64] >> (id % 64) & 1))
        ls::fuzz::finding("the token mask disagrees with advancing token " + std::to_string(id));
      if (want && first < 0) first = id;
    }
    if (first < 0 || !m.advance(vocabulary().bytes(first))) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1 || size > 4096) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    if (data[0] % 2 == 0) {
      run(std::make_shared<const ls::grammar::Grammar>(ls::grammar::parse_gbnf(text, "fuzz")));
      return 0;
    }
    const auto schema = nlohmann::ordered_json::parse(text, nullptr, false);
    if (schema.is_discarded()) return 0;
    const std::string gbnf = ls::grammar::json_schema_to_gbnf(schema, "fuzz");
    std::shared_ptr<const ls::grammar::Grammar> g;
    try {
      g = std::make_shared<const ls::grammar::Grammar>(ls::grammar::parse_gbnf(gbnf, "converted"));
    } catch (const ls::Error& e) {
      ls::fuzz::finding(std::string("the converter's grammar does not parse: ") + e.what());
    }
    run(g);
  } catch (const ls::Error&) {
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ls::Error: ") + e.what());
  }
  return 0;
}
