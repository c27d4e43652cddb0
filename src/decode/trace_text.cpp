// Text tables for the per-step trace (see trace_text.h).
#include "decode/trace_text.h"

#include <fmt/format.h>

#include <algorithm>

#include "decode/trace_json.h"

namespace ls::decode {

namespace {

// fmt 9 has no '%' presentation for floats.
std::string pct(double p, int digits = 1) {
  return fmt::format("{:.{}f}%", 100.0 * p, digits);
}

std::string token_label(std::int32_t id, const TokenBytesFn& token_bytes) {
  if (!token_bytes) return fmt::format("#{}", id);
  return fmt::format("'{}'#{}", display_token(token_bytes(id)), id);
}

std::string top_list(const std::vector<TokenScore>& top, const TokenBytesFn& token_bytes) {
  std::string out;
  for (const auto& t : top) {
    if (!out.empty()) out += "  ";
    out += fmt::format("{} {:.2f} {}", token_label(t.id, token_bytes), t.logit, pct(t.prob));
  }
  return out;
}

}  // namespace

std::string format_experts(const std::vector<std::vector<ExpertChoice>>& experts, std::size_t shown,
                           const std::string& indent, std::size_t width) {
  if (experts.empty() || shown == 0) return {};
  std::string out, line;
  for (std::size_t l = 0; l < experts.size(); ++l) {
    std::string item = fmt::format("L{}", l);
    if (experts[l].empty()) item += " dense";
    for (std::size_t j = 0; j < experts[l].size() && j < shown; ++j)
      item += fmt::format(" {}:{:.3f}", experts[l][j].expert, experts[l][j].weight);
    if (!line.empty() && indent.size() + line.size() + 3 + item.size() > width) {
      out += indent + line + "\n";
      line.clear();
    }
    line += line.empty() ? item : " | " + item;
  }
  return out + indent + line + "\n";
}

std::string format_step(const StepTrace& s, const TokenBytesFn& token_bytes,
                        std::size_t experts_shown) {
  std::string out =
      fmt::format("── step {} · sequence {} · {}", s.step, s.sequence, to_string(s.mode));
  if (s.draw) out += fmt::format(" · draw {:.17g}", *s.draw);
  out += "\n";
  if (s.raw_candidates > 0) {
    out += fmt::format("  {:<22} {:>7} {:>8} {:>7}  {}\n", "stage", "left", "removed", "H nats",
                       "top tokens: text#id score prob");
    out += fmt::format("  {:<22} {:>7} {:>8} {:>7.3f}  {}\n", "raw logits", s.raw_candidates, "",
                       s.entropy_before, top_list(s.raw_top, token_bytes));
  }
  for (const auto& st : s.stages) {
    const std::string removed = st.mass_removed > 0 ? pct(st.mass_removed, 2) : std::string();
    // A stage that removed every better token (a grammar pressing on the model) says so.
    const std::string pressed =
        st.best_kept_rank > 1 ? fmt::format("  (best left was #{} before)", st.best_kept_rank) : "";
    out += fmt::format("  {:<22} {:>7} {:>8} {:>7.3f}  {}{}\n", st.name, st.candidates, removed,
                       st.entropy, top_list(st.top, token_bytes), pressed);
  }
  if (s.chosen >= 0) {
    out += fmt::format(
        "  -> chosen {}: raw rank {}, raw p {} (logprob {:.4f}), final p {} (logprob {:.4f})",
        token_label(s.chosen, token_bytes), s.chosen_raw_rank, pct(s.chosen_raw_prob, 2),
        s.chosen_raw_logprob, pct(s.chosen_prob, 2), s.chosen_logprob);
    if (s.runner_up >= 0) {
      out += fmt::format(", margin {}{} over {}", s.margin_prob >= 0 ? "+" : "",
                         pct(s.margin_prob, 2), token_label(s.runner_up, token_bytes));
    } else {
      out += ", no runner-up left";
    }
    out += fmt::format(
        "\n     entropy {:.3f} -> {:.3f} nats · truncation removed {} of the raw mass · "
        "sequence logprob {:.4f}\n",
        s.entropy_before, s.entropy_after, pct(s.mass_removed, 2), s.sequence_logprob);
  }
  // The router's choice for a token: "experts of WHOSE (layer expert:weight, best N of K ...)".
  const auto experts_block = [&](const std::vector<std::vector<ExpertChoice>>& experts,
                                 const std::string& whose) {
    if (experts.empty() || experts_shown == 0) return;
    std::size_t per_layer = 0;
    for (const auto& layer : experts) per_layer = std::max(per_layer, layer.size());
    out += fmt::format("  experts of {} (layer expert:weight, best {} of {} per layer)\n", whose,
                       std::min(experts_shown, per_layer), per_layer);
    out += format_experts(experts, experts_shown, "    ");
  };
  experts_block(s.experts, "the input token");
  for (const auto& b : s.beams) {
    std::string text;
    for (std::int32_t id : b.tokens) {
      text += token_bytes ? display_token(token_bytes(id)) : fmt::format("#{} ", id);
    }
    out += fmt::format("  {:<8} from beam {:>2}  score {:>10.4f}  sum logprob {:>10.4f}  \"{}\"\n",
                       b.status, b.parent, b.score, b.sum_logprob, text);
  }
  for (std::size_t b = 0; b < s.beam_experts.size(); ++b)
    experts_block(s.beam_experts[b], fmt::format("beam {}'s input token", b));
  return out;
}

}  // namespace ls::decode
