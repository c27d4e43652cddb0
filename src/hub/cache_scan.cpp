// Listing the cache (see cache_scan.h).
#include "hub/cache_scan.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "hub/quant_tag.h"

namespace ls::hub {

namespace {

CachedSnapshot scan_snapshot(const fs::path& dir) {
  CachedSnapshot s;
  s.commit = dir.filename().string();
  std::set<std::string> formats;
  std::vector<std::string> ggufs;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_directory(ec)) continue;
    ++s.files;
    if (!fs::exists(it->path(), ec)) ++s.missing;
    const std::string name = it->path().filename().string();
    if (name.ends_with(".safetensors")) formats.insert("safetensors");
    if (name.ends_with(".bin") && name.find("pytorch_model") != std::string::npos)
      formats.insert("pytorch");
    if (!quant_tag_of(name).empty() || name.ends_with(".gguf")) {
      formats.insert("gguf");
      ggufs.push_back(name);
    }
  }
  s.formats.assign(formats.begin(), formats.end());
  if (!ggufs.empty()) s.quant_tags = available_quant_tags(ggufs);
  return s;
}

}  // namespace

std::vector<CachedRepo> scan_cache(const fs::path& root) {
  std::vector<CachedRepo> repos;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string repo = repo_id_from_folder(entry.path().filename().string());
    if (repo.empty() || !entry.is_directory(ec)) continue;
    CachedRepo r{repo, entry.path(), 0, 0, {}};
    for (const auto& blob : fs::directory_iterator(entry.path() / "blobs", ec)) {
      if (blob.path().extension() == ".incomplete")
        ++r.incomplete;
      else if (blob.is_regular_file(ec))
        r.size_on_disk += blob.file_size(ec);
    }
    std::map<std::string, std::vector<std::string>> refs;  // commit -> revisions
    const fs::path refs_dir = entry.path() / "refs";
    for (auto it = fs::recursive_directory_iterator(refs_dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      std::ifstream in(it->path());
      std::string commit;
      std::getline(in, commit);
      refs[commit].push_back(it->path().lexically_relative(refs_dir).string());
    }
    for (const auto& snap : fs::directory_iterator(entry.path() / "snapshots", ec)) {
      CachedSnapshot s = scan_snapshot(snap.path());
      if (refs.count(s.commit)) s.refs = refs[s.commit];
      r.snapshots.push_back(std::move(s));
    }
    std::sort(r.snapshots.begin(), r.snapshots.end(), [](const auto& a, const auto& b) {
      return a.refs.empty() != b.refs.empty() ? !a.refs.empty() : a.commit < b.commit;
    });
    repos.push_back(std::move(r));
  }
  std::sort(repos.begin(), repos.end(),
            [](const auto& a, const auto& b) { return a.repo < b.repo; });
  return repos;
}

}  // namespace ls::hub
