// What `generate` and `chat` share: the HF-named decoding flags (one per GenerationConfig field,
// plus --ban-word and --logit-bias-word), their layering over the model's generation_config.json,
// and SessionSource, the decoding loop's LogitsSource over model Sessions.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "app/prompt.h"
#include "decode/generation_config.h"
#include "decode/logits_source.h"
#include "model/model.h"

namespace ls::app {

struct GenerationFlags {
  std::map<std::string, std::string> single;                 // field -> flag value
  std::map<std::string, std::vector<std::string>> repeated;  // list fields, one item per use
  std::map<std::string, CLI::Option*> options;
  std::vector<std::string> ban_words;
  std::vector<std::string> bias_words;
  bool no_generation_config = false;
};

void add_generation_flags(CLI::App& cmd, GenerationFlags& f);
// Defaults, then the model's generation_config.json, then the flags; validated.
decode::GenerationConfig generation_config_from(const GenerationFlags& f, const LoadedModel& lm);

// One model Session per sequence id; fork copies a session (its tokens and KV cache).
class SessionSource final : public decode::LogitsSource {
 public:
  SessionSource(const Model& model, ThreadPool& pool) : model_(model), pool_(pool) {}
  std::int32_t vocab_size() const override;
  std::span<const float> feed(int seq, std::span<const std::int32_t> tokens) override;
  void fork(int from_seq, int to_seq) override;
  void reset(int seq) override;

 private:
  Session& session(int seq);
  const Model& model_;
  ThreadPool& pool_;
  std::map<int, std::unique_ptr<Session>> sessions_;
};

}  // namespace ls::app
