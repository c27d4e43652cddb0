// Verified, resumable downloads of single files into the cache (see download.h).
#include "hub/download.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "hub/checksum.h"

namespace ls::hub {

namespace {

using Clock = std::chrono::steady_clock;

// An exclusive flock on huggingface_hub's lock file for a blob (Python's filelock uses flock
// too, so a transformers process downloading the same blob waits for us and we for it).
class BlobLock {
 public:
  explicit BlobLock(const fs::path& path) {
    fs::create_directories(path.parent_path());
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) fail("{}: cannot create the lock file: {}", path.string(), std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0)
      if (errno != EINTR) fail("{}: cannot lock: {}", path.string(), std::strerror(errno));
  }
  ~BlobLock() { ::close(fd_); }  // closing releases the lock
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

// The .incomplete file, opened for appending.
class PartialFile {
 public:
  explicit PartialFile(const fs::path& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
    if (fd_ < 0) fail("{}: cannot be written: {}", path.string(), std::strerror(errno));
  }
  ~PartialFile() { ::close(fd_); }
  PartialFile(const PartialFile&) = delete;
  PartialFile& operator=(const PartialFile&) = delete;

  std::uint64_t size() const {
    const off_t end = ::lseek(fd_, 0, SEEK_END);
    return end < 0 ? 0 : static_cast<std::uint64_t>(end);
  }
  void truncate() {
    if (::ftruncate(fd_, 0) != 0)
      fail("{}: cannot truncate: {}", path_.string(), std::strerror(errno));
  }
  // Writes everything or records why not (the transfer is then stopped).
  bool write(const char* data, std::size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, data, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        error_ = std::strerror(errno);
        return false;
      }
      data += w, n -= static_cast<std::size_t>(w);
    }
    return true;
  }
  const std::string& error() const { return error_; }
  void sync() { ::fsync(fd_); }

 private:
  fs::path path_;
  int fd_ = -1;
  std::string error_;
};

bool is_hex(const std::string& s, std::size_t len) {
  if (s.size() != len) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

void backoff(int stalls) {
  // 0.5 s, 1 s, 2 s, 4 s: a dropped connection usually comes back at once, a busy server later.
  const int ms = 500 << std::min(stalls - 1, 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

std::string human_bytes(std::uint64_t n) {
  if (n < 1024) return fmt::format("{} B", n);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(n) / 1024;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}

FileOutcome Downloader::fetch(Http& metadata_http, Http& data_http, const std::string& commit,
                              const std::string& path) {
  const auto t0 = Clock::now();
  FileOutcome outcome;
  outcome.path = path;
  std::error_code ec;
  const fs::path pointer = cache_.snapshot(commit) / path;
  // A snapshot link of this very commit that reaches its blob is the file already (a blob is
  // only ever renamed into place once verified): no request at all, as huggingface_hub.
  if (fs::is_regular_file(pointer, ec)) {
    outcome.reused = true;
    outcome.size = fs::file_size(pointer, ec);
    if (progress_) progress_->file_done(outcome);
    return outcome;
  }
  FileMetadata meta;
  for (int attempt = 1;; ++attempt) {
    try {
      meta = hub_.file_metadata(metadata_http, cache_.repo_id(), commit, path);
      break;
    } catch (const TransferError& e) {
      if (attempt == kMaxStalledAttempts)
        fail("{} in {}: no answer from the Hub after {} attempts: {}", path, cache_.repo_id(),
             attempt, e.what());
      if (progress_) progress_->note(fmt::format("retrying {}: {}", path, e.what()));
      backoff(attempt);
    }
  }
  outcome.size = meta.size;
  {
    BlobLock lock(cache_.lock(meta.etag));
    if (!fs::is_regular_file(cache_.blob(meta.etag), ec)) {
      download_blob(data_http, meta, path, outcome);
    } else {
      outcome.reused = true;  // fetched before: by transformers, or for another commit
    }
    cache_.link(commit, path, meta.etag);
  }
  outcome.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (progress_) progress_->file_done(outcome);
  return outcome;
}

void Downloader::check_disk_space(const FileMetadata& meta, std::uint64_t already,
                                  const std::string& path) const {
  std::error_code ec;
  const auto space = fs::space(cache_.dir() / "blobs", ec);
  if (ec) return;  // not knowable here (some network file systems): the write will tell
  const std::uint64_t need = meta.size - already + reserved_.load();
  if (space.available < need)
    fail(
        "not enough free space for {} of {}: it needs {} ({} with the other downloads running), "
        "but {} has {} free. Free some space or point HF_HUB_CACHE elsewhere",
        path, cache_.repo_id(), human_bytes(meta.size - already), human_bytes(need),
        (cache_.dir() / "blobs").string(), human_bytes(space.available));
}

void Downloader::download_blob(Http& http, const FileMetadata& meta, const std::string& path,
                               FileOutcome& outcome) {
  fs::create_directories(cache_.dir() / "blobs");
  const fs::path partial_path = cache_.incomplete(meta.etag);
  std::error_code ec;
  const std::uint64_t left = fs::exists(partial_path, ec) ? fs::file_size(partial_path, ec) : 0;
  check_disk_space(meta, left <= meta.size ? left : 0, path);  // before the file is created
  PartialFile partial(partial_path);
  if (partial.size() > meta.size) partial.truncate();  // not a prefix of this file
  const std::uint64_t already = partial.size();
  reserved_ += meta.size - already;
  struct Unreserve {
    std::atomic<std::uint64_t>& r;
    std::uint64_t n;
    ~Unreserve() { r -= n; }
  } unreserve{reserved_, meta.size - already};
  if (progress_) progress_->file_started(path, meta.size, already);
  if (already > 0 && progress_)
    progress_->note(fmt::format("resuming {} at {}", path, human_bytes(already)));

  const auto headers = hub_.headers_for(meta.location);
  int stalls = 0;
  for (int attempt = 1; partial.size() < meta.size; ++attempt) {
    const std::uint64_t from = partial.size();
    std::uint64_t received = 0;
    bool bad_range = false;
    const BodySink sink = [&](const HttpResponse& answer, const char* data, std::size_t n) {
      if (received == 0 && from > 0) {
        if (answer.status == 200) {
          partial.truncate();  // the server ignored the Range: the whole file is coming
          if (progress_)
            progress_->note(fmt::format("{}: the server cannot resume; restarting", path));
        } else if (answer.header("content-range").rfind(fmt::format("bytes {}-", from), 0) != 0) {
          bad_range = true;
          return false;
        }
      }
      received += n;
      if (progress_) progress_->file_bytes(path, n);
      return partial.write(data, n);
    };
    std::string failure;
    try {
      const HttpResponse r = http.get(meta.location, headers, from, sink);
      if (r.aborted && !partial.error().empty())
        fail("{}: cannot write: {}", partial_path.string(), partial.error());
      if (bad_range || r.status == 416) {
        partial.truncate();  // an answer for other bytes: start over
        failure = fmt::format("{}: the server answered a resume with other bytes", path);
      } else if (r.status >= 400 && r.status < 500 &&
                 url_origin(meta.location) != url_origin(hub_.settings().endpoint)) {
        // The LFS store's links are signed and expire: a new pull gets a new one and resumes.
        fail(
            "{} in {}: the file store answered {} for {}{}; its signed link may have expired: "
            "run the pull again (it resumes from the {} already here)",
            path, cache_.repo_id(), r.status, r.url,
            r.body.empty() ? "" : " (" + r.body.substr(0, 200) + ")", human_bytes(partial.size()));
      } else if (r.status >= 400) {
        hub_.fail_status(r, cache_.repo_id(), "", path);
      } else if (partial.size() > meta.size) {
        break;  // longer than the Hub said: the check below refuses it
      } else if (partial.size() < meta.size) {
        failure = fmt::format("{}: the connection ended after {} of {}", path,
                              human_bytes(partial.size()), human_bytes(meta.size));
      }
    } catch (const TransferError& e) {
      failure = e.what();
    }
    outcome.downloaded += received;
    if (failure.empty()) break;
    stalls = received > 0 ? 1 : stalls + 1;
    if (stalls >= kMaxStalledAttempts || attempt >= kMaxAttempts)
      fail(
          "{} in {}: download failed after {} attempts ({} of {} received; the partial file "
          "{} is kept, and the next pull resumes it): {}",
          path, cache_.repo_id(), attempt, human_bytes(partial.size()), human_bytes(meta.size),
          partial_path.string(), failure);
    if (progress_) progress_->note(fmt::format("retrying {}: {}", path, failure));
    backoff(stalls);
  }
  partial.sync();
  verify(meta, path);
  fs::rename(partial_path, cache_.blob(meta.etag));
}

void Downloader::verify(const FileMetadata& meta, const std::string& path) const {
  const fs::path partial = cache_.incomplete(meta.etag);
  const std::uint64_t size = fs::file_size(partial);
  std::string problem;
  if (size != meta.size) {
    problem = fmt::format("it has {} bytes, the Hub says {}", size, meta.size);
  } else if (meta.lfs || is_hex(meta.etag, 64)) {
    const std::string got = sha256_file(partial.string());
    if (got != meta.etag)
      problem = fmt::format("its sha256 is {}, the Hub names it {}", got, meta.etag);
  } else if (is_hex(meta.etag, 40)) {
    const std::string got = git_blob_sha1_file(partial.string());
    if (got != meta.etag)
      problem = fmt::format("its git blob id is {}, the Hub names it {}", got, meta.etag);
  }
  if (problem.empty()) return;
  std::error_code ec;
  fs::remove(partial, ec);
  fail(
      "{} in {}: the downloaded file is corrupted: {}. It was deleted and nothing was added to "
      "the cache; run the pull again (if this repeats, the server or a proxy alters the file)",
      path, cache_.repo_id(), problem);
}

}  // namespace ls::hub
