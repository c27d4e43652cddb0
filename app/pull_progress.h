// The progress display of a pull, on stderr. On a terminal: one status line redrawn in place
// (files and bytes done of the total, speed, ETA, and each running file's percentage) with a
// line printed above it as each file finishes. Otherwise (a log, CI): one line per finished
// file and per retry. --quiet: nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "hub/progress.h"

namespace ls::app {

class PullProgress : public hub::ProgressSink {
 public:
  explicit PullProgress(bool quiet);
  ~PullProgress() override;  // clears the status line

  void plan(std::size_t files, std::uint64_t total_bytes) override;
  void file_started(const std::string& path, std::uint64_t size, std::uint64_t already) override;
  void file_bytes(const std::string& path, std::uint64_t n) override;
  void file_done(const hub::FileOutcome& outcome) override;
  void note(const std::string& message) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Running {
    std::uint64_t size = 0, done = 0;
  };
  void redraw(bool force);  // with mutex_ held
  void print_line(const std::string& line);

  bool quiet_, tty_;
  std::mutex mutex_;
  std::size_t files_ = 0, files_done_ = 0;
  std::uint64_t total_ = 0, done_ = 0, received_ = 0;  // received_: bytes of this run only
  Clock::time_point start_ = Clock::now(), last_draw_{};
  std::map<std::string, Running> running_;
  bool drawn_ = false;
};

}  // namespace ls::app
