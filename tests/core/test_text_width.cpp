// display_width / pad_to_width: columns as a terminal shows them (Unicode's East Asian Width:
// wide and fullwidth 2, combining marks 0), checked on characters whose width is not in doubt.
#include <gtest/gtest.h>

#include "core/text_width.h"

namespace ls {
namespace {

TEST(TextWidth, CountsColumnsNotBytesOrCodePoints) {
  EXPECT_EQ(display_width(""), 0u);
  EXPECT_EQ(display_width("focus"), 5u);
  EXPECT_EQ(display_width("世界"), 4u);               // CJK ideographs: wide
  EXPECT_EQ(display_width("日本語のテキスト"), 16u);  // kanji, hiragana, katakana
  EXPECT_EQ(display_width("ＡＢ"), 4u);               // fullwidth Latin
  EXPECT_EQ(display_width("\xF0\x9F\x98\x80"), 2u);   // U+1F600 emoji: wide
  EXPECT_EQ(display_width("e\xCC\x81"), 1u);          // e + combining acute
  EXPECT_EQ(display_width("\xEF\xAE\x95"), 1u);       // U+FB95 Arabic presentation form: narrow
  EXPECT_EQ(display_width("حركة"), 4u);
}

TEST(TextWidth, InvalidBytesCountOneColumnEach) {
  EXPECT_EQ(display_width("\xFF"), 1u);
  EXPECT_EQ(display_width("a\xE4\xB8"), 3u);  // a truncated 3-byte sequence: two stray bytes
}

TEST(TextWidth, PadsToColumns) {
  EXPECT_EQ(pad_to_width("世界", 6), "世界  ");
  EXPECT_EQ(pad_to_width("ab", 4), "ab  ");
  EXPECT_EQ(pad_to_width("abcdef", 4), "abcdef");  // never cut
  EXPECT_EQ(display_width(pad_to_width("\"世界\"#99489 26.9%", 28)), 28u);
}

}  // namespace
}  // namespace ls
