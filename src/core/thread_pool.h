// A persistent pool of worker threads for data-parallel loops. parallel_for splits [0, n) into
// one contiguous share per thread, cut into pieces that shrink towards the share's end; a thread
// that finishes its share takes the remaining pieces of another's (a core slowed by other work is
// not waited for, and the last pieces are small, so neither waits long for the other). Each index
// is computed by exactly one thread with the same code whatever the thread count, so results are
// bit-identical for any number of threads. parallel_for does not allocate; it is called from one
// thread at a time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
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

  // The same loop after a first phase: prologue(u) for every u in [0, units), each exactly once
  // (a thread runs its own share of the units, then any of the others' not yet claimed); fn
  // starts on no thread before every unit is done (the prologue writes what fn reads: a matrix
  // product's input, quantized by all the threads instead of by the caller while they wait).
  void parallel_for(std::size_t n, const std::function<void(std::size_t, std::size_t)>& fn,
                    std::size_t grain, std::size_t units,
                    const std::function<void(std::size_t)>& prologue);

 private:
  void worker_loop(int index);
  void run_pieces(std::size_t thread);    // the thread's own pieces, then any left of the others
  void run_prologue(std::size_t thread);  // its own units, any left of the others', then waits

  // Thread t's share, units [begin, end) (a unit is `grain` indices), in kPieces pieces; the next
  // piece is claimed with fetch_add (by its owner, or by a thread that has finished its own).
  // One cache line each.
  struct alignas(64) Share {
    std::atomic<std::size_t> next{0};
    std::size_t begin = 0, end = 0;
    // The prologue's units [unit_begin, unit_end), claimed one at a time from unit_next. Apart
    // from stealing, each thread touches only its own line: a contended atomic costs a round
    // trip between cores (~0.5 us on the EPYC VM), once per unit when the units were one queue.
    std::atomic<std::size_t> unit_next{0};
    std::size_t unit_begin = 0, unit_end = 0;
  };

  std::vector<std::thread> workers_;
  std::mutex mutex_;  // guards sleeping and waking only
  std::condition_variable wake_;
  const std::function<void(std::size_t, std::size_t)>* job_ = nullptr;
  std::unique_ptr<Share[]> shares_;           // one per thread
  std::size_t n_ = 0, grain_ = 1;             // the current job's split
  std::atomic<std::uint64_t> generation_{0};  // bumped once per job (and at shutdown)
  std::atomic<int> pending_{0};               // workers still running the current job
  std::atomic<int> sleepers_{0};              // workers asleep on wake_
  const std::function<void(std::size_t)>* prologue_ = nullptr;
  std::size_t prologue_units_ = 0;
  alignas(64) std::atomic<std::size_t> prologue_done_{0};  // units finished
  bool stop_ = false;
};

}  // namespace ls
