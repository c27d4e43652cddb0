// The expression half of the template parser: a token cursor with jinja2's error messages and
// a recursive-descent parser for jinja2's expression grammar, with its precedence levels
// (condexpr, or, and, not, compare, + -, ~, * / // %, **, unary, postfix, filters and tests)
// and its tuple rules. Every node's subtree height is bounded so rendering stays shallow.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/scan.h"
#include "jinja/template_error.h"

namespace ls::jinja {

class ExprParser {
 public:
  ExprParser(std::vector<Token> tokens, const std::string& name)
      : toks_(std::move(tokens)), name_(name) {}

 protected:
  using ExprPtr = ast::ExprPtr;
  using BinOp = ast::BinOp;
  using Arguments = ast::Arguments;

  // ----- token cursor -----
  const Token& cur() const { return toks_[i_]; }
  const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
  Token next() {
    Token t = toks_[i_];
    if (i_ + 1 < toks_.size()) ++i_;
    return t;
  }
  static bool is_op(const Token& t, std::string_view op) {
    return t.type == TokenType::Operator && t.value == op;
  }
  static bool is_name(const Token& t, std::string_view n) {
    return t.type == TokenType::Name && t.value == n;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(cur(), op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view n) {
    if (!is_name(cur(), n)) return false;
    next();
    return true;
  }

  [[noreturn]] void error(int line, const std::string& message) const {
    syntax_error(name_, line, message);
  }

  static std::string show(const Token& t) {
    switch (t.type) {
      case TokenType::Name:
      case TokenType::Operator:
      case TokenType::Integer:
      case TokenType::Float:
        return t.value;
      default:
        return describe(t.type);
    }
  }

  [[noreturn]] void unexpected_eof(const std::string& expected) const {
    std::string msg = "unexpected end of template";
    if (!expected.empty()) msg += ", expected " + expected;
    if (!open_tags_.empty()) msg += "; the innermost open block is '" + open_tags_.back() + "'";
    error(cur().line, msg);
  }

  void expect_op(std::string_view op) {
    if (skip_op(op)) return;
    if (cur().type == TokenType::Eof) unexpected_eof("'" + std::string(op) + "'");
    error(cur().line, fmt::format("expected token '{}', got '{}'", op, show(cur())));
  }

  void expect(TokenType type) {
    if (cur().type == type) {
      next();
      return;
    }
    if (cur().type == TokenType::Eof) unexpected_eof(std::string("'") + describe(type) + "'");
    error(cur().line, fmt::format("expected token '{}', got '{}'", describe(type), show(cur())));
  }

  std::string expect_name() {
    if (cur().type == TokenType::Name) return next().value;
    if (cur().type == TokenType::Eof) unexpected_eof("'name'");
    error(cur().line, fmt::format("expected token 'name', got '{}'", show(cur())));
  }

  struct Nesting {
    Nesting(ExprParser& p, int line) : p_(p) {
      if (++p_.nesting_ > kMaxParseNesting) {
        p_.error(line, fmt::format("nesting deeper than {} levels", kMaxParseNesting));
      }
    }
    ~Nesting() { --p_.nesting_; }
    ExprParser& p_;
  };

  // Records the subtree height of a new node and bounds it.
  template <typename T>
  ExprPtr finish(std::unique_ptr<T> node) {
    int d = 0;
    for_each_child(*node, [&](const ast::Expr& c) { d = std::max(d, c.depth); });
    node->depth = d + 1;
    if (node->depth > kMaxExprDepth) {
      error(node->line, fmt::format("expression nested deeper than {} levels", kMaxExprDepth));
    }
    return node;
  }

  // ----- expressions (jinja2's Parser.parse_* methods) -----
  bool tuple_end(const std::vector<std::string>& extra) const;
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr binary(BinOp op, int line, ExprPtr a, ExprPtr b);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra,
                      bool explicit_parentheses);
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  void parse_call_args(Arguments& a);
  ExprPtr parse_call(ExprPtr callee);
  std::string dotted_name();
  ExprPtr parse_filter(ExprPtr node, bool start_inline);
  ExprPtr parse_test(ExprPtr node);

  std::vector<Token> toks_;
  std::size_t i_ = 0;
  const std::string& name_;
  int nesting_ = 0;
  std::vector<std::string> open_tags_;  // statement tags being parsed, for error messages
};

}  // namespace ls::jinja
