// What the logit lens and attribution cost on one model (docs/lens.md): a prompt's forward
// pass alone, the lens at its last position (the same pass capturing each layer's residual,
// then the final norm and lm_head over n_layers + 1 rows, then the decoding chain per layer),
// the lm_head product over those rows against one single-row product (the bound: at
// most one extra product per layer), and leave-one-out attribution against one forward pass.
// Medians of --reps runs. Prints the CPU (kernels::cpu_model_name).
//
// usage: bench_lens MODEL [--threads N] [--prompt N (64)] [--reps N (5)] [--attribute N (32)]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/thread_pool.h"
#include "engine/engine.h"
#include "engine/lens.h"
#include "engine/loaded_model.h"
#include "engine/session.h"
#include "inspect/lens.h"
#include "kernels/cpu_info.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::int32_t> prompt_of(std::size_t n) {
  std::vector<std::int32_t> p(n);
  std::uint32_t x = 4242u;
  for (auto& t : p) t = static_cast<std::int32_t>((x = x * 1664525u + 1013904223u) % 150000u);
  return p;
}

template <class F>
double median_ms(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int bench(int argc, char** argv) {
  if (argc < 2)
    ls::fail("usage: bench_lens MODEL [--threads N] [--prompt N] [--reps N] [--attribute N]");
  int threads = 0, reps = 5;
  std::size_t n_prompt = 64, n_attr = 32;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int v = std::stoi(argv[i + 1]);
    if (flag == "--threads")
      threads = v;
    else if (flag == "--prompt")
      n_prompt = static_cast<std::size_t>(v);
    else if (flag == "--reps")
      reps = v;
    else if (flag == "--attribute")
      n_attr = static_cast<std::size_t>(v);
    else
      ls::fail("bench_lens: unknown flag {}", flag);
  }
  ls::model::LoadOptions lo;
  lo.huge_pages = true;
  const ls::engine::LoadedModel lm = ls::engine::LoadedModel::open(argv[1], lo);
  const ls::model::Model& model = lm.model();
  const ls::model::ModelConfig& c = model.config();
  ls::ThreadPool pool(threads);
  const auto rows = static_cast<std::size_t>(c.num_hidden_layers + 1);
  const auto H = static_cast<std::size_t>(c.hidden_size);
  const auto V = static_cast<std::size_t>(c.vocab_size);
  const auto prompt = prompt_of(n_prompt);

  const double forward = median_ms(reps, [&] {
    ls::engine::Session s(model, pool, 128);
    s.feed(prompt);
  });
  std::vector<float> lens;
  const double lens_ms =
      median_ms(reps, [&] { lens = ls::engine::lens_logits(model, pool, prompt); });
  std::vector<float> residuals(rows * H, 0.5f), out(rows * V);
  const double head_rows = median_ms(reps, [&] { model.lens_logits(residuals, rows, out, pool); });
  const double head_one = median_ms(reps, [&] { model.lens_logits(residuals, 1, out, pool); });
  // Qwen2.5-Instruct's generation_config.json settings.
  ls::decode::GenerationConfig config;
  ls::decode::apply_generation_json(config,
                                    {{"do_sample", true},
                                     {"temperature", 0.7},
                                     {"top_p", 0.8},
                                     {"top_k", 20},
                                     {"repetition_penalty", 1.05}},
                                    "bench_lens");
  const double chain = median_ms(reps, [&] {
    ls::inspect::LensRequest q;
    q.rows = lens;
    q.vocab = static_cast<std::int32_t>(V);
    q.history = prompt;
    q.config = &config;
    (void)ls::inspect::lens_report(q);
  });
  const auto short_prompt = prompt_of(n_attr);
  const double one = median_ms(reps, [&] {
    ls::engine::Session s(model, pool, 128);
    s.feed(short_prompt);
  });
  const double attribution = median_ms(std::max(1, reps / 2), [&] {
    ls::engine::Engine engine(model, pool);
    ls::engine::AttributionRequest q;
    q.prompt = short_prompt;
    q.target = 42;
    (void)ls::engine::attribute(engine, q);
  });

  fmt::print("bench_lens: {} ({} layers, hidden {}, vocab {}, {}), {} threads, CPU: {}\n", argv[1],
             c.num_hidden_layers, H, V, model.weight_dtype(), pool.size(),
             ls::kernels::cpu_model_name());
  fmt::print("  forward of a {}-token prompt        {:9.2f} ms\n", n_prompt, forward);
  fmt::print("  lens at its last position           {:9.2f} ms  ({:.2f}x the forward pass)\n",
             lens_ms, lens_ms / forward);
  fmt::print(
      "  lm_head over {} rows                {:9.2f} ms  = {:.2f} single-row products "
      "(bound: {})\n",
      rows, head_rows, head_rows / head_one, rows);
  fmt::print("  lm_head over 1 row                  {:9.2f} ms\n", head_one);
  fmt::print("  the chain over {} rows ({})  {:9.2f} ms\n", rows, "Qwen's settings", chain);
  fmt::print(
      "  attribution, {}-token prompt        {:9.2f} ms  ({:.1f}x its forward pass of "
      "{:.2f} ms; {} variants)\n",
      n_attr, attribution, attribution / one, one, n_attr);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return bench(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_lens: {}\n", e.what());
    return 1;
  }
}
