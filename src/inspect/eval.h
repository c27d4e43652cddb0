// Golden-set evaluation: a JSON Lines file of prompts with expected answers, checked against
// what generation produced under fixed settings. A case expects exactly one of: "exact" (the
// generated text equals it), "contains" (the text contains it) or "top1" (the model's raw top-1
// token at generated step "step", a token id or its text). Parsing errors name file and line.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ls::inspect {

enum class ExpectKind { exact, contains, top1 };
std::string to_string(ExpectKind kind);

struct GoldenCase {
  std::string id;  // "id" field, or "line N"
  int line = 0;
  std::string prompt;
  bool chat = false;
  std::string system;
  ExpectKind kind = ExpectKind::exact;
  std::string expected_text;                // exact / contains, or top1 given as text
  std::optional<std::int32_t> expected_id;  // top1 given as an id
  int step = 0;                             // top1: 0-based generated step
  std::optional<int> max_new_tokens;        // per-case override
};

std::vector<GoldenCase> read_golden(const std::string& path);

// What generation gave for one case.
struct CaseOutput {
  std::string text;
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> raw_top1;  // the model's raw argmax at each generated step
};

struct CaseResult {
  bool pass = false;
  std::string got;  // what was compared, for the table
};

// `token_text` renders an id (a top1 expectation given as text is compared with it).
// A top1 case that was not reached (generation ended earlier) fails with got "(not reached)".
CaseResult check_case(const GoldenCase& c, const CaseOutput& out,
                      const std::function<std::string(std::int32_t)>& token_text);

}  // namespace ls::inspect
