// Python fnmatch semantics for repo paths (see glob.h).
#include "hub/glob.h"

namespace ls::hub {

namespace {

// Matches pattern[p..] against s[i..]; `*` backtracks. A '[' with no closing ']' is literal,
// as in Python.
bool match_from(const std::string& pat, std::size_t p, const std::string& s, std::size_t i) {
  while (p < pat.size()) {
    const char c = pat[p];
    if (c == '*') {
      while (p < pat.size() && pat[p] == '*') ++p;
      if (p == pat.size()) return true;
      for (std::size_t k = i; k <= s.size(); ++k)
        if (match_from(pat, p, s, k)) return true;
      return false;
    }
    if (i == s.size()) return false;
    if (c == '?') {
      ++p, ++i;
      continue;
    }
    if (c == '[') {
      std::size_t q = p + 1;
      const bool negate = q < pat.size() && pat[q] == '!';
      if (negate) ++q;
      if (q < pat.size() && pat[q] == ']') ++q;  // a leading ']' is a member
      while (q < pat.size() && pat[q] != ']') ++q;
      if (q < pat.size()) {
        bool in = false;
        std::size_t k = p + 1 + (negate ? 1 : 0);
        for (bool first = true; k < q; first = false) {
          if (!first && pat[k] == ']') break;
          if (k + 2 < q && pat[k + 1] == '-') {
            in = in || (s[i] >= pat[k] && s[i] <= pat[k + 2]);
            k += 3;
          } else {
            in = in || s[i] == pat[k];
            ++k;
          }
        }
        if (in == negate) return false;
        p = q + 1, ++i;
        continue;
      }
    }
    if (c != s[i]) return false;
    ++p, ++i;
  }
  return i == s.size();
}

std::string with_directory_wildcard(const std::string& pattern) {
  return !pattern.empty() && pattern.back() == '/' ? pattern + "*" : pattern;
}

}  // namespace

bool glob_match(const std::string& pattern, const std::string& path) {
  return match_from(pattern, 0, path, 0);
}

bool glob_keep(const std::string& path, const std::vector<std::string>& include,
               const std::vector<std::string>& exclude) {
  bool kept = include.empty();
  for (const auto& pat : include) kept = kept || glob_match(with_directory_wildcard(pat), path);
  for (const auto& pat : exclude) kept = kept && !glob_match(with_directory_wildcard(pat), path);
  return kept;
}

}  // namespace ls::hub
