// What batching buys, measured on one model: the cost of beam search (4 beams) and of 4
// sampled return sequences as a ratio of one greedy sequence of the same length, the aggregate
// tokens/s of N prompts generated together (generate --prompts) against one, and the KV memory
// 4 beams hold over a 1,000-token prompt against one sequence holding it. Decode reads every
// weight once per step whatever the number of rows, so these ratios show how well one forward
// pass serves many sequences. Prints the CPU (lscpu's model name) and the SIMD target.
//
// usage: bench_batch MODEL [--threads N] [--tokens N] [--batches 1,4,8,16] [--repack 0|1]
//        (--repack 0: read the weights in place, as `--no-repack` does; default 1, as `serve`)
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "decode/generate.h"
#include "engine/engine.h"
#include "engine/loaded_model.h"
#include "kernels/bandwidth.h"
#include "kernels/dot.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

// A prompt of `n` ordinary token ids, different for each `salt`.
std::vector<std::int32_t> prompt_of(std::size_t n, std::uint32_t salt) {
  std::vector<std::int32_t> p(n);
  std::uint32_t x = 12345u + salt * 7919u;
  for (auto& t : p) t = static_cast<std::int32_t>((x = x * 1664525u + 1013904223u) % 150000u);
  return p;
}

// Exactly `tokens` new tokens (no EOS, no stop string), the model's other defaults ignored.
ls::decode::GenerationConfig config_for(int tokens) {
  ls::decode::GenerationConfig c;
  c.max_new_tokens = tokens;
  c.eos_token_id.clear();
  c.seed = 1;
  return c;
}

struct Timed {
  double seconds = 0;
  std::size_t tokens = 0;
  std::size_t peak_kv = 0;
};

// `watch_kv`: record the peak KV memory at every step (through on_step, which also builds the
// step traces: timings are taken without it).
Timed run(ls::engine::Engine& engine, std::vector<ls::decode::Request> jobs,
          bool watch_kv = false) {
  Timed t;
  if (watch_kv)
    for (auto& j : jobs)
      j.options.on_step = [&](const ls::decode::StepTrace&) {
        t.peak_kv = std::max(t.peak_kv, engine.kv_usage().bytes_in_use);
      };
  const auto t0 = Clock::now();
  const auto runs = ls::decode::generate_batch(engine, jobs);
  t.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const auto& r : runs)
    for (const auto& s : r.sequences) t.tokens += s.tokens.size();
  return t;
}

int bench(int argc, char** argv) {
  if (argc < 2)
    ls::fail(
        "usage: bench_batch MODEL [--threads N] [--tokens N] [--batches 1,4,8,16] [--repack 0|1]");
  std::string path = argv[1];
  int threads = 2, tokens = 48;
  std::vector<int> batches = {1, 4, 8, 16};
  ls::model::LoadOptions load;
  load.huge_pages = true;  // as serve loads
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--threads") {
      threads = std::stoi(value);
    } else if (flag == "--tokens") {
      tokens = std::stoi(value);
    } else if (flag == "--repack") {
      load.repack = value != "0";
    } else if (flag == "--batches") {
      batches.clear();
      std::stringstream in(value);
      for (std::string item; std::getline(in, item, ',');) batches.push_back(std::stoi(item));
    } else {
      ls::fail("bench_batch: unknown flag {}", flag);
    }
  }
  ls::ThreadPool pool(threads);
  const auto lm = ls::engine::LoadedModel::open(path, load);
  ls::engine::Engine engine(lm.model(), pool);
  const auto bw = ls::kernels::measure_read_bandwidth(pool, std::size_t{256} << 20, 4);
  fmt::print("model    {} ({} weights)\nmachine  {} · {} threads · SIMD {} · read {:.1f} GB/s\n\n",
             path, lm.model().weight_dtype(), cpu_name(), pool.size(),
             ls::kernels::simd_target_name(), bw.gb_per_s);

  const std::vector<std::int32_t> prompt = prompt_of(16, 0);
  ls::decode::GenerationConfig greedy = config_for(tokens);
  greedy.do_sample = false;
  run(engine, {{prompt, greedy, {}}});  // warm-up: fault the mapped weights in
  const Timed one = run(engine, {{prompt, greedy, {}}});

  ls::decode::GenerationConfig sampled = config_for(tokens);
  sampled.do_sample = true;
  sampled.num_return_sequences = 4;
  const Timed n4 = run(engine, {{prompt, sampled, {}}});
  ls::decode::GenerationConfig beams = greedy;
  beams.num_beams = 4;
  beams.early_stopping = ls::decode::EarlyStopping::never;
  const Timed b4 = run(engine, {{prompt, beams, {}}});

  fmt::print("{} new tokens after a {}-token prompt (goal: <= 1.3x one greedy sequence)\n", tokens,
             prompt.size());
  fmt::print("  {:<34} {:>8} {:>10} {:>12}\n", "run", "seconds", "x greedy", "tokens/s");
  auto row = [&](const char* name, const Timed& t) {
    fmt::print("  {:<34} {:>8.3f} {:>9.2f}x {:>12.1f}\n", name, t.seconds, t.seconds / one.seconds,
               static_cast<double>(t.tokens) / t.seconds);
  };
  row("greedy, 1 sequence", one);
  row("beam search, 4 beams", b4);
  row("sampling, 4 return sequences", n4);

  fmt::print(
      "\ngenerate --prompts: N different 16-token prompts, {} greedy tokens each "
      "(goal at 8: >= 4x one)\n",
      tokens);
  fmt::print("  {:>8} {:>8} {:>14} {:>10}\n", "prompts", "seconds", "tokens/s total", "x one");
  double base = 0;
  for (int n : batches) {
    std::vector<std::vector<std::int32_t>> prompts;
    for (int i = 0; i < n; ++i) prompts.push_back(prompt_of(16, static_cast<std::uint32_t>(i + 1)));
    std::vector<ls::decode::Request> jobs;
    for (const auto& p : prompts) jobs.push_back({p, greedy, {}});
    const Timed t = run(engine, jobs);
    const double tps = static_cast<double>(t.tokens) / t.seconds;
    if (base == 0) base = tps / n;  // the first row's per-sequence rate
    fmt::print("  {:>8} {:>8.3f} {:>14.1f} {:>9.2f}x\n", n, t.seconds, tps, tps / base);
  }

  // The forward pass alone (no token choice, no prefill in the time): N sequences that each
  // hold a 16-token prompt decode together, one token each per step, against a 128-token
  // prefill of one sequence on the same engine.
  const std::vector<std::int32_t> pp = prompt_of(128, 7);
  engine.feed(1 << 20, pp);  // warm-up
  engine.release(1 << 20);
  auto t0 = Clock::now();
  engine.feed(1 << 20, pp);
  const double pp_rate = 128.0 / std::chrono::duration<double>(Clock::now() - t0).count();
  engine.release(1 << 20);
  fmt::print(
      "\nbatched decode, the forward pass alone (goal at 16: >= 60% of pp128 = {:.1f} tok/s)\n",
      pp_rate);
  fmt::print("  {:>8} {:>14} {:>10}\n", "sequences", "tokens/s", "of pp128");
  for (int n : batches) {
    for (int i = 0; i < n; ++i) engine.feed(i, prompt_of(16, static_cast<std::uint32_t>(i + 1)));
    const std::int32_t next = 1000;
    std::vector<ls::decode::Feed> feeds;
    for (int i = 0; i < n; ++i) feeds.push_back({i, std::span<const std::int32_t>(&next, 1)});
    t0 = Clock::now();
    for (int s = 0; s < tokens; ++s) engine.step(feeds);
    const double rate = n * tokens / std::chrono::duration<double>(Clock::now() - t0).count();
    fmt::print("  {:>8} {:>14.1f} {:>9.0f}%\n", n, rate, 100 * rate / pp_rate);
    for (int i = 0; i < n; ++i) engine.release(i);
  }

  const std::vector<std::int32_t> long_prompt = prompt_of(1000, 99);
  ls::decode::GenerationConfig long_beams = beams;
  long_beams.max_new_tokens = 4;
  const Timed lb = run(engine, {{long_prompt, long_beams, {}}}, /*watch_kv=*/true);
  engine.feed(1 << 20, long_prompt);
  const std::size_t alone = engine.kv_usage().bytes_in_use;
  engine.release(1 << 20);
  fmt::print(
      "\nKV memory, 1,000-token prompt: one sequence {:.1f} MiB; 4 beams at their peak {:.1f} "
      "MiB = {:.2f}x (the prompt's blocks are shared; each beam owns only its last block)\n",
      static_cast<double>(alone) / (1 << 20), static_cast<double>(lb.peak_kv) / (1 << 20),
      static_cast<double>(lb.peak_kv) / static_cast<double>(alone));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_batch: %s\n", e.what());
    return 1;
  }
}
