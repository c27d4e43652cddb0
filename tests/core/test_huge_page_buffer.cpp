// HugePageBuffer gives writable memory of the asked size starting on a 2 MiB boundary, advised
// for huge pages whenever the kernel's THP mode allows it (read from sysfs, not from the class),
// moves without copying, and populates exactly the pages of a range it is asked to (mincore).
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

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

// populate(offset, bytes) backs the pages that hold [offset, offset + bytes) and no others, and
// leaves them zero. 1 MiB: too short for a huge page, so residency is per 4 KiB page.
TEST(HugePageBuffer, PopulateBacksExactlyItsPages) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  void* probe = ::mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(probe, MAP_FAILED);
  const bool supported = ::madvise(probe, page, MADV_POPULATE_WRITE) == 0;
  const int err = errno;
  ::munmap(probe, page);
  if (!supported) GTEST_SKIP() << "MADV_POPULATE_WRITE refused (errno " << err << "): Linux < 5.14";

  const std::size_t pages = (std::size_t{1} << 20) / page;
  ls::HugePageBuffer b(pages * page);
  std::vector<unsigned char> resident(pages);
  ASSERT_EQ(::mincore(b.data(), pages * page, resident.data()), 0);
  for (std::size_t i = 0; i < pages; ++i) ASSERT_EQ(resident[i] & 1, 0) << "page " << i;
  b.populate(page + 100, 3 * page);  // pages 1, 2, 3 and 4
  ASSERT_EQ(::mincore(b.data(), pages * page, resident.data()), 0);
  for (std::size_t i = 0; i < pages; ++i)
    EXPECT_EQ(resident[i] & 1, i >= 1 && i <= 4 ? 1 : 0) << "page " << i;
  for (std::size_t i = page; i < 5 * page; ++i) ASSERT_EQ(b.data()[i], 0) << i;
  b.populate(pages * page, page);  // past the end: nothing
  b.populate(0, 0);
  ASSERT_EQ(::mincore(b.data(), pages * page, resident.data()), 0);
  EXPECT_EQ(resident[0] & 1, 0);
}

}  // namespace
