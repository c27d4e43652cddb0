// Human-readable rendering of StepTrace records for `generate --trace N`: one block per step with
// the raw top-N, one line per stage (pool size, mass removed, entropy, top-N), and the choice.
// The stages' parameters are printed once, in the header's chain line.
#pragma once

#include <string>

#include "decode/trace.h"

namespace ls::decode {

std::string format_step(const StepTrace& step, const TokenBytesFn& token_bytes);

}  // namespace ls::decode
