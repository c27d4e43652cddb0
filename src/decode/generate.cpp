// The batched generation loop and the greedy/sampling run (beam search is in beam_search.cpp).
#include "decode/generate.h"

#include <algorithm>
#include <exception>
#include <optional>
#include <random>
#include <utility>

#include "core/error.h"
#include "decode/order.h"
#include "decode/rng.h"
#include "decode/run_state.h"
#include "decode/sampler.h"
#include "decode/text_stream.h"
#include "decode/trace_json.h"

namespace ls::decode {

std::string to_string(FinishReason reason) {
  switch (reason) {
    case FinishReason::eos:
      return "eos";
    case FinishReason::stop_string:
      return "stop_string";
    case FinishReason::length:
      return "length";
    case FinishReason::context_limit:
      return "context_limit";
  }
  return "?";
}

std::uint64_t random_seed() {
  std::random_device device;
  return (static_cast<std::uint64_t>(device()) << 32) ^ device();
}

RunHeader make_header(const GenerationConfig& config, DecodeMode mode, std::uint64_t seed,
                      const ProcessorChain& chain, std::size_t prompt_len) {
  RunHeader h;
  h.mode = mode;
  h.seed = seed;
  h.seed_source = config.seed ? config.source_of("seed") : "random";
  h.prompt_tokens = prompt_len;
  h.order_preset = config.order_preset;
  h.order = resolve_order(config);
  h.stages = chain.names();
  h.chain = chain.describe();
  h.settings = settings_json(config);
  return h;
}

int sequence_ids_needed(const GenerationConfig& config) {
  if (is_beam(decode_mode(config)))
    return 2 * config.num_beams;  // two banks: the beams of this step and of the next
  return config.num_return_sequences;
}

std::vector<std::vector<ExpertChoice>> expert_layers(const Sequences& source, int seq) {
  std::vector<std::vector<ExpertChoice>> out;
  const std::span<const ExpertChoice> routes = source.expert_routes(seq);
  const auto k = static_cast<std::size_t>(source.experts_per_token());
  if (k == 0) return out;
  for (std::size_t i = 0; i + k <= routes.size(); i += k) {
    auto& layer = out.emplace_back();
    if (routes[i].expert >= 0)  // a dense layer's row stays empty
      layer.assign(routes.begin() + static_cast<std::ptrdiff_t>(i),
                   routes.begin() + static_cast<std::ptrdiff_t>(i + k));
  }
  return out;
}

namespace {

// num_return_sequences greedy or sampled sequences of one prompt: the prompt is fed once, then
// forked, and every live sequence feeds its last token each step. Sequence i draws from random
// stream i of the seed (stream 0 is Rng(seed) itself).
class SamplingRun final : public RunState {
 public:
  SamplingRun(Sequences& source, const Request& job, int first_seq, GenerationRun run)
      : source_(source),
        job_(job),
        run_(std::move(run)),
        max_new_(max_new_tokens_for(job.config, job.prompt.size())),
        limit_(source.context_limit()) {
    Rng stream(run_.seed);  // stream i: i jumps from Rng(seed), one more per sequence
    for (int i = 0; i < job.config.num_return_sequences; ++i, stream.jump()) {
      Seq s{first_seq + i,
            std::vector<std::int32_t>(job.prompt.begin(), job.prompt.end()),
            Sampler(job.config, run_.mode, source.vocab_size(), run_.seed, i, 1, stream),
            TextStream(job.config.stop_strings),
            {}};
      s.result.message =
          job.config.source_of("max_new_tokens") == "default" && job.config.max_length > 0
              ? fmt::format("reached max_length ({}: the prompt's {} tokens + {} new)",
                            job.config.max_length, job.prompt.size(), max_new_)
              : fmt::format("reached max_new_tokens ({})", max_new_);
      seqs_.push_back(std::move(s));
    }
    run_.chain = seqs_.front().sampler.chain().describe();
    if (job.options.on_header)
      job.options.on_header(make_header(job.config, run_.mode, run_.seed,
                                        seqs_.front().sampler.chain(), job.prompt.size()));
    if (max_new_ <= 0)
      for (auto& s : seqs_) finish(s, FinishReason::length);
  }

  void feeds(std::vector<Feed>& out) override {
    const bool routes = wants_routes();
    if (!prefilled_) {
      if (!done())
        out.push_back({seqs_.front().id, job_.prompt.subspan(job_.cached_prefix), false, routes});
      return;
    }
    for (auto& s : seqs_)
      if (!s.done) out.push_back({s.id, {&s.tokens.back(), 1}, false, routes});
  }

  // Live sequences in order; before the prompt is in, every sequence chooses from its row.
  std::size_t pending_choices() const override {
    if (!prefilled_) return done() ? 0 : seqs_.size();
    return static_cast<std::size_t>(
        std::count_if(seqs_.begin(), seqs_.end(), [](const Seq& s) { return !s.done; }));
  }

  void make_choice(std::size_t i, std::span<const std::span<const float>> scores) override {
    std::size_t live = 0;
    for (std::size_t j = 0; j < seqs_.size(); ++j) {
      if (prefilled_ && seqs_[j].done) continue;
      if (live == i) return pick(j, scores[prefilled_ ? i : 0]);
      ++live;
    }
  }

  void advance(std::span<const std::span<const float>> scores) override {
    std::size_t k = 0;
    if (!prefilled_) {
      prefilled_ = true;
      // Every sequence continues the same prompt: share its KV instead of recomputing it.
      for (std::size_t i = 1; i < seqs_.size(); ++i) source_.fork(seqs_[0].id, seqs_[i].id);
      for (std::size_t i = 0; i < seqs_.size(); ++i) choose(i, scores[0], seqs_[0].id);
      return;
    }
    for (std::size_t i = 0; i < seqs_.size(); ++i)
      if (!seqs_[i].done) choose(i, scores[k++], seqs_[i].id);
  }

  bool done() const override {
    return std::all_of(seqs_.begin(), seqs_.end(), [](const Seq& s) { return s.done; });
  }

  GenerationRun take_result() override {
    for (auto& s : seqs_) run_.sequences.push_back(std::move(s.result));
    return std::move(run_);
  }

 private:
  struct Seq {
    int id;
    std::vector<std::int32_t> tokens;  // prompt + generated
    Sampler sampler;
    TextStream stream;
    GenerationResult result;
    int step = 0;
    bool done = false;
    // make_choice's result for this step, applied by advance().
    std::optional<Choice> picked;
    StepTrace trace;
    std::exception_ptr error;
  };

  // The sampler's choice for sequence `index` from `raw` (any thread: it touches only this
  // sequence); an error is kept for advance() to throw.
  void pick(std::size_t index, std::span<const float> raw) {
    Seq& s = seqs_[index];
    const GenerateOptions& o = job_.options;
    try {
      if (raw.size() != static_cast<std::size_t>(source_.vocab_size()))
        fail("the logits source returned {} scores, expected vocab_size {}", raw.size(),
             source_.vocab_size());
      const bool tracing = static_cast<bool>(o.on_step);
      s.trace = StepTrace{};
      s.trace.sequence = static_cast<int>(index);
      s.trace.step = s.step;
      s.picked = s.sampler.choose(
          raw, TokenHistory{s.tokens, job_.prompt.size()},
          {tracing ? &s.trace : nullptr, o.trace_top_n, std::nullopt, true, o.logprobs});
    } catch (...) {
      s.error = std::current_exception();
    }
  }

  bool wants_routes() const {
    return job_.options.expert_routes && job_.options.on_step && source_.experts_per_token() > 0;
  }

  // Applies sequence `index`'s choice (made now if make_choice did not): callbacks, text, stops.
  // `fed`: the source sequence whose last fed token produced `raw` (the prompt's before forks).
  void choose(std::size_t index, std::span<const float> raw, int fed) {
    Seq& s = seqs_[index];
    const GenerateOptions& o = job_.options;
    if (!s.picked && !s.error) pick(index, raw);
    if (s.error) std::rethrow_exception(std::exchange(s.error, nullptr));
    const Choice c = *std::exchange(s.picked, std::nullopt);
    const bool tracing = static_cast<bool>(o.on_step);
    s.result.logprob += c.raw_logprob;
    s.result.processed_logprob += c.logprob;
    if (o.on_token)
      o.on_token(static_cast<int>(index),
                 {s.step, c.token, c.raw_logprob, c.logprob, c.raw_log_sum_exp, c.log_sum_exp, raw,
                  s.sampler.final_scores(), c.draw});
    s.tokens.push_back(c.token);
    s.result.tokens.push_back(c.token);
    if (tracing) {
      s.trace.sequence_logprob = s.result.logprob;
      if (wants_routes()) s.trace.experts = expert_layers(source_, fed);
      o.on_step(s.trace);
    }
    const auto& eos = job_.config.eos_token_id;
    if (std::find(eos.begin(), eos.end(), c.token) != eos.end()) {
      s.result.message = fmt::format("generated EOS token {}", c.token);
      return finish(s, FinishReason::eos);
    }
    if (o.token_bytes) {
      auto update = s.stream.push(o.token_bytes(c.token));
      if (!update.text.empty() && o.on_text) o.on_text(static_cast<int>(index), update.text);
      if (update.stopped) {
        s.result.message =
            fmt::format("the text contains the stop string \"{}\"", sanitize_utf8(update.stop));
        s.result.stop = update.stop;
        return finish(s, FinishReason::stop_string);
      }
    }
    if (++s.step >= max_new_) return finish(s, FinishReason::length);
    if (limit_ > 0 && s.tokens.size() >= static_cast<std::size_t>(limit_)) {
      // The token is not fed: no position is left for the one after it.
      s.result.message = fmt::format(
          "stopped at the model's context limit: {} tokens (prompt {} + generated {}) fill its {} "
          "positions",
          s.tokens.size(), job_.prompt.size(), s.tokens.size() - job_.prompt.size(), limit_);
      return finish(s, FinishReason::context_limit);
    }
  }

  void finish(Seq& s, FinishReason reason) {
    s.result.finish = reason;
    if (reason != FinishReason::stop_string) {
      const std::string rest = s.stream.finish();
      if (!rest.empty() && job_.options.on_text)
        job_.options.on_text(static_cast<int>(&s - seqs_.data()), rest);
    }
    s.result.text = s.stream.emitted();
    s.result.score = s.result.logprob;
    s.done = true;
    source_.release(s.id);
    if (job_.options.on_finish)
      job_.options.on_finish(static_cast<int>(&s - seqs_.data()), s.result);
  }

  Sequences& source_;
  const Request& job_;
  GenerationRun run_;
  int max_new_;
  std::int32_t limit_;
  std::vector<Seq> seqs_;
  bool prefilled_ = false;
};

}  // namespace

void check_request(const Sequences& source, const Request& job) {
  validate(job.config);
  if (job.prompt.empty())
    fail("generate: the prompt is empty; Qwen models add no BOS token, so give at least one token");
  const std::int32_t limit = source.context_limit();
  if (limit > 0 && job.prompt.size() >= static_cast<std::size_t>(limit))
    fail(
        "the prompt has {} tokens but the model's context holds {} positions "
        "(max_position_embeddings): no room to generate; shorten the prompt",
        job.prompt.size(), limit);
  if (job.cached_prefix >= job.prompt.size() ||
      (job.cached_prefix > 0 && is_beam(decode_mode(job.config))))
    fail("generate: cached_prefix {} must be below the prompt's {} tokens, and sampling only",
         job.cached_prefix, job.prompt.size());
  for (const std::int32_t id : job.config.eos_token_id)
    if (id >= source.vocab_size())
      fail("{} holds token id {}, outside the model's vocabulary of {}",
           job.config.origin_of("eos_token_id"), id, source.vocab_size());
  if (!job.config.stop_strings.empty() && !job.options.token_bytes)
    fail("stop strings need token text: the generation loop was given no token_bytes callback");
}

std::unique_ptr<RunState> make_sampling_run(Sequences& source, const Request& job, int first_seq,
                                            GenerationRun run) {
  return std::make_unique<SamplingRun>(source, job, first_seq, std::move(run));
}

std::unique_ptr<RunState> make_run(Sequences& source, const Request& job, int first_seq) {
  GenerationRun run;
  run.mode = decode_mode(job.config);
  run.seed = job.config.seed ? *job.config.seed : random_seed();
  return is_beam(run.mode) ? make_beam_run(source, job, first_seq, std::move(run))
                           : make_sampling_run(source, job, first_seq, std::move(run));
}

std::vector<GenerationRun> generate_batch(LogitsSource& source, std::span<const Request> jobs) {
  for (const auto& job : jobs) check_request(source, job);
  std::vector<std::unique_ptr<RunState>> runs;
  int next_seq = 0;
  for (const auto& job : jobs) {
    runs.push_back(make_run(source, job, next_seq));
    next_seq += sequence_ids_needed(job.config);
  }
  std::vector<Feed> feeds;
  std::vector<std::size_t> first_feed(runs.size() + 1);
  std::vector<std::pair<std::size_t, std::size_t>> choices;  // (run, its choice index)
  while (true) {
    feeds.clear();
    for (std::size_t r = 0; r < runs.size(); ++r) {
      first_feed[r] = feeds.size();
      runs[r]->feeds(feeds);
    }
    first_feed[runs.size()] = feeds.size();
    if (feeds.empty()) break;
    const std::vector<std::span<const float>> scores = source.step(feeds);
    const auto scores_of = [&](std::size_t r) {
      return std::span(scores).subspan(first_feed[r], first_feed[r + 1] - first_feed[r]);
    };
    // Every sequence's choice on the source's threads, then each run applies its own in order.
    choices.clear();
    for (std::size_t r = 0; r < runs.size(); ++r)
      if (first_feed[r] != first_feed[r + 1])
        for (std::size_t i = 0; i < runs[r]->pending_choices(); ++i) choices.emplace_back(r, i);
    source.parallel(choices.size(), [&](std::size_t k) {
      const auto [r, i] = choices[k];
      runs[r]->make_choice(i, scores_of(r));
    });
    for (std::size_t r = 0; r < runs.size(); ++r)
      if (first_feed[r] != first_feed[r + 1]) runs[r]->advance(scores_of(r));
  }
  std::vector<GenerationRun> out;
  for (auto& r : runs) out.push_back(r->take_result());
  return out;
}

GenerationRun generate(LogitsSource& source, std::span<const std::int32_t> prompt,
                       const GenerationConfig& config, const GenerateOptions& options) {
  const Request job{prompt, config, options};
  return std::move(generate_batch(source, {&job, 1}).front());
}

}  // namespace ls::decode
