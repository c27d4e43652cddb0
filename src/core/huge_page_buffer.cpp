// HugePageBuffer: an mmap'd anonymous region whose start is aligned to 2 MiB (so every whole
// 2 MiB of it can be one huge page), advised MADV_HUGEPAGE. Pages are allocated on first write,
// so resident memory grows as the buffer is filled, not at construction.
#include "core/huge_page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

namespace ls {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
}

HugePageBuffer::HugePageBuffer(std::size_t bytes) : size_(bytes) {
  if (bytes == 0) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  mapped_ = (bytes + page - 1) / page * page;
  // Map the slack for alignment too, then unmap what lies before and after the aligned range.
  const std::size_t reserve = mapped_ + kHugePage;
  void* p = ::mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot map {} bytes of anonymous memory (huge-page buffer): {}", bytes,
         std::strerror(errno));
  const auto base = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t start = (base + kHugePage - 1) / kHugePage * kHugePage;
  if (start > base) (void)::munmap(p, start - base);
  const std::uintptr_t end = start + mapped_, reserve_end = base + reserve;
  if (reserve_end > end) (void)::munmap(reinterpret_cast<void*>(end), reserve_end - end);
  data_ = reinterpret_cast<std::uint8_t*>(start);
  // Advice only: refused (THP disabled, an old kernel), the buffer works on normal pages.
  advised_ = ::madvise(data_, mapped_, MADV_HUGEPAGE) == 0;
}

void HugePageBuffer::populate(std::size_t offset, std::size_t bytes) const {
#ifdef MADV_POPULATE_WRITE
  if (bytes == 0 || offset >= size_) return;
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t begin = offset / page * page;
  const std::size_t end = std::min(mapped_, (offset + bytes + page - 1) / page * page);
  (void)::madvise(data_ + begin, end - begin, MADV_POPULATE_WRITE);  // advice: failure is harmless
#else
  (void)offset;
  (void)bytes;
#endif
}

HugePageBuffer::~HugePageBuffer() {
  if (data_ != nullptr) ::munmap(data_, mapped_);
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)),
      advised_(std::exchange(other.advised_, false)) {}

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) ::munmap(data_, mapped_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
    advised_ = std::exchange(other.advised_, false);
  }
  return *this;
}

}  // namespace ls
