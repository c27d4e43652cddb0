// Microseconds per token mask at Qwen's vocabulary: the grammar stage's whole apply() (sync the
// parse, the mask from the cache or a trie walk, -inf over the scores) while a JSON answer is
// generated token by token, for three grammars: any JSON object, a schema with enums, integers
// and free strings, and a forced tool call. "cold" is each step's first visit of its parse
// state (a trie walk over the vocabulary); "stage" is what a sequence pays per step with the
// per-state cache, as in a server. Also the vocabulary trie's build time (once per model).
//   build/bench/decode/bench_grammar TOKENIZER_JSON
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "decode/grammar_stage.h"
#include "grammar/compose.h"
#include "grammar/json_schema.h"
#include "kernels/cpu_info.h"
#include "tokenizer/tokenizer.h"

namespace {

using Clock = std::chrono::steady_clock;
double us_since(Clock::time_point t) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t).count();
}

struct Case {
  const char* name;
  std::string gbnf;
  std::string text;  // the answer generated, tokenized as the model would write it
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_grammar TOKENIZER_JSON\n");
    return 2;
  }
  const ls::tok::Tokenizer tok = ls::tok::Tokenizer::load(argv[1]);
  auto t0 = Clock::now();
  std::vector<std::string> bytes(static_cast<std::size_t>(tok.size()));
  std::vector<bool> special(bytes.size());
  for (std::int32_t id = 0; id < tok.size(); ++id) {
    bytes[id] = tok.token_bytes(id);
    special[id] = tok.is_special(id);
  }
  auto vocab = std::make_shared<const ls::grammar::Vocabulary>(std::move(bytes), special);
  const double build_ms = us_since(t0) / 1000;
  const nlohmann::ordered_json schema =
      nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "city": {"enum": ["Paris", "Rome", "Oslo"]}, "days": {"type": "integer", "minimum": 1,
      "maximum": 14}, "note": {"type": "string", "maxLength": 200},
      "tags": {"type": "array", "items": {"type": "string"}}},
      "required": ["city", "days", "note", "tags"], "additionalProperties": false})");
  const std::string answer =
      R"({"city": "Paris", "days": 7, "note": "Pack a light coat: evenings by the river are cool in spring, and museums close early on Mondays.", "tags": ["culture", "food", "walks"]})";
  const std::vector<Case> cases = {
      {"json_object", ls::grammar::json_object_gbnf(), answer},
      {"json_schema", ls::grammar::json_schema_to_gbnf(schema, "bench"), answer},
      {"tool call", "",
       "<tool_call>\n{\"name\": \"plan\", \"arguments\": " + answer + "}\n</tool_call>"},
  };
  std::printf("CPU: %s; one thread; vocabulary %d tokens; trie built in %.0f ms\n",
              ls::kernels::cpu_model_name().c_str(), tok.size(), build_ms);
  std::printf("%-12s %6s %12s %13s %12s\n", "grammar", "steps", "cold us/step", "stage us/step",
              "stage max us");
  const std::int32_t eos = tok.token_to_id("<|im_end|>").value_or(0);
  for (const Case& c : cases) {
    ls::grammar::Grammar g;
    if (c.gbnf.empty()) {  // Qwen's call format around {"name": "plan", "arguments": schema}
      nlohmann::ordered_json call = {
          {"type", "object"}, {"required", {"name", "arguments"}}, {"additionalProperties", false}};
      call["properties"] = nlohmann::ordered_json::object();
      call["properties"]["name"] = {{"const", "plan"}};
      call["properties"]["arguments"] = schema;
      g = ls::grammar::enclose(
          ls::grammar::parse_gbnf(ls::grammar::json_schema_to_gbnf(call, "bench"), "bench"),
          "<tool_call>\n", "\n</tool_call>", false, "");
    } else {
      g = ls::grammar::parse_gbnf(c.gbnf, c.name);
    }
    auto constraint = std::make_shared<const ls::grammar::Constraint>(ls::grammar::Constraint{
        std::make_shared<const ls::grammar::Grammar>(std::move(g)), vocab, c.name});
    const std::vector<std::int32_t> ids = tok.encode(c.text);
    std::vector<float> scores(151936, 0.0f);
    // Cold: a new stage at each step (no cache, no states seen): it parses the history, then
    // walks the trie for the mask.
    double cold = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      ls::decode::GrammarStage stage(constraint, {eos});
      std::vector<std::int32_t> history(ids.begin(), ids.begin() + static_cast<long>(i));
      std::vector<float> warm(scores);
      const auto t = Clock::now();
      stage.apply(warm, {history, 0});
      cold += us_since(t);
      if (!std::isfinite(warm[ids[i]])) {
        std::printf("%s: token %zu (%d) was masked: the grammar refuses the answer\n", c.name, i,
                    ids[i]);
        return 1;
      }
    }
    // The stage as a sequence uses it: one per generation, the cache kept.
    ls::decode::GrammarStage stage(constraint, {eos});
    double total = 0, worst = 0;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      std::vector<std::int32_t> history(ids.begin(), ids.begin() + static_cast<long>(i));
      std::fill(scores.begin(), scores.end(), 0.0f);
      const auto t = Clock::now();
      stage.apply(scores, {history, 0});
      const double us = us_since(t);
      total += us;
      worst = std::max(worst, us);
    }
    std::printf("%-12s %6zu %12.0f %13.0f %12.0f\n", c.name, ids.size(), cold / ids.size(),
                total / ids.size(), worst);
  }
  return 0;
}
