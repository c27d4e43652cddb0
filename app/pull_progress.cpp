// The pull progress display (see pull_progress.h).
#include "app/pull_progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>

#include "hub/download.h"

namespace ls::app {

namespace {

std::string clock_text(double seconds) {
  const auto s = static_cast<long>(seconds);
  return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                   : fmt::format("{}:{:02}", s / 60, s % 60);
}

std::size_t terminal_width() {
  winsize w{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 20) return w.ws_col;
  return 100;
}

}  // namespace

PullProgress::PullProgress(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO) != 0) {}

PullProgress::~PullProgress() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (drawn_) std::fputs("\r\033[K", stderr);
}

void PullProgress::print_line(const std::string& line) {
  if (quiet_) return;
  if (drawn_) std::fputs("\r\033[K", stderr);
  std::fprintf(stderr, "%s\n", line.c_str());
  drawn_ = false;
}

void PullProgress::plan(std::size_t files, std::uint64_t total_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  files_ = files;
  total_ = total_bytes;
  start_ = Clock::now();
}

void PullProgress::file_started(const std::string& path, std::uint64_t size,
                                std::uint64_t already) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_[path] = {size, already};
  done_ += already;
  redraw(true);
}

void PullProgress::file_bytes(const std::string& path, std::uint64_t n) {
  std::lock_guard<std::mutex> lock(mutex_);
  running_[path].done += n;
  done_ += n;
  received_ += n;
  redraw(false);
}

void PullProgress::file_done(const hub::FileOutcome& o) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = running_.find(o.path);
  // Bytes counted so far for this file are replaced by its size: a restarted download counted
  // some twice, and a reused file none.
  done_ -= it == running_.end() ? 0 : it->second.done;
  done_ += o.size;
  if (it != running_.end()) running_.erase(it);
  ++files_done_;
  const std::string what =
      o.reused
          ? "in the cache already"
          : fmt::format("downloaded in {:.1f} s{}", o.seconds,
                        o.downloaded < o.size
                            ? fmt::format(" (resumed: {} fetched)", hub::human_bytes(o.downloaded))
                            : "");
  print_line(fmt::format("  {}  {}  {}", o.path, hub::human_bytes(o.size), what));
  redraw(true);
}

void PullProgress::note(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  print_line("  " + message);
  redraw(true);
}

void PullProgress::redraw(bool force) {
  if (quiet_ || !tty_) return;
  const auto now = Clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const double secs = std::chrono::duration<double>(now - start_).count();
  const double speed = secs > 0 ? static_cast<double>(received_) / secs : 0;
  const std::uint64_t total = std::max(total_, done_);
  std::string line = fmt::format("[{}/{} files] {} / {}", files_done_, files_,
                                 hub::human_bytes(done_), hub::human_bytes(total));
  // Speed and ETA once there is half a second to measure: earlier figures are noise.
  if (received_ > 0 && secs >= 0.5) {
    line += fmt::format("  {}/s", hub::human_bytes(static_cast<std::uint64_t>(speed)));
    if (speed > 0 && total > done_)
      line += "  ETA " + clock_text(static_cast<double>(total - done_) / speed);
  }
  for (const auto& [path, r] : running_)
    line += fmt::format("  | {} {}% of {}", path.substr(path.find_last_of('/') + 1),
                        r.size ? r.done * 100 / r.size : 100, hub::human_bytes(r.size));
  const std::size_t width = terminal_width() - 1;
  if (line.size() > width) line.resize(width);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  std::fflush(stderr);
  drawn_ = true;
}

}  // namespace ls::app
