// The tokenizer a GGUF file carries: the tokenizer.ggml.* metadata arrays turned straight into a
// TokenizerSpec (no tokenizer.json text in between) and built with Tokenizer::from_spec, so a
// GGUF tokenizer obeys the same validation as a Hugging Face tokenizer.json and gives the same
// ids for the same vocabulary.
#pragma once

#include "formats/gguf.h"
#include "tokenizer/tokenizer.h"

namespace ls::tok {

// Model "gpt2" with pre "qwen2" only (NFC, Qwen2's Split regex, ByteLevel, BPE). NORMAL tokens
// form the vocabulary, CONTROL tokens become special added tokens, USER_DEFINED ones non-special
// added tokens, UNUSED ones (llama.cpp's "[PAD{i}]" padding; older converters wrote it
// USER_DEFINED) are ids without text. `f` must have been opened with GgufArrays::Keep (the
// default). Errors name the file and the key; the tokenizer's source() is
// "<path> (tokenizer.ggml.* metadata)".
Tokenizer gguf_tokenizer(const formats::GgufFile& f);

}  // namespace ls::tok
