// Word-level helpers for --ban-word and --logit-bias-word: a word becomes every token sequence
// the tokenizer produces for it with and without a leading space ("北京" and " 北京" tokenize
// differently), then bad_words_ids or sequence_bias entries. The tokenizer is a callback so this
// layer does not depend on it.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "decode/generation_config.h"

namespace ls::decode {

using EncodeFn = std::function<std::vector<std::int32_t>(std::string_view text)>;

// The distinct, non-empty encodings of `word` and " " + `word`.
std::vector<std::vector<std::int32_t>> word_token_sequences(std::string_view word,
                                                            const EncodeFn& encode);
// --ban-word WORD: appends its sequences to bad_words_ids.
void add_banned_word(GenerationConfig& config, std::string_view word, const EncodeFn& encode);
// --logit-bias-word "WORD=BIAS": appends its sequences with BIAS to sequence_bias.
void add_word_bias(GenerationConfig& config, std::string_view spec, const EncodeFn& encode);

}  // namespace ls::decode
