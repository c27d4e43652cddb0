// Sequences, forks and the batched step (see engine.h).
#include "engine/engine.h"

#include "core/error.h"

namespace ls::engine {

Engine::Engine(const model::Model& model, ThreadPool& pool, EngineOptions options)
    : model_(model),
      pool_(pool),
      kv_(model.config(), model.kv_type(), options.kv_block_positions),
      acts_(model.config(), options.max_chunk_tokens) {}

std::int32_t Engine::vocab_size() const {
  return static_cast<std::int32_t>(model_.config().vocab_size);
}

std::int32_t Engine::context_limit() const {
  return static_cast<std::int32_t>(model_.config().max_position_embeddings);
}

std::vector<std::span<const float>> Engine::step(std::span<const decode::Feed> feeds) {
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  std::size_t rows = 0;
  for (std::size_t i = 0; i < feeds.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j)
      if (feeds[j].seq == feeds[i].seq)
        fail("engine step: sequence {} is fed twice in one step", feeds[i].seq);
    rows += feeds[i].all_positions ? feeds[i].tokens.size() : 1;
  }
  if (logits_.size() < rows * V) logits_.resize(rows * V);
  // The router's choice, only for feeds that ask and only in a mixture of experts.
  const auto per_seq = static_cast<std::size_t>(model_.config().num_hidden_layers) *
                       static_cast<std::size_t>(experts_per_token());
  route_seqs_.clear();
  if (per_seq > 0) {
    std::size_t asking = 0;
    for (const auto& f : feeds) asking += f.expert_routes ? 1 : 0;
    if (routes_.size() < asking * per_seq) routes_.resize(asking * per_seq);
  }
  batch_.clear();
  std::vector<std::span<const float>> out;
  std::size_t row = 0;
  for (const auto& f : feeds) {
    auto it = seqs_.find(f.seq);
    if (it == seqs_.end()) it = seqs_.emplace(f.seq, model::KVCache(kv_)).first;
    const std::size_t n = f.all_positions ? f.tokens.size() : 1;
    const std::span<float> dst(&logits_[row * V], n * V);
    batch_.push_back({&it->second, f.tokens, f.all_positions, dst});
    if (per_seq > 0 && f.expert_routes) {
      const std::size_t at = route_seqs_.size() * per_seq;
      batch_.back().expert_routes = {&routes_[at], per_seq};
      route_seqs_.emplace_back(f.seq, at);
    }
    out.emplace_back(dst);
    row += n;
  }
  model_.forward(batch_, acts_, pool_);
  if (!route_seqs_.empty()) {
    choices_.resize(route_seqs_.size() * per_seq);
    for (std::size_t i = 0; i < choices_.size(); ++i)
      choices_[i] = {routes_[i].expert, routes_[i].weight};
  }
  return out;
}

std::span<const decode::ExpertChoice> Engine::expert_routes(int seq) const {
  const auto per_seq = static_cast<std::size_t>(model_.config().num_hidden_layers) *
                       static_cast<std::size_t>(experts_per_token());
  for (const auto& [s, at] : route_seqs_)
    if (s == seq && at + per_seq <= choices_.size()) return {&choices_[at], per_seq};
  return {};
}

int Engine::experts_per_token() const {
  return static_cast<int>(model_.config().moe.experts_per_token);
}

void Engine::fork(int from_seq, int to_seq) {
  if (from_seq == to_seq) return;
  const auto it = seqs_.find(from_seq);
  model::KVCache copy = it == seqs_.end() ? model::KVCache(kv_) : it->second.fork();
  seqs_.insert_or_assign(to_seq, std::move(copy));
}

void Engine::parallel(std::size_t n, const std::function<void(std::size_t)>& fn) {
  pool_.parallel_for(n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) fn(i);
  });
}

void Engine::release(int seq) {
  seqs_.erase(seq);
}

void Engine::truncate(int seq, std::int64_t positions) {
  const auto it = seqs_.find(seq);
  if (it != seqs_.end()) it->second.truncate(positions);
}

std::int64_t Engine::length(int seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.length;
}

std::size_t Engine::blocks(int seq) const {
  const auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.blocks();
}

KvUsage Engine::kv_usage() const {
  return {kv_.blocks_in_use(), kv_.bytes_in_use(), kv_.bytes_reserved(), kv_.block_bytes(),
          seqs_.size()};
}

}  // namespace ls::engine
