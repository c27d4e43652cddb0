// Unicode helpers for the tokenizer: code point classes for the Qwen2 pre-tokenizer regex
// (\p{L}, \p{N}, \s), an NFC fast path, UTF-8 validation and decoding, and the lossy UTF-8
// decode that Hugging Face's ByteLevel decoder (Rust from_utf8_lossy) and Python's
// errors="replace" both perform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ls::tok {

// Bit flags of one code point.
enum : std::uint8_t {
  kLetter = 1,     // \p{L}: Lu Ll Lt Lm Lo
  kNumber = 2,     // \p{N}: Nd Nl No
  kSpace = 4,      // \s as Oniguruma (Hugging Face's regex engine) defines it: White_Space
  kNfcUnsafe = 8,  // NFC may change a string containing this code point (see unicode.cpp)
  kWordChar = 16,  // \w of Rust's regex (used only by added tokens with single_word)
};

// Flags of a code point (0 for unassigned code points and surrogates).
std::uint8_t char_flags(char32_t cp);

// The table behind char_flags, for hot loops: 0x110000 entries.
const std::uint8_t* char_flags_table();

// Decodes the code point that starts at p. The input must be valid UTF-8 (see utf8_validate);
// *len receives its length in bytes (1..4).
inline char32_t decode_utf8(const std::uint8_t* p, int* len) {
  const std::uint8_t b = p[0];
  if (b < 0x80) {
    *len = 1;
    return b;
  }
  if (b < 0xE0) {
    *len = 2;
    return (char32_t(b & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (b < 0xF0) {
    *len = 3;
    return (char32_t(b & 0x0F) << 12) | (char32_t(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  *len = 4;
  return (char32_t(b & 0x07) << 18) | (char32_t(p[1] & 0x3F) << 12) | (char32_t(p[2] & 0x3F) << 6) |
         (p[3] & 0x3F);
}

void append_utf8(std::string& out, char32_t cp);

// Returns the byte offset of the first invalid UTF-8 sequence in s, or s.size() if s is valid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_validate(std::string_view s);

// Length of the well-formed UTF-8 sequence starting at s[0] (1..4), or, if s[0..] is not
// well-formed, -(length of its maximal subpart) (at least 1): the number of bytes that one
// U+FFFD replaces under the Unicode "maximal subpart" practice. *truncated is set when the
// bytes are a proper prefix of a well-formed sequence cut short by the end of s.
int utf8_sequence(std::string_view s, bool* truncated);

// Bytes to text as Rust's String::from_utf8_lossy / Python's decode(errors="replace"): each
// maximal subpart of an ill-formed sequence becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

// utf8_validate and nfc_quick_check in one pass: returns the offset of the first invalid
// sequence (s.size() if valid) and sets *nfc_safe when every code point is NFC-safe.
std::size_t utf8_validate_nfc(std::string_view s, bool* nfc_safe);

// True when NFC(s) == s can be seen without normalizing: every code point is NFC-safe.
bool nfc_quick_check(std::string_view s);

// Unicode NFC of valid UTF-8 text (utf8proc).
std::string nfc(std::string_view s);

}  // namespace ls::tok
