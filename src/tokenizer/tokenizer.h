// The tokenizer of logitscope: Hugging Face's byte-level BPE as Qwen2/Qwen2.5/Qwen3 configure it
// in tokenizer.json, reproduced id for id.
//
// Encoding (as tokenizers' Tokenizer::encode with add_special_tokens=false):
//   1. added tokens (special or not) are matched in the raw text first, leftmost-longest, with
//      their single_word / lstrip / rstrip flags; tokens marked normalized are matched after
//      normalization instead;
//   2. the NFC normalizer runs on the text between added tokens;
//   3. the Split pre-tokenizer (Qwen2's regex, behavior Isolated) cuts it into words;
//   4. each word's bytes go through the byte-level alphabet and the BPE merges by rank.
// Decoding maps ids back to bytes (ByteLevel decoder) and then to text with U+FFFD for
// ill-formed UTF-8, as from_utf8_lossy / errors="replace" do.
//
// A TokenizerSpec (tokenizer_spec.h) is what a tokenizer is built from; from_json reads one
// from tokenizer.json. Any tokenizer.json feature beyond that (another model type, normalizer,
// pre-tokenizer, decoder, post-processor, padding, truncation, ...) is rejected at load with an
// ls::Error that names the file and the field.
//
// A Tokenizer is immutable after loading and cheap to copy (shared state); encode/decode may be
// called from several threads at once (the word cache is per thread).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer_spec.h"

namespace ls::tok {

class Tokenizer {
 public:
  // Reads and parses a tokenizer.json; throws ls::Error naming the file (and the field).
  static Tokenizer load(const std::string& tokenizer_json_path);
  // Parses tokenizer.json text; source_name is used in error messages.
  static Tokenizer from_json(const std::string& json_text, const std::string& source_name);
  // Builds the tokenizer a spec describes, with the checks from_json applies to tokenizer.json's
  // content (ids in range, no duplicate tokens, added tokens agreeing with the vocabulary,
  // every byte in the vocabulary, merges naming known tokens); errors are ls::Error
  // "<source_name>: <tokenizer.json field>: <what>".
  static Tokenizer from_spec(TokenizerSpec spec, const std::string& source_name);

  // Text (UTF-8; ill-formed UTF-8 is an ls::Error) to ids. Special-token text in the input is
  // the special token unless split_special is true (Hugging Face's split_special_tokens=True:
  // special tokens' text is tokenized as plain text; non-special added tokens still match).
  std::vector<std::int32_t> encode(std::string_view text, bool split_special = false) const;

  // Ids to text. skip_special drops special tokens (skip_special_tokens=True). Ids the
  // tokenizer does not know (negative, or beyond size(), e.g. padded vocab rows) give no text.
  std::string decode(std::span<const std::int32_t> ids, bool skip_special = false) const;

  // The raw bytes token `id` stands for (may be part of a UTF-8 character); "" for ids with no
  // text.
  std::string token_bytes(std::int32_t id) const;
  // A printable form for tables: the bytes when they are valid UTF-8; otherwise the valid
  // characters as they are and each byte of an ill-formed sequence as "\xHH" (e.g. "\xE4\xB8").
  std::string token_text(std::int32_t id) const;
  // Added tokens by their content ("<|im_end|>"), BPE tokens by their vocabulary string
  // (byte-level alphabet, e.g. "Ġworld").
  std::optional<std::int32_t> token_to_id(std::string_view token_content) const;
  bool is_special(std::int32_t id) const;
  // Number of ids the tokenizer knows: one more than the largest vocabulary or added-token id
  // (151669 for Qwen3's tokenizer.json).
  std::int32_t size() const;

  // Where it was loaded from (the path, or the source_name given to from_json).
  const std::string& source() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Incremental detokenizer: push ids one at a time and get back only whole UTF-8 characters;
// the bytes of a character split across tokens are held until it is complete, and bytes that can
// no longer become a character are replaced by U+FFFD at once. The concatenation of every push()
// and the final flush() equals Tokenizer::decode of all ids. The Tokenizer must outlive it.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false);
  // Text that became complete with this id (possibly "").
  std::string push(std::int32_t id);
  // The held-back tail: an incomplete sequence becomes U+FFFD, as errors="replace" does.
  std::string flush();
  // Bytes currently held back (0..3).
  std::size_t pending() const { return pending_.size(); }

 private:
  const Tokenizer* tok_;
  bool skip_special_;
  std::string pending_;
};

}  // namespace ls::tok
