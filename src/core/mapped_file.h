// A read-only memory map of a whole file. Weights are read in place from the map and never
// copied; the kernel pages them in on first touch and may drop them under memory pressure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ls {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // throws ls::Error naming the path
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&&) = delete;

  const std::string& path() const { return path_; }
  std::span<const std::uint8_t> bytes() const { return {data_, size_}; }
  std::size_t size() const { return size_; }

 private:
  std::string path_;
  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
};

// Tells the kernel the mapped bytes [p, p + n) will not be read again (the whole pages inside
// the range leave the process's resident set; read anyway, they come back from the file).
void release_mapped_pages(const std::uint8_t* p, std::size_t n);

// The most bytes an input text file may hold (configs, tokenizer.json, templates, messages,
// prompt, golden and trace files): anything larger is refused, naming the file and the limit.
constexpr std::size_t kMaxTextFileBytes = std::size_t{64} << 20;

// Throws unless `path` names (through symlinks) a regular file of at most `limit` bytes:
// devices (/dev/zero), FIFOs, directories and symlink loops are refused before any read, so
// nothing blocks or grows without end. `what` names the role in the message ("--prompts").
void require_regular_file(const std::string& path, std::size_t limit, const std::string& what = "");

// Reads a whole (small) regular file into a string: configs, templates, tokenizer.json.
std::string read_text_file(const std::string& path, std::size_t limit = kMaxTextFileBytes);

}  // namespace ls
