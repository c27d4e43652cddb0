// A persistent pool of worker threads for data-parallel loops. parallel_for splits [0, n) into
// one contiguous chunk per thread; each index is computed by exactly one thread with the same
// code whatever the thread count, so results are bit-identical for any number of threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ls {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);  // num_threads <= 0: one per hardware thread
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(begin, end) on disjoint chunks covering [0, n); the caller runs chunk 0.
  // `grain` rounds chunk boundaries to a multiple (e.g. a SIMD-friendly row count).
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn,
                    std::size_t grain = 1);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::vector<std::pair<std::size_t, std::size_t>> chunks_;
  std::size_t generation_ = 0;
  int pending_ = 0;
  bool stop_ = false;
};

}  // namespace ls
