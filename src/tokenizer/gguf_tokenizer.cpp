// tokenizer.ggml.* -> TokenizerSpec. The checks and messages are those of the tokenizer.json
// text the metadata was once rebuilt as; in particular ill-formed UTF-8 is reported for the
// first string that text's serialization would have met (added tokens, then merges, then the
// vocabulary in byte order), with nlohmann's description of the bad byte.
#include "tokenizer/gguf_tokenizer.h"

#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "tokenizer/tokenizer_spec.h"
#include "tokenizer/unicode.h"

namespace ls::tok {

namespace {

bool valid_utf8(const std::string& s) {
  return utf8_validate(s) == s.size();
}

[[noreturn]] void fail_utf8(const formats::GgufFile& f, const std::string& s) {
  std::string detail = "invalid UTF-8";
  try {
    (void)nlohmann::json(s).dump();
  } catch (const nlohmann::json::type_error& e) {
    detail = e.what();
  }
  fail(
      "{}: metadata 'tokenizer.ggml.tokens' or 'tokenizer.ggml.merges' holds text that is "
      "not valid UTF-8 ({})",
      f.path(), detail);
}

// Every string of the spec must be valid UTF-8 (a tokenizer.json cannot hold anything else).
void require_utf8(const formats::GgufFile& f, const TokenizerSpec& spec) {
  for (const auto& a : spec.added_tokens)
    if (!valid_utf8(a.content)) fail_utf8(f, a.content);
  for (const auto& m : spec.merges) {
    if (!valid_utf8(m.left)) fail_utf8(f, m.left);
    if (!valid_utf8(m.right)) fail_utf8(f, m.right);
  }
  const std::string* first = nullptr;
  for (const auto& t : spec.vocab)
    if (!valid_utf8(t.text) && (first == nullptr || t.text < *first)) first = &t.text;
  if (first != nullptr) fail_utf8(f, *first);
}

}  // namespace

Tokenizer gguf_tokenizer(const formats::GgufFile& f) {
  const std::string model = f.require_string("tokenizer.ggml.model");
  if (model != "gpt2")
    fail("{}: metadata 'tokenizer.ggml.model' is '{}' (supported: gpt2, byte-level BPE)", f.path(),
         model);
  const auto pre = f.get_string("tokenizer.ggml.pre");
  if (pre != "qwen2")
    fail("{}: metadata 'tokenizer.ggml.pre' is {} (supported: qwen2)", f.path(),
         pre ? "'" + *pre + "'" : std::string("missing"));
  const nlohmann::json* tokens = f.get_array("tokenizer.ggml.tokens", formats::GgufType::String);
  if (tokens == nullptr) fail("{}: missing metadata 'tokenizer.ggml.tokens'", f.path());
  const nlohmann::json* types = f.get_array("tokenizer.ggml.token_type", formats::GgufType::Int32);
  if (types != nullptr && types->size() != tokens->size())
    fail(
        "{}: metadata 'tokenizer.ggml.token_type' has {} entries but 'tokenizer.ggml.tokens' "
        "has {}",
        f.path(), types->size(), tokens->size());
  const nlohmann::json* merges = f.get_array("tokenizer.ggml.merges", formats::GgufType::String);
  if (merges == nullptr) fail("{}: missing metadata 'tokenizer.ggml.merges'", f.path());

  TokenizerSpec spec;
  spec.nfc = true;  // pre "qwen2": Qwen2's tokenizer.json normalizes with NFC
  spec.ignore_merges = false;
  spec.vocab.reserve(tokens->size());
  std::map<std::string, std::size_t> seen;
  for (std::size_t id = 0; id < tokens->size(); ++id) {
    const auto& text = (*tokens)[id].get_ref<const std::string&>();
    const std::int64_t type = types ? (*types)[id].get<std::int64_t>()
                                    : static_cast<std::int64_t>(formats::GgufTokenType::Normal);
    if (type == static_cast<std::int64_t>(formats::GgufTokenType::Unused)) continue;
    // Older llama.cpp converters wrote the padding as USER_DEFINED "[PAD{id}]": no text either.
    if (type == static_cast<std::int64_t>(formats::GgufTokenType::UserDefined) &&
        text == fmt::format("[PAD{}]", id))
      continue;
    if (text.empty())
      fail("{}: metadata 'tokenizer.ggml.tokens'[{}] is an empty string", f.path(), id);
    if (auto [it, fresh] = seen.emplace(text, id); !fresh)
      fail("{}: metadata 'tokenizer.ggml.tokens'[{}] repeats the token at id {}", f.path(), id,
           it->second);
    // Ids beyond int32 cannot be valid; -1 makes from_spec reject them.
    const auto id32 = id <= 0x7FFFFFFF ? static_cast<std::int32_t>(id) : std::int32_t{-1};
    switch (static_cast<formats::GgufTokenType>(type)) {
      case formats::GgufTokenType::Normal:
        spec.vocab.push_back({text, id32});
        break;
      case formats::GgufTokenType::Control:
      case formats::GgufTokenType::UserDefined: {
        TokenizerSpec::AddedToken a;
        a.id = id32;
        a.content = text;
        a.special = type == static_cast<std::int64_t>(formats::GgufTokenType::Control);
        a.single_word = a.lstrip = a.rstrip = a.normalized = false;
        spec.added_tokens.push_back(std::move(a));
        break;
      }
      default:
        fail(
            "{}: metadata 'tokenizer.ggml.token_type'[{}] = {} is not supported for a gpt2 "
            "tokenizer (expected 1 normal, 3 control, 4 user-defined or 5 unused)",
            f.path(), id, type);
    }
  }
  spec.merges.reserve(merges->size());
  for (std::size_t i = 0; i < merges->size(); ++i) {
    const auto& m = (*merges)[i].get_ref<const std::string&>();
    const auto sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() ||
        m.find(' ', sp + 1) != std::string::npos)
      fail("{}: metadata 'tokenizer.ggml.merges'[{}] must be two tokens separated by one space",
           f.path(), i);
    spec.merges.push_back({m.substr(0, sp), m.substr(sp + 1)});
  }
  require_utf8(f, spec);
  return Tokenizer::from_spec(std::move(spec), f.path() + " (tokenizer.ggml.* metadata)");
}

}  // namespace ls::tok
