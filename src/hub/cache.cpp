// Paths, refs and links of the Hugging Face cache (see cache.h).
#include "hub/cache.h"

#include <cstdlib>
#include <fstream>

#include "core/error.h"
#include "core/output_file.h"

namespace ls::hub {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

fs::path expand_user(const std::string& p) {
  if (p.rfind("~/", 0) == 0 || p == "~") return fs::path(env("HOME")) / p.substr(p == "~" ? 1 : 2);
  return p;
}

}  // namespace

fs::path hf_home_from_env() {
  if (!env("HF_HOME").empty()) return expand_user(env("HF_HOME"));
  const std::string xdg = env("XDG_CACHE_HOME");
  return (xdg.empty() ? expand_user("~/.cache") : expand_user(xdg)) / "huggingface";
}

fs::path cache_root_from_env() {
  if (!env("HF_HUB_CACHE").empty()) return expand_user(env("HF_HUB_CACHE"));
  return hf_home_from_env() / "hub";
}

std::string repo_folder_name(const std::string& repo_id) {
  std::string out = "models--";
  for (char c : repo_id) out += c == '/' ? std::string("--") : std::string(1, c);
  return out;
}

std::string repo_id_from_folder(const std::string& folder) {
  const std::string prefix = "models--";
  if (folder.rfind(prefix, 0) != 0 || folder.size() == prefix.size()) return "";
  std::string rest = folder.substr(prefix.size()), out;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest.compare(i, 2, "--") == 0) {
      out += '/';
      ++i;
    } else {
      out += rest[i];
    }
  }
  return out;
}

bool is_commit_hash(const std::string& s) {
  if (s.size() != 40) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string link_target(const std::string& path, const std::string& etag) {
  std::string up = "../../";
  for (char c : path)
    if (c == '/') up += "../";
  return up + "blobs/" + etag;
}

RepoCache::RepoCache(fs::path root, std::string repo_id)
    : root_(std::move(root)), repo_id_(std::move(repo_id)) {}

fs::path RepoCache::incomplete(const std::string& etag) const {
  return dir() / "blobs" / (etag + ".incomplete");
}

fs::path RepoCache::lock(const std::string& etag) const {
  return root_ / ".locks" / repo_folder_name(repo_id_) / (etag + ".lock");
}

std::optional<std::string> RepoCache::commit_for(const std::string& revision) const {
  std::error_code ec;
  if (is_commit_hash(revision) && fs::is_directory(snapshot(revision), ec)) return revision;
  const fs::path ref = dir() / "refs" / revision;
  if (!fs::is_regular_file(ref, ec)) return std::nullopt;
  std::ifstream in(ref);
  std::string commit;
  std::getline(in, commit);
  if (!is_commit_hash(commit))
    fail("{}: expected a 40-digit commit hash, found '{}'", ref.string(), commit);
  return commit;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  const fs::path ref = dir() / "refs" / revision;
  fs::create_directories(ref.parent_path());
  OutputFile out(ref.string(), "refs/" + revision);  // whole or not at all: refs/X.partial, renamed
  out.stream() << commit;  // no newline: huggingface_hub writes exactly the hash
  out.commit();
}

void RepoCache::link(const std::string& commit, const std::string& path,
                     const std::string& etag) const {
  const fs::path pointer = snapshot(commit) / path;
  fs::create_directories(pointer.parent_path());
  std::error_code ec;
  fs::remove(pointer, ec);
  fs::create_symlink(link_target(path, etag), pointer);
}

}  // namespace ls::hub
