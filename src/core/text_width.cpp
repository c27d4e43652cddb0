// Display width of UTF-8 text (see text_width.h).
#include "core/text_width.h"

#include <utf8proc.h>

namespace ls {

std::size_t display_width(std::string_view text) {
  std::size_t width = 0;
  const auto* p = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  utf8proc_ssize_t left = static_cast<utf8proc_ssize_t>(text.size());
  while (left > 0) {
    utf8proc_int32_t cp = 0;
    const utf8proc_ssize_t n = utf8proc_iterate(p, left, &cp);
    if (n <= 0) {  // not UTF-8 here: one byte, one column
      ++width;
      ++p;
      --left;
      continue;
    }
    width += static_cast<std::size_t>(utf8proc_charwidth(cp));
    p += n;
    left -= n;
  }
  return width;
}

std::string pad_to_width(std::string_view text, std::size_t width) {
  std::string out(text);
  const std::size_t have = display_width(text);
  if (have < width) out.append(width - have, ' ');
  return out;
}

}  // namespace ls
