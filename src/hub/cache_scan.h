// What the cache holds, for `logitscope models`: each model repo with its refs, snapshots,
// size on disk (its blobs, counted once however many snapshots link them), formats and the
// quant tags of its GGUF files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hub/cache.h"

namespace ls::hub {

struct CachedSnapshot {
  std::string commit;
  std::vector<std::string> refs;  // the revisions that name it ("main")
  std::size_t files = 0;
  std::size_t missing = 0;           // links whose blob is gone
  std::vector<std::string> formats;  // "safetensors", "gguf", "pytorch"
  std::string quant_tags;            // "q4_k_m, q8_0" (GGUF only)
};

struct CachedRepo {
  std::string repo;
  fs::path dir;
  std::uint64_t size_on_disk = 0;         // bytes of blobs/, .incomplete files excluded
  std::size_t incomplete = 0;             // interrupted downloads waiting to be resumed
  std::vector<CachedSnapshot> snapshots;  // those named by a ref first, then by commit
};

// Every models--* folder of `root`, sorted by repo id; an absent root is an empty list.
std::vector<CachedRepo> scan_cache(const fs::path& root);

}  // namespace ls::hub
