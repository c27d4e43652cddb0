// What a request constrains its text to: a compiled grammar, the vocabulary its token masks are
// taken over (built once per model), and how to name the constraint in traces and settings
// ("json_schema", "grammar file x.gbnf"). GenerationConfig carries one; the decode chain's
// `grammar` stage runs it.
#pragma once

#include <memory>
#include <string>

#include "grammar/grammar.h"
#include "grammar/token_mask.h"

namespace ls::grammar {

struct Constraint {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const Vocabulary> vocabulary;
  std::string description;
};

}  // namespace ls::grammar
