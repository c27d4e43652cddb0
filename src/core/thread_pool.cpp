// Jobs are published with an atomic generation counter so that each worker runs each job
// exactly once. Between jobs a worker spins for a short while before sleeping on a condition
// variable: a decode step issues ~200 parallel loops of tens of microseconds each, and waking a
// sleeping thread costs about as much as one of them.
#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define LS_CPU_RELAX() _mm_pause()
#else
#define LS_CPU_RELAX() std::this_thread::yield()
#endif

namespace ls {

namespace {
constexpr auto kSpinTime = std::chrono::microseconds(200);  // before a worker goes to sleep
// Pieces per thread's share: enough for a fast thread to take over part of a slow one's share,
// few enough that claiming them (an uncontended atomic add each) stays negligible. Piece k has
// weight kPieces - k (8/36 of the share first, 1/36 last): a thread that runs out of work waits
// at most for the other's last, smallest piece, whose size also bounds what equal pieces would
// lose when the threads finish together (decode issues ~150 loops per token, each ending so).
constexpr std::size_t kPieces = 8;
constexpr std::size_t kWeightTotal = kPieces * (kPieces + 1) / 2;

// Where piece k of a share of `len` units starts, in units from the share's start.
std::size_t piece_start(std::size_t len, std::size_t k) {
  const std::size_t weight_before = k * (2 * kPieces + 1 - k) / 2;  // sum of kPieces - i, i < k
  return len * weight_before / kWeightTotal;
}
}  // namespace

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0)
    num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  shares_ = std::make_unique<Share[]>(static_cast<std::size_t>(num_threads));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::size_t n,
                              const std::function<void(std::size_t, std::size_t)>& fn,
                              std::size_t grain) {
  parallel_for(n, fn, grain, 0, {});
}

void ThreadPool::parallel_for(std::size_t n,
                              const std::function<void(std::size_t, std::size_t)>& fn,
                              std::size_t grain, std::size_t units,
                              const std::function<void(std::size_t)>& prologue) {
  if (n == 0 && units == 0) return;
  const std::size_t threads = static_cast<std::size_t>(size());
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t pieces = (n + grain - 1) / grain;  // units of `grain` indices
  if (threads == 1 || (pieces <= 1 && units <= 1)) {
    for (std::size_t u = 0; u < units; ++u) prologue(u);
    if (n > 0) fn(0, n);
    return;
  }
  prologue_ = units > 0 ? &prologue : nullptr;
  prologue_units_ = units;
  prologue_done_.store(0, std::memory_order_relaxed);
  n_ = n;
  grain_ = grain;
  for (std::size_t t = 0; t < threads; ++t) {
    shares_[t].next.store(0, std::memory_order_relaxed);
    shares_[t].begin = pieces * t / threads;
    shares_[t].end = pieces * (t + 1) / threads;
    shares_[t].unit_next.store(0, std::memory_order_relaxed);
    shares_[t].unit_begin = units * t / threads;
    shares_[t].unit_end = units * (t + 1) / threads;
  }
  job_ = &fn;
  pending_.store(static_cast<int>(workers_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1);  // seq_cst: publishes job_ and chunks_; pairs with sleepers_
  if (sleepers_.load() > 0) {
    std::lock_guard lock(mutex_);
    wake_.notify_all();
  }
  run_pieces(0);
  while (pending_.load(std::memory_order_acquire) != 0) LS_CPU_RELAX();
  job_ = nullptr;
  prologue_ = nullptr;
}

void ThreadPool::run_prologue(std::size_t thread) {
  const std::size_t threads = static_cast<std::size_t>(size());
  std::size_t done = 0;
  for (std::size_t k = 0; k < threads; ++k) {
    Share& s = shares_[(thread + k) % threads];
    for (;;) {
      const std::size_t u = s.unit_begin + s.unit_next.fetch_add(1, std::memory_order_relaxed);
      if (u >= s.unit_end) break;
      (*prologue_)(u);
      ++done;
    }
  }
  if (done > 0) prologue_done_.fetch_add(done, std::memory_order_release);
  // Every unit is claimed; the last ones may still be running on the other threads.
  while (prologue_done_.load(std::memory_order_acquire) < prologue_units_) LS_CPU_RELAX();
}

void ThreadPool::run_pieces(std::size_t thread) {
  if (prologue_ != nullptr) run_prologue(thread);
  const std::size_t threads = static_cast<std::size_t>(size());
  for (std::size_t k = 0; k < threads; ++k) {
    Share& s = shares_[(thread + k) % threads];
    const std::size_t len = s.end - s.begin;
    for (;;) {
      const std::size_t p = s.next.fetch_add(1, std::memory_order_relaxed);
      if (p >= kPieces) break;
      const std::size_t b = std::min(n_, (s.begin + piece_start(len, p)) * grain_);
      const std::size_t e = std::min(n_, (s.begin + piece_start(len, p + 1)) * grain_);
      if (b < e) (*job_)(b, e);
    }
  }
}

void ThreadPool::worker_loop(int index) {
  std::uint64_t seen = 0;
  for (;;) {
    // Spin briefly for the next job, then sleep until one is published.
    auto spin_start = std::chrono::steady_clock::now();
    for (int i = 0; generation_.load(std::memory_order_acquire) == seen; ++i) {
      LS_CPU_RELAX();
      if ((i & 255) == 255 && std::chrono::steady_clock::now() - spin_start > kSpinTime) {
        std::unique_lock lock(mutex_);
        sleepers_.fetch_add(1);
        wake_.wait(lock, [&] { return generation_.load() != seen; });
        sleepers_.fetch_sub(1);
        break;
      }
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_) return;
    run_pieces(static_cast<std::size_t>(index));
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

}  // namespace ls
