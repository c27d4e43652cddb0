// How a --model value becomes a path. A path that exists always wins. Otherwise an id,
// "org/name" or "org/name:quant_tag" (docs/models.md, "Model ids"), is looked up in the Hugging Face
// cache at --revision (refs/main by default); with --pull it is pulled first (nothing is
// downloaded without it), and when it is missing the error gives the exact pull command.
#pragma once

#include <string>

#include "app/common.h"

namespace ls::app {

// The model path `spec` names; `flag` names the option in messages, `repo_id` (when given)
// receives the id's repo ("" for a path). Throws ls::Error when an id is not in the cache.
std::string resolve_model_spec(const std::string& spec, const std::string& revision, bool pull,
                               const char* flag, std::string* repo_id = nullptr);

// Rewrites o.model from the value given into the path it names (once; later calls keep it).
void resolve_model(ModelOptions& o);

}  // namespace ls::app
