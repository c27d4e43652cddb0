// HugePageBuffer gives writable memory of the asked size starting on a 2 MiB boundary, advised
// for huge pages whenever the kernel's THP mode allows it (read from sysfs, not from the class),
// and moves without copying.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>

#include "core/huge_page_buffer.h"

namespace {

constexpr std::uintptr_t kTwoMiB = std::uintptr_t{2} << 20;

// The selected mode in /sys/kernel/mm/transparent_hugepage/enabled ("always [madvise] never"),
// or "" when the file is absent (no THP in this kernel).
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos) return "";
  return line.substr(open + 1, close - open - 1);
}

TEST(HugePageBuffer, AlignedWritableAndAdvised) {
  for (std::size_t bytes : {std::size_t{1}, std::size_t{4096} + 3, std::size_t{5} << 20}) {
    ls::HugePageBuffer b(bytes);
    ASSERT_NE(b.data(), nullptr);
    EXPECT_EQ(b.size(), bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % kTwoMiB, 0u) << bytes;
    for (std::size_t i = 0; i < bytes; i += 4096) b.data()[i] = static_cast<std::uint8_t>(i >> 12);
    b.data()[bytes - 1] = 0xA5;
    for (std::size_t i = 0; i + 1 < bytes; i += 4096)
      ASSERT_EQ(b.data()[i], static_cast<std::uint8_t>(i >> 12));
    EXPECT_EQ(b.data()[bytes - 1], 0xA5);
    const std::string mode = thp_mode();
    if (mode == "always" || mode == "madvise")
      EXPECT_TRUE(b.huge_pages_advised()) << "THP mode " << mode;
    else
      std::printf("THP mode '%s': huge-page advice not checked\n", mode.c_str());
  }
}

TEST(HugePageBuffer, EmptyAndMoved) {
  ls::HugePageBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(ls::HugePageBuffer(0).data(), nullptr);
  ls::HugePageBuffer a(100);
  a.data()[99] = 7;
  std::uint8_t* p = a.data();
  ls::HugePageBuffer b(std::move(a));
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.data()[99], 7);
  ls::HugePageBuffer c(10);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.size(), 100u);
  EXPECT_EQ(b.data(), nullptr);
}

}  // namespace
