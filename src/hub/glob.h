// --include/--exclude patterns, matched as huggingface_hub matches allow_patterns and
// ignore_patterns: Python's fnmatch on the file's repo path, where `*` also crosses '/', `?` is
// one character, [abc] / [!abc] a set, and a pattern ending in '/' means everything under it.
#pragma once

#include <string>
#include <vector>

namespace ls::hub {

// fnmatch.fnmatchcase(path, pattern).
bool glob_match(const std::string& pattern, const std::string& path);
// Kept: matches some include pattern (or there are none) and no exclude pattern.
bool glob_keep(const std::string& path, const std::vector<std::string>& include,
               const std::vector<std::string>& exclude);

}  // namespace ls::hub
