// Helpers shared by the libFuzzer targets: an in-memory file for readers that take a path, and
// `finding`, which reports a broken promise (an exception of the wrong type, a violated
// invariant) and aborts, so that libFuzzer saves the input as a crash-* file.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace ls::fuzz {

[[noreturn]] inline void finding(const std::string& what) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n", what.c_str());
  std::abort();
}

// A memfd the readers open by its /proc/self/fd path: each input replaces its contents, so a
// run touches no disk and leaves no files behind.
class MemFile {
 public:
  MemFile() : fd_(::memfd_create("logitscope-fuzz", MFD_CLOEXEC)) {
    if (fd_ < 0) finding("memfd_create failed");
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;

  const std::string& write(const std::uint8_t* data, std::size_t size) {
    if (::ftruncate(fd_, 0) != 0) finding("ftruncate failed");
    std::size_t done = 0;
    while (done < size) {
      const ssize_t n = ::pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      if (n <= 0) finding("pwrite failed");
      done += static_cast<std::size_t>(n);
    }
    return path_;
  }

 private:
  int fd_;
  std::string path_;
};

}  // namespace ls::fuzz
