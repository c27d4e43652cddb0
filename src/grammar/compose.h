// Grammars built from grammars: a call format around a JSON grammar (forced tool calls), a
// choice among several (any of the tools), and a reasoning block before the constrained text
// (thinking models write <think>...</think> first; the constraint starts after it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"

namespace ls::grammar {

// A new root: `prefix` root `suffix`, and when `repeat`, one or more of those separated by
// `separator` (tool calls: "<tool_call>\n" call "\n</tool_call>", several joined by "\n").
Grammar enclose(Grammar grammar, std::string_view prefix, std::string_view suffix, bool repeat,
                std::string_view separator);
// A root matching any of the grammars' roots (their rules renumbered side by side).
Grammar any_of(const std::vector<Grammar>& grammars, std::string origin);
// "<think>", any text that does not contain "</think>", "</think>", up to 4 whitespace
// characters, then the grammar's root: what a thinking model writes when its answer must
// follow the grammar.
Grammar after_thinking(Grammar grammar);

}  // namespace ls::grammar
