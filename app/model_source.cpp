// --model values as paths or model ids (see model_source.h).
#include "app/model_source.h"

#include <fmt/format.h>

#include <filesystem>

#include "app/pull_progress.h"
#include "core/error.h"
#include "hub/cache.h"
#include "hub/model_ref.h"
#include "hub/pull.h"

namespace ls::app {

std::string resolve_model_spec(const std::string& spec, const std::string& revision, bool pull,
                               const char* flag, std::string* repo_id) {
  if (repo_id) repo_id->clear();
  std::error_code ec;
  if (spec.empty() || std::filesystem::exists(spec, ec)) return spec;
  const auto id = hub::parse_model_id(spec);
  if (!id)  // neither a path that exists nor an id: say so here, before any loader guesses
    fail(
        "{} '{}': no such file or folder (expected a model directory holding config.json and "
        "*.safetensors, a .gguf file, or a model id such as Qwen/Qwen2.5-0.5B-Instruct)",
        flag, spec);
  const auto root = hub::cache_root_from_env();
  const auto settings = hub::HubSettings::from_env();
  auto path = hub::find_in_cache(*id, revision, root);
  if (!path && pull && !settings.offline) {
    hub::PullRequest rq;
    rq.repo = id->repo;
    rq.revision = revision;
    rq.quant_tag = id->tag;
    rq.one_model = true;
    {
      PullProgress progress(false);
      hub::pull(rq, settings, root, &progress);
    }
    path = hub::find_in_cache(*id, revision, root);
  }
  if (!path)
    fail(
        "{} '{}' is not a file or folder, and the Hugging Face cache ({}) does not hold it at "
        "revision '{}'{}: download it with `{}`, or add --pull to this command",
        flag, spec, root.string(), revision, settings.offline ? " (HF_HUB_OFFLINE is set)" : "",
        hub::pull_command(*id, revision));
  if (repo_id) *repo_id = id->repo;
  return *path;
}

void resolve_model(ModelOptions& o) {
  if (o.resolved) return;
  o.model = resolve_model_spec(o.model, o.revision, o.pull, "--model", &o.model_id);
  o.resolved = true;
}

}  // namespace ls::app
