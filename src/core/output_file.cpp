// Whole-or-nothing output files (see output_file.h).
#include "core/output_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace ls {

namespace fs = std::filesystem;

OutputFile::OutputFile(const std::string& path, const std::string& what)
    : who_(what.empty() ? path : what + " " + path) {
  std::error_code ec;
  fs::path target = path;
  // A symlink is written through: resolve it to the file it names (which may not exist yet).
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    target = fs::weakly_canonical(target, ec);
    if (ec) fail("{}: cannot resolve the symlink: {}", who_, ec.message());
  }
  struct stat st {};
  if (::stat(target.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) fail("{}: is a directory; give a file name", who_);
    if (!S_ISREG(st.st_mode))
      fail("{}: is not a regular file (a device, FIFO or socket); logitscope writes only files",
           who_);
  } else if (errno != ENOENT) {
    fail("{}: {}", who_, std::strerror(errno));
  }
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec))
    fail("{}: the folder {} does not exist", who_, parent.string());
  target_ = target.string();
  partial_ = target_ + ".partial";
  out_.open(partial_, std::ios::binary | std::ios::trunc);
  if (!out_) fail("{}: cannot create {}: {}", who_, partial_, std::strerror(errno));
}

OutputFile::~OutputFile() {
  if (committed_) return;
  out_.close();
  std::remove(partial_.c_str());
}

void OutputFile::commit() {
  out_.close();
  if (!out_) fail("{}: write failed: {}", who_, std::strerror(errno));
  std::error_code ec;
  fs::rename(partial_, target_, ec);
  if (ec) fail("{}: cannot move {} into place: {}", who_, partial_, ec.message());
  committed_ = true;
}

}  // namespace ls
