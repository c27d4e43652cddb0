// Reading tokenizer.json into a TokenizerSpec: a SAX handler streams model.vocab and
// model.merges into flat vectors and builds an ordinary JSON tree for the rest, which is checked
// against the one configuration the tokenizer implements (NFC, Qwen2's Split regex, ByteLevel,
// BPE); every other feature is an ls::Error naming the file and the field.
#include "tokenizer/tokenizer_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "core/error.h"
#include "tokenizer/json_reader.h"
#include "tokenizer/pretokenizer.h"

namespace ls::tok {

using json = nlohmann::json;

namespace {

// An id as TokenizerSpec holds it: values outside int32 become -1, as from_spec rejects every id
// outside [0, 2^30) with one message whatever the value.
std::int32_t spec_id(std::int64_t v) {
  return v >= std::numeric_limits<std::int32_t>::min() &&
                 v <= std::numeric_limits<std::int32_t>::max()
             ? static_cast<std::int32_t>(v)
             : -1;
}

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
  std::vector<TokenizerSpec::Token> vocab;
  std::vector<TokenizerSpec::Merge> merges;
  std::string error;  // a structural problem inside vocab/merges, with its field

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override {
    if (mode_ == Mode::kVocab) {
      vocab.push_back({std::move(vocab_key_), spec_id(v)});
      return true;
    }
    return value(v);
  }
  bool number_unsigned(number_unsigned_t v) override {
    if (mode_ == Mode::kVocab) {
      vocab.push_back({std::move(vocab_key_), spec_id(static_cast<std::int64_t>(
                                                  std::min<number_unsigned_t>(v, 1ULL << 40)))});
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
      merges.push_back({v.substr(0, sp), v.substr(sp + 1)});
      return true;
    }
    if (mode_ == Mode::kMergePair) {
      if (pair_count_ == 0) merges.push_back({std::move(v), std::string()});
      if (pair_count_ == 1) merges.back().right = std::move(v);
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

TokenizerSpec parse_tokenizer_json(const std::string& json_text, const std::string& source_name) {
  TokenizerJsonSax sax;
  std::string syntax_error;
  if (!read_json(json_text, sax, &syntax_error)) {
    if (!sax.error.empty()) fail("{}: {}", source_name, sax.error);
    fail("{}: not valid JSON: {}", source_name, syntax_error);
  }
  const json& root = sax.root;
  const Reader r{source_name};
  if (!root.is_object()) r.bad("(top level)", "expected a JSON object");

  TokenizerSpec spec;

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
        spec.nfc = true;
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
    if (regex != kQwen2SplitPattern) {
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
    spec.ignore_merges = r.flag(model, "model", "ignore_merges", false);
  }

  if (!sax.has_vocab) r.bad("model.vocab", "missing or not an object of token -> id");
  spec.vocab = std::move(sax.vocab);

  // Added tokens: the JSON types here; ids, contents and clashes are from_spec's to check.
  {
    const auto it = root.find("added_tokens");
    if (it != root.end() && !it->is_null()) {
      if (!it->is_array()) r.bad("added_tokens", "expected an array");
      spec.added_tokens.reserve(it->size());
      for (std::size_t i = 0; i < it->size(); ++i) {
        const json& t = (*it)[i];
        const std::string path = fmt::format("added_tokens[{}]", i);
        const json& idv = r.get(t, path, "id");
        if (!idv.is_number_integer()) r.bad(path + ".id", "expected a non-negative integer");
        TokenizerSpec::AddedToken a;
        a.id = spec_id(idv.get<std::int64_t>());
        a.content = r.str(r.get(t, path, "content"), path + ".content");
        a.special = r.flag(t, path, "special", false);
        a.single_word = r.flag(t, path, "single_word", false);
        a.lstrip = r.flag(t, path, "lstrip", false);
        a.rstrip = r.flag(t, path, "rstrip", false);
        a.normalized = r.flag(t, path, "normalized", !a.special);
        spec.added_tokens.push_back(std::move(a));
      }
    }
  }

  // Merges: "left right" strings or [left, right] pairs; the rank is the position.
  if (!sax.has_merges) r.bad("model.merges", "missing or not an array");
  spec.merges = std::move(sax.merges);
  return spec;
}

}  // namespace ls::tok
