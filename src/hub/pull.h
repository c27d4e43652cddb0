// `pull` as huggingface_hub's snapshot_download does it: the revision's commit and file list
// from the API, the files kept by --include/--exclude (or the GGUF a quant tag picks), each
// fetched into the cache by a Downloader on `jobs` threads (shards in parallel), then
// refs/{revision} written, only once every file is verified and linked, so a failed pull
// never moves a ref. Offline (HF_HUB_OFFLINE), it only finds the snapshot in the cache.
#pragma once

#include <string>
#include <vector>

#include "hub/cache.h"
#include "hub/hub_api.h"
#include "hub/progress.h"

namespace ls::hub {

struct PullRequest {
  std::string repo;  // "Qwen/Qwen2.5-0.5B-Instruct"
  std::string revision = "main";
  std::vector<std::string> include, exclude;
  std::string quant_tag;  // "q4_k_m": the GGUF this tag picks (plus what --include adds)
  int jobs = 8;           // files downloaded at once (huggingface_hub's max_workers)
  // The caller loads one model from what it pulls (a command's --pull): a repo of several GGUF
  // models and no quant tag is refused before anything is downloaded, naming the tags (pull
  // alone fetches them all, as huggingface-cli download does).
  bool one_model = false;
};

struct PullResult {
  std::string commit;
  fs::path snapshot;
  std::vector<FileOutcome> files;  // in the repo's order
  bool offline = false;            // HF_HUB_OFFLINE: found in the cache, nothing requested
};

PullResult pull(const PullRequest& request, const HubSettings& settings, const fs::path& cache_root,
                ProgressSink* progress);

// huggingface_hub's repo id rules: "name" or "org/name" of letters, digits, '-', '_', '.', at
// most 96 characters, no "--" or "..", not starting or ending with '-' or '.'.
bool is_repo_id(const std::string& s);
// Throws naming the id and the rules unless is_repo_id.
void check_repo_id(const std::string& s);

}  // namespace ls::hub
