// Display width of UTF-8 text in a terminal's columns, and padding to a column width. fmt's
// "{:<N}" counts code points, so a column holding "世界" (two wide characters, four columns)
// would come out two columns short and push the rest of its row; token tables pad with these.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ls {

// Columns `text` takes in a terminal: East Asian wide and fullwidth characters 2, combining
// marks and zero-width characters 0, others 1 (utf8proc's Unicode tables); a byte that is not
// valid UTF-8 counts 1 (a terminal shows one replacement character for it).
std::size_t display_width(std::string_view text);

// `text` followed by spaces up to `width` columns (unchanged when already that wide or wider).
std::string pad_to_width(std::string_view text, std::size_t width);

}  // namespace ls
