// Trace reading and step re-scoring (see replay.h).
#include "inspect/replay.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "core/mapped_file.h"
#include "decode/choose.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/rng.h"
#include "decode/sampler.h"

namespace ls::inspect {

Recording read_trace(const std::string& path) {
  require_regular_file(path, kMaxTextFileBytes, "--trace");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("--trace {}: cannot open the file", path);
  Recording r;
  r.path = path;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      fail("{} line {}: not valid JSON ({})", path, line, e.what());
    }
    const std::string type = j.value("type", "");
    if (type == "header") {
      r.header = j;
      const std::string mode = j.value("mode", "");
      if (mode != "greedy" && mode != "sample")
        fail("{} line {}: replay needs a greedy or sampled trace, this one is mode '{}'", path,
             line, mode);
      if (!j.contains("prompt_token_ids") || !j["prompt_token_ids"].is_array())
        fail("{} line {}: header has no 'prompt_token_ids'", path, line);
      r.prompt = j["prompt_token_ids"].get<std::vector<std::int32_t>>();
      if (j.contains("logits_file") && j["logits_file"].is_string()) {
        const std::filesystem::path f = j["logits_file"].get<std::string>();
        r.logits_file =
            f.is_absolute() ? f.string() : (std::filesystem::path(path).parent_path() / f).string();
      }
    } else if (type == "step") {
      if (r.header.is_null()) fail("{} line {}: a step before the header", path, line);
      if (j.value("sequence", 0) != 0) continue;  // replay follows sequence 0
      if (!j.contains("chosen") || !j["chosen"].contains("id"))
        fail("{} line {}: step without 'chosen'.'id'", path, line);
      RecordedStep s;
      s.step = j.value("step", 0);
      if (s.step != static_cast<int>(r.steps.size()))
        fail("{} line {}: expected step {}, got {}", path, line, r.steps.size(), s.step);
      s.chosen = j["chosen"]["id"].get<std::int32_t>();
      if (j.contains("draw") && j["draw"].is_number()) s.draw = j["draw"].get<double>();
      r.steps.push_back(s);
    }
  }
  if (r.header.is_null()) fail("--trace {}: no header line (write it with generate --json)", path);
  if (r.steps.empty()) fail("--trace {}: no steps recorded", path);
  return r;
}

decode::GenerationConfig recorded_config(const Recording& r) {
  decode::GenerationConfig c;
  if (r.header.contains("settings") && r.header["settings"].is_object()) {
    nlohmann::json values = nlohmann::json::object();
    for (const auto& [name, entry] : r.header["settings"].items())
      if (entry.is_object() && entry.contains("value")) values[name] = entry["value"];
    decode::apply_generation_json(c, values, r.path + " header 'settings'");
  }
  for (auto& [name, source] : c.sources) source = "trace";
  return c;
}

const nlohmann::json* recorded_grammar(const Recording& r) {
  const auto& h = r.header;
  if (!h.contains("settings") || !h["settings"].is_object() || !h["settings"].contains("grammar"))
    return nullptr;
  const nlohmann::json& g = h["settings"]["grammar"];
  if (!g.is_object() || !g.contains("gbnf") || !g["gbnf"].is_string()) return nullptr;
  if (!g.contains("value") || !g["value"].is_string())
    fail("{}: header 'settings.grammar' has a grammar but no description ('value')", r.path);
  return &g;
}

std::vector<ReplayStep> replay(const Recording& r, std::span<const float> logits,
                               std::int32_t vocab, const decode::GenerationConfig& config,
                               int top_n) {
  const auto V = static_cast<std::size_t>(vocab);
  if (vocab <= 0 || logits.size() < r.steps.size() * V)
    fail("{}: the logits hold {} rows of {} values, the trace has {} steps", r.logits_file,
         vocab > 0 ? logits.size() / V : 0, vocab, r.steps.size());
  return replay(
      r, [&](std::size_t k) { return logits.subspan(k * V, V); }, vocab, config, top_n);
}

std::vector<ReplayStep> replay(const Recording& r, const LogitsRowFn& row, std::int32_t vocab,
                               const decode::GenerationConfig& config, int top_n,
                               const ReplayFocus& focus) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const decode::DecodeMode mode = decode::decode_mode(config);
  if (decode::is_beam(mode))
    fail("replay re-scores one sequence step by step; --num-beams must be 1");
  decode::Sampler sampler(config, mode, vocab, config.seed.value_or(0));
  std::vector<std::int32_t> history(r.prompt);
  std::vector<ReplayStep> out;
  for (std::size_t k = 0; k < r.steps.size(); ++k) {
    const std::span<const float> raw = row(k);
    decode::ChoiceOptions how;
    how.draw = r.steps[k].draw;  // the recorded draw, so that only the settings differ
    how.accept = false;          // the road taken is the recorded one
    if (static_cast<int>(k) == focus.step && focus.trace != nullptr) {
      focus.trace->sequence = 0;
      focus.trace->step = static_cast<int>(k);
      how.trace = focus.trace;
      how.trace_top_n = focus.trace_top_n;
    }
    const decode::Choice choice = sampler.choose(raw, {history, r.prompt.size()}, how);
    const std::span<const float> work = sampler.final_scores();
    ReplayStep s;
    s.step = static_cast<int>(k);
    s.recorded = r.steps[k].chosen;
    s.chain = sampler.chain().describe();
    s.draw = choice.draw;
    s.chosen = choice.token;
    s.changed = s.chosen != s.recorded;
    s.pool = decode::count_candidates(work);
    s.entropy = decode::entropy(work);
    const double lse = decode::log_sum_exp(work), lse_raw = decode::log_sum_exp(raw);
    auto prob = [&](std::int32_t id) {
      const float v = work[static_cast<std::size_t>(id)];
      return v > kNegInf ? std::exp(static_cast<double>(v) - lse) : 0.0;
    };
    if (s.recorded < 0 || s.recorded >= vocab)
      fail("{}: step {} chose token {}, outside the vocabulary of {}", r.path, k, s.recorded,
           vocab);
    s.recorded_prob = prob(s.recorded);
    s.chosen_prob = prob(s.chosen);
    for (std::int32_t id : decode::ids_by_score_desc(work, top_n, true)) {
      const float l = raw[static_cast<std::size_t>(id)];
      s.top.push_back({id, l, std::exp(static_cast<double>(l) - lse_raw), prob(id)});
    }
    out.push_back(std::move(s));
    sampler.accept(r.steps[k].chosen);
    history.push_back(r.steps[k].chosen);
  }
  return out;
}

ForkResult replay_fork(decode::LogitsSource& source, const Recording& r, int step,
                       std::int32_t token, const decode::GenerationConfig& config,
                       const decode::TokenBytesFn& token_bytes) {
  std::vector<std::int32_t> prefix = r.prompt;
  for (int k = 0; k < step; ++k) prefix.push_back(r.steps[static_cast<std::size_t>(k)].chosen);
  prefix.push_back(token);
  // The forced token is one of the recorded run's new tokens: the continuation gets the rest.
  const int budget = decode::max_new_tokens_for(config, r.prompt.size());
  const int rest = budget - step - 1;
  if (rest < 0)
    fail("--fork at step {} leaves no room: max_new_tokens is {}, so the last step to fork is {}",
         step, budget, budget - 1);
  if (config.mirostat != 0 && decode::decode_mode(config) == decode::DecodeMode::sample)
    fail(
        "--fork: mirostat ({} {}) would restart its mu at 2 tau in the continuation instead of "
        "carrying the recorded steps' value; fork with mirostat 0",
        config.origin_of("mirostat"), config.mirostat);
  ForkResult out;
  out.tokens.assign(prefix.begin() + static_cast<std::ptrdiff_t>(r.prompt.size()), prefix.end());
  if (rest == 0) {  // the forced token was the last one the budget allows
    out.continuation.finish = decode::FinishReason::length;
    out.continuation.message = fmt::format("reached max_new_tokens ({})", budget);
    return out;
  }
  decode::GenerationConfig fc = config;
  fc.max_new_tokens = rest;
  fc.sources["max_new_tokens"] = "fork";
  if (decode::decode_mode(fc) != decode::DecodeMode::greedy && !fc.seed) fc.seed = 0;
  decode::GenerateOptions go;
  go.token_bytes = token_bytes;
  out.continuation = std::move(decode::generate(source, prefix, fc, go).sequences.front());
  out.tokens.insert(out.tokens.end(), out.continuation.tokens.begin(),
                    out.continuation.tokens.end());
  return out;
}

}  // namespace ls::inspect
