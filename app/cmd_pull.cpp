// `logitscope pull REPO_ID[:QUANT_TAG]`: download a model repository into the Hugging Face
// cache exactly as huggingface_hub lays it out (src/hub/pull.h), then print the local path
// that --model can also be given (the snapshot folder, or the GGUF file a quant tag picks).
#include <fmt/format.h>

#include <chrono>
#include <memory>

#include "app/commands.h"
#include "app/pull_progress.h"
#include "core/error.h"
#include "hub/download.h"
#include "hub/model_ref.h"
#include "hub/pull.h"

namespace ls::app {

void add_pull_command(CLI::App& app) {
  struct Opts {
    std::string id;
    hub::PullRequest rq;
    bool quiet = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "pull",
      "Download a model from the Hugging Face Hub into its cache (HF_HUB_CACHE, HF_HOME/hub or "
      "~/.cache/huggingface/hub), laid out as huggingface_hub does, so transformers shares it");
  cmd->add_option("repo_id", o->id,
                  "org/name, or org/name:QUANT_TAG for one GGUF of a GGUF repo (q4_k_m)")
      ->required();
  cmd->add_option("--revision", o->rq.revision, "Branch, tag or commit")->capture_default_str();
  // One glob per flag (repeat the flag), so `pull --include '*.json' ORG/NAME` keeps the id.
  cmd->add_option("--include", o->rq.include,
                  "Only files matching this glob (fnmatch: '*' crosses '/'); repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--exclude", o->rq.exclude, "Skip files matching this glob; repeatable")
      ->allow_extra_args(false);
  cmd->add_option("--jobs", o->rq.jobs, "Files downloaded at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_flag("-q,--quiet", o->quiet, "No progress on stderr (the path is still printed)");
  cmd->footer(
      "Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (gated or private "
      "repos), HF_HUB_CACHE / HF_HOME, HF_HUB_OFFLINE=1 (no network: only finds the cache's "
      "copy), HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds without data, default "
      "10).");
  cmd->callback([o] {
    std::string repo = o->id;
    const auto colon = repo.find(':');
    if (colon != std::string::npos) {
      o->rq.quant_tag = repo.substr(colon + 1);
      repo.resize(colon);
      if (o->rq.quant_tag.empty()) fail("'{}': the quant tag after ':' is empty", o->id);
    }
    o->rq.repo = repo;
    const auto root = hub::cache_root_from_env();
    const auto settings = hub::HubSettings::from_env();
    const auto t0 = std::chrono::steady_clock::now();
    hub::PullResult r;
    {
      PullProgress progress(o->quiet);
      r = hub::pull(o->rq, settings, root, &progress);
    }
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::size_t reused = 0;
    std::uint64_t bytes = 0, fetched = 0;
    for (const auto& f : r.files) {
      reused += f.reused ? 1 : 0;
      bytes += f.size;
      fetched += f.downloaded;
    }
    if (!o->quiet)
      fmt::print(stderr,
                 "{} {} at {} (commit {}): {} file{}, {}; {} downloaded in {:.1f} s, {} "
                 "already in the cache\n",
                 r.offline ? "found (HF_HUB_OFFLINE)" : "pulled", repo, o->rq.revision,
                 r.commit.substr(0, 12), r.files.size(), r.files.size() == 1 ? "" : "s",
                 hub::human_bytes(bytes), hub::human_bytes(fetched), secs, reused);
    // stdout: the path, so that `$(logitscope pull ...)` is a --model value.
    std::string path = r.snapshot.string();
    if (!o->rq.quant_tag.empty()) {
      const auto found = hub::find_in_cache({repo, o->rq.quant_tag}, r.commit, root);
      if (found) path = *found;
    }
    fmt::print("{}\n", path);
  });
}

}  // namespace ls::app
