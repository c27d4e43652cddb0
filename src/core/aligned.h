// Cache-line (64-byte) aligned vectors for what the kernels stream (the activations; KV cache
// blocks come from huge-page slabs, model/kv_cache.h). glibc's malloc aligns large blocks to 16
// bytes only, so every 64-byte vector load of a std::vector<float> row straddles two cache lines
// (measured: the float matmul tiles lose 5-12% to that on AVX-512).
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace ls {

inline constexpr std::size_t kCacheLine = 64;

template <typename T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}  // NOLINT: rebinding is implicit
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLine}));
  }
  void deallocate(T* p, std::size_t) noexcept {
    ::operator delete (p, std::align_val_t{kCacheLine});
  }
  template <typename U>
  bool operator==(const AlignedAllocator<U>&) const noexcept {
    return true;
  }
};

template <typename T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;

}  // namespace ls
