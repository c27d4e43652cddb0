#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/error.h"

namespace ls::tok {
namespace {

constexpr char32_t kMaxCodePoint = 0x10FFFF;

bool is_white_space(char32_t cp) {
  // The Unicode White_Space property, which is what Oniguruma's \s matches on UTF-8 text.
  // (JavaScript's \s differs: it lacks U+0085 and adds U+FEFF.)
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
         cp == 0x205F || cp == 0x3000;
}

// Builds the flags of every code point. NFC safety: a string whose code points all have
// NFC_Quick_Check=Yes and canonical combining class 0 is already in NFC (UAX #15 quick check).
// A code point fails that when its ccc is not 0, when it does not survive NFC on its own
// (singletons, composition exclusions: NFC_QC=No), or when it can be the second code point of
// a canonical composition (NFC_QC=Maybe); the latter are found as the non-first code points of
// every canonical decomposition, which also covers the Hangul vowel and trailing jamo.
std::unique_ptr<std::uint8_t[]> build_table() {
  auto table = std::make_unique<std::uint8_t[]>(kMaxCodePoint + 1);
  std::memset(table.get(), 0, kMaxCodePoint + 1);
  std::vector<char32_t> seconds;
  for (char32_t cp = 0; cp <= kMaxCodePoint; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;  // never in valid UTF-8
    const utf8proc_property_t* prop = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
    std::uint8_t f = 0;
    switch (prop->category) {
      case UTF8PROC_CATEGORY_LU:
      case UTF8PROC_CATEGORY_LL:
      case UTF8PROC_CATEGORY_LT:
      case UTF8PROC_CATEGORY_LM:
      case UTF8PROC_CATEGORY_LO:
        f |= kLetter | kWordChar;
        break;
      case UTF8PROC_CATEGORY_ND:
      case UTF8PROC_CATEGORY_NL:
        f |= kNumber | kWordChar;
        break;
      case UTF8PROC_CATEGORY_NO:
        f |= kNumber;
        break;
      case UTF8PROC_CATEGORY_MN:
      case UTF8PROC_CATEGORY_MC:
      case UTF8PROC_CATEGORY_ME:
      case UTF8PROC_CATEGORY_PC:
        f |= kWordChar;
        break;
      default:
        break;
    }
    if (cp == 0x200C || cp == 0x200D) f |= kWordChar;
    if (is_white_space(cp)) f |= kSpace;
    if (prop->combining_class != 0) f |= kNfcUnsafe;

    utf8proc_int32_t buf[32];
    int boundclass = UTF8PROC_BOUNDCLASS_START;
    const utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 32,
                                                       UTF8PROC_DECOMPOSE, &boundclass);
    if (n > 1 || (n == 1 && buf[0] != static_cast<utf8proc_int32_t>(cp))) {
      for (utf8proc_ssize_t i = 1; i < n; ++i) seconds.push_back(static_cast<char32_t>(buf[i]));
      if (utf8proc_get_property(buf[0])->combining_class != 0) f |= kNfcUnsafe;
      const utf8proc_ssize_t m = utf8proc_normalize_utf32(
          buf, n, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
      if (m != 1 || buf[0] != static_cast<utf8proc_int32_t>(cp)) f |= kNfcUnsafe;
    }
    table[cp] = f;
  }
  for (char32_t s : seconds) table[s] |= kNfcUnsafe;
  return table;
}

const std::uint8_t* table() {
  static const std::unique_ptr<std::uint8_t[]> t = build_table();
  return t.get();
}

}  // namespace

std::uint8_t char_flags(char32_t cp) {
  return cp <= kMaxCodePoint ? table()[cp] : 0;
}

const std::uint8_t* char_flags_table() {
  return table();
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

int utf8_sequence(std::string_view s, bool* truncated) {
  *truncated = false;
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  const std::size_t avail = s.size();
  const std::uint8_t b = p[0];
  if (b < 0x80) return 1;
  int need;
  std::uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    need = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    need = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    need = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return -1;  // 80..C1, F5..FF never start a sequence
  }
  int have = 1;
  while (have < need) {
    if (static_cast<std::size_t>(have) >= avail) {
      *truncated = true;
      return -have;
    }
    const std::uint8_t c = p[have];
    const bool ok = have == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
    if (!ok) return -have;
    ++have;
  }
  return need;
}

std::size_t utf8_validate(std::string_view s) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  const std::size_t n = s.size();
  std::size_t i = 0;
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const std::uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    // Fast paths: 2-byte sequences, and 3-byte ones whose second byte has no extra limits.
    if (b >= 0xC2 && b <= 0xDF && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
      i += 2;
      continue;
    }
    if (((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) && i + 2 < n &&
        (p[i + 1] & 0xC0) == 0x80 && (p[i + 2] & 0xC0) == 0x80) {
      i += 3;
      continue;
    }
    bool truncated;
    const int len = utf8_sequence(s.substr(i), &truncated);
    if (len < 0) return i;
    i += static_cast<std::size_t>(len);
  }
  return n;
}

std::size_t utf8_validate_nfc(std::string_view s, bool* nfc_safe) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  const std::size_t n = s.size();
  const std::uint8_t* t = table();
  bool safe = true;
  std::size_t i = 0;
  while (i < n) {
    while (i + 8 <= n) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    const std::uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    char32_t cp;
    if (b >= 0xE1 && b <= 0xEC && i + 2 < n && (p[i + 1] & 0xC0) == 0x80 &&
        (p[i + 2] & 0xC0) == 0x80) {
      // The common case (most CJK): a 3-byte sequence whose second byte has no extra limits.
      cp = (char32_t(b & 0x0F) << 12) | (char32_t(p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
      i += 3;
    } else {
      bool truncated;
      const int len = utf8_sequence(s.substr(i), &truncated);
      if (len < 0) {
        *nfc_safe = false;
        return i;
      }
      int dlen;
      cp = decode_utf8(p + i, &dlen);
      i += static_cast<std::size_t>(len);
    }
    safe = safe && !(t[cp] & kNfcUnsafe);
  }
  *nfc_safe = safe;
  return n;
}

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  std::size_t i = 0;
  while (i < bytes.size()) {
    const auto b = static_cast<std::uint8_t>(bytes[i]);
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    bool truncated;
    const int len = utf8_sequence(bytes.substr(i), &truncated);
    if (len > 0) {
      out.append(bytes.data() + i, static_cast<std::size_t>(len));
      i += static_cast<std::size_t>(len);
    } else {
      out.append("\xEF\xBF\xBD");
      i += static_cast<std::size_t>(-len);
    }
  }
  return out;
}

bool nfc_quick_check(std::string_view s) {
  const auto* p = reinterpret_cast<const std::uint8_t*>(s.data());
  const std::size_t n = s.size();
  const std::uint8_t* t = table();
  std::size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    int len;
    const char32_t cp = decode_utf8(p + i, &len);
    if (t[cp] & kNfcUnsafe) return false;
    i += static_cast<std::size_t>(len);
  }
  return true;
}

std::string nfc(std::string_view s) {
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n = utf8proc_map(
      reinterpret_cast<const utf8proc_uint8_t*>(s.data()), static_cast<utf8proc_ssize_t>(s.size()),
      &out, static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
  if (n < 0) {
    std::free(out);
    fail("tokenizer: NFC normalization failed: {}", utf8proc_errmsg(n));
  }
  std::string result(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
  std::free(out);
  return result;
}

}  // namespace ls::tok
