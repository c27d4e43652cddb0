// The forward-pass invariant tests' shared driver (test_forward.cpp, test_moe.cpp): a model's
// logits of one token sequence fed whole, in chunks or a token at a time, and a bit comparison.
#pragma once

#include <cstring>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "engine/session.h"
#include "model/model.h"

namespace ls::test {

// Every position's logits of `tokens` on `threads` threads: fed in one call split into chunks of
// `chunk` tokens, or (incremental) one token per call as decode does.
inline std::vector<float> feed_logits(const model::Model& m, std::span<const std::int32_t> tokens,
                                      int threads, std::int64_t chunk, bool incremental) {
  ThreadPool pool(threads);
  engine::Session s(m, pool, chunk);
  std::vector<float> out;
  if (incremental) {
    for (const std::int32_t& t : tokens) {
      auto l = s.feed(std::span(&t, 1));
      out.insert(out.end(), l.begin(), l.end());
    }
  } else {
    auto l = s.feed(tokens, true);
    out.assign(l.begin(), l.end());
  }
  return out;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
}

}  // namespace ls::test
