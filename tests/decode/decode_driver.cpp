// Test driver for the numpy reference test: reads cases (score vectors, token histories, stage
// parameters, configs, draws, seeds) from a JSON file, runs logitscope's decoding code on each
// and writes the results as JSON. check_against_numpy.py generates the cases, runs this binary
// and compares every result with its own numpy implementation of transformers' formulas.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "decode/choose.h"
#include "decode/cutoff.h"
#include "decode/dry.h"
#include "decode/dynamic_temperature.h"
#include "decode/generation_config.h"
#include "decode/inf_nan.h"
#include "decode/logits_source.h"
#include "decode/min_length.h"
#include "decode/min_p.h"
#include "decode/mirostat.h"
#include "decode/no_repeat_ngram.h"
#include "decode/order.h"
#include "decode/penalties.h"
#include "decode/rng.h"
#include "decode/score.h"
#include "decode/sequence_bias.h"
#include "decode/temperature.h"
#include "decode/top_k.h"
#include "decode/top_n_sigma.h"
#include "decode/top_p.h"
#include "decode/typical_p.h"
#include "decode/xtc.h"

using nlohmann::json;
using namespace ls::decode;

namespace {

float to_float(const json& v) {
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "inf") return std::numeric_limits<float>::infinity();
    if (s == "-inf") return -std::numeric_limits<float>::infinity();
    if (s == "nan") return std::numeric_limits<float>::quiet_NaN();
    ls::fail("bad float string '{}'", s);
  }
  return static_cast<float>(v.get<double>());
}

json from_float(float f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
  return static_cast<double>(f);
}

std::vector<float> floats(const json& arr) {
  std::vector<float> out;
  for (const auto& v : arr) out.push_back(to_float(v));
  return out;
}

json floats_json(std::span<const float> v) {
  json out = json::array();
  for (float f : v) out.push_back(from_float(f));
  return out;
}

std::vector<std::vector<std::int32_t>> id_lists(const json& j) {
  return j.get<std::vector<std::vector<std::int32_t>>>();
}

// DRY's breakers over a made-up vocabulary: the case gives each token's text ("texts") and the
// encoding of every breaker rest the resolution may ask for ("encodings").
std::shared_ptr<const DryBreakers> dry_breakers(const json& p,
                                                const std::vector<std::string>& breakers) {
  const auto texts = p.at("texts").get<std::vector<std::string>>();
  const auto encodings = p.at("encodings").get<std::map<std::string, std::vector<std::int32_t>>>();
  return std::make_shared<const DryBreakers>(resolve_dry_breakers(
      breakers, static_cast<std::int32_t>(texts.size()),
      [&](std::int32_t id) { return texts.at(static_cast<std::size_t>(id)); },
      [&](std::string_view text) {
        const auto it = encodings.find(std::string(text));
        if (it == encodings.end()) ls::fail("no encoding given for '{}'", text);
        return it->second;
      }));
}

std::unique_ptr<LogitsProcessor> make_stage(const json& c, std::int32_t vocab) {
  const std::string stage = c.at("stage");
  const json& p = c.at("params");
  const int keep = p.value("min_keep", 1);
  if (stage == "dry") {
    return std::make_unique<Dry>(
        p.at("multiplier").get<double>(), p.at("base").get<double>(),
        p.at("allowed_length").get<int>(), p.at("last_n").get<int>(),
        p.contains("breakers") ? dry_breakers(p, p.at("breakers").get<std::vector<std::string>>())
                               : nullptr);
  }
  if (stage == "mirostat")
    return std::make_unique<Mirostat>(p.at("version").get<int>(), p.at("tau").get<double>(),
                                      p.at("eta").get<double>(), vocab);
  if (stage == "temperature" && p.contains("dynatemp_range"))
    return std::make_unique<DynamicTemperature>(p.at("t").get<double>(),
                                                p.at("dynatemp_range").get<double>(),
                                                p.at("dynatemp_exponent").get<double>());
  if (stage == "temperature") return std::make_unique<Temperature>(p.at("t").get<double>());
  if (stage == "top_n_sigma") return std::make_unique<TopNSigma>(p.at("n").get<double>());
  if (stage == "xtc")
    return std::make_unique<Xtc>(p.at("probability").get<double>(), p.at("threshold").get<double>(),
                                 keep, p.at("seed").get<std::uint64_t>(),
                                 p.at("stream").get<int>());
  if (stage == "repetition_penalty")
    return std::make_unique<RepetitionPenalty>(p.at("penalty").get<double>());
  if (stage == "presence_penalty")
    return std::make_unique<PresencePenalty>(p.at("penalty").get<double>());
  if (stage == "frequency_penalty")
    return std::make_unique<FrequencyPenalty>(p.at("penalty").get<double>());
  if (stage == "no_repeat_ngram_size") return std::make_unique<NoRepeatNgram>(p.at("n").get<int>());
  if (stage == "sequence_bias") {
    std::vector<BiasedSequence> seqs;
    for (const auto& pair : p.at("bias")) {
      seqs.push_back({pair[0].get<std::vector<std::int32_t>>(), pair[1].get<double>()});
    }
    return std::make_unique<SequenceBias>(std::move(seqs), vocab);
  }
  if (stage == "bad_words_ids") {
    return make_bad_words(id_lists(p.at("words")), p.at("eos").get<std::vector<std::int32_t>>(),
                          vocab);
  }
  if (stage == "min_length" || stage == "min_new_tokens") {
    return std::make_unique<MinLength>(p.at("min").get<int>(),
                                       p.at("eos").get<std::vector<std::int32_t>>(),
                                       stage == "min_new_tokens");
  }
  if (stage == "suppress_tokens") {
    return std::make_unique<SuppressTokens>(p.at("tokens").get<std::vector<std::int32_t>>(), vocab);
  }
  if (stage == "remove_invalid_values") return std::make_unique<InfNanRemove>();
  if (stage == "top_k")
    return std::make_unique<TopK>(p.at("k").get<int>(), keep, p.value("keep_ties", true));
  if (stage == "top_p") {
    const bool llama = p.value("rule", "hf") == "llama.cpp";
    return std::make_unique<TopP>(p.at("p").get<double>(), keep,
                                  llama ? TopPRule::llama_cpp : TopPRule::hf);
  }
  if (stage == "min_p") return std::make_unique<MinP>(p.at("p").get<double>(), keep);
  if (stage == "typical_p") return std::make_unique<TypicalP>(p.at("mass").get<double>(), keep);
  if (stage == "epsilon_cutoff")
    return std::make_unique<EpsilonCutoff>(p.at("epsilon").get<double>(), keep);
  if (stage == "eta_cutoff") return std::make_unique<EtaCutoff>(p.at("eta").get<double>(), keep);
  ls::fail("unknown stage '{}'", stage);
}

// Row i of `rows` is the score vector after i+1 tokens have been fed (prompt counts from 1).
struct RowsSource final : LogitsSource {
  std::vector<std::vector<float>> rows;
  std::size_t fed = 0;
  std::int32_t vocab_size() const override { return static_cast<std::int32_t>(rows.at(0).size()); }
  std::vector<std::span<const float>> step(std::span<const Feed> feeds) override {
    if (feeds.size() != 1) ls::fail("RowsSource holds one sequence, got {} feeds", feeds.size());
    fed += feeds[0].tokens.size();
    return {rows.at(fed - 1)};
  }
  void fork(int, int) override {}
  void release(int) override { fed = 0; }
};

json run_case(const json& c) {
  const std::string kind = c.at("kind");
  json out = {{"name", c.value("name", "")}};
  if (kind == "stage" || kind == "chain") {
    std::vector<float> scores = floats(c.at("scores"));
    const auto tokens = c.value("tokens", std::vector<std::int32_t>{});
    const TokenHistory history{tokens, c.value("prompt_len", std::size_t{0})};
    const auto vocab = static_cast<std::int32_t>(scores.size());
    if (kind == "stage") {
      auto stage = make_stage(c, vocab);
      stage->apply(scores, history);
      out["describe"] = stage->describe();
    } else {
      GenerationConfig config;
      apply_generation_json(config, c.at("config"), "case");
      validate(config);
      if (c.contains("texts")) config.dry_breakers = dry_breakers(c, config.dry_sequence_breakers);
      ProcessorChain chain = build_chain(config, {vocab, c.value("include_warpers", true), 1});
      json counts = json::array();
      chain.apply_observed(scores, history,
                           [&](const LogitsProcessor&, std::span<const float> after) {
                             std::int32_t n = 0;
                             for (float f : after) n += f > -std::numeric_limits<float>::infinity();
                             counts.push_back(n);
                           });
      out["stages"] = chain.names();
      out["counts"] = counts;
      out["describe"] = chain.describe();
    }
    out["scores"] = floats_json(scores);
  } else if (kind == "steps") {
    // One stage or chain over successive steps: apply to row k with the history so far, then
    // accept the case's token k (it joins the history): stateful stages such as mirostat.
    std::vector<std::int32_t> tokens = c.value("tokens", std::vector<std::int32_t>{});
    const std::size_t prompt_len = c.value("prompt_len", tokens.size());
    const auto rows = c.at("rows");
    const auto vocab = static_cast<std::int32_t>(rows.at(0).size());
    std::unique_ptr<LogitsProcessor> stage;
    if (c.contains("config")) {
      GenerationConfig config;
      apply_generation_json(config, c.at("config"), "case");
      validate(config);
      if (c.contains("texts")) config.dry_breakers = dry_breakers(c, config.dry_sequence_breakers);
      stage = std::make_unique<ProcessorChain>(build_chain(config, {vocab, true, 1}));
      out["stages"] = static_cast<ProcessorChain&>(*stage).names();
    } else {
      stage = make_stage(c, vocab);
    }
    json steps = json::array(), describes = json::array(), mus = json::array();
    const auto accept = c.at("accept").get<std::vector<std::int32_t>>();
    for (std::size_t k = 0; k < rows.size(); ++k) {
      std::vector<float> scores = floats(rows[k]);
      stage->apply(scores, {tokens, prompt_len});
      describes.push_back(stage->describe());
      steps.push_back(floats_json(scores));
      stage->accept(accept.at(k));
      tokens.push_back(accept.at(k));
      const LogitsProcessor* last = stage.get();
      if (const auto* chain = dynamic_cast<const ProcessorChain*>(last); chain && !chain->empty())
        last = chain->stages().back().get();
      if (const auto* m = dynamic_cast<const Mirostat*>(last)) mus.push_back(m->mu());
    }
    out["mus"] = mus;
    out["steps"] = steps;
    out["describes"] = describes;
  } else if (kind == "sample") {
    const auto scores = floats(c.at("scores"));
    json tokens = json::array();
    for (const auto& d : c.at("draws")) tokens.push_back(choose_sample(scores, d.get<double>()));
    out["tokens"] = tokens;
    out["greedy"] = choose_greedy(scores);
  } else if (kind == "rng") {
    Rng a(c.at("seed").get<std::uint64_t>());
    Rng b(c.at("seed").get<std::uint64_t>());
    json u64 = json::array(), uniform = json::array();
    for (int i = 0; i < c.at("n").get<int>(); ++i) {
      u64.push_back(a.next_u64());
      uniform.push_back(b.uniform());
    }
    out["u64"] = u64;
    out["uniform"] = uniform;
  } else if (kind == "rng_stream") {
    Rng a = Rng::stream(c.at("seed").get<std::uint64_t>(), c.at("index").get<int>());
    json u64 = json::array();
    for (int i = 0; i < c.at("n").get<int>(); ++i) u64.push_back(a.next_u64());
    out["u64"] = u64;
  } else if (kind == "score") {
    RowsSource source;
    for (const auto& row : c.at("rows")) source.rows.push_back(floats(row));
    const auto prompt = c.at("prompt").get<std::vector<std::int32_t>>();
    const auto cont = c.at("continuation").get<std::vector<std::int32_t>>();
    const ScoreResult r = score_continuation(source, prompt, cont);
    json lp = json::array(), ranks = json::array();
    for (const auto& t : r.tokens) {
      lp.push_back(t.logprob);
      ranks.push_back(t.rank);
    }
    // The all-rows variant must agree exactly: row i is the row fed before continuation[i].
    std::vector<float> rows;
    for (std::size_t i = 0; i < cont.size(); ++i) {
      const auto& row = source.rows.at(prompt.size() - 1 + i);
      rows.insert(rows.end(), row.begin(), row.end());
    }
    const ScoreResult r2 = score_rows(rows, source.vocab_size(), cont);
    for (std::size_t i = 0; i < cont.size(); ++i) {
      if (r2.tokens[i].logprob != r.tokens[i].logprob || r2.tokens[i].rank != r.tokens[i].rank) {
        ls::fail("score_rows differs from score_continuation at token {}", i);
      }
    }
    out["logprobs"] = lp;
    out["ranks"] = ranks;
    out["sum"] = r.sum;
    out["mean"] = r.mean;
    out["perplexity"] = r.perplexity;
  } else {
    ls::fail("unknown case kind '{}'", kind);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: decode_driver CASES.json RESULTS.json\n");
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    const json cases = json::parse(in);
    json results = json::array();
    for (const auto& c : cases.at("cases")) {
      try {
        results.push_back(run_case(c));
      } catch (const ls::Error& e) {
        results.push_back({{"name", c.value("name", "")}, {"error", e.what()}});
      }
    }
    std::ofstream(argv[2]) << json{{"results", results}}.dump();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decode_driver: %s\n", e.what());
    return 1;
  }
  return 0;
}
