// POSIX mmap of a read-only file; an empty file maps to an empty span.
#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace ls {

void release_mapped_pages(const std::uint8_t* p, std::size_t n) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + n) / page * page;
  if (end <= begin) return;
  // Advice only: a refusal changes nothing but memory use. MADV_RANDOM first gives the range
  // flags of its own, so the kernel splits it into a separate VMA: a later fault on a
  // neighbouring tensor that is still read from the file would otherwise map back the released
  // pages around it that are still in the page cache ("fault-around", whole large folios on
  // current kernels; measured: 46 MiB came back on a Q6_K file).
  void* range = reinterpret_cast<void*>(begin);
  (void)::madvise(range, end - begin, MADV_RANDOM);
  (void)::madvise(range, end - begin, MADV_DONTNEED);
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat below refuses it.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    fail("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail("{}: not a regular file", path);
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail("{}: cannot mmap {} bytes: {}", path, size_, std::strerror(e));
    }
    data_ = static_cast<const std::uint8_t*>(p);
  }
  ::close(fd);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<std::uint8_t*>(data_), size_);
}

void require_regular_file(const std::string& path, std::size_t limit, const std::string& what) {
  const std::string who = what.empty() ? path : what + " " + path;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("{}: cannot open: {}", who, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail("{}: is a directory, expected a file", who);
  if (!S_ISREG(st.st_mode))
    fail("{}: not a regular file (a device, FIFO or socket); give a file", who);
  if (static_cast<std::uint64_t>(st.st_size) > limit)
    fail("{}: {} bytes is more than the limit of {} MiB for this kind of file", who, st.st_size,
         limit >> 20);
}

std::string read_text_file(const std::string& path, std::size_t limit) {
  require_regular_file(path, limit);
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("{}: cannot open: {}", path, std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) fail("{}: read error", path);
  std::string text = ss.str();
  if (text.size() > limit)  // it grew since stat
    fail("{}: more than the limit of {} MiB for this kind of file", path, limit >> 20);
  return text;
}

}  // namespace ls
