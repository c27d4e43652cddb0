// One file of one commit into the cache, as huggingface_hub's hf_hub_download does it: a
// snapshot link that already exists is the file (no request); otherwise the file's metadata
// (HEAD) names its blob, and a blob already present (fetched by transformers, or by another
// commit) is linked without a download. A missing blob is downloaded to blobs/{etag}.incomplete,
// resumed with a Range request after a dropped connection (bounded retries with backoff),
// checked (size, then the sha256 of an LFS file or the git blob id of a regular one), renamed
// and linked. A failed check deletes the .incomplete file: nothing unverified is ever linked.
// Blobs are locked with huggingface_hub's lock files, so concurrent pulls share the work.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "hub/cache.h"
#include "hub/hub_api.h"
#include "hub/progress.h"

namespace ls::hub {

class Downloader {
 public:
  Downloader(const HubClient& hub, const RepoCache& cache, ProgressSink* progress)
      : hub_(hub), cache_(cache), progress_(progress) {}

  // Safe to call from several threads, each with its own Http objects.
  FileOutcome fetch(Http& metadata_http, Http& data_http, const std::string& commit,
                    const std::string& path);

  // Consecutive attempts that receive no new byte before a download gives up (an attempt that
  // received some counts as the first of a new run).
  static constexpr int kMaxStalledAttempts = 4;
  // Every attempt of one file, progress or not: the bound on a server that trickles and drops.
  static constexpr int kMaxAttempts = 30;

 private:
  void download_blob(Http& http, const FileMetadata& meta, const std::string& path,
                     FileOutcome& outcome);
  void verify(const FileMetadata& meta, const std::string& path) const;
  void check_disk_space(const FileMetadata& meta, std::uint64_t already,
                        const std::string& path) const;

  const HubClient& hub_;
  const RepoCache& cache_;
  ProgressSink* progress_;
  std::atomic<std::uint64_t> reserved_{0};  // bytes the running downloads still need on disk
};

// "1.5 GiB", "340.2 MiB", "12 B": for messages and the progress display.
std::string human_bytes(std::uint64_t n);

}  // namespace ls::hub
