// The scheduler loop (see scheduler.h): admit, drop cancelled jobs, one batched step over every
// active job (decode tokens first, then prefill chunks from the remaining budget), report.
#include "server/scheduler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/run_state.h"
#include "decode/trace_json.h"

namespace ls::server {

void JobChannel::push(std::size_t job, Event e) {
  {
    std::lock_guard lock(mutex_);
    events_.emplace_back(job, std::move(e));
  }
  ready_.notify_all();
}

std::vector<std::pair<std::size_t, Event>> JobChannel::wait(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  ready_.wait_for(lock, timeout, [&] { return !events_.empty(); });
  std::vector<std::pair<std::size_t, Event>> out(std::make_move_iterator(events_.begin()),
                                                 std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

void DeferredSequences::fork(int from_seq, int to_seq) {
  std::lock_guard lock(mutex_);
  ops_.emplace_back(from_seq, to_seq);
}

void DeferredSequences::release(int seq) {
  std::lock_guard lock(mutex_);
  ops_.emplace_back(seq, -1);
}

void DeferredSequences::apply() {
  std::lock_guard lock(mutex_);
  for (const auto& [a, b] : ops_) {
    if (b < 0)
      engine_.release(a);
    else
      engine_.fork(a, b);
  }
  ops_.clear();
}

// One admitted or waiting job: its request (spans into job.prompt), its sequence ids, how far
// its prompt is prefilled and, once the prefill is (nearly) done, its run.
struct Scheduler::Active {
  Job job;
  std::shared_ptr<JobChannel> channel;
  std::size_t index = 0;  // the job's index in its request
  decode::Request request;
  int first_seq = -1;
  int sequences = 1;
  std::size_t prefilled = 0;
  std::size_t cached = 0;      // of `prefilled`, copied from another prompt's KV
  bool reuse_checked = false;  // the prefix cache and the other jobs were looked at
  bool prompt_in_kv = false;   // the run has fed the whole prompt (its first step is done)
  std::unique_ptr<decode::RunState> run;
  std::vector<TokenLogprob> prompt_logprobs;
  ~Active() {
    if (job.keep) job.keep->finish();  // finished, cancelled or failed: it grows no more
  }
};

Scheduler::Scheduler(engine::Engine& engine, ThreadPool& pool, const engine::LoadedModel& model,
                     SchedulerOptions options)
    : engine_(engine),
      deferred_(engine),
      cache_(engine, options.prefix_cache_tokens),
      pool_(pool),
      model_(model),
      options_(options) {
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
  shutdown(std::chrono::milliseconds(0));
}

bool Scheduler::submit(std::vector<Job> jobs, const std::shared_ptr<JobChannel>& channel) {
  std::vector<std::unique_ptr<Active>> queued;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto a = std::make_unique<Active>();
    a->sequences = decode::sequence_ids_needed(jobs[i].config);
    if (a->sequences > options_.parallel)
      fail("n = {} needs more sequences than --parallel {}", a->sequences, options_.parallel);
    a->job = std::move(jobs[i]);
    a->channel = channel;
    a->index = i;
    queued.push_back(std::move(a));
  }
  int sequences = 0;
  for (const auto& a : queued) sequences += a->sequences;
  {
    std::lock_guard lock(mutex_);
    // Room: the sequences running, those waiting to start and these fit --parallel plus --queue.
    if (stopping_ ||
        running_sequences_ + queued_sequences_ + sequences > options_.parallel + options_.queue)
      return false;
    queued_sequences_ += sequences;
    for (auto& a : queued) incoming_.push_back(std::move(a));
    stats_.waiting = incoming_.size();
  }
  wake_.notify_all();
  return true;
}

void Scheduler::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (!thread_.joinable()) return;
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    {
      std::lock_guard lock(mutex_);
      if (stats_.running == 0) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    std::lock_guard lock(mutex_);
    cancel_all_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Scheduler::run_between_steps(const std::function<void(ThreadPool&)>& task) {
  Task t{&task, {}};
  std::future<void> done = t.done.get_future();
  {
    std::lock_guard lock(mutex_);
    if (stopping_) fail("the server is shutting down");
    tasks_.push_back(&t);
  }
  wake_.notify_all();
  done.get();
}

void Scheduler::run_tasks() {
  while (true) {
    Task* t = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (tasks_.empty()) return;
      t = tasks_.front();
      tasks_.pop_front();
    }
    try {
      (*t->fn)(pool_);
      t->done.set_value();
    } catch (...) {
      t->done.set_exception(std::current_exception());
    }
  }
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void Scheduler::loop() {
  while (true) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] {
        return cancel_all_ || !active_.empty() || !incoming_.empty() || !tasks_.empty() ||
               stopping_;
      });
      if (stopping_) {  // queued jobs never start; running ones finish (or are cancelled)
        for (auto& a : incoming_) {
          a->channel->push(a->index, ErrorEvent{"the server is shutting down"});
          a->channel->push(a->index, DoneEvent{});
        }
        incoming_.clear();
        queued_sequences_ = 0;
        for (Task* t : tasks_)
          t->done.set_exception(std::make_exception_ptr(Error("the server is shutting down")));
        tasks_.clear();
      }
      if (cancel_all_)
        for (auto& a : active_) a->channel->cancel();
      if (stopping_ && active_.empty()) {
        stats_.running = 0;
        stats_.waiting = 0;
        return;
      }
    }
    drop_cancelled();
    run_tasks();
    admit();
    if (!active_.empty()) run_step();
    finish_done();
    std::lock_guard lock(mutex_);
    stats_.running = active_.size();
    stats_.waiting = incoming_.size();
    stats_.kv_blocks_in_use = engine_.kv_usage().blocks_in_use;
    stats_.prefix_cache_entries = cache_.entries();
    stats_.prefix_cache_blocks = cache_.blocks();
  }
}

void Scheduler::drop_cancelled() {
  {
    std::lock_guard lock(mutex_);
    std::erase_if(incoming_, [&](const std::unique_ptr<Active>& a) {
      if (!a->channel->cancelled()) return false;
      queued_sequences_ -= a->sequences;
      a->channel->push(a->index, DoneEvent{});
      return true;
    });
  }
  std::erase_if(active_, [&](const std::unique_ptr<Active>& a) {
    if (!a->channel->cancelled()) return false;
    if (cancel_all_)  // the client is still there: tell it why its answer is cut short
      a->channel->push(a->index, ErrorEvent{"the server is shutting down: request cancelled"});
    for (int s = 0; s < a->sequences; ++s) engine_.release(a->first_seq + s);
    running_sequences_ -= a->sequences;
    a->channel->push(a->index, DoneEvent{});
    return true;
  });
}

void Scheduler::admit() {
  std::lock_guard lock(mutex_);
  while (!incoming_.empty() && !stopping_ &&
         running_sequences_ + incoming_.front()->sequences <= options_.parallel) {
    std::unique_ptr<Active> a = std::move(incoming_.front());
    incoming_.pop_front();
    queued_sequences_ -= a->sequences;
    Active* job = a.get();
    job->first_seq = next_seq_;
    next_seq_ += job->sequences;
    running_sequences_ += job->sequences;
    stats_.prompt_tokens += job->job.prompt.size();

    decode::Request& r = job->request;
    r.prompt = job->job.prompt;
    r.config = job->job.config;
    auto& o = r.options;
    o.token_bytes = [this](std::int32_t id) { return model_.token_bytes(id); };
    o.logprobs = job->job.logprobs;
    o.on_header = [job](const decode::RunHeader& h) {
      HeaderEvent e{h, job->cached, ""};
      if (const auto& keep = job->job.keep) {
        e.generation = keep->id();
        nlohmann::json header = decode::header_json(h);
        header["prompt_token_ids"] = job->job.prompt;
        keep->set_header(std::move(header));
      }
      job->channel->push(job->index, std::move(e));
    };
    o.on_text = [job](int choice, std::string_view text) {
      job->channel->push(job->index, TextEvent{choice, std::string(text)});
    };
    o.on_finish = [job](int choice, const decode::GenerationResult& result) {
      // Before the client can learn of the end: a kept generation reads finished at once.
      if (job->job.keep) job->job.keep->finish();
      job->channel->push(job->index, FinishEvent{choice, result.finish, result.message,
                                                 result.tokens.size(), result.stop});
    };
    o.on_token = [this, job](int choice, const decode::TokenChoice& c) {
      const Job& j = job->job;
      const bool processed = j.logprobs.processed;
      TokenEvent e{choice, {c.token, processed ? c.logprob : c.raw_logprob}, false};
      // The sampler computed the raw log-sum-exp whenever raw logprobs are wanted.
      if (j.logprobs.wanted)
        e.token = decode::token_logprob(processed ? c.processed : c.raw,
                                        processed ? c.log_sum_exp : c.raw_log_sum_exp, c.token,
                                        j.logprobs.top, false, j.named);
      const auto& eos = j.config.eos_token_id;
      e.eos = std::find(eos.begin(), eos.end(), c.token) != eos.end();
      job->channel->push(job->index, std::move(e));
      if (j.keep) j.keep->add_step(c.token, c.draw, c.raw);
      std::lock_guard stats_lock(mutex_);
      ++stats_.generation_tokens;
    };
    if (job->job.trace_top_n > 0) {
      o.trace_top_n = job->job.trace_top_n;
      o.expert_routes = job->job.expert_routes;
      o.on_step = [this, job](const decode::StepTrace& t) {
        job->channel->push(job->index,
                           StepEvent{t.sequence, decode::step_json(t, [this](std::int32_t id) {
                                       return model_.token_bytes(id);
                                     })});
      };
    }
    try {
      decode::check_request(engine_, r);
    } catch (const std::exception& e) {
      running_sequences_ -= job->sequences;
      job->channel->push(job->index, ErrorEvent{e.what()});
      job->channel->push(job->index, DoneEvent{});
      continue;
    }
    active_.push_back(std::move(a));
  }
}

// Who owns which feeds of a step: a run's range, or one prefill chunk of a job's prompt.
struct Scheduler::Owner {
  Active* job;
  std::size_t first, count;
  bool prefill;
};

// Before a job's prefill: copies the longest prefix it shares with a cached prompt or another
// job's prompt (fork, then cut to the shared length), so only the rest is computed. Returns
// false when a job admitted earlier is still prefilling a longer shared prefix: this job waits
// for it rather than computing the same positions beside it.
bool Scheduler::reuse_prefix(Active& a) {
  const auto prompt = std::span<const std::int32_t>(a.job.prompt);
  const std::size_t limit = prompt.size() - 1;  // the last token is always fed
  if (a.job.prompt_logprobs.wanted || options_.prefix_cache_tokens == 0 || limit == 0) {
    a.reuse_checked = true;
    return true;
  }
  const PrefixCache::Match cached = cache_.find(prompt, limit);
  int source = cached.seq;
  std::size_t shared = cached.tokens;
  for (const auto& other : active_) {
    if (other.get() == &a) break;  // only jobs admitted before this one
    const std::size_t common = std::min(common_prefix(other->job.prompt, prompt), limit);
    if (common <= shared) continue;
    // A run that has not fed its prompt yet does so in this step; a prefill in chunks is on
    // its way: either way, for a long enough shared part, wait for it rather than compute the
    // same positions beside it (else take what it holds already).
    if (!other->prompt_in_kv && (other->run || other->prefilled < common) &&
        common >= options_.min_shared_tokens)
      return false;
    const std::size_t held =
        other->run ? std::min<std::size_t>(
                         common, static_cast<std::size_t>(engine_.length(other->first_seq)))
                   : std::min(common, other->prefilled);
    if (held > shared) source = other->first_seq, shared = held;
  }
  a.reuse_checked = true;
  // KV already computed is reused however short (a fork shares its blocks): a short chat
  // prompt sent again, as a crowd of clients does, is then one token to feed, not all of it.
  if (shared == 0) return true;
  engine_.fork(source, a.first_seq);
  engine_.truncate(a.first_seq, static_cast<std::int64_t>(shared));
  a.prefilled = a.cached = shared;
  std::lock_guard lock(mutex_);
  stats_.cached_prompt_tokens += shared;
  return true;
}

// One owner's scores: its run chooses, or its prefill chunk advances (and gives the prompt's
// logprobs for echo). Runs on a pool thread; touches only this job.
void Scheduler::advance(const Owner& o, std::span<const decode::Feed> feeds,
                        std::span<const std::span<const float>> scores) {
  Active& a = *o.job;
  try {
    if (!o.prefill) {
      a.run->advance(scores.subspan(o.first, o.count));
      return;
    }
    const decode::Feed& f = feeds[o.first];
    if (a.job.prompt_logprobs.wanted) {
      const auto V = static_cast<std::size_t>(engine_.vocab_size());
      for (std::size_t r = 0; r < f.tokens.size(); ++r) {
        const std::span<const float> row = scores[o.first].subspan(r * V, V);
        const std::int32_t next = a.job.prompt[a.prefilled + r + 1];
        a.prompt_logprobs.push_back(decode::token_logprob(row, decode::log_sum_exp(row), next,
                                                          a.job.prompt_logprobs.top, true));
      }
    }
    a.prefilled += f.tokens.size();
  } catch (const std::exception& e) {
    a.channel->push(a.index, ErrorEvent{e.what()});
    a.channel->cancel();
  }
}

void Scheduler::run_step() {
  std::vector<decode::Feed> feeds;
  std::vector<Owner> owners;
  std::size_t tokens = 0;
  const auto start_run = [&](Active& a) {
    if (a.job.prompt_logprobs.wanted)
      a.channel->push(a.index, PromptLogprobsEvent{std::move(a.prompt_logprobs)});
    a.request.cached_prefix = a.prefilled;
    a.run = decode::make_run(deferred_, a.request, a.first_seq);
  };
  const auto run_feeds = [&](Active& a) {
    const std::size_t first = feeds.size();
    a.run->feeds(feeds);
    owners.push_back({&a, first, feeds.size() - first, false});
    for (std::size_t i = first; i < feeds.size(); ++i) tokens += feeds[i].tokens.size();
  };
  for (auto& a : active_)
    if (a->run) run_feeds(*a);
  // Prefill from what is left of the budget; at least a small chunk, so prompts always advance.
  std::size_t budget =
      std::max<std::size_t>(32, static_cast<std::size_t>(options_.step_tokens) -
                                    std::min<std::size_t>(tokens, options_.step_tokens));
  for (auto& a : active_) {
    if (a->run || budget == 0) continue;
    if (!a->reuse_checked && !reuse_prefix(*a)) continue;  // waits for a prompt it shares
    const std::size_t n = a->job.prompt.size();
    const std::size_t rest = n - a->prefilled;
    // Prompt logprobs need every row's scores: smaller chunks bound that buffer (rows x vocab).
    const std::size_t cap =
        a->job.prompt_logprobs.wanted ? std::min<std::size_t>(budget, 32) : budget;
    const std::size_t chunk = std::min(cap, n - 1 - a->prefilled);
    // The rest of the prompt fits this step (and needs no rows of scores), or only its last
    // token is left: the run feeds it itself, in this step.
    if ((!a->job.prompt_logprobs.wanted && rest <= budget) || chunk == 0) {
      start_run(*a);
      run_feeds(*a);
      budget -= rest;
      continue;
    }
    owners.push_back({a.get(), feeds.size(), 1, true});
    feeds.push_back({a->first_seq,
                     std::span<const std::int32_t>(a->job.prompt).subspan(a->prefilled, chunk),
                     a->job.prompt_logprobs.wanted});
    budget -= chunk;
  }
  deferred_.apply();  // a run that ended in its constructor (max_tokens 0) released its sequence
  if (feeds.empty()) return;

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::span<const float>> scores;
  try {
    scores = engine_.step(feeds);
  } catch (const std::exception& e) {
    for (const auto& o : owners) {
      o.job->channel->push(o.job->index, ErrorEvent{e.what()});
      o.job->channel->cancel();
    }
    return;  // drop_cancelled frees them before the next step
  }
  const auto t1 = std::chrono::steady_clock::now();
  // Every sequence's choice in parallel (a request's n sequences too), with the prefill chunks'
  // prompt logprobs; then each run applies its choices (events, stops), runs in parallel: each
  // run owns its samplers and sequences.
  std::vector<std::pair<std::size_t, std::size_t>> tasks;  // (owner, choice), or a prefill
  constexpr std::size_t kPrefill = static_cast<std::size_t>(-1);
  for (std::size_t o = 0; o < owners.size(); ++o) {
    if (owners[o].prefill) {
      tasks.emplace_back(o, kPrefill);
      continue;
    }
    for (std::size_t i = 0; i < owners[o].job->run->pending_choices(); ++i)
      tasks.emplace_back(o, i);
  }
  pool_.parallel_for(tasks.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t t = begin; t < end; ++t) {
      const auto [o, i] = tasks[t];
      const Owner& owner = owners[o];
      if (i == kPrefill)
        advance(owner, feeds, scores);
      else
        owner.job->run->make_choice(i, std::span(scores).subspan(owner.first, owner.count));
    }
  });
  pool_.parallel_for(owners.size(), [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i)
      if (!owners[i].prefill) advance(owners[i], feeds, scores);
  });
  deferred_.apply();
  // A run's first step fed its whole prompt: keep it for later prompts that start the same way.
  for (const auto& o : owners) {
    Active& a = *o.job;
    if (!a.run || a.prompt_in_kv) continue;
    a.prompt_in_kv = true;
    if (a.job.prompt.size() >= 2 &&
        engine_.length(a.first_seq) >= static_cast<std::int64_t>(a.job.prompt.size()))
      cache_.remember(a.job.prompt, a.first_seq);
  }
  const auto t2 = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  // Published as soon as the step's events are out, not only at the end of the loop turn.
  stats_.running = active_.size();
  stats_.kv_blocks_in_use = engine_.kv_usage().blocks_in_use;
  ++stats_.steps;
  stats_.step_seconds += std::chrono::duration<double>(t1 - t0).count();
  stats_.choice_seconds += std::chrono::duration<double>(t2 - t1).count();
}

void Scheduler::finish_done() {
  std::erase_if(active_, [&](const std::unique_ptr<Active>& a) {
    if (!a->run || !a->run->done() || a->channel->cancelled()) return false;
    running_sequences_ -= a->sequences;
    a->channel->push(a->index, DoneEvent{});
    return true;
  });
}

}  // namespace ls::server
