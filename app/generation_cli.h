// What `generate` and `chat` share: the HF-named decoding flags (one per GenerationConfig field,
// plus --ban-word and --logit-bias-word), their layering over the model's generation_config.json,
// and a recorder of the raw logits a generation was given.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/prompt.h"
#include "decode/generation_config.h"
#include "decode/logits_source.h"
#include "inspect/replay.h"

namespace ls::app {

struct GenerationFlags {
  std::map<std::string, std::string> single;                 // field -> flag value
  std::map<std::string, std::vector<std::string>> repeated;  // list fields, one item per use
  std::map<std::string, CLI::Option*> options;
  std::vector<std::string> ban_words;
  std::vector<std::string> bias_words;
  bool no_generation_config = false;
  // Constrained decoding: at most one of a GBNF file, a JSON Schema file, or any JSON object.
  std::string grammar_file, json_schema_file;
  bool json_object = false;
  bool constrained() const {
    return !grammar_file.empty() || !json_schema_file.empty() || json_object;
  }
};

void add_generation_flags(CLI::App& cmd, GenerationFlags& f);
// Defaults, then the model's generation_config.json, then the flags; validated. Fields named in
// `skip` are left to the caller (sweep reads --temperature etc. as comma-separated lists).
decode::GenerationConfig generation_config_from(const GenerationFlags& f, const LoadedModel& lm,
                                                const std::vector<std::string>& skip = {});
// The constraint --grammar, --json-schema or --json-object ask for (null: none).
std::shared_ptr<const grammar::Constraint> constraint_from(const GenerationFlags& f,
                                                           const LoadedModel& lm);
// The flags over an existing config (replay starts from the settings a trace recorded);
// `tokenizer` may be null, then --ban-word/--logit-bias-word are an error. Not validated.
void apply_generation_flags(decode::GenerationConfig& config, const GenerationFlags& f,
                            const tok::Tokenizer* tokenizer,
                            const std::vector<std::string>& skip = {});
// `config` for a reply to `rendered` (the prompt text tokenized; "" for --tokens): when the
// chat template writes <think> blocks and the prompt leaves one to open, the constraint (if
// any) is moved after "</think>", as the server does for a thinking model.
decode::GenerationConfig for_reply(const decode::GenerationConfig& config,
                                   const std::string& rendered, const LoadedModel& lm);
// A recorded generation's settings (its trace header) with the flags over them, and its grammar
// (rebuilt from the header) unless the flags give another: what replay and lens --trace run.
// Not validated.
decode::GenerationConfig replay_config(const inspect::Recording& recording,
                                       const std::string& trace_path, const GenerationFlags& f,
                                       const LoadedModel& lm);
// The raw text given to a single-valued flag (e.g. "0.2,0.7" for --temperature), "" if unset.
std::string flag_text(const GenerationFlags& f, const std::string& field);

// Wraps a source and keeps a copy of every score row sequence 0 (the first returned sequence)
// is given, until it is released: the per-step raw logits that `generate --dump-logits` writes
// and `replay` re-scores.
class RecordingSource final : public decode::LogitsSource {
 public:
  explicit RecordingSource(decode::LogitsSource& inner) : inner_(inner) {}
  std::int32_t vocab_size() const override { return inner_.vocab_size(); }
  std::int32_t context_limit() const override { return inner_.context_limit(); }
  std::vector<std::span<const float>> step(std::span<const decode::Feed> feeds) override;
  void fork(int from_seq, int to_seq) override { inner_.fork(from_seq, to_seq); }
  void release(int seq) override;
  std::span<const decode::ExpertChoice> expert_routes(int seq) const override {
    return inner_.expert_routes(seq);
  }
  int experts_per_token() const override { return inner_.experts_per_token(); }
  const std::vector<float>& rows() const { return rows_; }

 private:
  decode::LogitsSource& inner_;
  std::vector<float> rows_;
  bool done_ = false;
};

}  // namespace ls::app
