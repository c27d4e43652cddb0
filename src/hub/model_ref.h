// Model ids in --model: "Qwen/Qwen2.5-0.5B-Instruct" names the cache's snapshot folder of that
// repo at a revision (refs/main unless told), and "Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m" the
// GGUF file that quant tag picks in it (a GGUF repo with one .gguf needs no tag). A local path
// that exists always wins over an id; the app decides that and whether to pull first.
#pragma once

#include <optional>
#include <string>

#include "hub/cache.h"

namespace ls::hub {

struct ModelId {
  std::string repo;  // "Qwen/Qwen2.5-0.5B-Instruct-GGUF"
  std::string tag;   // "q4_k_m", or ""
};

// The id `spec` spells ("org/name" or "org/name:tag"), or nullopt when it is not shaped like one
// (a bare name, "./dir", "/abs/file.gguf" are paths).
std::optional<ModelId> parse_model_id(const std::string& spec);

// The model path the id names in the cache at `revision` (a branch, tag or commit), or nullopt
// when the cache does not hold that revision (or not the tag's GGUF). Throws when the tag is
// ambiguous or a GGUF repo with several files needs one; a split GGUF is its first part.
std::optional<std::string> find_in_cache(const ModelId& id, const std::string& revision,
                                         const fs::path& cache_root);

// "logitscope pull Qwen/X-GGUF:q4_k_m --revision v1": the command that fetches the id.
std::string pull_command(const ModelId& id, const std::string& revision);

}  // namespace ls::hub
