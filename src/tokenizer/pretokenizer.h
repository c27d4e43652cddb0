// The Qwen2 pre-tokenizer: a hand-written matcher equivalent to the Split regex of Qwen's
// tokenizer.json (behavior Isolated), as Oniguruma (Hugging Face tokenizers) runs it:
//
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//   \s*[\r\n]+|\s+(?!\S)|\s+
//
// The alternatives are tried in order at each position (leftmost-first, greedy with
// backtracking); every character is matched by some alternative, so the pieces cover the text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tokenizer/unicode.h"

namespace ls::tok {

// The exact pattern string this matcher implements (tokenizer.json must carry it verbatim).
inline constexpr std::string_view kQwen2SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

namespace detail {

inline constexpr std::uint8_t kNewline = 32;  // \r or \n (also kSpace)
inline constexpr std::uint8_t kBlank = 64;    // U+0020 (also kSpace)

struct AsciiTable {
  std::uint8_t f[128];
};
constexpr AsciiTable make_ascii_table() {
  AsciiTable t{};
  for (int c = 0; c < 128; ++c) {
    std::uint8_t f = 0;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) f = kLetter;
    if (c >= '0' && c <= '9') f = kNumber;
    if (c >= 0x09 && c <= 0x0D) f = kSpace;
    if (c == '\r' || c == '\n') f = kSpace | kNewline;
    if (c == ' ') f = kSpace | kBlank;
    t.f[c] = f;
  }
  return t;
}
inline constexpr AsciiTable kAscii = make_ascii_table();

struct CharInfo {
  std::uint8_t flags;
  std::uint8_t len;
};

inline CharInfo char_at(const std::uint8_t* p, const std::uint8_t* table) {
  if (p[0] < 0x80) return {kAscii.f[p[0]], 1};
  int len;
  const char32_t cp = decode_utf8(p, &len);
  return {table[cp], static_cast<std::uint8_t>(len)};
}

inline bool is_other(std::uint8_t f) {
  return (f & (kSpace | kLetter | kNumber)) == 0;
}

// Length of the contraction suffix after an apostrophe at p (0 if none): s t m d re ve ll, any
// case. Oniguruma's case-insensitive matching also folds U+017F LATIN SMALL LETTER LONG S to s.
inline std::size_t contraction(const std::uint8_t* p, std::size_t avail) {
  if (avail == 0) return 0;
  const std::uint8_t c = p[0] | 0x20;
  if (p[0] < 0x80) {
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return 1;
    if (avail >= 2 && p[1] < 0x80) {
      const std::uint8_t d = p[1] | 0x20;
      if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return 2;
    }
    return 0;
  }
  if (avail >= 2 && p[0] == 0xC5 && p[1] == 0xBF) return 2;  // U+017F
  return 0;
}

}  // namespace detail

// Calls emit(begin, end) for each piece of `text` (valid UTF-8, already normalized), in order.
template <typename Emit>
void qwen2_pretokenize(std::string_view text, Emit&& emit) {
  using namespace detail;
  const auto* p = reinterpret_cast<const std::uint8_t*>(text.data());
  const std::size_t n = text.size();
  const std::uint8_t* table = char_flags_table();

  auto letters_end = [&](std::size_t j) {
    while (j < n) {
      const CharInfo c = char_at(p + j, table);
      if (!(c.flags & kLetter)) break;
      j += c.len;
    }
    return j;
  };

  std::size_t i = 0;
  while (i < n) {
    // 1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if (p[i] == '\'') {
      const std::size_t m = contraction(p + i + 1, n - i - 1);
      if (m != 0) {
        emit(i, i + 1 + m);
        i += 1 + m;
        continue;
      }
    }
    const CharInfo c = char_at(p + i, table);
    const std::size_t k = i + c.len;
    // 2. [^\r\n\p{L}\p{N}]?\p{L}+
    if (c.flags & kLetter) {
      const std::size_t j = letters_end(k);
      emit(i, j);
      i = j;
      continue;
    }
    if (!(c.flags & (kNewline | kNumber)) && k < n) {
      const CharInfo d = char_at(p + k, table);
      if (d.flags & kLetter) {
        const std::size_t j = letters_end(k + d.len);
        emit(i, j);
        i = j;
        continue;
      }
    }
    // 3. \p{N}
    if (c.flags & kNumber) {
      emit(i, k);
      i = k;
      continue;
    }
    // 4. ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    const bool other = is_other(c.flags);
    if (other || ((c.flags & kBlank) && k < n && is_other(char_at(p + k, table).flags))) {
      std::size_t j = other ? i : k;
      while (j < n) {
        const CharInfo d = char_at(p + j, table);
        if (!is_other(d.flags)) break;
        j += d.len;
      }
      while (j < n && (p[j] == '\r' || p[j] == '\n')) ++j;
      emit(i, j);
      i = j;
      continue;
    }
    // c is white space: 5. \s*[\r\n]+  6. \s+(?!\S)  7. \s+
    std::size_t r = i;
    std::size_t after_last_newline = 0;
    std::size_t last_start = i;
    while (r < n) {
      const CharInfo d = char_at(p + r, table);
      if (!(d.flags & kSpace)) break;
      last_start = r;
      r += d.len;
      if (d.flags & kNewline) after_last_newline = r;
    }
    std::size_t j;
    if (after_last_newline != 0) {
      j = after_last_newline;
    } else if (r == n || last_start == i) {
      j = r;
    } else {
      j = last_start;
    }
    emit(i, j);
    i = j;
  }
}

}  // namespace ls::tok
