// Prometheus text for the server's counters, gauges and histograms (see metrics.h).
#include "server/metrics.h"

#include <fmt/format.h>

namespace ls::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  std::size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? fmt::format("{}", bounds_[i]) : "+Inf";
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, le, cumulative);
  }
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
  return out;
}

namespace {

std::vector<double> seconds_buckets() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
}

std::string metric(const char* type, const std::string& name, const std::string& help,
                   std::uint64_t value) {
  return fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

}  // namespace

Metrics::Metrics()
    : ttft_(seconds_buckets()), tpot_(seconds_buckets()), latency_(seconds_buckets()) {}

void Metrics::request_received() {
  std::lock_guard lock(mutex_);
  ++requests_;
}

void Metrics::request_abandoned() {
  std::lock_guard lock(mutex_);
  ++abandoned_;
}

void Metrics::set_connections(std::size_t closed_by_deadline, std::size_t open) {
  std::lock_guard lock(mutex_);
  deadline_closes_ = closed_by_deadline;
  open_connections_ = open;
}

void Metrics::request_finished(double latency_s, double ttft_s, std::size_t completion_tokens) {
  std::lock_guard lock(mutex_);
  latency_.observe(latency_s);
  if (completion_tokens > 0) {
    ttft_.observe(ttft_s);
    if (completion_tokens > 1)
      tpot_.observe((latency_s - ttft_s) / static_cast<double>(completion_tokens - 1));
  }
}

std::string Metrics::render(const SchedulerStats& s) const {
  std::lock_guard lock(mutex_);
  std::string out;
  out += metric("counter", "logitscope_prompt_tokens_total", "Prompt tokens admitted.",
                s.prompt_tokens);
  out += metric("counter", "logitscope_prompt_tokens_cached_total",
                "Prompt tokens whose KV was reused from a shared prefix.", s.cached_prompt_tokens);
  out += metric("gauge", "logitscope_prefix_cache_entries", "Prompt prefixes kept for reuse.",
                s.prefix_cache_entries);
  out += metric("gauge", "logitscope_prefix_cache_blocks",
                "KV blocks in the cached prefixes' tables (all in use when idle).",
                s.prefix_cache_blocks);
  out += metric("counter", "logitscope_generation_tokens_total", "Tokens generated.",
                s.generation_tokens);
  out += metric("counter", "logitscope_requests_total", "Generation requests received.", requests_);
  out += metric("counter", "logitscope_requests_abandoned_total",
                "Non-streaming requests cancelled because their client had gone.", abandoned_);
  out += metric("counter", "logitscope_connections_timed_out_total",
                "Connections closed for not sending a complete request in time.", deadline_closes_);
  out +=
      metric("gauge", "logitscope_connections_open", "Client connections open.", open_connections_);
  out += metric("counter", "logitscope_engine_steps_total", "Batched engine steps.", s.steps);
  out += fmt::format(
      "# HELP logitscope_engine_step_seconds_total Time in the engine's batched forward passes.\n"
      "# TYPE logitscope_engine_step_seconds_total counter\nlogitscope_engine_step_seconds_total "
      "{}\n"
      "# HELP logitscope_choice_seconds_total Time choosing tokens between steps.\n"
      "# TYPE logitscope_choice_seconds_total counter\nlogitscope_choice_seconds_total {}\n",
      s.step_seconds, s.choice_seconds);
  out += metric("gauge", "logitscope_requests_running", "Jobs in the running batch.", s.running);
  out += metric("gauge", "logitscope_requests_waiting", "Jobs queued for room.", s.waiting);
  out +=
      metric("gauge", "logitscope_kv_blocks_in_use", "KV cache blocks held.", s.kv_blocks_in_use);
  out += ttft_.render("logitscope_time_to_first_token_seconds",
                      "From request received to its first generated token.");
  out += tpot_.render("logitscope_time_per_output_token_seconds",
                      "Mean time per generated token after the first, per request.");
  out += latency_.render("logitscope_request_latency_seconds", "From request received to its end.");
  return out;
}

}  // namespace ls::server
