// Builds the syntax tree of a template from its tokens, following jinja2's grammar and operator
// precedence (including its quirks: `-2 ** 2` is 4, filters bind tighter than unary minus's
// operand, tests take one bare argument). Errors name the template and the line.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "jinja/ast.h"

namespace ls::jinja {

// Nesting bounds that keep parsing and rendering within a small, fixed stack budget.
inline constexpr int kMaxParseNesting = 200;  // nested blocks / parentheses / unary operators
inline constexpr int kMaxExprDepth = 300;     // depth of one expression's tree

// Throws ls::Error "<name>:<line>: syntax error: <message>".
std::shared_ptr<const ast::TemplateAst> parse_template(std::string_view source,
                                                       const std::string& name);

}  // namespace ls::jinja
