// Walks over the syntax tree: the direct children of an expression node (used to bound tree
// depth while parsing), whether a macro body refers to a name (jinja2 gives a macro the
// special `caller`, `varargs` and `kwargs` parameters only when its body uses them), and the
// compile-time check of filter and test names.
#pragma once

#include <functional>
#include <string_view>

#include "jinja/ast.h"

namespace ls::jinja {

// Calls `f` on each direct child of `e`.
void for_each_child(const ast::Expr& e, const std::function<void(const ast::Expr&)>& f);

// True if `name` is read anywhere in `body`, not counting nested macro definitions.
bool body_references(const ast::Body& body, std::string_view name);

// jinja2 rejects unknown filter and test names when it compiles a template, except inside an
// `if` statement or an inline if-expression (there the error waits until the call runs).
// Throws a TemplateError for the first unknown name outside such a conditional.
void check_filter_and_test_names(const ast::TemplateAst& tpl);

}  // namespace ls::jinja
