// Continuous batching: one thread owns the engine and runs batched steps over every active
// request. A request joins between steps; its prompt is prefilled in chunks under a per-step
// token budget, so running streams keep flowing; it leaves when it finishes or is cancelled
// (its KV blocks freed at once). Each request reports through its own JobChannel of plain
// events; the scheduler knows nothing of HTTP or the OpenAI API.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/thread_pool.h"
#include "decode/generate.h"
#include "decode/logprobs.h"
#include "engine/engine.h"
#include "engine/loaded_model.h"
#include "server/generation_store.h"
#include "server/prefix_cache.h"

namespace ls::server {

// One prompt's generation with config.num_return_sequences choices.
struct Job {
  std::vector<std::int32_t> prompt;
  // Validated by the caller. max_new_tokens 0 (completions scoring a prompt): the prompt is
  // prefilled (for its logprobs) and the run ends at once, generating nothing.
  decode::GenerationConfig config;
  decode::LogprobRequest logprobs;         // of each generated token (top: 0..20)
  decode::LogprobRequest prompt_logprobs;  // of the prompt's tokens (echo, or prompt_logprobs)
  std::vector<std::int32_t> named;         // ids whose logprob and rank every step reports
  int trace_top_n = 0;                     // > 0: every step's stage trace
  bool expert_routes = false;              // the trace's steps carry the router's choice (MoE)
  // Set: every step's raw logits, token and draw are kept here (the logit microscope).
  std::shared_ptr<KeptGeneration> keep;
};

// rank: prompt tokens only; named: Job::named.
using decode::RankedLogprob;
using decode::TokenLogprob;

struct HeaderEvent {
  decode::RunHeader header;
  std::size_t cached_tokens = 0;  // prompt tokens whose KV came from another prompt
  std::string generation;         // the kept generation's id ("" when not kept)
};
struct PromptLogprobsEvent {
  std::vector<TokenLogprob> tokens;  // for prompt[1..]; prompt[0] has none
};
struct TokenEvent {
  int choice = 0;
  TokenLogprob token;  // `top` only when logprobs were asked for
  bool eos = false;    // the token ended the sequence as EOS (no text)
};
struct TextEvent {
  int choice = 0;
  std::string text;  // valid UTF-8, stop strings withheld
};
struct StepEvent {
  int choice = 0;
  nlohmann::json step;  // generate --json's step object
};
struct FinishEvent {
  int choice = 0;
  decode::FinishReason reason = decode::FinishReason::length;
  std::string message;
  std::size_t tokens = 0;  // generated, EOS included
  std::string stop;        // the stop string that ended it (reason stop_string), else ""
};
struct ErrorEvent {
  std::string message;
};
struct DoneEvent {};  // every choice finished (or the job failed); nothing follows
using Event = std::variant<HeaderEvent, PromptLogprobsEvent, TokenEvent, TextEvent, StepEvent,
                           FinishEvent, ErrorEvent, DoneEvent>;

// The scheduler's events for one request's jobs (each tagged with its job index), and the
// cancel flag the HTTP side sets for all of them. Thread-safe.
class JobChannel {
 public:
  void push(std::size_t job, Event e);
  // Waits up to `timeout` for events and returns all that are queued (maybe none).
  std::vector<std::pair<std::size_t, Event>> wait(std::chrono::milliseconds timeout);
  void cancel() { cancelled_ = true; }
  bool cancelled() const { return cancelled_; }
  std::chrono::steady_clock::time_point created = std::chrono::steady_clock::now();

 private:
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::pair<std::size_t, Event>> events_;
  std::atomic<bool> cancelled_{false};
};

struct SchedulerOptions {
  int parallel = 8;       // sequences stepped at once
  int queue = 64;         // sequences that may wait for room beyond `parallel`
  int step_tokens = 256;  // tokens per batched step (decode tokens + prefill chunks)
  std::size_t prefix_cache_tokens = 4096;  // cached prompt positions kept (0: no reuse)
  std::size_t min_shared_tokens = 16;      // a job waits a step for another computing this many
};

struct SchedulerStats {
  std::size_t running = 0, waiting = 0;  // jobs
  std::size_t kv_blocks_in_use = 0;
  std::uint64_t prompt_tokens = 0, generation_tokens = 0;  // totals since start
  std::uint64_t cached_prompt_tokens = 0;                  // of prompt_tokens, reused
  std::size_t prefix_cache_entries = 0;
  std::size_t prefix_cache_blocks = 0;
  std::uint64_t steps = 0;
  double step_seconds = 0;    // in the engine's forward passes
  double choice_seconds = 0;  // choosing tokens (chains, sampling, logprobs), across threads
};

// The engine's sequences as runs see them while they advance in parallel: fork and release are
// recorded and applied afterwards on the loop thread, in order (the engine's sequence table is
// not thread-safe; each run touches only its own sequences, so only the order within a run
// counts). Runs never step: the scheduler steps the engine itself.
class DeferredSequences final : public decode::Sequences {
 public:
  explicit DeferredSequences(engine::Engine& engine) : engine_(engine) {}
  std::int32_t vocab_size() const override { return engine_.vocab_size(); }
  std::int32_t context_limit() const override { return engine_.context_limit(); }
  void fork(int from_seq, int to_seq) override;
  void release(int seq) override;
  // The engine's, as of the latest step (read-only while runs advance).
  std::span<const decode::ExpertChoice> expert_routes(int seq) const override {
    return engine_.expert_routes(seq);
  }
  int experts_per_token() const override { return engine_.experts_per_token(); }
  void apply();  // the recorded operations, on the engine

 private:
  engine::Engine& engine_;
  std::mutex mutex_;
  std::vector<std::pair<int, int>> ops_;  // (from, to) fork, or (seq, -1) release
};

class Scheduler {
 public:
  // `pool` (the engine's) also runs the sequences' choices in parallel between steps.
  Scheduler(engine::Engine& engine, ThreadPool& pool, const engine::LoadedModel& model,
            SchedulerOptions options);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request's jobs (job i reports as index i on `channel`); false, and nothing
  // queued, when the queue has no room for all of them or the scheduler is stopping (503).
  // Throws ls::Error when a job needs more sequences than --parallel.
  bool submit(std::vector<Job> jobs, const std::shared_ptr<JobChannel>& channel);
  // Stops accepting, cancels whatever still runs after `grace`, and joins the loop thread.
  void shutdown(std::chrono::milliseconds grace);
  SchedulerStats stats() const;
  const SchedulerOptions& options() const { return options_; }
  // Runs `task` on the loop thread between two batched steps, when the engine's pool is free,
  // and waits for it: the logit lens and attribution, which run the model on sequences of
  // their own. Rethrows what the task threw; throws ls::Error when the server is stopping.
  void run_between_steps(const std::function<void(ThreadPool&)>& task);

 private:
  struct Active;
  struct Owner;
  void loop();
  void admit();
  void drop_cancelled();
  void run_step();
  bool reuse_prefix(Active& a);
  void advance(const Owner& o, std::span<const decode::Feed> feeds,
               std::span<const std::span<const float>> scores);
  void finish_done();
  void run_tasks();

  engine::Engine& engine_;
  DeferredSequences deferred_;
  PrefixCache cache_;
  ThreadPool& pool_;
  const engine::LoadedModel& model_;
  SchedulerOptions options_;

  mutable std::mutex mutex_;  // guards incoming_, stopping_, stats_
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Active>> incoming_;
  struct Task {
    const std::function<void(ThreadPool&)>* fn;
    std::promise<void> done;
  };
  std::deque<Task*> tasks_;  // waiting for run_tasks(); each owned by its caller
  bool stopping_ = false;
  std::atomic<bool> cancel_all_{false};
  SchedulerStats stats_;

  int queued_sequences_ = 0;  // of incoming_; guarded by mutex_
  // Written by the loop thread only; submit() reads it under mutex_ (see running_sequences_).
  std::atomic<int> running_sequences_{0};

  // Owned by the loop thread.
  std::vector<std::unique_ptr<Active>> active_;
  int next_seq_ = 0;
  std::thread thread_;
};

}  // namespace ls::server
