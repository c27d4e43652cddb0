// Human-readable rendering of StepTrace records for `generate --trace N`: one block per step with
// the raw top-N, one line per stage (pool size, mass removed, entropy, top-N), and the choice.
// The stages' parameters are printed once, in the header's chain line.
#pragma once

#include <string>

#include "decode/trace.h"

namespace ls::decode {

inline constexpr std::size_t kAllExperts = static_cast<std::size_t>(-1);

// `experts_shown`: of each layer's chosen experts (StepTrace::experts, a mixture of experts),
// the best this many are listed on the step's `experts` lines (0: none).
std::string format_step(const StepTrace& step, const TokenBytesFn& token_bytes,
                        std::size_t experts_shown = kAllExperts);

// The router's choice, compactly: "L0 3:0.412 7:0.221 | L1 ..." over lines of at most `width`
// columns (a layer is never split), each line starting with `indent`; each layer's best
// `shown` experts (a dense layer: "L2 dense"). "" when `experts` is empty or shown is 0.
std::string format_experts(const std::vector<std::vector<ExpertChoice>>& experts, std::size_t shown,
                           const std::string& indent, std::size_t width = 100);

}  // namespace ls::decode
