// What a pull reports while it runs, for the app to display (the library prints nothing).
// Calls come from several download threads at once: an implementation must lock.
#pragma once

#include <cstdint>
#include <string>

namespace ls::hub {

struct FileOutcome {
  std::string path;              // the file's path in the repo
  std::uint64_t size = 0;        // its full size
  std::uint64_t downloaded = 0;  // bytes received this run (less than size after a resume)
  bool reused = false;           // already in the cache (a snapshot link or a blob): no download
  double seconds = 0;
};

class ProgressSink {
 public:
  virtual ~ProgressSink() = default;
  // Once, before any file: how many files and (when the Hub listed sizes) bytes in all.
  virtual void plan(std::size_t files, std::uint64_t total_bytes) = 0;
  // A download begins: `size` in all, `already` of them from an earlier partial download.
  virtual void file_started(const std::string& path, std::uint64_t size, std::uint64_t already) = 0;
  virtual void file_bytes(const std::string& path, std::uint64_t n) = 0;  // n more bytes arrived
  virtual void file_done(const FileOutcome& outcome) = 0;
  // A retry or another event worth a line ("resuming model.safetensors at 1.2 GiB").
  virtual void note(const std::string& message) = 0;
};

}  // namespace ls::hub
