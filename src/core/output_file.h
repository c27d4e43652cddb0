// An output file written whole or not at all: the bytes go to "TARGET.partial" beside the
// target and are renamed over it only once complete, so an interrupted or failed write never
// leaves a torn file. Only what is ours is replaced: the target must be a regular file or not
// exist yet; a device (/dev/full), FIFO or directory is refused before anything is written, and
// a symlink is written through (the file it points to is replaced, the link stays).
#pragma once

#include <fstream>
#include <string>

namespace ls {

class OutputFile {
 public:
  // `what` names the flag or role in messages ("--out", "--dump-logits"). Throws ls::Error.
  OutputFile(const std::string& path, const std::string& what);
  ~OutputFile();  // removes the partial file unless commit() succeeded
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::ofstream& stream() { return out_; }
  const std::string& target() const { return target_; }
  // Closes, checks that every write succeeded and renames the file into place.
  void commit();

 private:
  std::string who_, target_, partial_;
  std::ofstream out_;
  bool committed_ = false;
};

}  // namespace ls
