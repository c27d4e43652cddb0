// Replay: re-score a recorded generation (a `generate --json --dump-logits` trace) under other
// decoding settings without running the model. The road actually taken stays fixed: each step
// sees the recorded history, runs the new chain on the recorded raw logits and chooses again
// (greedy, or sampling with the draw the trace recorded so that only the settings differ).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "decode/generate.h"
#include "decode/generation_config.h"
#include "inspect/sweep.h"

namespace ls::inspect {

struct RecordedStep {
  int step = 0;
  std::int32_t chosen = 0;
  std::optional<double> draw;
};

struct Recording {
  std::string path;
  nlohmann::json header;
  std::vector<std::int32_t> prompt;
  std::vector<RecordedStep> steps;  // sequence 0
  std::string logits_file;          // header "logits_file", relative to the trace's folder
};

// Throws naming the file and line for a trace that is not a generate --json trace of a greedy
// or sampled run.
Recording read_trace(const std::string& path);
// The settings the trace recorded (sources "trace"), as a base for the replay flags.
decode::GenerationConfig recorded_config(const Recording& r);
// The recording's grammar ({"value": description, "gbnf": text, ...} from its settings), or
// null when it ran without one. recorded_config() cannot rebuild it: that needs the vocabulary.
const nlohmann::json* recorded_grammar(const Recording& r);

struct ReplayStep {
  int step = 0;
  std::int32_t recorded = 0;  // the token the recorded run chose
  std::int32_t chosen = 0;    // the token the new settings choose
  bool changed = false;
  std::int32_t pool = 0;
  double entropy = 0;        // nats, new final distribution
  double recorded_prob = 0;  // the recorded token's probability under the new settings
  double chosen_prob = 0;
  std::optional<double> draw;
  std::string chain;
  std::vector<SweepCandidate> top;
};

// A recorded run continued from a forced token: the recorded tokens before `step`, then
// `token`, then generation under `config` for the rest of the recorded budget.
struct ForkResult {
  std::vector<std::int32_t> tokens;  // generated: the recorded prefix, the forced token, the rest
  decode::GenerationResult continuation;  // what was generated after the forced token
};
ForkResult replay_fork(decode::LogitsSource& source, const Recording& r, int step,
                       std::int32_t token, const decode::GenerationConfig& config,
                       const decode::TokenBytesFn& token_bytes);

// Step k's `vocab` raw logits (a row that stays valid for the call).
using LogitsRowFn = std::function<std::span<const float>(std::size_t step)>;

// One step to show in full: its trace (raw top, every stage, the choice) is filled in.
struct ReplayFocus {
  int step = -1;  // -1: none
  decode::StepTrace* trace = nullptr;
  int trace_top_n = 10;
};

// `row(k)` gives the raw logits of recorded step k, for every step of `r`.
std::vector<ReplayStep> replay(const Recording& r, const LogitsRowFn& row, std::int32_t vocab,
                               const decode::GenerationConfig& config, int top_n,
                               const ReplayFocus& focus = {});
// `logits` holds one row of `vocab` raw logits per recorded step.
std::vector<ReplayStep> replay(const Recording& r, std::span<const float> logits,
                               std::int32_t vocab, const decode::GenerationConfig& config,
                               int top_n);

}  // namespace ls::inspect
