// The stored responses of the Responses API (see response_store.h): a list in order of use and
// an index into it, under one mutex.
#include "server/response_store.h"

#include <utility>

namespace ls::server {

void ResponseStore::put(const std::string& id, StoredResponse r) {
  std::lock_guard lock(mutex_);
  if (const auto it = index_.find(id); it != index_.end()) {
    order_.erase(it->second);
    index_.erase(it);
  }
  order_.emplace_front(id, std::move(r));
  index_[id] = order_.begin();
  while (order_.size() > capacity_) {
    index_.erase(order_.back().first);
    order_.pop_back();
  }
}

std::optional<StoredResponse> ResponseStore::find(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = index_.find(id);
  if (it == index_.end()) return std::nullopt;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->second;
}

bool ResponseStore::erase(const std::string& id) {
  std::lock_guard lock(mutex_);
  const auto it = index_.find(id);
  if (it == index_.end()) return false;
  order_.erase(it->second);
  index_.erase(it);
  return true;
}

std::size_t ResponseStore::size() const {
  std::lock_guard lock(mutex_);
  return order_.size();
}

}  // namespace ls::server
