// Workers sleep on a condition variable between jobs; a job is published with a generation
// counter so that each worker runs each job exactly once.
#include "core/thread_pool.h"

#include <algorithm>

namespace ls {

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0)
    num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::size_t n,
                              const std::function<void(std::size_t, std::size_t)>& fn,
                              std::size_t grain) {
  if (n == 0) return;
  const std::size_t threads = static_cast<std::size_t>(size());
  grain = std::max<std::size_t>(grain, 1);
  const std::size_t units = (n + grain - 1) / grain;
  if (threads == 1 || units == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::pair<std::size_t, std::size_t>> chunks(threads);
  for (std::size_t t = 0; t < threads; ++t) {
    const std::size_t b = std::min(n, units * t / threads * grain);
    const std::size_t e = std::min(n, units * (t + 1) / threads * grain);
    chunks[t] = {b, e};
  }
  {
    std::lock_guard lock(mutex_);
    chunks_ = std::move(chunks);
    job_ = &fn;
    pending_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  if (chunks_[0].first < chunks_[0].second) fn(chunks_[0].first, chunks_[0].second);
  std::unique_lock lock(mutex_);
  done_.wait(lock, [this] { return pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int index) {
  std::size_t seen = 0;
  for (;;) {
    std::pair<std::size_t, std::size_t> chunk;
    const std::function<void(std::size_t, std::size_t)>* job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      chunk = chunks_[static_cast<std::size_t>(index)];
      job = job_;
    }
    if (chunk.first < chunk.second) (*job)(chunk.first, chunk.second);
    {
      std::lock_guard lock(mutex_);
      if (--pending_ == 0) done_.notify_one();
    }
  }
}

}  // namespace ls
