// The tokenizer proper: a TokenizerSpec validated and turned into lookup tables (the vocabulary,
// id -> bytes over GPT-2's byte-level alphabet, the BPE merge table, the added-token matchers),
// and encode (added tokens, NFC, the Qwen2 pre-tokenizer, BPE with a per-thread word cache) and
// decode / StreamDecoder over them.
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "core/mapped_file.h"
#include "tokenizer/added_matcher.h"
#include "tokenizer/bpe.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/string_map.h"
#include "tokenizer/tokenizer_json.h"
#include "tokenizer/unicode.h"

namespace ls::tok {

using json = nlohmann::json;

namespace {

// GPT-2's byte-level alphabet: byte b is written as code point kByteToCp[b].
struct ByteLevelAlphabet {
  char32_t byte_to_cp[256];
  std::int16_t cp_to_byte[0x144];  // -1 where the code point is not in the alphabet
};

ByteLevelAlphabet make_alphabet() {
  ByteLevelAlphabet a{};
  for (auto& v : a.cp_to_byte) v = -1;
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
    const char32_t cp = printable ? char32_t(b) : char32_t(256 + extra++);
    a.byte_to_cp[b] = cp;
    a.cp_to_byte[cp] = static_cast<std::int16_t>(b);
  }
  return a;
}

const ByteLevelAlphabet& alphabet() {
  static const ByteLevelAlphabet a = make_alphabet();
  return a;
}

// The bytes a token string stands for, as the ByteLevel decoder computes them: every character
// mapped back through the alphabet, or, if any character is outside it, the string's own UTF-8.
// *pure is set when all characters were in the alphabet.
std::string token_string_to_bytes(std::string_view token, bool* pure) {
  const auto& a = alphabet();
  std::string out;
  out.reserve(token.size());
  const auto* p = reinterpret_cast<const std::uint8_t*>(token.data());
  std::size_t i = 0;
  while (i < token.size()) {
    int len;
    const char32_t cp = tok::decode_utf8(p + i, &len);
    if (cp >= 0x144 || a.cp_to_byte[cp] < 0) {
      *pure = false;
      return std::string(token);
    }
    out.push_back(static_cast<char>(a.cp_to_byte[cp]));
    i += static_cast<std::size_t>(len);
  }
  *pure = true;
  return out;
}

std::string bytes_to_token_string(std::string_view bytes) {
  std::string out;
  for (char c : bytes) tok::append_utf8(out, alphabet().byte_to_cp[static_cast<std::uint8_t>(c)]);
  return out;
}

std::atomic<std::uint64_t> g_serial{1};

// from_spec's errors: "<source>: <field>: <what>", the fields named as in tokenizer.json.
struct SpecError {
  const std::string& source;
  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    fail("{}: {}: {}", source, field, what);
  }
};

// Ids are below 2^30 (and, further, below BpeModel::kMaxId).
constexpr std::int32_t kIdLimit = std::int32_t{1} << 30;

// A string in JSON quotes for messages (ill-formed UTF-8 shown as U+FFFD rather than thrown).
std::string json_quoted(std::string_view s) {
  return json(std::string(s)).dump(-1, ' ', false, json::error_handler_t::replace);
}

bool valid_utf8(std::string_view s) {
  return tok::utf8_validate(s) == s.size();
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct Tokenizer::Impl {
  std::uint64_t serial = 0;
  std::string source;
  tok::BpeModel bpe;
  bool nfc = false;
  bool ignore_merges = false;
  tok::StringIdMap vocab;           // token string -> id
  tok::StringIdMap vocab_by_bytes;  // token bytes -> id, only with ignore_merges
  std::vector<tok::AddedToken> added;
  std::unordered_map<std::string, std::int32_t> added_by_content;
  tok::AddedMatcher raw_matcher, normalized_matcher;
  std::vector<std::string> id_bytes;   // index: id
  std::vector<std::uint8_t> id_flags;  // kKnown | kSpecial
  std::int32_t size = 0;

  static constexpr std::uint8_t kKnown = 1, kSpecial = 2;

  void encode_words(std::string_view text, std::vector<std::int32_t>& out) const;
  void encode_normalized(std::string_view text, bool split_special,
                         std::vector<std::int32_t>& out) const;
  void encode_plain(std::string_view text, bool split_special, bool nfc_safe,
                    std::vector<std::int32_t>& out) const;
};

void Tokenizer::Impl::encode_words(std::string_view text, std::vector<std::int32_t>& out) const {
  tok::WordCache& cache = tok::WordCache::for_thread(serial);
  tok::qwen2_pretokenize(text, [&](std::size_t b, std::size_t e) {
    const std::string_view word = text.substr(b, e - b);
    if (ignore_merges) {
      if (auto id = vocab_by_bytes.find(word)) {
        out.push_back(*id);
        return;
      }
    }
    if (word.size() == 1) {
      bpe.encode_word(word, out);
      return;
    }
    if (word.size() > tok::WordCache::kMaxWordBytes) {
      bpe.encode_word(word, out, cache.pair_cache());
      return;
    }
    const std::uint64_t h = tok::WordCache::hash(word);
    const std::int32_t* ids;
    std::size_t count;
    if (cache.find(word, h, &ids, &count)) {
      out.insert(out.end(), ids, ids + count);
      return;
    }
    const std::size_t before = out.size();
    bpe.encode_word(word, out, cache.pair_cache());
    cache.insert(word, h, out.data() + before, out.size() - before);
  });
}

void Tokenizer::Impl::encode_normalized(std::string_view text, bool split_special,
                                        std::vector<std::int32_t>& out) const {
  normalized_matcher.split(
      text, split_special, [&](std::string_view piece) { encode_words(piece, out); }, out);
}

void Tokenizer::Impl::encode_plain(std::string_view text, bool split_special, bool nfc_safe,
                                   std::vector<std::int32_t>& out) const {
  if (text.empty()) return;
  if (nfc && !nfc_safe && !tok::nfc_quick_check(text)) {
    const std::string normalized = tok::nfc(text);
    encode_normalized(normalized, split_special, out);
  } else {
    encode_normalized(text, split_special, out);
  }
}

// ---------------------------------------------------------------------------------------------

Tokenizer Tokenizer::load(const std::string& tokenizer_json_path) {
  return from_json(read_text_file(tokenizer_json_path), tokenizer_json_path);
}

Tokenizer Tokenizer::from_json(const std::string& json_text, const std::string& source_name) {
  return from_spec(tok::parse_tokenizer_json(json_text, source_name), source_name);
}

Tokenizer Tokenizer::from_spec(TokenizerSpec spec, const std::string& source_name) {
  const SpecError r{source_name};
  auto impl = std::make_shared<Impl>();
  impl->serial = g_serial.fetch_add(1);
  impl->source = source_name;
  impl->nfc = spec.nfc;
  impl->ignore_merges = spec.ignore_merges;

  std::int32_t max_id = -1;
  impl->vocab.reserve(spec.vocab.size());
  for (const auto& [token, id] : spec.vocab) {
    if (id < 0 || id >= kIdLimit)
      r.bad("model.vocab[" + json_quoted(token) + "]", "expected a non-negative integer id");
    if (!valid_utf8(token)) r.bad("model.vocab[" + json_quoted(token) + "]", "not valid UTF-8");
    if (!impl->vocab.insert(token, id)) {
      r.bad("model.vocab", "duplicate token");
    }
    max_id = std::max(max_id, id);
  }
  std::vector<TokenizerSpec::Token>().swap(spec.vocab);

  // Added tokens.
  impl->added.reserve(spec.added_tokens.size());
  for (std::size_t i = 0; i < spec.added_tokens.size(); ++i) {
    TokenizerSpec::AddedToken& t = spec.added_tokens[i];
    const std::string path = fmt::format("added_tokens[{}]", i);
    if (t.id < 0 || t.id >= kIdLimit) r.bad(path + ".id", "expected a non-negative integer");
    if (t.content.empty()) r.bad(path + ".content", "empty");
    if (!valid_utf8(t.content)) r.bad(path + ".content", "not valid UTF-8");
    if (auto v = impl->vocab.find(t.content); v && *v != t.id) {
      r.bad(path, fmt::format("content {} is vocabulary id {} but the entry says {}",
                              json_quoted(t.content), *v, t.id));
    }
    tok::AddedToken a;
    a.id = t.id;
    a.content = std::move(t.content);
    a.special = t.special;
    a.single_word = t.single_word;
    a.lstrip = t.lstrip;
    a.rstrip = t.rstrip;
    a.normalized = t.normalized;
    a.pattern = a.normalized && impl->nfc ? tok::nfc(a.content) : a.content;
    if (a.pattern.empty()) r.bad(path + ".content", "empty after normalization");
    if (impl->added_by_content.count(a.content)) r.bad(path + ".content", "duplicate added token");
    impl->added_by_content.emplace(a.content, a.id);
    max_id = std::max(max_id, a.id);
    impl->added.push_back(std::move(a));
  }

  if (max_id > tok::BpeModel::kMaxId)
    r.bad("model.vocab", fmt::format("ids above {} are not supported", tok::BpeModel::kMaxId));
  impl->size = max_id + 1;

  // Id -> bytes, flags.
  impl->id_bytes.assign(static_cast<std::size_t>(impl->size), std::string());
  impl->id_flags.assign(static_cast<std::size_t>(impl->size), 0);
  std::int32_t byte_ids[256];
  std::fill(std::begin(byte_ids), std::end(byte_ids), -1);
  impl->vocab.for_each([&](std::string_view token, std::int32_t id) {
    bool pure;
    std::string bytes = token_string_to_bytes(token, &pure);
    if (pure && bytes.size() == 1) byte_ids[static_cast<std::uint8_t>(bytes[0])] = id;
    if (pure && impl->ignore_merges) impl->vocab_by_bytes.insert(bytes, id);
    impl->id_bytes[static_cast<std::size_t>(id)] = std::move(bytes);
    impl->id_flags[static_cast<std::size_t>(id)] = Impl::kKnown;
  });
  for (int b = 0; b < 256; ++b) {
    if (byte_ids[b] < 0) {
      r.bad("model.vocab",
            fmt::format("no token for byte 0x{:02X} (expected {}); the byte-level "
                        "alphabet must be complete",
                        b, json_quoted(bytes_to_token_string(std::string(1, char(b))))));
    }
  }
  impl->bpe.set_byte_ids(byte_ids);
  for (const tok::AddedToken& a : impl->added) {
    bool pure;
    impl->id_bytes[static_cast<std::size_t>(a.id)] = token_string_to_bytes(a.content, &pure);
    impl->id_flags[static_cast<std::size_t>(a.id)] =
        Impl::kKnown | (a.special ? Impl::kSpecial : std::uint8_t{0});
  }
  impl->raw_matcher.build(impl->added, false);
  impl->normalized_matcher.build(impl->added, true);

  // Merges: the rank is the position.
  if (spec.merges.size() > tok::BpeModel::kMaxMerges) r.bad("model.merges", "too many merges");
  impl->bpe.reserve_merges(spec.merges.size());
  std::string joined;
  for (std::size_t i = 0; i < spec.merges.size(); ++i) {
    const auto& [left, right] = spec.merges[i];
    auto find = [&](const std::string& token) {
      const auto id = impl->vocab.find(token);
      if (!id) {
        r.bad(fmt::format("model.merges[{}]", i),
              "token " + json_quoted(token) + " is not in model.vocab");
      }
      return *id;
    };
    joined = left;
    joined += right;
    impl->bpe.add_merge(find(left), find(right), find(joined), static_cast<std::uint32_t>(i));
  }
  impl->bpe.finalize();

  return Tokenizer(std::move(impl));
}

// ---------------------------------------------------------------------------------------------

std::vector<std::int32_t> Tokenizer::encode(std::string_view text, bool split_special) const {
  bool nfc_safe;  // the whole text: then no segment needs its own check
  const std::size_t bad = tok::utf8_validate_nfc(text, &nfc_safe);
  if (bad != text.size()) {
    fail("tokenizer: the text is not valid UTF-8 (byte {} of {}: 0x{:02X})", bad, text.size(),
         static_cast<std::uint8_t>(text[bad]));
  }
  std::vector<std::int32_t> out;
  out.reserve(text.size() / 3 + 4);
  const Impl& im = *impl_;
  im.raw_matcher.split(
      text, split_special,
      [&](std::string_view piece) { im.encode_plain(piece, split_special, nfc_safe, out); }, out);
  return out;
}

std::string Tokenizer::decode(std::span<const std::int32_t> ids, bool skip_special) const {
  std::string bytes;
  const Impl& im = *impl_;
  for (std::int32_t id : ids) {
    if (id < 0 || id >= im.size) continue;
    const std::uint8_t f = im.id_flags[static_cast<std::size_t>(id)];
    if (skip_special && (f & Impl::kSpecial)) continue;
    bytes += im.id_bytes[static_cast<std::size_t>(id)];
  }
  return tok::utf8_lossy(bytes);
}

std::string Tokenizer::token_bytes(std::int32_t id) const {
  if (id < 0 || id >= impl_->size) return {};
  return impl_->id_bytes[static_cast<std::size_t>(id)];
}

std::string Tokenizer::token_text(std::int32_t id) const {
  const std::string bytes = token_bytes(id);
  std::string out;
  std::size_t i = 0;
  while (i < bytes.size()) {
    bool truncated;
    const int len = tok::utf8_sequence(std::string_view(bytes).substr(i), &truncated);
    if (len > 0) {
      out.append(bytes, i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else {
      for (int k = 0; k < -len; ++k) {
        out += fmt::format("\\x{:02X}",
                           static_cast<std::uint8_t>(bytes[i + static_cast<std::size_t>(k)]));
      }
      i += static_cast<std::size_t>(-len);
    }
  }
  return out;
}

std::optional<std::int32_t> Tokenizer::token_to_id(std::string_view token_content) const {
  const std::string key(token_content);
  if (auto it = impl_->added_by_content.find(key); it != impl_->added_by_content.end()) {
    return it->second;
  }
  if (auto id = impl_->vocab.find(key)) return *id;
  return std::nullopt;
}

bool Tokenizer::is_special(std::int32_t id) const {
  return id >= 0 && id < impl_->size &&
         (impl_->id_flags[static_cast<std::size_t>(id)] & Impl::kSpecial) != 0;
}

std::int32_t Tokenizer::size() const {
  return impl_->size;
}

const std::string& Tokenizer::source() const {
  return impl_->source;
}

// ---------------------------------------------------------------------------------------------

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special)
    : tok_(&tok), skip_special_(skip_special) {}

std::string StreamDecoder::push(std::int32_t id) {
  if (skip_special_ && tok_->is_special(id)) return {};
  pending_ += tok_->token_bytes(id);
  std::string out;
  std::size_t i = 0;
  const std::string_view buf(pending_);
  while (i < buf.size()) {
    const auto b = static_cast<std::uint8_t>(buf[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    bool truncated;
    const int len = tok::utf8_sequence(buf.substr(i), &truncated);
    if (len > 0) {
      out.append(buf.data() + i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else if (truncated) {
      break;  // may still complete: hold it back
    } else {
      out.append("\xEF\xBF\xBD");
      i += static_cast<std::size_t>(-len);
    }
  }
  pending_.erase(0, i);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = tok::utf8_lossy(pending_);
  pending_.clear();
  return out;
}

}  // namespace ls::tok
