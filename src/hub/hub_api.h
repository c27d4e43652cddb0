// The Hub's HTTP protocol as huggingface_hub speaks it, for model repositories:
//   GET  {endpoint}/api/models/{repo}/revision/{revision}?blobs=true   commit ("sha") and files
//   HEAD {endpoint}/{repo}/resolve/{commit}/{path}                     one file's metadata
// The HEAD is not followed when it redirects: X-Repo-Commit, ETag (a regular file's git blob
// id) or X-Linked-Etag + X-Linked-Size (an LFS file's sha256 and size) and the Location of the
// LFS store are read from the redirect itself; a relative redirect (a renamed repo) is followed.
// Settings come from the environment as huggingface_hub reads it; HTTP errors become messages
// in plain words (gated/private, not found, which of repo, revision or file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hub/http.h"

namespace ls::hub {

struct HubSettings {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT (no trailing '/')
  std::string token;  // HF_TOKEN, else the file HF_TOKEN_PATH or $HF_HOME/token (`hf auth login`)
  bool offline = false;           // HF_HUB_OFFLINE=1 (or ON, YES, TRUE): no request at all
  HttpTimeouts metadata{10, 10};  // HF_HUB_ETAG_TIMEOUT: API and HEAD requests
  HttpTimeouts download{10, 10};  // HF_HUB_DOWNLOAD_TIMEOUT: file bodies
  static HubSettings from_env();
};

struct RepoFile {
  std::string path;                   // "model-00001-of-00002.safetensors"
  std::optional<std::uint64_t> size;  // from ?blobs=true, when the Hub gives it
};

struct RepoRevision {
  std::string commit;  // the 40-hex commit the revision names now
  std::vector<RepoFile> files;
};

struct FileMetadata {
  std::string commit;    // X-Repo-Commit
  std::string etag;      // normalized (no quotes, no W/): sha256 (LFS) or git blob id
  std::string location;  // where to GET the bytes: the LFS store, or the resolve URL itself
  std::uint64_t size = 0;
  bool lfs = false;  // X-Linked-Etag was given: the etag is the sha256 of the bytes
};

class HubClient {
 public:
  explicit HubClient(HubSettings settings) : s_(std::move(settings)) {}
  const HubSettings& settings() const { return s_; }

  RepoRevision revision(Http& http, const std::string& repo, const std::string& revision) const;
  FileMetadata file_metadata(Http& http, const std::string& repo, const std::string& commit,
                             const std::string& path) const;
  std::string resolve_url(const std::string& repo, const std::string& revision,
                          const std::string& path) const;
  // Request headers for `url`: the token goes only to the endpoint's own host and port, never
  // to the LFS store or a CDN it redirects to (huggingface_hub drops it there too).
  std::vector<std::string> headers_for(const std::string& url) const;
  // Throws the plain-words error for a failed answer about `repo` (and `path` when a file's).
  [[noreturn]] void fail_status(const HttpResponse& r, const std::string& repo,
                                const std::string& revision, const std::string& path) const;

 private:
  HubSettings s_;
};

// "scheme://host:port" of a URL (the port made explicit), for same-origin checks.
std::string url_origin(const std::string& url);
// "W/\"abc\"" -> "abc": an ETag as huggingface_hub normalizes it.
std::string normalize_etag(const std::string& etag);

}  // namespace ls::hub
