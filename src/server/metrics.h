// The server's /metrics: Prometheus text exposition, names prefixed logitscope_ and in base
// units (seconds, tokens). Token counters and gauges come from the scheduler; the latency
// histograms are observed by the HTTP handlers. Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "server/scheduler.h"

namespace ls::server {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);  // upper bounds, ascending; +Inf is implied
  void observe(double value);
  // The _bucket (cumulative), _sum and _count lines of `name`.
  std::string render(const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;  // per bucket, the last one +Inf
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();
  void request_finished(double latency_s, double ttft_s, std::size_t completion_tokens);
  void request_received();
  // A non-streaming request whose client closed its connection before the answer.
  void request_abandoned();
  // The connections closed for not sending a complete request in time, and those open now.
  void set_connections(std::size_t closed_by_deadline, std::size_t open);
  std::string render(const SchedulerStats& stats) const;

 private:
  mutable std::mutex mutex_;
  std::uint64_t requests_ = 0, abandoned_ = 0, deadline_closes_ = 0, open_connections_ = 0;
  Histogram ttft_, tpot_, latency_;
};

}  // namespace ls::server
