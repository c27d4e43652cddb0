// Model ids resolved in the cache (see model_ref.h).
#include "hub/model_ref.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <vector>

#include "core/error.h"
#include "hub/pull.h"
#include "hub/quant_tag.h"

namespace ls::hub {

std::optional<ModelId> parse_model_id(const std::string& spec) {
  ModelId id;
  const auto colon = spec.find(':');
  id.repo = spec.substr(0, colon);
  if (colon != std::string::npos) {
    id.tag = spec.substr(colon + 1);
    if (id.tag.empty() || id.tag.find_first_of(":/") != std::string::npos) return std::nullopt;
  }
  if (id.repo.find('/') == std::string::npos || !is_repo_id(id.repo)) return std::nullopt;
  return id;
}

std::string pull_command(const ModelId& id, const std::string& revision) {
  return fmt::format("logitscope pull {}{}{}", id.repo, id.tag.empty() ? "" : ":" + id.tag,
                     revision == "main" ? "" : " --revision " + revision);
}

std::optional<std::string> find_in_cache(const ModelId& id, const std::string& revision,
                                         const fs::path& cache_root) {
  const RepoCache cache(cache_root, id.repo);
  const auto commit = cache.commit_for(revision);
  if (!commit) return std::nullopt;
  const fs::path snapshot = cache.snapshot(*commit);
  std::error_code ec;
  std::vector<std::string> ggufs;
  for (auto it = fs::recursive_directory_iterator(snapshot, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::string rel = it->path().lexically_relative(snapshot).string(), lower = rel;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower.ends_with(".gguf")) ggufs.push_back(rel);
  }
  std::sort(ggufs.begin(), ggufs.end());
  const bool hf_dir = fs::exists(snapshot / "config.json", ec);
  if (id.tag.empty()) {
    if (hf_dir || ggufs.empty()) return snapshot.string();
    if (ggufs.size() > 1)
      fail(
          "{} holds {} GGUF files: pick one by its quant tag, e.g. --model {}:{} (tags in the "
          "cache: {})",
          id.repo, ggufs.size(), id.repo, quant_tag_of(ggufs.front()), available_quant_tags(ggufs));
  }
  // Another quant of the repo than the one pulled: not in the cache, so `pull` is the answer.
  if (!id.tag.empty() && std::none_of(ggufs.begin(), ggufs.end(), [&](const std::string& g) {
        return matches_quant_tag(g, id.tag);
      }))
    return std::nullopt;
  const std::vector<std::string> picked =
      id.tag.empty() ? ggufs : pick_gguf(ggufs, id.tag, id.repo + " (in the cache)");
  // A split GGUF is named by its first part (-00001-of-0000N), which opens every part.
  return (snapshot / picked.front()).string();
}

}  // namespace ls::hub
