// `logitscope seeds`: N seeded generations of one prompt (seeds S, S+1, ..., S+N-1 with S from
// --seed, default 0), always sampling. Reports the distinct outputs and how often each occurs,
// the first step where the runs diverge, mean and spread of sequence logprob and length, and
// the share of runs caught in a repetition loop, with the loop rule printed.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "app/commands.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/progress.h"
#include "core/error.h"
#include "decode/generate.h"
#include "decode/trace_json.h"
#include "engine/engine.h"
#include "inspect/seeds.h"

namespace ls::app {

namespace {

struct SeedsCli {
  ModelOptions model;
  PromptOptions prompt;
  GenerationFlags flags;
  int n = 20;
  inspect::LoopRule loop;
  bool json = false;
};

std::string join_seeds(const std::vector<std::uint64_t>& seeds) {
  std::string s;
  for (std::size_t i = 0; i < seeds.size(); ++i) {
    if (i == 6) return s + fmt::format(",… (+{})", seeds.size() - 6);
    s += fmt::format("{}{}", i ? "," : "", seeds[i]);
  }
  return s;
}

void run_seeds(SeedsCli& o) {
  if (o.n < 1 || o.n > 100000) fail("--n must be between 1 and 100000, got {}", o.n);
  if (o.loop.max_ngram < 1) fail("--loop-ngram must be at least 1, got {}", o.loop.max_ngram);
  if (o.loop.min_repeats < 2) fail("--loop-repeats must be at least 2, got {}", o.loop.min_repeats);
  LoadedModel lm = load_model(o.model);
  decode::GenerationConfig config = generation_config_from(o.flags, lm);
  if (config.source_of("do_sample") == "flag" && !config.do_sample)
    fail(
        "--do-sample false: seeds compares sampled runs across seeds, and greedy decoding draws "
        "nothing (every seed would give the same text); use generate for a greedy run, or "
        "--temperature 0 here to see that for yourself");
  config.do_sample = true;  // a seed study samples; temperature 0 still means greedy
  config.sources["do_sample"] = "seeds";
  const std::uint64_t first_seed = config.seed.value_or(0);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  ThreadPool pool(o.model.threads);
  engine::Engine source(lm.model(), pool);
  decode::GenerateOptions go;
  if (lm.tokenizer()) go.token_bytes = [&](std::int32_t id) { return lm.token_bytes(id); };
  // Every seed is its own run; all of them step together (one forward pass per token).
  std::vector<decode::Request> jobs;
  for (int i = 0; i < o.n; ++i) {
    config.seed = first_seed + static_cast<std::uint64_t>(i);
    jobs.push_back({ids, config, go});
  }
  std::vector<inspect::SeedRun> runs;
  std::string chain, mode;
  std::optional<Progress> progress;
  if (!decode::is_beam(decode::decode_mode(config))) {  // beam search reports no tokens as it goes
    progress.emplace("seeds",
                     static_cast<std::size_t>(o.n) *
                         static_cast<std::size_t>(decode::max_new_tokens_for(config, ids.size())));
    for (auto& job : jobs)
      job.options.on_token = [&progress](int, const decode::TokenChoice&) { progress->advance(); };
  }
  const std::vector<decode::GenerationRun> all = decode::generate_batch(source, jobs);
  progress.reset();
  for (const decode::GenerationRun& run : all) {
    chain = run.chain;
    mode = decode::to_string(run.mode);
    const auto& r = run.sequences.front();
    runs.push_back({run.seed, r.tokens, r.text, r.logprob, decode::to_string(r.finish)});
  }
  const inspect::SeedSummary s = inspect::summarize_seeds(runs, o.loop);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = lm.model().path();
    j["prompt_token_ids"] = ids;
    j["mode"] = mode;
    j["chain"] = chain;
    j["loop_rule"] = {{"max_ngram", o.loop.max_ngram},
                      {"min_repeats", o.loop.min_repeats},
                      {"text", o.loop.describe()}};
    j["runs"] = nlohmann::ordered_json::array();
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& loop = s.loop_of_run[i];
      j["runs"].push_back({{"seed", runs[i].seed},
                           {"tokens", runs[i].tokens},
                           {"text", decode::sanitize_utf8(runs[i].text)},
                           {"logprob", runs[i].logprob},
                           {"finish_reason", runs[i].finish},
                           {"loop", loop ? nlohmann::ordered_json{{"start", loop->start},
                                                                  {"ngram", loop->ngram},
                                                                  {"repeats", loop->repeats}}
                                         : nlohmann::ordered_json()}});
    }
    j["distinct"] = nlohmann::ordered_json::array();
    for (const auto& d : s.distinct)
      j["distinct"].push_back({{"count", d.count},
                               {"seeds", d.seeds},
                               {"tokens", d.tokens},
                               {"text", decode::sanitize_utf8(d.text)}});
    j["first_divergence"] =
        s.first_divergence ? nlohmann::ordered_json(*s.first_divergence) : nlohmann::ordered_json();
    j["logprob"] = {{"mean", s.mean_logprob}, {"std", s.std_logprob}};
    j["length"] = {{"mean", s.mean_length}, {"std", s.std_length}};
    j["loops"] = s.loops;
    j["loop_rate"] = s.loop_rate;
    print_json_line(j);
    return;
  }
  fmt::print("{} runs, seeds {}..{} · {} · prompt {} tokens\nchain {}\n\n", s.runs, first_seed,
             first_seed + static_cast<std::uint64_t>(o.n - 1), mode, ids.size(), chain);
  fmt::print("{} distinct output{}:\n", s.distinct.size(), s.distinct.size() == 1 ? "" : "s");
  fmt::print("  {:>5} {:>6}  {:<22} {}\n", "count", "share", "seeds", "text");
  for (const auto& d : s.distinct)
    fmt::print("  {:>5} {:>5.1f}%  {:<22} \"{}\"\n", d.count, 100.0 * d.count / s.runs,
               join_seeds(d.seeds), printable(d.text));
  if (s.first_divergence)
    fmt::print("\nfirst divergence  step {} (the runs agree on the first {} token{})\n",
               *s.first_divergence, *s.first_divergence, *s.first_divergence == 1 ? "" : "s");
  else
    fmt::print("\nfirst divergence  none: every run produced the same tokens\n");
  fmt::print("sequence logprob  mean {:.4f}   sd {:.4f}   (raw model log-probability)\n",
             s.mean_logprob, s.std_logprob);
  fmt::print("length            mean {:.2f}   sd {:.2f} tokens\n", s.mean_length, s.std_length);
  fmt::print("repetition loops  {}/{} = {:.1f}%   (rule: {})\n", s.loops, s.runs, 100 * s.loop_rate,
             o.loop.describe());
}

}  // namespace

void add_seeds_command(CLI::App& app) {
  auto o = std::make_shared<SeedsCli>();
  auto* cmd = app.add_subcommand(
      "seeds", "N seeded generations: distinct outputs, divergence, logprob/length spread, loops");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("-n,--n", o->n, "Number of runs (seeds --seed .. --seed + N - 1)")
      ->capture_default_str();
  cmd->add_option("--loop-ngram", o->loop.max_ngram, "Loop rule: longest repeated block")
      ->capture_default_str();
  cmd->add_option("--loop-repeats", o->loop.min_repeats, "Loop rule: back-to-back repeats")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of the report");
  cmd->callback([o] { run_seeds(*o); });
}

}  // namespace ls::app
