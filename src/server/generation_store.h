// Kept generations for the logit microscope (docs/server-api.md, "The logit microscope"): each step's raw
// logits, chosen token and draw, so that any step can be re-scored later under other settings
// without running the model. All generations share one byte budget; the least recently used
// is dropped first, and a generation larger than the whole budget keeps its first steps only.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generation_config.h"

namespace ls::server {

class GenerationStore;

// One kept generation. The scheduler appends steps while it runs; readers take a snapshot.
class KeptGeneration {
 public:
  using Row = std::shared_ptr<const std::vector<float>>;  // one step's raw logits [vocab]
  struct Snapshot {
    std::string id;
    std::vector<std::int32_t> prompt;
    decode::GenerationConfig config;  // as the request ran it
    nlohmann::json header;            // the run header (generate --json's), once known
    std::vector<std::int32_t> tokens;
    std::vector<std::optional<double>> draws;
    std::vector<Row> rows;  // the first rows.size() steps (kept_steps)
    bool finished = false;
  };

  KeptGeneration(GenerationStore& store, std::string id, std::vector<std::int32_t> prompt,
                 decode::GenerationConfig config);
  const std::string& id() const { return id_; }
  void set_header(nlohmann::json header);
  // Records one step; its logits are copied when the budget allows.
  void add_step(std::int32_t token, std::optional<double> draw, std::span<const float> raw);
  void finish();
  Snapshot snapshot() const;

 private:
  friend class GenerationStore;
  void drop_rows();  // called by the store, under its lock, when it evicts this generation

  GenerationStore& store_;
  const std::string id_;
  mutable std::mutex mutex_;
  Snapshot data_;
  bool full_ = false;  // the budget refused a row: later steps keep no logits either
};

class GenerationStore {
 public:
  explicit GenerationStore(std::size_t budget_bytes) : budget_(budget_bytes) {}
  std::shared_ptr<KeptGeneration> create(std::vector<std::int32_t> prompt,
                                         decode::GenerationConfig config);
  // The generation (marked recently used), or null once it was dropped or never existed.
  std::shared_ptr<KeptGeneration> find(const std::string& id);
  std::size_t bytes() const;
  std::size_t budget() const { return budget_; }

 private:
  friend class KeptGeneration;
  // Makes room for `bytes` for `owner`, dropping the least recently used others; false when
  // even all of the budget would not hold them.
  bool reserve(const KeptGeneration& owner, std::size_t bytes);
  using Entry = std::list<std::shared_ptr<KeptGeneration>>::iterator;
  void drop(Entry it);  // under mutex_

  // Generations without logits still hold their tokens: their number is bounded too.
  static constexpr std::size_t kMaxGenerations = 4096;

  const std::size_t budget_;
  mutable std::mutex mutex_;
  std::size_t used_ = 0;
  std::uint64_t next_id_ = 1;
  std::list<std::shared_ptr<KeptGeneration>> lru_;  // most recently used first
  std::unordered_map<std::string, Entry> by_id_;
  std::unordered_map<const KeptGeneration*, std::size_t> held_;  // bytes of rows per generation
};

}  // namespace ls::server
