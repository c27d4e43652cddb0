// `logitscope bench`: prefill and decode speed of a model on this machine, reported against
// the machine's own limit measured in the same run: decode reads every weight once per token,
// so (read bandwidth / weight bytes per token) is the decode ceiling ("roofline"). The
// bandwidth is read from the weights themselves between stretches of decode, since a shared
// machine's bandwidth drifts within seconds: each stretch meets the limit of its own moment.
// Decode starts from --depth tokens of context (0: a new sequence, as llama-bench's tg does);
// the KV cache it reads at each position counts in the roofline's bytes beside the weights.
#include <fmt/format.h>
#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "app/commands.h"
#include "app/common.h"
#include "app/model_source.h"
#include "app/progress.h"
#include "core/error.h"
#include "engine/engine.h"
#include "inspect/distribution.h"
#include "kernels/bandwidth.h"
#include "kernels/bf16_dot.h"
#include "kernels/cpu_info.h"
#include "kernels/dot.h"
#include "kernels/quant.h"
#include "model/model.h"

namespace ls::app {

namespace {

struct BenchOptions {
  ModelOptions model;
  int prompt_tokens = 128;
  int gen_tokens = 64;
  int depth = 0;  // tokens of context decode starts from (llama-bench's -d)
  // Prompt tokens per forward pass: the engine's default, which every command runs with.
  int chunk_tokens = static_cast<int>(engine::EngineOptions{}.max_chunk_tokens);
  bool json = false;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The weights one decode step reads, in the order it reads them: one row of the embedding
// table, every layer's matrices, then lm_head (the whole embedding table when tied). A sparse
// layer's token reads experts_per_token experts (all the same size): the first ones stand in.
std::vector<std::span<const std::uint8_t>> weights_per_token(const model::Model& m) {
  const model::Weights& w = m.weights();
  std::vector<std::span<const std::uint8_t>> regions{{w.embed.data, w.embed.row_bytes()}};
  const auto active = static_cast<std::size_t>(m.config().moe.experts_per_token);
  for (const auto& L : w.layers) {
    for (const TensorView* t :
         {&L.wq, &L.wk, &L.wv, &L.wo, &L.w_gate, &L.w_up, &L.w_down, &L.moe.router,
          &L.moe.shared.gate, &L.moe.shared.up, &L.moe.shared.down})
      if (!t->empty()) regions.emplace_back(t->data, t->nbytes());
    for (std::size_t e = 0; e < std::min(active, L.moe.experts.size()); ++e)
      for (const TensorView* t :
           {&L.moe.experts[e].gate, &L.moe.experts[e].up, &L.moe.experts[e].down})
        regions.emplace_back(t->data, t->nbytes());
  }
  regions.emplace_back(w.lm_head.data, w.lm_head.nbytes());
  return regions;
}

// Linux resets the "high water mark" of resident memory when 5 is written to clear_refs; VmHWM
// in /proc/self/status is that peak. Elsewhere getrusage's lifetime peak is the fallback.
void reset_peak_rss() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

double peak_rss_mib_now() {
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    std::fclose(f);
    if (kib >= 0) return static_cast<double>(kib) / 1024.0;
  }
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

void run_bench(BenchOptions& o) {
  if (o.prompt_tokens < 1 || o.gen_tokens < 1 || o.chunk_tokens < 1)
    fail("--prompt-tokens, --gen-tokens and --chunk-tokens must be at least 1");
  if (o.depth < 0) fail("--depth: expected 0 or more tokens, got {}", o.depth);
  ThreadPool pool(o.model.threads);
  reset_peak_rss();  // count only the model from here on
  resolve_model(o.model);
  auto model = model::Model::load(o.model.model, load_options(o.model));

  const model::ModelConfig& c = model->config();
  const std::int64_t context = std::int64_t{o.depth} + o.gen_tokens;
  if (context > c.max_position_embeddings)
    fail(
        "--depth + --gen-tokens: expected at most {} positions (the model's "
        "max_position_embeddings), got {}",
        c.max_position_embeddings, context);

  // A deterministic pseudo-random prompt of ordinary token ids (its first --depth tokens are
  // decode's context).
  std::vector<std::int32_t> prompt(static_cast<std::size_t>(std::max(o.prompt_tokens, o.depth)));
  std::uint32_t x = 12345;
  for (auto& t : prompt) t = static_cast<std::int32_t>((x = x * 1664525u + 1013904223u) % 150000u);

  // The prompt in chunks of --chunk-tokens, as the commands feed it (the engine's default): the
  // speed users get, and a peak RSS that counts the scratch they get (activations of a chunk).
  engine::Engine engine(*model, pool, {std::min(o.chunk_tokens, o.prompt_tokens)});
  // Warm-up, as llama-bench's: the whole prompt once, untimed. It faults the mapped weights in
  // (the first timed pass is not disk-bound) and the KV blocks the prompt needs, which the timed
  // pass then reuses (llama.cpp clears its whole KV buffer at start-up; here a block's pages
  // are first written in a forward pass, ~10 us a 4 KiB page on a KVM guest: ~4% of a 128-token
  // prefill).
  const auto timed_prompt = std::span(prompt).first(static_cast<std::size_t>(o.prompt_tokens));
  engine.feed(1, timed_prompt);
  engine.release(1);
  auto t0 = std::chrono::steady_clock::now();
  auto logits = engine.feed(0, timed_prompt);
  const double prefill_s = seconds_since(t0);

  // The sequence decode extends: the prompt itself when --depth is its length; else a new one
  // holding the first --depth tokens (fed untimed; the prompt's blocks are reused for it) or,
  // at depth 0, nothing: its first decode step feeds the prompt's first token.
  int seq = 0;
  std::int32_t next = prompt[0];
  if (o.depth != o.prompt_tokens) {
    engine.release(0);
    seq = 2;
    if (o.depth > 0)
      next = inspect::top_ids(
          engine.feed(seq, std::span(prompt).first(static_cast<std::size_t>(o.depth))), 1)[0];
  } else {
    next = inspect::top_ids(logits, 1)[0];
  }

  // Decode in stretches of kStretch tokens, the weights read once by the bandwidth probe (in
  // decode's order: no head start from the caches) before the first stretch and after each. A
  // stretch's roofline time is its tokens' bytes at the better of the two readings beside it.
  // The probe reads memory the model holds anyway: the peak RSS stays the model's own.
  constexpr int kStretch = 8;
  const auto regions = weights_per_token(*model);
  std::size_t per_token = 0;
  for (const auto& r : regions) per_token += r.size();
  // KV bytes a decode step reads per position of context: K and V of every layer's KV heads.
  const double kv_per_position = 2.0 * static_cast<double>(c.num_hidden_layers * c.kv_dim()) *
                                 static_cast<double>(dtype_size(model->kv_type()));
  double kv_read = 0;  // bytes of KV cache read by all decode steps
  double before = kernels::read_pass(pool, regions).gb_per_s;
  double best_bw = before, worst_bw = before, decode_s = 0, roofline_s = 0;
  int stretches_above = 0;  // stretches that beat the roofline beside them
  std::optional<Progress> progress(std::in_place, "bench decode",
                                   static_cast<std::size_t>(o.gen_tokens));
  for (int done = 0; done < o.gen_tokens;) {
    const int n = std::min(kStretch, o.gen_tokens - done);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      logits = engine.feed(seq, std::span(&next, 1));
      next = inspect::top_ids(logits, 1)[0];
      progress->advance();
    }
    const double stretch_s = seconds_since(t0);
    decode_s += stretch_s;
    const double after = kernels::read_pass(pool, regions).gb_per_s;
    // Steps done+1 .. done+n attend over depth+done+1 .. depth+done+n positions.
    const double positions = n * (o.depth + done + (n + 1) / 2.0);
    kv_read += positions * kv_per_position;
    const double stretch_roofline_s =
        (n * static_cast<double>(per_token) + positions * kv_per_position) /
        (std::max(before, after) * 1e9);
    roofline_s += stretch_roofline_s;
    // Faster than the bandwidth read on both sides of it: the host's bandwidth moved (a probe
    // met a stall, or contention throttled the plain pass more than decode's prefetched loops).
    if (stretch_s < stretch_roofline_s) ++stretches_above;
    best_bw = std::max(best_bw, after);
    worst_bw = std::min(worst_bw, after);
    before = after;
    done += n;
  }
  progress.reset();
  const int readings = 1 + (o.gen_tokens + kStretch - 1) / kStretch;

  const double peak_rss_mib = peak_rss_mib_now();
  const double prefill_tps = o.prompt_tokens / prefill_s;
  const double decode_tps = o.gen_tokens / decode_s;
  const double roofline_tps = o.gen_tokens / roofline_s;
  const double kv_per_token = kv_read / o.gen_tokens;  // mean over the decode steps
  const double best_roofline_tps = best_bw * 1e9 / (static_cast<double>(per_token) + kv_per_token);
  const double file_mib = static_cast<double>(model->weight_bytes()) / (1 << 20);
  // The KV memory the engine holds: the blocks in use and those kept for reuse (the prompt's,
  // when decode ran in a new sequence), all of them in the peak RSS.
  const double kv_mib = static_cast<double>(engine.kv_usage().bytes_reserved) / (1 << 20);

  if (o.json) {
    nlohmann::ordered_json j = {
        {"model", model->path()},
        {"weights", model->weight_dtype()},
        {"threads", pool.size()},
        {"cpu", kernels::cpu_model_name()},
        {"cpu_features", kernels::cpu_features()},
        {"simd", kernels::simd_target_name()},
        {"quant_kernels", kernels::quant_simd_name()},
        {"decode_prefetch_bytes", kernels::decode_ahead_bytes()},
        {"decode_prefetch_level", kernels::decode_prefetch_to_l2() ? "l2" : "l1"},
        {"bf16_activations", o.model.bf16_activations},
        {"bf16_kernel", kernels::bf16_dot_kernel()},
        {"prompt_tokens", o.prompt_tokens},
        {"gen_tokens", o.gen_tokens},
        {"depth", o.depth},
        {"chunk_tokens", std::min(o.chunk_tokens, o.prompt_tokens)},
        {"prefill_tokens_per_s", prefill_tps},
        {"decode_tokens_per_s", decode_tps},
        {"weight_bytes_per_token", per_token},
        {"kv_bytes_per_token", kv_per_token},
        {"read_bandwidth_gb_per_s", best_bw},
        {"read_bandwidth_min_gb_per_s", worst_bw},
        {"bandwidth_readings", readings},
        {"stretches_above_roofline", stretches_above},
        {"decode_roofline_tokens_per_s", roofline_tps},
        {"decode_fraction_of_roofline", decode_tps / roofline_tps},
        {"decode_fraction_of_best_bandwidth", decode_tps / best_roofline_tps},
        {"weights_mib", file_mib},
        {"kv_type", dtype_name(model->kv_type())},
        {"kv_cache_mib", kv_mib},
        {"peak_rss_mib", peak_rss_mib}};
    fmt::print("{}\n", j.dump());
    return;
  }
  fmt::print("model            {} ({} weights, {:.0f} MiB)\n", model->path(), model->weight_dtype(),
             file_mib);
  std::string features;
  for (const std::string& f : kernels::cpu_features())
    features += (features.empty() ? "" : " ") + f;
  fmt::print("cpu              {} ({})\n", kernels::cpu_model_name(), features);
  fmt::print(
      "machine          {} threads, SIMD {} (quantized: {}; decode prefetch {} bytes ahead into "
      "{}), read "
      "bandwidth {:.1f}-{:.1f} GB/s (the weights read {} times beside decode)\n",
      pool.size(), kernels::simd_target_name(), kernels::quant_simd_name(),
      kernels::decode_ahead_bytes(), kernels::decode_prefetch_to_l2() ? "L2" : "L1", worst_bw,
      best_bw, readings);
  if (o.model.bf16_activations)
    fmt::print("bf16 activations on: BF16 matrices multiply bf16-rounded inputs ({} kernel)\n",
               kernels::bf16_dot_kernel());
  fmt::print("prefill          {} tokens in {:.3f} s = {:.1f} tokens/s\n", o.prompt_tokens,
             prefill_s, prefill_tps);
  fmt::print("decode           {} tokens from {} tokens of context in {:.3f} s = {:.2f} tokens/s\n",
             o.gen_tokens, o.depth, decode_s, decode_tps);
  fmt::print(
      "bytes per token  {:.1f} MiB of weights + {:.2f} MiB of KV cache (the mean) read per decoded "
      "token\n",
      static_cast<double>(per_token) / (1 << 20), kv_per_token / (1 << 20));
  fmt::print(
      "roofline         {:.2f} tokens/s at the bandwidth beside each stretch of {} tokens: decode "
      "reaches {:.1f}% of it ({:.1f}% of {:.2f} tokens/s at the best reading)\n",
      roofline_tps, kStretch, 100.0 * decode_tps / roofline_tps,
      100.0 * decode_tps / best_roofline_tps, best_roofline_tps);
  if (stretches_above > 0)
    fmt::print(
        "                 (not a reliable figure: {} of {} stretches ran faster than the bandwidth "
        "read on both sides of them, so the machine's bandwidth moved during the run)\n",
        stretches_above, readings - 1);
  fmt::print(
      "memory           peak RSS {:.0f} MiB = {:.2f} x (weights {:.0f} MiB + {} KV cache {:.1f} "
      "MiB)\n",
      peak_rss_mib, peak_rss_mib / (file_mib + kv_mib), file_mib, dtype_name(model->kv_type()),
      kv_mib);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  auto* cmd = app.add_subcommand(
      "bench", "Measure prefill and decode speed against this machine's memory bandwidth");
  o->model.huge_pages = true;  // long-running: decode speed over load time
  add_model_options(*cmd, o->model);
  cmd->add_option("--prompt-tokens", o->prompt_tokens, "Prompt length for prefill")
      ->capture_default_str();
  cmd->add_option("--gen-tokens", o->gen_tokens, "Tokens to decode")->capture_default_str();
  cmd->add_option("--depth", o->depth,
                  "Tokens of context decode starts from (0: a new sequence, as llama-bench's tg "
                  "runs; the prompt's length: decode continues the prompt)")
      ->capture_default_str();
  cmd->add_option("--chunk-tokens", o->chunk_tokens,
                  "Prompt tokens per forward pass during prefill (the commands' default; "
                  "llama-bench's n_ubatch is 512)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "One JSON object instead of text");
  cmd->callback([o] { run_bench(*o); });
}

}  // namespace ls::app
