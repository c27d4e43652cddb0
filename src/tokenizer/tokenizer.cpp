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
#include "tokenizer/json_reader.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/string_map.h"
#include "tokenizer/unicode.h"

namespace ls {

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

// ---- tokenizer.json reading helpers -----------------------------------------------------------

struct Reader {
  const std::string& source;

  [[noreturn]] void bad(const std::string& field, const std::string& what) const {
    fail("{}: {}: {}", source, field, what);
  }
  const json& get(const json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) bad(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) bad(path + "." + key, "missing");
    return *it;
  }
  std::string str(const json& v, const std::string& path) const {
    if (!v.is_string()) bad(path, "expected a string, found " + std::string(v.type_name()));
    return v.get<std::string>();
  }
  bool flag(const json& obj, const std::string& path, const char* key, bool fallback) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) bad(path + "." + key, "expected true or false");
    return it->get<bool>();
  }
  std::string type_of(const json& obj, const std::string& path) const {
    return str(get(obj, path, "type"), path + ".type");
  }
  // Only `allowed` keys may be present (besides "type"); anything else is an unknown feature.
  void only_keys(const json& obj, const std::string& path,
                 std::initializer_list<const char*> allowed) const {
    for (auto it = obj.begin(); it != obj.end(); ++it) {
      if (it.key() == "type") continue;
      bool ok = false;
      for (const char* a : allowed) ok = ok || it.key() == a;
      if (!ok) bad(path + "." + it.key(), "unsupported setting");
    }
  }
};

// ---- tokenizer.json parsing ---------------------------------------------------------------------
// A SAX handler that builds an ordinary JSON tree for everything except model.vocab and
// model.merges, which it streams into flat vectors (a DOM of 150k-entry objects would make
// loading several times slower).
class TokenizerJsonSax : public nlohmann::json_sax<json> {
 public:
  json root;
  bool has_vocab = false, has_merges = false;
  std::vector<std::pair<std::string, std::int64_t>> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  std::string error;  // a structural problem inside vocab/merges, with its field

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::kVocab) {
      vocab.emplace_back(std::move(vocab_key_), v);
      return true;
    }
    return value(v);
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::kVocab) {
      vocab.emplace_back(std::move(vocab_key_),
                         static_cast<std::int64_t>(std::min<number_unsigned_t>(v, 1ULL << 40)));
      return true;
    }
    return value(v);
  }
  bool number_float(number_float_t v, const string_t&) override { return value(v); }
  bool string(string_t& v) override {
    if (mode_ == Mode::kMerges) {
      const std::size_t sp = v.find(' ');
      if (sp == std::string::npos || v.find(' ', sp + 1) != std::string::npos) {
        return structural(fmt::format("model.merges[{}]: expected \"left right\", found {}",
                                      merges.size(), json(v).dump()));
      }
      merges.emplace_back(v.substr(0, sp), v.substr(sp + 1));
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      if (pair_count_ == 0) merges.emplace_back(std::move(v), std::string());
      if (pair_count_ == 1) merges.back().second = std::move(v);
      ++pair_count_;
      return true;
    }
    return value(v);
  }
  bool binary(binary_t&) override { return structural("binary values are not JSON"); }
  bool start_object(std::size_t) override {
    if (mode_ == Mode::kVocab || mode_ == Mode::kMerges || mode_ == Mode::kMergePair) {
      return structural(
          mode_ == Mode::kVocab
              ? "model.vocab: expected integer ids"
              : fmt::format("model.merges[{}]: expected \"left right\" or [left, right]",
                            merges.size()));
    }
    if (at_model_key("vocab")) {
      has_vocab = true;
      mode_ = Mode::kVocab;
      (*stack_.back())["vocab"] = nullptr;
      return true;
    }
    return open(json::object());
  }
  bool key(string_t& k) override {
    if (mode_ == Mode::kVocab) {
      vocab_key_ = std::move(k);
      return true;
    }
    key_ = std::move(k);
    return true;
  }
  bool end_object() override {
    if (mode_ == Mode::kVocab) {
      mode_ = Mode::kNone;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::kVocab) return structural("model.vocab: expected integer ids");
    if (mode_ == Mode::kMergePair) {
      return structural(fmt::format("model.merges[{}]: expected \"left right\" or [left, right]",
                                    merges.size() - 1));
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kMergePair;
      pair_count_ = 0;
      return true;
    }
    if (at_model_key("merges")) {
      has_merges = true;
      mode_ = Mode::kMerges;
      (*stack_.back())["merges"] = nullptr;
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::kMergePair) {
      if (pair_count_ != 2) {
        return structural(fmt::format("model.merges[{}]: expected \"left right\" or [left, right]",
                                      merges.size() - (pair_count_ == 0 ? 0 : 1)));
      }
      mode_ = Mode::kMerges;
      return true;
    }
    if (mode_ == Mode::kMerges) {
      mode_ = Mode::kNone;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error = std::string("not valid JSON: ") + e.what();
    return false;
  }

 private:
  enum class Mode { kNone, kVocab, kMerges, kMergePair };

  bool at_model_key(const char* k) const { return stack_.size() == 2 && model_open_ && key_ == k; }
  bool structural(std::string what) {
    if (error.empty()) error = std::move(what);
    return false;
  }
  json* place(json v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    json& top = *stack_.back();
    if (top.is_object()) {
      json& slot = top[key_];
      slot = std::move(v);
      return &slot;
    }
    top.push_back(std::move(v));
    return &top.back();
  }
  bool value(json v) {
    if (mode_ != Mode::kNone) {
      return structural(
          mode_ == Mode::kVocab
              ? "model.vocab: expected integer ids"
              : fmt::format("model.merges[{}]: expected \"left right\" or [left, right]",
                            merges.size()));
    }
    place(std::move(v));
    return true;
  }
  bool open(json v) {
    const bool is_model = stack_.size() == 1 && key_ == "model" && v.is_object();
    stack_.push_back(place(std::move(v)));
    if (stack_.size() == 2) model_open_ = is_model;
    return true;
  }

  std::vector<json*> stack_;
  std::string key_;
  std::string vocab_key_;
  Mode mode_ = Mode::kNone;
  int pair_count_ = 0;
  bool model_open_ = false;
};

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
  TokenizerJsonSax sax;
  std::string syntax_error;
  if (!tok::read_json(json_text, sax, &syntax_error)) {
    if (!sax.error.empty()) fail("{}: {}", source_name, sax.error);
    fail("{}: not valid JSON: {}", source_name, syntax_error);
  }
  const json& root = sax.root;
  const Reader r{source_name};
  if (!root.is_object()) r.bad("(top level)", "expected a JSON object");

  auto impl = std::make_shared<Impl>();
  impl->serial = g_serial.fetch_add(1);
  impl->source = source_name;

  for (const char* key : {"truncation", "padding"}) {
    auto it = root.find(key);
    if (it != root.end() && !it->is_null()) r.bad(key, "not supported (must be null)");
  }
  for (auto it = root.begin(); it != root.end(); ++it) {
    static const char* known[] = {"version",        "truncation", "padding",
                                  "added_tokens",   "normalizer", "pre_tokenizer",
                                  "post_processor", "decoder",    "model"};
    if (std::find_if(std::begin(known), std::end(known),
                     [&](const char* k) { return it.key() == k; }) == std::end(known)) {
      r.bad(it.key(), "unknown top-level field");
    }
  }

  // normalizer: null or NFC (alone or in a Sequence).
  {
    const auto it = root.find("normalizer");
    if (it != root.end() && !it->is_null()) {
      auto check_one = [&](const json& n, const std::string& path) {
        const std::string type = r.type_of(n, path);
        if (type != "NFC")
          r.bad(path + ".type", "unsupported normalizer \"" + type + "\" (supported: NFC)");
        r.only_keys(n, path, {});
        impl->nfc = true;
      };
      const std::string type = r.type_of(*it, "normalizer");
      if (type == "Sequence") {
        r.only_keys(*it, "normalizer", {"normalizers"});
        const json& list = r.get(*it, "normalizer", "normalizers");
        if (!list.is_array()) r.bad("normalizer.normalizers", "expected an array");
        for (std::size_t i = 0; i < list.size(); ++i) {
          check_one(list[i], fmt::format("normalizer.normalizers[{}]", i));
        }
      } else {
        check_one(*it, "normalizer");
      }
    }
  }

  // pre_tokenizer: Sequence [Split(Qwen2 regex, Isolated), ByteLevel(use_regex false)].
  {
    const json& pre = r.get(root, "(top level)", "pre_tokenizer");
    if (pre.is_null())
      r.bad("pre_tokenizer", "missing (null); a byte-level Split pre-tokenizer is required");
    const std::string type = r.type_of(pre, "pre_tokenizer");
    if (type != "Sequence") {
      r.bad("pre_tokenizer.type", "unsupported pre-tokenizer \"" + type +
                                      "\" (supported: Sequence of Split and ByteLevel, as Qwen2)");
    }
    r.only_keys(pre, "pre_tokenizer", {"pretokenizers"});
    const json& list = r.get(pre, "pre_tokenizer", "pretokenizers");
    if (!list.is_array() || list.size() != 2) {
      r.bad("pre_tokenizer.pretokenizers", "expected exactly [Split, ByteLevel]");
    }
    const std::string p0 = "pre_tokenizer.pretokenizers[0]";
    const std::string t0 = r.type_of(list[0], p0);
    if (t0 != "Split")
      r.bad(p0 + ".type", "unsupported pre-tokenizer \"" + t0 + "\" (expected Split)");
    r.only_keys(list[0], p0, {"pattern", "behavior", "invert"});
    const json& pattern = r.get(list[0], p0, "pattern");
    if (!pattern.is_object() || !pattern.contains("Regex")) {
      r.bad(p0 + ".pattern", "only a Regex pattern is supported");
    }
    const std::string regex = r.str(pattern["Regex"], p0 + ".pattern.Regex");
    if (regex != tok::kQwen2SplitPattern) {
      r.bad(p0 + ".pattern.Regex", "unsupported split regex " + json(regex).dump() +
                                       " (only Qwen2's pattern is implemented)");
    }
    const std::string behavior = r.str(r.get(list[0], p0, "behavior"), p0 + ".behavior");
    if (behavior != "Isolated")
      r.bad(p0 + ".behavior", "unsupported \"" + behavior + "\" (supported: Isolated)");
    if (r.flag(list[0], p0, "invert", false)) r.bad(p0 + ".invert", "true is not supported");

    const std::string p1 = "pre_tokenizer.pretokenizers[1]";
    const std::string t1 = r.type_of(list[1], p1);
    if (t1 != "ByteLevel")
      r.bad(p1 + ".type", "unsupported pre-tokenizer \"" + t1 + "\" (expected ByteLevel)");
    r.only_keys(list[1], p1, {"add_prefix_space", "trim_offsets", "use_regex"});
    if (r.flag(list[1], p1, "add_prefix_space", true))
      r.bad(p1 + ".add_prefix_space", "true is not supported");
    if (r.flag(list[1], p1, "use_regex", true)) r.bad(p1 + ".use_regex", "true is not supported");
  }

  // decoder: ByteLevel. post_processor: null or ByteLevel (encode never adds special tokens).
  {
    const json& dec = r.get(root, "(top level)", "decoder");
    if (dec.is_null()) r.bad("decoder", "missing (null); ByteLevel is required");
    const std::string type = r.type_of(dec, "decoder");
    if (type != "ByteLevel")
      r.bad("decoder.type", "unsupported decoder \"" + type + "\" (supported: ByteLevel)");
    r.only_keys(dec, "decoder", {"add_prefix_space", "trim_offsets", "use_regex"});
    const auto pp = root.find("post_processor");
    if (pp != root.end() && !pp->is_null()) {
      const std::string pt = r.type_of(*pp, "post_processor");
      if (pt != "ByteLevel") {
        r.bad("post_processor.type",
              "unsupported post-processor \"" + pt + "\" (supported: ByteLevel or null)");
      }
    }
  }

  // model: BPE over the byte-level alphabet.
  const json& model = r.get(root, "(top level)", "model");
  {
    const std::string type = r.type_of(model, "model");
    if (type != "BPE") r.bad("model.type", "unsupported model \"" + type + "\" (supported: BPE)");
    r.only_keys(model, "model",
                {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix",
                 "fuse_unk", "byte_fallback", "ignore_merges", "vocab", "merges"});
    if (model.contains("dropout") && !model["dropout"].is_null()) {
      if (!model["dropout"].is_number() || model["dropout"].get<double>() != 0.0) {
        r.bad("model.dropout", "BPE dropout is not supported (must be null)");
      }
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
      if (model.contains(key) && !model[key].is_null() &&
          !(model[key].is_string() && model[key].get<std::string>().empty())) {
        r.bad(std::string("model.") + key, "not supported (must be empty or null)");
      }
    }
    if (r.flag(model, "model", "byte_fallback", false))
      r.bad("model.byte_fallback", "true is not supported");
    impl->ignore_merges = r.flag(model, "model", "ignore_merges", false);
  }

  if (!sax.has_vocab) r.bad("model.vocab", "missing or not an object of token -> id");
  std::int32_t max_id = -1;
  impl->vocab.reserve(sax.vocab.size());
  for (auto& [token, id64] : sax.vocab) {
    if (id64 < 0 || id64 >= (std::int64_t{1} << 30)) {
      r.bad("model.vocab[" + json(token).dump() + "]", "expected a non-negative integer id");
    }
    const auto id = static_cast<std::int32_t>(id64);
    if (!impl->vocab.insert(token, id)) {
      r.bad("model.vocab", "duplicate token");
    }
    max_id = std::max(max_id, id);
  }
  sax.vocab.clear();

  // Added tokens.
  {
    const auto it = root.find("added_tokens");
    if (it != root.end() && !it->is_null()) {
      if (!it->is_array()) r.bad("added_tokens", "expected an array");
      for (std::size_t i = 0; i < it->size(); ++i) {
        const json& t = (*it)[i];
        const std::string path = fmt::format("added_tokens[{}]", i);
        const json& idv = r.get(t, path, "id");
        if (!idv.is_number_integer() || idv.get<std::int64_t>() < 0 ||
            idv.get<std::int64_t>() >= (std::int64_t{1} << 30)) {
          r.bad(path + ".id", "expected a non-negative integer");
        }
        tok::AddedToken a;
        a.id = static_cast<std::int32_t>(idv.get<std::int64_t>());
        a.content = r.str(r.get(t, path, "content"), path + ".content");
        if (a.content.empty()) r.bad(path + ".content", "empty");
        if (tok::utf8_validate(a.content) != a.content.size())
          r.bad(path + ".content", "not valid UTF-8");
        a.special = r.flag(t, path, "special", false);
        a.single_word = r.flag(t, path, "single_word", false);
        a.lstrip = r.flag(t, path, "lstrip", false);
        a.rstrip = r.flag(t, path, "rstrip", false);
        a.normalized = r.flag(t, path, "normalized", !a.special);
        if (auto v = impl->vocab.find(a.content); v && *v != a.id) {
          r.bad(path, fmt::format("content {} is vocabulary id {} but the entry says {}",
                                  json(a.content).dump(), *v, a.id));
        }
        a.pattern = a.normalized && impl->nfc ? tok::nfc(a.content) : a.content;
        if (a.pattern.empty()) r.bad(path + ".content", "empty after normalization");
        if (impl->added_by_content.count(a.content))
          r.bad(path + ".content", "duplicate added token");
        impl->added_by_content.emplace(a.content, a.id);
        max_id = std::max(max_id, a.id);
        impl->added.push_back(std::move(a));
      }
    }
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
                        b, json(bytes_to_token_string(std::string(1, char(b)))).dump()));
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

  // Merges: "left right" strings or [left, right] pairs; the rank is the position.
  if (!sax.has_merges) r.bad("model.merges", "missing or not an array");
  if (sax.merges.size() > tok::BpeModel::kMaxMerges) r.bad("model.merges", "too many merges");
  impl->bpe.reserve_merges(sax.merges.size());
  std::string joined;
  for (std::size_t i = 0; i < sax.merges.size(); ++i) {
    const auto& [left, right] = sax.merges[i];
    auto find = [&](const std::string& token) {
      const auto id = impl->vocab.find(token);
      if (!id) {
        r.bad(fmt::format("model.merges[{}]", i),
              "token " + json(token).dump() + " is not in model.vocab");
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

}  // namespace ls
