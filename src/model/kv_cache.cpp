// The block pool and the per-sequence block tables (see kv_cache.h).
#include "model/kv_cache.h"

#include <algorithm>

#include <cstring>

#include "core/error.h"

namespace ls::model {

namespace {
constexpr std::size_t kSlabBytes = std::size_t{2} << 20;  // one huge page
constexpr std::size_t kExactSlabs = 4;                    // slabs sized to their blocks first
}  // namespace

void check_kv_type(DType type) {
  if (type != DType::F32 && type != DType::F16 && type != DType::BF16)
    fail("KV cache type must be F32, F16 or BF16, got {}", dtype_name(type));
}

KvBlockPool::KvBlockPool(const ModelConfig& c, DType type, std::int64_t block_positions)
    : dtype_(type),
      block_positions_(block_positions),
      max_positions_(c.max_position_embeddings),
      layers_(static_cast<std::size_t>(c.num_hidden_layers)),
      kv_heads_(static_cast<std::size_t>(c.num_key_value_heads)),
      head_dim_(static_cast<std::size_t>(c.head_dim)),
      head_bytes_(head_dim_ * dtype_size(type)),
      block_bytes_(2 * layers_ * kv_heads_ * static_cast<std::size_t>(block_positions) *
                   head_bytes_) {
  check_kv_type(type);
  if (block_positions < 1) fail("KV blocks must hold at least 1 position, got {}", block_positions);
}

std::int32_t KvBlockPool::allocate() {
  std::int32_t b = 0;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    b = static_cast<std::int32_t>(blocks_.size());
    // Not zeroed: a position is always written before attention reads it.
    if (slabs_.empty() || slab_used_ + block_bytes_ > slabs_.back().size()) {
      // The first slabs hold just their blocks (1.9 MiB for the 0.5B shape): they end inside
      // a huge page, so the kernel backs them with 4 KiB pages, and a short sequence's cache
      // costs no more resident memory than its blocks (0.5B Q4_0, 192 positions: peak RSS
      // 1.099x weights + KV, 1.104x in whole huge pages). Later slabs are whole huge pages,
      // which the blocks fill as they can: on a KVM guest each first write of a 4 KiB page
      // cost ~10 us (decode spent ~1.2 ms of every 16th token faulting in a new block), one
      // 2 MiB fault ~120 us.
      const std::size_t bytes =
          slabs_.size() < kExactSlabs
              ? std::max<std::size_t>(1, kSlabBytes / block_bytes_) * block_bytes_
              : (std::max(kSlabBytes, block_bytes_) + kSlabBytes - 1) / kSlabBytes * kSlabBytes;
      slabs_.emplace_back(bytes);
      slab_used_ = 0;
    }
    // The block's pages backed now, in one call rather than one fault per 4 KiB page in the
    // forward pass that first writes them (a 128-token prompt at the 0.5B shape: 8 blocks,
    // ~770 pages).
    slabs_.back().populate(slab_used_, block_bytes_);
    blocks_.push_back(slabs_.back().data() + slab_used_);
    slab_used_ += block_bytes_;
    refs_.push_back(0);
  }
  refs_[static_cast<std::size_t>(b)] = 1;
  return b;
}

void KvBlockPool::retain(std::int32_t block) {
  ++refs_[static_cast<std::size_t>(block)];
}

void KvBlockPool::release(std::int32_t block) {
  if (--refs_[static_cast<std::size_t>(block)] == 0) free_.push_back(block);
}

void KVCache::store(std::size_t layer, std::int64_t pos, const float* k, const float* v) {
  const std::size_t hd = pool_->head_dim();
  for (std::size_t h = 0; h < pool_->kv_heads(); ++h) {
    kernels::store_row(k + h * hd, hd, dtype(), at(layer, 0, h, pos));
    kernels::store_row(v + h * hd, hd, dtype(), at(layer, 1, h, pos));
  }
}

KVCache::KVCache(KVCache&& other) noexcept
    : length(other.length),
      pool_(other.pool_),
      blocks_(std::move(other.blocks_)),
      block_data_(std::move(other.block_data_)) {
  other.blocks_.clear();
  other.block_data_.clear();
  other.length = 0;
}

KVCache& KVCache::operator=(KVCache&& other) noexcept {
  if (this != &other) {
    clear();
    pool_ = other.pool_;
    length = other.length;
    blocks_ = std::move(other.blocks_);
    block_data_ = std::move(other.block_data_);
    other.blocks_.clear();
    other.block_data_.clear();
    other.length = 0;
  }
  return *this;
}

KVCache KVCache::fork() const {
  KVCache copy(*pool_);
  copy.length = length;
  copy.blocks_ = blocks_;
  copy.block_data_ = block_data_;
  for (std::int32_t b : blocks_) pool_->retain(b);
  return copy;
}

void KVCache::clear() {
  for (std::int32_t b : blocks_) pool_->release(b);
  blocks_.clear();
  block_data_.clear();
  length = 0;
}

void KVCache::truncate(std::int64_t positions) {
  if (positions >= length) return;
  const std::int64_t bp = pool_->block_positions();
  const auto keep = static_cast<std::size_t>((std::max<std::int64_t>(positions, 0) + bp - 1) / bp);
  while (blocks_.size() > keep) {
    pool_->release(blocks_.back());
    blocks_.pop_back();
    block_data_.pop_back();
  }
  length = std::max<std::int64_t>(positions, 0);
}

void KVCache::check_room(std::int64_t positions) const {
  if (positions > pool_->max_positions())
    fail("context of {} tokens exceeds the model's max_position_embeddings {}", positions,
         pool_->max_positions());
}

void KVCache::prepare_write(std::int64_t from, std::int64_t to) {
  check_room(to);
  const std::int64_t bp = pool_->block_positions();
  const auto need = static_cast<std::size_t>((to + bp - 1) / bp);
  while (blocks_.size() < need) {
    blocks_.push_back(pool_->allocate());
    block_data_.push_back(pool_->data(blocks_.back()));
  }
  // Blocks shared with a fork (the one holding the last common positions, or blocks of a fork
  // that has not written past them yet) are copied before this sequence writes into them.
  for (auto i = static_cast<std::size_t>(from / bp); i < need; ++i) {
    if (pool_->refs(blocks_[i]) == 1) continue;
    const std::int32_t copy = pool_->allocate();
    std::memcpy(pool_->data(copy), block_data_[i], pool_->block_bytes());
    pool_->release(blocks_[i]);
    blocks_[i] = copy;
    block_data_[i] = pool_->data(copy);
  }
}

}  // namespace ls::model
