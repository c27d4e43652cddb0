// GGUF files picked by quant tag, as `REPO:q4_k_m` names them (llama.cpp's -hf convention): the
// tag is the end of the file's stem after a '-' or '.' ("qwen2.5-0.5b-instruct-q4_k_m.gguf"
// has tag q4_k_m), compared case-insensitively; a split file's "-00001-of-00003" is not part of
// it. A tag matching no file, or two different models, is an error listing the tags available.
#pragma once

#include <string>
#include <vector>

namespace ls::hub {

// The tag of a .gguf path ("q4_k_m" for ".../qwen2.5-0.5b-instruct-q4_k_m.gguf"), lower-case;
// "" for a path that is not a .gguf or has no separator in its stem.
std::string quant_tag_of(const std::string& path);
// Whether `path` is a .gguf whose name ends with `tag` (case-insensitively) after a separator.
bool matches_quant_tag(const std::string& path, const std::string& tag);
// The files of `paths` that `tag` picks: one file, or every part of one split file (in order).
// Throws ls::Error naming `repo` and listing the available tags when none or several match.
std::vector<std::string> pick_gguf(const std::vector<std::string>& paths, const std::string& tag,
                                   const std::string& repo);
// "q4_k_m, q8_0": the distinct tags of the .gguf files among `paths`, sorted.
std::string available_quant_tags(const std::vector<std::string>& paths);

}  // namespace ls::hub
