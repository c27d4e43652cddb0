// StepTrace and generation header as JSON objects (see trace_json.h).
#include "decode/trace_json.h"

#include <cmath>

#include <fmt/format.h>

#include "decode/order.h"

namespace ls::decode {

using nlohmann::json;

namespace {

// The byte length of the valid UTF-8 sequence at text[i], or 0 if it is invalid or cut off.
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  const auto c = static_cast<unsigned char>(text[i]);
  std::size_t need = 0;
  std::uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    need = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    need = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    need = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + need > text.size()) return 0;
  for (std::size_t k = 1; k < need; ++k) {
    const auto cc = static_cast<unsigned char>(text[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  static constexpr std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[need] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return need;
}

json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}

json token_json(std::int32_t id, const TokenBytesFn& token_bytes) {
  json t = {{"id", id}};
  if (token_bytes) {
    const std::string bytes = token_bytes(id);
    t["text"] = sanitize_utf8(bytes);
    t["bytes"] = hex_bytes(bytes);
  }
  return t;
}

json tokens_json(const std::vector<TokenScore>& top, const TokenBytesFn& token_bytes) {
  json out = json::array();
  for (const auto& t : top) {
    json item = token_json(t.id, token_bytes);
    item["logit"] = number(t.logit);
    item["prob"] = number(t.prob);
    out.push_back(std::move(item));
  }
  return out;
}

}  // namespace

std::string sanitize_utf8(std::string_view bytes) {
  std::string out;
  for (std::size_t i = 0; i < bytes.size();) {
    const std::size_t n = utf8_sequence_length(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string hex_bytes(std::string_view bytes) {
  std::string out;
  for (char c : bytes) {
    if (!out.empty()) out += ' ';
    out += fmt::format("{:02x}", static_cast<unsigned char>(c));
  }
  return out;
}

std::string display_token(std::string_view bytes) {
  std::string out;
  for (char c : sanitize_utf8(bytes)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out;
}

json step_json(const StepTrace& s, const TokenBytesFn& token_bytes) {
  json j = {
      {"type", "step"}, {"sequence", s.sequence}, {"step", s.step}, {"mode", to_string(s.mode)}};
  if (!s.raw_top.empty() || s.raw_candidates > 0) {
    j["raw"] = {{"candidates", s.raw_candidates},
                {"entropy", number(s.entropy_before)},
                {"top", tokens_json(s.raw_top, token_bytes)}};
    json stages = json::array();
    for (const auto& st : s.stages) {
      stages.push_back({{"name", st.name},
                        {"description", st.description},
                        {"candidates", st.candidates},
                        {"entropy", number(st.entropy)},
                        {"mass_removed", number(st.mass_removed)},
                        {"best_kept_rank", st.best_kept_rank},
                        {"top", tokens_json(st.top, token_bytes)}});
    }
    j["stages"] = std::move(stages);
  }
  if (s.chosen >= 0) {
    json chosen = token_json(s.chosen, token_bytes);
    chosen["raw_rank"] = s.chosen_raw_rank;
    chosen["logit"] = number(s.chosen_logit);
    chosen["raw_prob"] = number(s.chosen_raw_prob);
    chosen["raw_logprob"] = number(s.chosen_raw_logprob);
    chosen["prob"] = number(s.chosen_prob);
    chosen["logprob"] = number(s.chosen_logprob);
    j["chosen"] = std::move(chosen);
    j["runner_up"] = s.runner_up >= 0 ? token_json(s.runner_up, token_bytes) : json(nullptr);
    j["margin_prob"] = s.runner_up >= 0 ? number(s.margin_prob) : json(nullptr);
    j["margin_logit"] = s.runner_up >= 0 ? number(s.margin_logit) : json(nullptr);
    j["entropy_before"] = number(s.entropy_before);
    j["entropy_after"] = number(s.entropy_after);
    j["final_candidates"] = s.final_candidates;
    j["mass_removed"] = number(s.mass_removed);
    j["draw"] = s.draw ? json(*s.draw) : json(nullptr);
    j["sequence_logprob"] = number(s.sequence_logprob);
  }
  const auto experts_json = [](const std::vector<std::vector<ExpertChoice>>& experts) {
    json layers = json::array();
    for (const auto& layer : experts) {
      json row = json::array();
      for (const auto& e : layer) row.push_back({e.expert, number(e.weight)});
      layers.push_back(std::move(row));
    }
    return layers;
  };
  if (!s.experts.empty()) j["experts"] = experts_json(s.experts);
  if (!s.beams.empty()) {
    json beams = json::array();
    for (const auto& b : s.beams) {
      json tokens = json::array();
      for (std::int32_t id : b.tokens) tokens.push_back(token_json(id, token_bytes));
      beams.push_back({{"status", b.status},
                       {"parent", b.parent},
                       {"tokens", std::move(tokens)},
                       {"sum_logprob", number(b.sum_logprob)},
                       {"score", number(b.score)}});
    }
    j["beams"] = std::move(beams);
  }
  if (!s.beam_experts.empty()) {
    json per_beam = json::array();
    for (const auto& experts : s.beam_experts) per_beam.push_back(experts_json(experts));
    j["beam_experts"] = std::move(per_beam);
  }
  return j;
}

json header_json(const RunHeader& h) {
  return {{"type", "header"},
          {"mode", to_string(h.mode)},
          {"seed", h.seed},
          {"seed_source", h.seed_source},
          {"prompt_tokens", h.prompt_tokens},
          {"order_preset", to_string(h.order_preset)},
          {"order", h.order},
          {"stages", h.stages},
          {"chain", h.chain},
          {"settings", h.settings}};
}

}  // namespace ls::decode
