// One sequence decoded alone (see session.h).
#include "engine/session.h"

namespace ls::engine {

Session::Session(const model::Model& model, ThreadPool& pool, std::int64_t max_chunk,
                 std::optional<DType> kv_type)
    : model_(model),
      pool_(pool),
      blocks_(model.config(), kv_type.value_or(model.kv_type())),
      cache_(blocks_),
      acts_(model.config(), max_chunk) {}

std::span<const float> Session::feed(std::span<const std::int32_t> tokens, bool all_positions,
                                     std::span<float> residuals) {
  const auto V = static_cast<std::size_t>(model_.config().vocab_size);
  const std::size_t rows = all_positions ? tokens.size() : 1;
  if (logits_.size() < rows * V) logits_.resize(rows * V);
  const model::SequenceInput in{
      &cache_, tokens, all_positions, {logits_.data(), rows * V}, residuals};
  model_.forward({&in, 1}, acts_, pool_);
  return {logits_.data(), rows * V};
}

}  // namespace ls::engine
