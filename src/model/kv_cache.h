// KV memory in fixed-size blocks of positions, as vLLM's paged attention keeps it. A
// KvBlockPool hands out blocks with reference counts; a KVCache is one sequence's block table.
// Forking a sequence shares every block (the common prefix is held once); a shared block is
// copied only when a sequence writes into it (its last, partly filled block). Positions past
// max_position_embeddings are an error, checked here and nowhere else.
//
// Block layout: [layer][k|v][kv_head][block_positions][head_dim] elements of F32, F16 or BF16
// (F16/BF16 halve the memory; attention widens them to float32). Each KV head's rows are one
// contiguous run per block: decode attends one head per thread, and with the rows of all heads
// side by side each thread read every other 256 bytes, pulling in lines of the other head's:
// one head's attention from memory took 1.3x as long (bench_matmul BM_attend_group_cold, 1024
// positions in blocks of 16).
#pragma once

#include <cstdint>
#include <vector>

#include "core/dtype.h"
#include "core/huge_page_buffer.h"
#include "kernels/ops.h"
#include "model/config.h"

namespace ls::model {

// Throws unless `type` is a KV cache element type (F32, F16 or BF16).
void check_kv_type(DType type);

class KvBlockPool {
 public:
  static constexpr std::int64_t kDefaultBlockPositions = 16;
  KvBlockPool(const ModelConfig& c, DType type,
              std::int64_t block_positions = kDefaultBlockPositions);
  KvBlockPool(const KvBlockPool&) = delete;
  KvBlockPool& operator=(const KvBlockPool&) = delete;

  DType dtype() const { return dtype_; }
  std::int64_t block_positions() const { return block_positions_; }
  std::int64_t max_positions() const { return max_positions_; }
  std::size_t kv_heads() const { return kv_heads_; }
  std::size_t head_dim() const { return head_dim_; }
  std::size_t head_bytes() const { return head_bytes_; }  // one position of one head's K (or V)
  std::size_t block_bytes() const { return block_bytes_; }
  // Byte offset of KV head `head`'s K (side 0) or V (side 1) rows of layer `layer` in a block.
  std::size_t head_offset(std::size_t layer, int side, std::size_t head) const {
    return ((2 * layer + static_cast<std::size_t>(side)) * kv_heads_ + head) *
           static_cast<std::size_t>(block_positions_) * head_bytes_;
  }

  std::int32_t allocate();  // a block with one reference
  void retain(std::int32_t block);
  void release(std::int32_t block);  // back to the free list at zero references
  std::int32_t refs(std::int32_t block) const { return refs_[static_cast<std::size_t>(block)]; }
  std::uint8_t* data(std::int32_t block) { return blocks_[static_cast<std::size_t>(block)]; }

  std::size_t blocks_in_use() const { return blocks_.size() - free_.size(); }
  std::size_t bytes_in_use() const { return blocks_in_use() * block_bytes_; }
  // Blocks cut from the slabs so far (in use or on the free list, kept for reuse).
  std::size_t bytes_reserved() const { return blocks_.size() * block_bytes_; }

 private:
  DType dtype_;
  std::int64_t block_positions_;
  std::int64_t max_positions_;
  std::size_t layers_;
  std::size_t kv_heads_;
  std::size_t head_dim_;
  std::size_t head_bytes_;
  std::size_t block_bytes_;
  // Blocks are cut from slabs of about 2 MiB (the first few sized to their blocks, later ones
  // whole huge pages; kv_cache.cpp says why): attention reads 16 positions of one head from each
  // block, and on 4 KiB pages each of those runs cost a TLB miss (decode after a 1,024-token
  // prompt, 0.5B Q4_0, 2 threads: median of five alternating runs 70.8 -> 75.0 tok/s; the cold
  // attention bench 8-15% faster).
  std::vector<HugePageBuffer> slabs_;
  std::size_t slab_used_ = 0;          // bytes of the last slab handed out
  std::vector<std::uint8_t*> blocks_;  // block id -> its memory
  std::vector<std::int32_t> refs_;
  std::vector<std::int32_t> free_;
};

class KVCache {
 public:
  explicit KVCache(KvBlockPool& pool) : pool_(&pool) {}
  KVCache(const KVCache&) = delete;
  KVCache& operator=(const KVCache&) = delete;
  KVCache(KVCache&& other) noexcept;
  KVCache& operator=(KVCache&& other) noexcept;
  ~KVCache() { clear(); }

  // A second sequence with the same positions, sharing every block.
  KVCache fork() const;
  // Back to an empty sequence; its blocks go back to the pool.
  void clear();
  // Keeps the first `positions` positions (a shorter prefix); blocks past them go back to the
  // pool. A kept block shared with a fork is copied when this sequence next writes into it.
  void truncate(std::int64_t positions);

  std::int64_t length = 0;  // positions filled

  DType dtype() const { return pool_->dtype(); }
  // Throws unless `positions` positions in total fit the model's context.
  void check_room(std::int64_t positions) const;
  // Makes positions [from, to) writable: blocks allocated up to `to`, and a block shared with
  // another sequence copied before this one writes into it. Checks the context (check_room).
  void prepare_write(std::int64_t from, std::int64_t to);

  // Writes position `pos` of layer `layer`: k and v hold kv_heads * head_dim floats each,
  // converted to the cache's type (the position must be writable: prepare_write).
  void store(std::size_t layer, std::int64_t pos, const float* k, const float* v);
  // The rows of one layer's K (side 0) or V (side 1) for KV head `head`.
  kernels::KvRows rows(std::size_t layer, int side, std::size_t head) const {
    return {block_data_.data(), static_cast<std::size_t>(pool_->block_positions()),
            pool_->head_bytes(), pool_->head_offset(layer, side, head)};
  }

  std::size_t blocks() const { return blocks_.size(); }
  // Bytes of the blocks this sequence holds (a block shared with a fork counts for both).
  std::size_t bytes() const { return blocks_.size() * pool_->block_bytes(); }

 private:
  std::uint8_t* at(std::size_t layer, int side, std::size_t head, std::int64_t pos) {
    const auto bp = pool_->block_positions();
    return block_data_[static_cast<std::size_t>(pos / bp)] + pool_->head_offset(layer, side, head) +
           static_cast<std::size_t>(pos % bp) * pool_->head_bytes();
  }

  KvBlockPool* pool_;
  std::vector<std::int32_t> blocks_;       // block ids, in position order
  std::vector<std::uint8_t*> block_data_;  // their memory
};

}  // namespace ls::model
