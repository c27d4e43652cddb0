// The Hugging Face cache, laid out exactly as huggingface_hub lays it out, so that files
// transformers fetched are reused here and files fetched here are found by transformers:
//   {root}/models--{org}--{name}/blobs/{etag}                 the bytes (sha256 for LFS files,
//                                                             the git blob id otherwise)
//   {root}/models--{org}--{name}/snapshots/{commit}/{path}    relative symlinks to
//   ../../blobs/{etag} {root}/models--{org}--{name}/refs/{revision}              the commit hash
//   (no newline)
// A blob being written is blobs/{etag}.incomplete; it is renamed only once verified.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace ls::hub {

namespace fs = std::filesystem;

// HF_HUB_CACHE, else $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else
// ~/.cache/huggingface/hub (huggingface_hub's order).
fs::path cache_root_from_env();
// HF_HOME, else $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface (where the token file is).
fs::path hf_home_from_env();

// "Qwen/Qwen2.5-0.5B-Instruct" -> "models--Qwen--Qwen2.5-0.5B-Instruct".
std::string repo_folder_name(const std::string& repo_id);
// The inverse, or "" for a folder that is not a model repo's.
std::string repo_id_from_folder(const std::string& folder);
// A full commit hash: 40 lower-case hex digits.
bool is_commit_hash(const std::string& s);

class RepoCache {
 public:
  RepoCache(fs::path root, std::string repo_id);

  const std::string& repo_id() const { return repo_id_; }
  const fs::path& root() const { return root_; }
  fs::path dir() const { return root_ / repo_folder_name(repo_id_); }
  fs::path blob(const std::string& etag) const { return dir() / "blobs" / etag; }
  fs::path incomplete(const std::string& etag) const;
  fs::path snapshot(const std::string& commit) const { return dir() / "snapshots" / commit; }
  // huggingface_hub's lock file for a blob: {root}/.locks/models--{org}--{name}/{etag}.lock.
  fs::path lock(const std::string& etag) const;

  // The commit a revision names: a commit hash that has a snapshot, or refs/{revision}.
  std::optional<std::string> commit_for(const std::string& revision) const;
  // Writes refs/{revision} = commit (nothing when the revision is that commit, as huggingface_hub).
  void write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/{commit}/{path} -> the relative path of blobs/{etag}, replacing what was there.
  void link(const std::string& commit, const std::string& path, const std::string& etag) const;

 private:
  fs::path root_;
  std::string repo_id_;
};

// The relative target huggingface_hub gives a snapshot file's link: "../../blobs/{etag}" for a
// top-level file, one more "../" per folder of `path`.
std::string link_target(const std::string& path, const std::string& etag);

}  // namespace ls::hub
