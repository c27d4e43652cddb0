// TokenizerSpec: everything a Tokenizer is built from, as plain data: the BPE vocabulary (token
// strings in GPT-2's byte-level alphabet, e.g. "Ġworld", with their ids), the merges in rank
// order, the added tokens with their matching flags, and the two settings the encoder honors.
// tokenizer.json (Tokenizer::from_json) and GGUF metadata (tok::gguf_tokenizer) both become
// one; Tokenizer::from_spec validates it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ls::tok {

struct TokenizerSpec {
  // A vocabulary entry (tokenizer.json model.vocab).
  struct Token {
    std::string text;  // UTF-8 over the byte-level alphabet
    std::int32_t id = 0;
  };
  // A merge (tokenizer.json model.merges): left + right becomes the token left+right.
  struct Merge {
    std::string left, right;
  };
  // An added token (tokenizer.json added_tokens), matched in the text before pre-tokenization.
  struct AddedToken {
    std::int32_t id = 0;
    std::string content;
    bool special = false;
    bool lstrip = false;       // white space on the left belongs to the token
    bool rstrip = false;       // white space on the right belongs to the token
    bool single_word = false;  // only matched when not inside a word
    bool normalized = false;   // matched after NFC (when nfc is on), not in the raw text
  };

  std::vector<Token> vocab;
  std::vector<Merge> merges;  // rank order: merges[0] is applied first
  std::vector<AddedToken> added_tokens;
  bool nfc = false;            // the NFC normalizer runs on the text between added tokens
  bool ignore_merges = false;  // a word that is itself a vocabulary token is that token
};

}  // namespace ls::tok
