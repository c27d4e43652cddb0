// Python `str` semantics over UTF-8 (see pystr.h). Case mappings are utf8proc's simple
// one-to-one mappings plus the common special case ß -> SS; Python additionally applies the
// rest of SpecialCasing.txt (e.g. final sigma), which chat templates do not rely on.
#include "jinja/pystr.h"

#include <utf8proc.h>

#include <algorithm>

#include "core/error.h"

namespace ls::jinja::pystr {

std::u32string decode(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    utf8proc_int32_t cp = 0;
    auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(s.data() + i),
                              static_cast<utf8proc_ssize_t>(s.size() - i), &cp);
    if (n <= 0) {
      out.push_back(0xFFFD);
      i += 1;
    } else {
      out.push_back(static_cast<char32_t>(cp));
      i += static_cast<std::size_t>(n);
    }
  }
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  utf8proc_uint8_t buf[4];
  auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
  out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

std::string encode(std::u32string_view cps) {
  std::string out;
  out.reserve(cps.size());
  for (char32_t cp : cps) append_utf8(out, cp);
  return out;
}

std::size_t length(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;  // count lead bytes
  return n;
}

static utf8proc_category_t category(char32_t cp) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(cp));
}

bool is_space(char32_t c) {
  // Python's str.isspace(): bidi class WS/B/S or category Zs.
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

bool is_alpha(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LL || c == UTF8PROC_CATEGORY_LT ||
         c == UTF8PROC_CATEGORY_LM || c == UTF8PROC_CATEGORY_LO;
}

bool is_decimal(char32_t cp) {
  return category(cp) == UTF8PROC_CATEGORY_ND;
}

bool is_numeric(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_ND || c == UTF8PROC_CATEGORY_NL || c == UTF8PROC_CATEGORY_NO;
}

bool is_word(char32_t cp) {
  return cp == U'_' || is_alpha(cp) || is_numeric(cp);
}

bool is_upper(char32_t cp) {
  auto c = category(cp);
  return c == UTF8PROC_CATEGORY_LU || c == UTF8PROC_CATEGORY_LT;
}

bool is_lower(char32_t cp) {
  return category(cp) == UTF8PROC_CATEGORY_LL;
}

bool is_printable(char32_t cp) {
  if (cp == U' ') return true;
  switch (category(cp)) {
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
      return false;
    default:
      return true;
  }
}

static bool is_cased(char32_t cp) {
  return is_upper(cp) || is_lower(cp);
}

static void append_upper(std::string& out, char32_t cp) {
  if (cp == 0xDF) {  // ß has no one-character uppercase
    out += "SS";
    return;
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_toupper(static_cast<utf8proc_int32_t>(cp))));
}

static void append_lower(std::string& out, char32_t cp) {
  append_utf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))));
}

static void append_title(std::string& out, char32_t cp) {
  if (cp == 0xDF) {
    out += "Ss";
    return;
  }
  append_utf8(out, static_cast<char32_t>(utf8proc_totitle(static_cast<utf8proc_int32_t>(cp))));
}

std::string upper(std::string_view s) {
  std::string out;
  for (char32_t cp : decode(s)) append_upper(out, cp);
  return out;
}

std::string lower(std::string_view s) {
  std::string out;
  for (char32_t cp : decode(s)) append_lower(out, cp);
  return out;
}

std::string swapcase(std::string_view s) {
  std::string out;
  for (char32_t cp : decode(s)) {
    if (is_upper(cp)) {
      append_lower(out, cp);
    } else if (is_lower(cp)) {
      append_upper(out, cp);
    } else {
      append_utf8(out, cp);
    }
  }
  return out;
}

std::string title(std::string_view s) {
  // Python: a cased character following an uncased one starts a word.
  std::string out;
  bool previous_cased = false;
  for (char32_t cp : decode(s)) {
    if (previous_cased) {
      append_lower(out, cp);
    } else {
      append_title(out, cp);
    }
    previous_cased = is_cased(cp);
  }
  return out;
}

std::string capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for (char32_t cp : decode(s)) {
    if (first) {
      append_title(out, cp);
    } else {
      append_lower(out, cp);
    }
    first = false;
  }
  return out;
}

std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right) {
  std::u32string cps = decode(s);
  std::u32string set = chars ? decode(*chars) : std::u32string{};
  auto strippable = [&](char32_t cp) {
    return chars ? set.find(cp) != std::u32string::npos : is_space(cp);
  };
  std::size_t begin = 0, end = cps.size();
  if (left) {
    while (begin < end && strippable(cps[begin])) ++begin;
  }
  if (right) {
    while (end > begin && strippable(cps[end - 1])) --end;
  }
  return encode(std::u32string_view(cps).substr(begin, end - begin));
}

static std::vector<std::string> split_whitespace(std::string_view s, std::int64_t maxsplit,
                                                 bool from_right) {
  std::u32string cps = decode(s);
  std::vector<std::u32string> parts;
  if (!from_right) {
    std::size_t i = 0, n = cps.size();
    while (i < n) {
      while (i < n && is_space(cps[i])) ++i;
      if (i == n) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
        std::size_t end = n;
        while (end > i && is_space(cps[end - 1])) --end;
        parts.push_back(cps.substr(i, end - i));
        break;
      }
      std::size_t j = i;
      while (j < n && !is_space(cps[j])) ++j;
      parts.push_back(cps.substr(i, j - i));
      i = j;
    }
  } else {
    std::size_t i = cps.size();
    while (i > 0) {
      while (i > 0 && is_space(cps[i - 1])) --i;
      if (i == 0) break;
      if (maxsplit >= 0 && static_cast<std::int64_t>(parts.size()) == maxsplit) {
        std::size_t begin = 0;
        while (begin < i && is_space(cps[begin])) ++begin;
        parts.push_back(cps.substr(begin, i - begin));
        break;
      }
      std::size_t j = i;
      while (j > 0 && !is_space(cps[j - 1])) --j;
      parts.push_back(cps.substr(j, i - j));
      i = j;
    }
    std::reverse(parts.begin(), parts.end());
  }
  std::vector<std::string> out;
  for (auto& p : parts) out.push_back(encode(p));
  return out;
}

std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               std::int64_t maxsplit, bool from_right) {
  if (!sep) return split_whitespace(s, maxsplit, from_right);
  if (sep->empty()) fail("empty separator");
  std::vector<std::string> out;
  if (!from_right) {
    std::size_t start = 0;
    while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
      auto at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    out.emplace_back(s.substr(start));
  } else {
    std::size_t end = s.size();
    while (maxsplit < 0 || static_cast<std::int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      auto at = s.rfind(*sep, end - sep->size());
      if (at == std::string_view::npos) break;
      out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
      end = at;
    }
    out.emplace_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
  }
  return out;
}

std::vector<std::string> splitlines(std::string_view s, bool keepends) {
  std::u32string cps = decode(s);
  std::vector<std::string> out;
  std::size_t start = 0, i = 0;
  while (i < cps.size()) {
    char32_t c = cps[i];
    bool is_break = c == U'\n' || c == U'\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
                    c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
    if (!is_break) {
      ++i;
      continue;
    }
    std::size_t brk = (c == U'\r' && i + 1 < cps.size() && cps[i + 1] == U'\n') ? 2 : 1;
    std::size_t end = keepends ? i + brk : i;
    out.push_back(encode(std::u32string_view(cps).substr(start, end - start)));
    i += brk;
    start = i;
  }
  if (start < cps.size()) out.push_back(encode(std::u32string_view(cps).substr(start)));
  return out;
}

std::string replace(std::string_view s, std::string_view old_s, std::string_view new_s,
                    std::int64_t count, std::size_t max_bytes) {
  std::string out;
  auto grow = [&](std::string_view piece) {
    if (out.size() + piece.size() > max_bytes) {
      fail("string size limit ({} bytes) exceeded by replace()", max_bytes);
    }
    out.append(piece);
  };
  std::int64_t done = 0;
  if (old_s.empty()) {
    // Python inserts `new` before every character and at the end.
    std::u32string cps = decode(s);
    for (char32_t cp : cps) {
      if (count < 0 || done < count) {
        grow(new_s);
        ++done;
      }
      std::string one;
      append_utf8(one, cp);
      grow(one);
    }
    if (count < 0 || done < count) grow(new_s);
    return out;
  }
  std::size_t start = 0;
  while (count < 0 || done < count) {
    auto at = s.find(old_s, start);
    if (at == std::string_view::npos) break;
    grow(s.substr(start, at - start));
    grow(new_s);
    start = at + old_s.size();
    ++done;
  }
  grow(s.substr(start));
  return out;
}

std::int64_t find(std::string_view s, std::string_view sub, bool from_right) {
  auto at = from_right ? s.rfind(sub) : s.find(sub);
  if (at == std::string_view::npos) return -1;
  return static_cast<std::int64_t>(length(s.substr(0, at)));
}

std::int64_t count(std::string_view s, std::string_view sub) {
  if (sub.empty()) return static_cast<std::int64_t>(length(s)) + 1;
  std::int64_t n = 0;
  for (auto at = s.find(sub); at != std::string_view::npos; at = s.find(sub, at + sub.size())) {
    ++n;
  }
  return n;
}

std::string repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (char32_t cp : decode(s)) {
    if (cp == static_cast<char32_t>(quote) || cp == U'\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == U'\t') {
      out += "\\t";
    } else if (cp == U'\n') {
      out += "\\n";
    } else if (cp == U'\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && !is_printable(cp))) {
      if (cp < 0x100) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
      } else if (cp < 0x10000) {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
      } else {
        out += fmt::format("\\U{:08x}", static_cast<unsigned>(cp));
      }
    } else {
      append_utf8(out, cp);
    }
  }
  out += quote;
  return out;
}

}  // namespace ls::jinja::pystr
