// Golden file parsing and case checks (see eval.h).
#include "inspect/eval.h"

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/mapped_file.h"

namespace ls::inspect {

std::string to_string(ExpectKind kind) {
  switch (kind) {
    case ExpectKind::exact:
      return "exact";
    case ExpectKind::contains:
      return "contains";
    case ExpectKind::top1:
      return "top1";
  }
  return "?";
}

namespace {

std::string string_field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j[key].is_string())
    fail("{}: field '{}' must be a string, got {}", where, key, j[key].dump());
  return j[key].get<std::string>();
}

GoldenCase parse_case(const nlohmann::json& j, const std::string& where, int line) {
  if (!j.is_object()) fail("{}: each line must be a JSON object, got {}", where, j.dump());
  GoldenCase c;
  c.line = line;
  c.id = j.contains("id") ? string_field(j, "id", where) : fmt::format("line {}", line);
  if (!j.contains("prompt")) fail("{}: field 'prompt' is missing", where);
  c.prompt = string_field(j, "prompt", where);
  if (j.contains("chat")) {
    if (!j["chat"].is_boolean())
      fail("{}: field 'chat' must be true or false, got {}", where, j["chat"].dump());
    c.chat = j["chat"].get<bool>();
  }
  if (j.contains("system")) c.system = string_field(j, "system", where);
  int kinds = 0;
  if (j.contains("exact")) {
    c.kind = ExpectKind::exact;
    c.expected_text = string_field(j, "exact", where);
    ++kinds;
  }
  if (j.contains("contains")) {
    c.kind = ExpectKind::contains;
    c.expected_text = string_field(j, "contains", where);
    ++kinds;
  }
  if (j.contains("top1")) {
    c.kind = ExpectKind::top1;
    const auto& t = j["top1"];
    if (t.is_number_integer() && t.get<std::int64_t>() >= 0 && t.get<std::int64_t>() <= INT32_MAX)
      c.expected_id = t.get<std::int32_t>();
    else if (t.is_string())
      c.expected_text = t.get<std::string>();
    else
      fail("{}: field 'top1' must be a token id (non-negative integer) or a token's text, got {}",
           where, t.dump());
    if (j.contains("step")) {
      if (!j["step"].is_number_integer() || j["step"].get<std::int64_t>() < 0 ||
          j["step"].get<std::int64_t>() > 1000000)
        fail("{}: field 'step' must be a non-negative integer, got {}", where, j["step"].dump());
      c.step = j["step"].get<int>();
    }
    ++kinds;
  }
  if (kinds != 1)
    fail("{}: give exactly one of 'exact', 'contains', 'top1' (found {})", where, kinds);
  if (j.contains("max_new_tokens")) {
    const auto& m = j["max_new_tokens"];
    if (!m.is_number_integer() || m.get<std::int64_t>() < 1 || m.get<std::int64_t>() > 1000000)
      fail("{}: field 'max_new_tokens' must be a positive integer, got {}", where, m.dump());
    c.max_new_tokens = m.get<int>();
  }
  return c;
}

}  // namespace

std::vector<GoldenCase> read_golden(const std::string& path) {
  require_regular_file(path, kMaxTextFileBytes, "--golden");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("--golden {}: cannot open the file", path);
  std::vector<GoldenCase> cases;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = fmt::format("{} line {}", path, line);
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      fail("{}: not valid JSON ({})", where, e.what());
    }
    cases.push_back(parse_case(j, where, line));
  }
  if (cases.empty()) fail("--golden {}: no cases (one JSON object per line)", path);
  return cases;
}

CaseResult check_case(const GoldenCase& c, const CaseOutput& out,
                      const std::function<std::string(std::int32_t)>& token_text) {
  CaseResult r;
  switch (c.kind) {
    case ExpectKind::exact:
      r.got = out.text;
      r.pass = out.text == c.expected_text;
      break;
    case ExpectKind::contains:
      r.got = out.text;
      r.pass = out.text.find(c.expected_text) != std::string::npos;
      break;
    case ExpectKind::top1: {
      const auto k = static_cast<std::size_t>(c.step);
      if (k >= out.raw_top1.size()) {
        r.got = fmt::format("(not reached: {} steps generated)", out.raw_top1.size());
        r.pass = false;
        break;
      }
      const std::int32_t id = out.raw_top1[k];
      const std::string text = token_text ? token_text(id) : "";
      r.got = fmt::format("{} \"{}\"", id, text);
      r.pass = c.expected_id ? *c.expected_id == id : c.expected_text == text;
      break;
    }
  }
  return r;
}

}  // namespace ls::inspect
