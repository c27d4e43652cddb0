// Cache-line (64-byte) aligned buffers for what the kernels stream: AlignedVector for the
// activations and AlignedBytes for KV cache blocks. glibc's malloc aligns large blocks to 16
// bytes only, so every 64-byte vector load of a std::vector<float> row straddles two cache lines
// (measured: the float matmul tiles lose 5-12% to that on AVX-512).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
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

// An uninitialised, cache-line aligned byte buffer with one owner (KV cache blocks).
struct AlignedDelete {
  void operator()(std::uint8_t* p) const noexcept {
    ::operator delete (p, std::align_val_t{kCacheLine});
  }
};
using AlignedBytes = std::unique_ptr<std::uint8_t[], AlignedDelete>;
inline AlignedBytes make_aligned_bytes(std::size_t n) {
  return AlignedBytes(static_cast<std::uint8_t*>(::operator new (n, std::align_val_t{kCacheLine})));
}

}  // namespace ls
