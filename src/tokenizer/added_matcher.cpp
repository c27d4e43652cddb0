// The added-token matcher: candidate tokens bucketed by their first byte, longest first (memchr
// when they all start with the same byte, as Qwen's "<|...|>" / "<...>" tokens do), and the
// Unicode edge tests of single_word / lstrip / rstrip.
#include "tokenizer/added_matcher.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/unicode.h"

namespace ls::tok {

void AddedMatcher::build(const std::vector<AddedToken>& all, bool normalized) {
  tokens_ = &all;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i].normalized != normalized) continue;
    const auto first = static_cast<std::uint8_t>(all[i].pattern[0]);
    by_first_[first].push_back(static_cast<int>(i));
    empty_ = false;
  }
  int distinct = 0;
  for (int b = 0; b < 256; ++b) {
    auto& list = by_first_[b];
    if (list.empty()) continue;
    ++distinct;
    single_first_ = static_cast<char>(b);
    std::stable_sort(list.begin(), list.end(),
                     [&](int x, int y) { return all[x].pattern.size() > all[y].pattern.size(); });
  }
  use_memchr_ = distinct == 1;
}

bool AddedMatcher::find(std::string_view s, std::size_t from, std::size_t* start,
                        int* token) const {
  const char* data = s.data();
  const std::size_t n = s.size();
  std::size_t pos = from;
  while (pos < n) {
    if (use_memchr_) {
      const void* hit = std::memchr(data + pos, single_first_, n - pos);
      if (hit == nullptr) return false;
      pos = static_cast<std::size_t>(static_cast<const char*>(hit) - data);
    }
    const auto& list = by_first_[static_cast<std::uint8_t>(data[pos])];
    for (int t : list) {
      const std::string& pat = (*tokens_)[t].pattern;
      if (pat.size() <= n - pos && std::memcmp(data + pos, pat.data(), pat.size()) == 0) {
        *start = pos;
        *token = t;
        return true;
      }
    }
    ++pos;
  }
  return false;
}

bool ends_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = s.size() - 1;
  while (i > 0 && (static_cast<std::uint8_t>(s[i]) & 0xC0) == 0x80) --i;
  int len;
  const char32_t cp = decode_utf8(reinterpret_cast<const std::uint8_t*>(s.data()) + i, &len);
  return (char_flags(cp) & kWordChar) != 0;
}

bool starts_with_word_char(std::string_view s) {
  if (s.empty()) return false;
  int len;
  const char32_t cp = decode_utf8(reinterpret_cast<const std::uint8_t*>(s.data()), &len);
  return (char_flags(cp) & kWordChar) != 0;
}

std::size_t trailing_space_start(std::string_view s) {
  std::size_t i = s.size();
  while (i > 0) {
    std::size_t j = i - 1;
    while (j > 0 && (static_cast<std::uint8_t>(s[j]) & 0xC0) == 0x80) --j;
    int len;
    const char32_t cp = decode_utf8(reinterpret_cast<const std::uint8_t*>(s.data()) + j, &len);
    if (!(char_flags(cp) & kSpace)) break;
    i = j;
  }
  return i;
}

std::size_t leading_space_length(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    int len;
    const char32_t cp = decode_utf8(reinterpret_cast<const std::uint8_t*>(s.data()) + i, &len);
    if (!(char_flags(cp) & kSpace)) break;
    i += static_cast<std::size_t>(len);
  }
  return i;
}

}  // namespace ls::tok
