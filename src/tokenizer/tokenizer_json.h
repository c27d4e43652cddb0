// tokenizer.json -> TokenizerSpec: the JSON read (fast SAX for model.vocab / model.merges) and
// every check of its structure and settings. What the settings may be is Qwen2's configuration
// only (see tokenizer.h); the content (ids, duplicates, merges naming unknown tokens, the
// byte-level alphabet) is validated by Tokenizer::from_spec.
#pragma once

#include <string>

#include "tokenizer/tokenizer_spec.h"

namespace ls::tok {

// Parses tokenizer.json text; throws ls::Error "<source_name>: <field>: <what>" (or a JSON
// syntax error) for anything the tokenizer does not implement.
TokenizerSpec parse_tokenizer_json(const std::string& json_text, const std::string& source_name);

}  // namespace ls::tok
