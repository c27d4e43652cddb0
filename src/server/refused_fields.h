// Request fields that would change the output but that logitscope does not implement: each is a
// 400 naming it (and what to use instead), never silently ignored. Fields with no effect on the
// text (user, metadata, store, service_tier, cache_prompt...) stay ignored, as unknown ones are.
// A field at its neutral value (mirostat 0, best_of 1, modalities ["text"]) is accepted:
// clients that send every setting at its default keep working.
#pragma once

#include <nlohmann/json.hpp>

namespace ls::server {

// Throws ApiError(400) for the first such field of `body`.
void refuse_unsupported_fields(const nlohmann::json& body, bool chat);

}  // namespace ls::server
