// The Responses API's stored responses (POST /v1/responses with store true, the default): each
// finished Response object with the conversation that led to it, as chat messages, so a later
// request's previous_response_id continues it and GET /v1/responses/{id} returns it. Held in
// memory, the least recently used dropped beyond a fixed count; safe to use from many threads.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace ls::server {

struct StoredResponse {
  nlohmann::json response;          // the Response object as it was answered
  nlohmann::ordered_json messages;  // chat messages: earlier turns, the input, then the output
};

class ResponseStore {
 public:
  explicit ResponseStore(std::size_t capacity = 256) : capacity_(capacity) {}

  void put(const std::string& id, StoredResponse r);
  // A copy (a stored response may be dropped by another thread meanwhile); a hit counts as a use.
  std::optional<StoredResponse> find(const std::string& id);
  bool erase(const std::string& id);
  std::size_t size() const;
  std::size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<std::string, StoredResponse>;
  std::size_t capacity_;
  mutable std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace ls::server
