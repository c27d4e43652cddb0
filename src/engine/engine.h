// The batched engine over one model: sequences that own their KV state (paged blocks from one
// pool, shared between forks), and step(), which runs any mix of sequences — a prompt chunk
// for one, one token for another — through one ragged forward pass. Every sequence's logits are
// bit-identical to running it alone (the forward pass computes each row the same way whatever
// the batch). It is the decoding loop's LogitsSource, and what the server's scheduler calls.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "core/thread_pool.h"
#include "decode/logits_source.h"
#include "model/kv_cache.h"
#include "model/model.h"

namespace ls::engine {

struct EngineOptions {
  // Tokens per forward chunk (bounds prefill scratch: about 58 KiB a token at the 0.5B shape).
  // 128, not 64: BF16 prefill 1.1-1.2x, Q8_0 1.05-1.2x on a Zen 5 (weights read once per
  // chunk, fewer ragged tiles); the 3.7 MiB more scratch keeps a 0.5B Q4_0 file within 1.10x
  // of its weights in peak RSS.
  std::int64_t max_chunk_tokens = 128;
  std::int64_t kv_block_positions = model::KvBlockPool::kDefaultBlockPositions;
};

// KV memory: blocks in use (each held once, however many sequences share it) and the bytes
// each sequence's table would take unshared.
struct KvUsage {
  std::size_t blocks_in_use = 0;
  std::size_t bytes_in_use = 0;
  std::size_t bytes_reserved = 0;  // in use + kept on the free list
  std::size_t block_bytes = 0;
  std::size_t sequences = 0;
};

class Engine final : public decode::LogitsSource {
 public:
  Engine(const model::Model& model, ThreadPool& pool, EngineOptions options = {});

  std::int32_t vocab_size() const override;
  std::int32_t context_limit() const override;
  // One forward pass over every feed (see decode::LogitsSource). Throws before any sequence
  // changes on a bad token id, a context past the model's limit or a sequence fed twice.
  std::vector<std::span<const float>> step(std::span<const decode::Feed> feeds) override;
  void fork(int from_seq, int to_seq) override;
  void release(int seq) override;
  // The router's choice for the last token of `seq`'s feed in the latest step, when the feed
  // asked (Feed::expert_routes) and the model is a mixture of experts (see LogitsSource).
  std::span<const decode::ExpertChoice> expert_routes(int seq) const override;
  int experts_per_token() const override;
  // Over the engine's thread pool (the step's token choices).
  void parallel(std::size_t n, const std::function<void(std::size_t)>& fn) override;
  // Keeps only the first `positions` positions of `seq` (a prompt prefix copied from another
  // sequence by fork, cut to what two prompts share).
  void truncate(int seq, std::int64_t positions);

  std::int64_t length(int seq) const;  // positions the sequence holds (0 if unknown)
  std::size_t blocks(int seq) const;   // KV blocks in its table (0 if unknown)
  KvUsage kv_usage() const;
  const model::Model& model() const { return model_; }

 private:
  const model::Model& model_;
  ThreadPool& pool_;
  model::KvBlockPool kv_;
  model::Activations acts_;
  std::map<int, model::KVCache> seqs_;
  std::vector<float> logits_;
  std::vector<model::SequenceInput> batch_;
  // The latest step's routes ([layers, experts_per_token] per feed that asked) and their owners.
  std::vector<model::ExpertRoute> routes_;
  std::vector<decode::ExpertChoice> choices_;
  std::vector<std::pair<int, std::size_t>> route_seqs_;  // (seq, offset in choices_)
};

}  // namespace ls::engine
