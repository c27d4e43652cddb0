// Kept generations and their shared byte budget (see generation_store.h). Lock order: the
// store's mutex, then a generation's; a generation never takes the store's lock while it holds
// its own.
#include "server/generation_store.h"

#include <fmt/format.h>

namespace ls::server {

KeptGeneration::KeptGeneration(GenerationStore& store, std::string id,
                               std::vector<std::int32_t> prompt, decode::GenerationConfig config)
    : store_(store), id_(std::move(id)) {
  data_.id = id_;
  data_.prompt = std::move(prompt);
  data_.config = std::move(config);
}

void KeptGeneration::set_header(nlohmann::json header) {
  std::lock_guard lock(mutex_);
  data_.header = std::move(header);
}

void KeptGeneration::add_step(std::int32_t token, std::optional<double> draw,
                              std::span<const float> raw) {
  bool keep_row = false;
  {
    std::lock_guard lock(mutex_);
    keep_row = !full_;
  }
  // The copy is made outside every lock; the budget is asked first so nothing is copied for a
  // row that will not be kept.
  keep_row = keep_row && store_.reserve(*this, raw.size_bytes());
  KeptGeneration::Row row;
  if (keep_row) row = std::make_shared<const std::vector<float>>(raw.begin(), raw.end());
  std::lock_guard lock(mutex_);
  data_.tokens.push_back(token);
  data_.draws.push_back(draw);
  if (row && !full_)
    data_.rows.push_back(std::move(row));
  else
    full_ = true;  // rows stay a prefix of the steps
}

void KeptGeneration::finish() {
  std::lock_guard lock(mutex_);
  data_.finished = true;
}

KeptGeneration::Snapshot KeptGeneration::snapshot() const {
  std::lock_guard lock(mutex_);
  return data_;  // rows are shared pointers: no logits are copied
}

void KeptGeneration::drop_rows() {
  std::lock_guard lock(mutex_);
  data_.rows.clear();
  full_ = true;
}

std::shared_ptr<KeptGeneration> GenerationStore::create(std::vector<std::int32_t> prompt,
                                                        decode::GenerationConfig config) {
  std::lock_guard lock(mutex_);
  while (lru_.size() >= kMaxGenerations) drop(std::prev(lru_.end()));
  auto g = std::make_shared<KeptGeneration>(*this, fmt::format("gen-{}", next_id_++),
                                            std::move(prompt), std::move(config));
  lru_.push_front(g);
  by_id_[g->id()] = lru_.begin();
  held_[g.get()] = 0;
  return g;
}

std::shared_ptr<KeptGeneration> GenerationStore::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = by_id_.find(id);
  if (it == by_id_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return *it->second;
}

std::size_t GenerationStore::bytes() const {
  std::lock_guard lock(mutex_);
  return used_;
}

void GenerationStore::drop(Entry it) {
  KeptGeneration& g = **it;
  used_ -= held_[&g];
  held_.erase(&g);
  by_id_.erase(g.id());
  g.drop_rows();
  lru_.erase(it);
}

bool GenerationStore::reserve(const KeptGeneration& owner, std::size_t bytes) {
  std::lock_guard lock(mutex_);
  const auto own = held_.find(&owner);
  if (own == held_.end() || own->second + bytes > budget_) return false;  // dropped, or too big
  // Least recently used first; the owner (still running) is never its own victim.
  while (used_ + bytes > budget_) {
    auto victim = std::prev(lru_.end());
    if (victim->get() == &owner) victim = std::prev(victim);
    drop(victim);
  }
  used_ += bytes;
  own->second += bytes;
  return true;
}

}  // namespace ls::server
