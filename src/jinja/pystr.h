// Python `str` semantics over UTF-8 std::string: templates index, slice, strip, split and
// change the case of strings by code point, exactly as jinja2 (a Python library) does. These
// helpers decode to code points where Python's rules need them; invalid UTF-8 bytes decode to
// U+FFFD so that no input can make them fail.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ls::jinja::pystr {

std::u32string decode(std::string_view utf8);
std::string encode(std::u32string_view code_points);
void append_utf8(std::string& out, char32_t cp);
std::size_t length(std::string_view utf8);  // number of code points, like Python len()

// Character classes as Python's str.isspace()/isalpha()/... define them (via utf8proc).
bool is_space(char32_t cp);
bool is_alpha(char32_t cp);
bool is_decimal(char32_t cp);
bool is_numeric(char32_t cp);
bool is_word(char32_t cp);  // the Unicode `\w` of Python's re module
bool is_upper(char32_t cp);
bool is_lower(char32_t cp);
bool is_printable(char32_t cp);  // str.isprintable(), used by repr()

std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string title(std::string_view s);       // str.title()
std::string capitalize(std::string_view s);  // str.capitalize()
std::string swapcase(std::string_view s);

// str.strip/lstrip/rstrip: `chars` absent means whitespace.
std::string strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                  bool right);
// str.split(sep=None, maxsplit=-1) and str.rsplit.
std::vector<std::string> split(std::string_view s, const std::optional<std::string>& sep,
                               std::int64_t maxsplit, bool from_right);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
// str.replace(old, new, count=-1); `max_bytes` bounds the result (throws ls::Error beyond it).
std::string replace(std::string_view s, std::string_view old_s, std::string_view new_s,
                    std::int64_t count, std::size_t max_bytes);
// str.find / str.count over code points (returns code point index or -1).
std::int64_t find(std::string_view s, std::string_view sub, bool from_right);
std::int64_t count(std::string_view s, std::string_view sub);

// Python's repr() of a string: quotes chosen as Python does, escapes for non-printables.
std::string repr(std::string_view s);

}  // namespace ls::jinja::pystr
