// The progress line (see progress.h).
#include "app/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace ls::app {

namespace {

std::chrono::milliseconds delay_from_env() {
  const char* env = std::getenv("LS_PROGRESS_DELAY_MS");
  if (env == nullptr || *env == '\0') return std::chrono::milliseconds(2000);
  char* end = nullptr;
  const long ms = std::strtol(env, &end, 10);
  return std::chrono::milliseconds(*end == '\0' && ms >= 0 ? ms : 2000);
}

std::string duration_text(double seconds) {
  if (seconds < 90) return fmt::format("{:.0f} s", seconds);
  if (seconds < 5400) return fmt::format("{:.0f} min", seconds / 60);
  return fmt::format("{:.1f} h", seconds / 3600);
}

}  // namespace

Progress::Progress(std::string label, std::size_t total, std::string unit)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      enabled_(isatty(STDERR_FILENO) == 1),
      start_(Clock::now()),
      last_draw_(start_),
      delay_(delay_from_env()) {}

Progress::~Progress() {
  if (drawn_) {
    std::fputs("\r\x1b[K", stderr);  // back to the line's start, erase it
    std::fflush(stderr);
  }
}

void Progress::advance(std::size_t n) {
  done_ += n;
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (now - start_ < delay_) return;
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(200) && done_ < total_) return;
  draw(now);
}

void Progress::draw(Clock::time_point now) {
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(done_) / seconds : 0.0;
  std::string eta;
  if (rate > 0 && done_ < total_)
    eta = " · ETA " + duration_text(static_cast<double>(total_ - done_) / rate);
  fmt::print(stderr, "\r{}  {}/{} {} · {:.1f} {}/s{}\x1b[K", label_, done_, total_, unit_, rate,
             unit_ == "tokens" ? "tok" : unit_, eta);
  std::fflush(stderr);
  drawn_ = true;
  last_draw_ = now;
}

}  // namespace ls::app
