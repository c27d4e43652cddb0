// `logitscope models`: what the Hugging Face cache holds: each model repo with its revisions
// (refs) and commits, size on disk, formats (safetensors, gguf with its quant tags) and files,
// plus interrupted downloads waiting to be resumed; --json for scripts.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "hub/cache_scan.h"
#include "hub/download.h"

namespace ls::app {

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

}  // namespace

void add_models_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand(
      "models", "List the models in the Hugging Face cache (usable as --model ORG/NAME)");
  cmd->add_flag("--json", *json, "One JSON object per repo");
  cmd->callback([json] {
    const auto root = hub::cache_root_from_env();
    const auto repos = hub::scan_cache(root);
    if (*json) {
      for (const auto& r : repos) {
        nlohmann::ordered_json j;
        j["repo"] = r.repo;
        j["path"] = r.dir.string();
        j["size_on_disk"] = r.size_on_disk;
        j["incomplete"] = r.incomplete;
        j["snapshots"] = nlohmann::ordered_json::array();
        for (const auto& s : r.snapshots)
          j["snapshots"].push_back({{"commit", s.commit},
                                    {"refs", s.refs},
                                    {"files", s.files},
                                    {"missing", s.missing},
                                    {"formats", s.formats},
                                    {"quant_tags", s.quant_tags}});
        fmt::print("{}\n", j.dump());
      }
      return;
    }
    fmt::print("cache {}\n", root.string());
    if (repos.empty()) {
      fmt::print("no models (logitscope pull ORG/NAME downloads one)\n");
      return;
    }
    fmt::print("{:<44} {:<10} {:<12} {:>10} {:>5}  {}\n", "REPO", "REVISION", "COMMIT", "SIZE",
               "FILES", "FORMATS");
    for (const auto& r : repos) {
      bool first = true;
      for (const auto& s : r.snapshots) {
        std::string formats = joined(s.formats);
        if (!s.quant_tags.empty()) formats += " (" + s.quant_tags + ")";
        if (s.missing) formats += fmt::format(" [{} missing]", s.missing);
        fmt::print("{:<44} {:<10} {:<12} {:>10} {:>5}  {}\n", first ? r.repo : "",
                   s.refs.empty() ? "-" : joined(s.refs), s.commit.substr(0, 12),
                   first ? hub::human_bytes(r.size_on_disk) : "", s.files, formats);
        first = false;
      }
      if (r.snapshots.empty())
        fmt::print("{:<44} {:<10} {:<12} {:>10} {:>5}  {}\n", r.repo, "-", "-",
                   hub::human_bytes(r.size_on_disk), 0, "(no snapshot)");
      if (r.incomplete)
        fmt::print("{:<44} {} interrupted download{} (the next pull resumes {})\n", "",
                   r.incomplete, r.incomplete == 1 ? "" : "s", r.incomplete == 1 ? "it" : "them");
    }
  });
}

}  // namespace ls::app
