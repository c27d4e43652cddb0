// jinja2's expression grammar (see expr_parser.h).
#include "jinja/expr_parser.h"

namespace ls::jinja {

using namespace ast;

bool ExprParser::tuple_end(const std::vector<std::string>& extra) const {
  const Token& t = cur();
  if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || is_op(t, ")")) {
    return true;
  }
  return t.type == TokenType::Name && std::find(extra.begin(), extra.end(), t.value) != extra.end();
}

ExprPtr ExprParser::parse_expression(bool with_condexpr) {
  Nesting guard(*this, cur().line);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr ExprParser::parse_condexpr() {
  ExprPtr expr1 = parse_or();
  while (true) {
    int line = cur().line;
    if (!skip_name("if")) break;
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
    expr1 = finish(
        std::make_unique<CondExpr>(line, std::move(test), std::move(expr1), std::move(otherwise)));
  }
  return expr1;
}

ExprPtr ExprParser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name(cur(), "or")) {
    int line = next().line;
    left = finish(
        std::make_unique<BinaryExpr>(ExprKind::Or, line, BinOp::Add, std::move(left), parse_and()));
  }
  return left;
}

ExprPtr ExprParser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name(cur(), "and")) {
    int line = next().line;
    left = finish(std::make_unique<BinaryExpr>(ExprKind::And, line, BinOp::Add, std::move(left),
                                               parse_not()));
  }
  return left;
}

ExprPtr ExprParser::parse_not() {
  if (is_name(cur(), "not")) {
    Nesting guard(*this, cur().line);
    int line = next().line;
    return finish(std::make_unique<UnaryExpr>(ExprKind::Not, line, parse_not()));
  }
  return parse_compare();
}

ExprPtr ExprParser::parse_compare() {
  int line = cur().line;
  ExprPtr first = parse_math1();
  auto node = std::make_unique<CompareExpr>(line, nullptr);
  while (true) {
    static const std::pair<std::string_view, CmpKind> ops[] = {
        {"==", CmpKind::Eq}, {"!=", CmpKind::Ne}, {"<", CmpKind::Lt},
        {"<=", CmpKind::Le}, {">", CmpKind::Gt},  {">=", CmpKind::Ge}};
    auto it = std::find_if(std::begin(ops), std::end(ops),
                           [&](const auto& o) { return is_op(cur(), o.first); });
    if (it != std::end(ops)) {
      next();
      node->rest.emplace_back(it->second, parse_math1());
    } else if (skip_name("in")) {
      node->rest.emplace_back(CmpKind::In, parse_math1());
    } else if (is_name(cur(), "not") && is_name(look(), "in")) {
      next();
      next();
      node->rest.emplace_back(CmpKind::NotIn, parse_math1());
    } else {
      break;
    }
  }
  if (node->rest.empty()) return first;
  node->first = std::move(first);
  return finish(std::move(node));
}

ExprPtr ExprParser::binary(BinOp op, int line, ExprPtr a, ExprPtr b) {
  return finish(
      std::make_unique<BinaryExpr>(ExprKind::Binary, line, op, std::move(a), std::move(b)));
}

ExprPtr ExprParser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op(cur(), "+") || is_op(cur(), "-")) {
    BinOp op = cur().value == "+" ? BinOp::Add : BinOp::Sub;
    int line = next().line;
    left = binary(op, line, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr ExprParser::parse_concat() {
  int line = cur().line;
  ExprPtr first = parse_math2();
  if (!is_op(cur(), "~")) return first;
  auto node = std::make_unique<SeqExpr>(ExprKind::Concat, line);
  node->items.push_back(std::move(first));
  while (skip_op("~")) node->items.push_back(parse_math2());
  return finish(std::move(node));
}

ExprPtr ExprParser::parse_math2() {
  ExprPtr left = parse_pow();
  while (true) {
    BinOp op;
    if (is_op(cur(), "*")) {
      op = BinOp::Mul;
    } else if (is_op(cur(), "/")) {
      op = BinOp::Div;
    } else if (is_op(cur(), "//")) {
      op = BinOp::FloorDiv;
    } else if (is_op(cur(), "%")) {
      op = BinOp::Mod;
    } else {
      break;
    }
    int line = next().line;
    left = binary(op, line, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr ExprParser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op(cur(), "**")) {
    int line = next().line;
    left = binary(BinOp::Pow, line, std::move(left), parse_unary(true));
  }
  return left;
}

ExprPtr ExprParser::parse_unary(bool with_filter) {
  Nesting guard(*this, cur().line);
  ExprPtr node;
  int line = cur().line;
  if (skip_op("-")) {
    node = finish(std::make_unique<UnaryExpr>(ExprKind::Neg, line, parse_unary(false)));
  } else if (skip_op("+")) {
    node = finish(std::make_unique<UnaryExpr>(ExprKind::Pos, line, parse_unary(false)));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr ExprParser::parse_primary() {
  const Token& t = cur();
  int line = t.line;
  switch (t.type) {
    case TokenType::Name: {
      std::string n = next().value;
      if (n == "true" || n == "True")
        return finish(std::make_unique<ConstExpr>(line, Value::boolean(true)));
      if (n == "false" || n == "False")
        return finish(std::make_unique<ConstExpr>(line, Value::boolean(false)));
      if (n == "none" || n == "None")
        return finish(std::make_unique<ConstExpr>(line, Value::none()));
      return finish(std::make_unique<NameExpr>(line, std::move(n)));
    }
    case TokenType::String: {
      std::string s;
      while (cur().type == TokenType::String) s += next().value;
      return finish(std::make_unique<ConstExpr>(line, Value::string(std::move(s))));
    }
    case TokenType::Integer:
      return finish(std::make_unique<ConstExpr>(line, Value::integer(next().integer)));
    case TokenType::Float:
      return finish(std::make_unique<ConstExpr>(line, Value::number(next().number)));
    case TokenType::Operator:
      if (t.value == "(") {
        next();
        ExprPtr e = parse_tuple(false, true, {}, true);
        expect_op(")");
        return e;
      }
      if (t.value == "[") return parse_list();
      if (t.value == "{") return parse_dict();
      break;
    case TokenType::Eof:
      unexpected_eof("an expression");
    default:
      break;
  }
  error(line, fmt::format("unexpected '{}'", show(t)));
}

ExprPtr ExprParser::parse_tuple(bool simplified, bool with_condexpr,
                                const std::vector<std::string>& extra, bool explicit_parentheses) {
  int line = cur().line;
  auto node = std::make_unique<SeqExpr>(ExprKind::Tuple, line);
  bool is_tuple = false;
  while (true) {
    if (!node->items.empty()) expect_op(",");
    if (tuple_end(extra)) break;
    node->items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
    if (is_op(cur(), ",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!node->items.empty()) return std::move(node->items.front());
    if (!explicit_parentheses) {
      if (cur().type == TokenType::Eof) unexpected_eof("an expression");
      error(cur().line, fmt::format("expected an expression, got '{}'", show(cur())));
    }
  }
  return finish(std::move(node));
}

ExprPtr ExprParser::parse_list() {
  auto node = std::make_unique<SeqExpr>(ExprKind::List, next().line);
  while (!is_op(cur(), "]")) {
    if (!node->items.empty()) expect_op(",");
    if (is_op(cur(), "]")) break;
    node->items.push_back(parse_expression(true));
  }
  expect_op("]");
  return finish(std::move(node));
}

ExprPtr ExprParser::parse_dict() {
  auto node = std::make_unique<DictExpr>(next().line);
  while (!is_op(cur(), "}")) {
    if (!node->items.empty()) expect_op(",");
    if (is_op(cur(), "}")) break;
    ExprPtr key = parse_expression(true);
    expect_op(":");
    node->items.emplace_back(std::move(key), parse_expression(true));
  }
  expect_op("}");
  return finish(std::move(node));
}

ExprPtr ExprParser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(cur(), ".") || is_op(cur(), "[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op(cur(), "(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExprParser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op(cur(), "|")) {
      node = parse_filter(std::move(node), false);
    } else if (is_name(cur(), "is")) {
      node = parse_test(std::move(node));
    } else if (is_op(cur(), "(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr ExprParser::parse_subscript(ExprPtr node) {
  Token t = next();
  if (t.value == ".") {
    Token attr = next();
    if (attr.type == TokenType::Name) {
      return finish(std::make_unique<AttrExpr>(t.line, std::move(node), attr.value));
    }
    if (attr.type != TokenType::Integer) error(attr.line, "expected name or number");
    auto key = finish(std::make_unique<ConstExpr>(attr.line, Value::integer(attr.integer)));
    return finish(std::make_unique<ItemExpr>(t.line, std::move(node), std::move(key)));
  }
  auto args = std::make_unique<SeqExpr>(ExprKind::Tuple, t.line);
  while (!is_op(cur(), "]")) {
    if (!args->items.empty()) expect_op(",");
    args->items.push_back(parse_subscribed());
  }
  expect_op("]");
  ExprPtr key = args->items.size() == 1 ? std::move(args->items.front()) : finish(std::move(args));
  return finish(std::make_unique<ItemExpr>(t.line, std::move(node), std::move(key)));
}

ExprPtr ExprParser::parse_subscribed() {
  int line = cur().line;
  auto slice = std::make_unique<SliceExpr>(line);
  if (!skip_op(":")) {
    ExprPtr e = parse_expression(true);
    if (!skip_op(":")) return e;
    slice->start = std::move(e);
  }
  if (!is_op(cur(), ":") && !is_op(cur(), "]") && !is_op(cur(), ",")) {
    slice->stop = parse_expression(true);
  }
  if (skip_op(":") && !is_op(cur(), "]") && !is_op(cur(), ",")) {
    slice->step = parse_expression(true);
  }
  return finish(std::move(slice));
}

void ExprParser::parse_call_args(Arguments& a) {
  int line = cur().line;
  expect_op("(");
  bool require_comma = false;
  auto ensure = [&](bool ok) {
    if (!ok) error(line, "invalid syntax for function call expression");
  };
  while (!is_op(cur(), ")")) {
    if (require_comma) {
      expect_op(",");
      if (is_op(cur(), ")")) break;
    }
    if (skip_op("*")) {
      ensure(!a.star && !a.star_star);
      a.star = parse_expression(true);
    } else if (skip_op("**")) {
      ensure(!a.star_star);
      a.star_star = parse_expression(true);
    } else if (cur().type == TokenType::Name && is_op(look(), "=")) {
      ensure(!a.star_star);
      std::string key = next().value;
      next();
      a.keywords.emplace_back(std::move(key), parse_expression(true));
    } else {
      ensure(!a.star && !a.star_star && a.keywords.empty());
      a.positional.push_back(parse_expression(true));
    }
    require_comma = true;
  }
  expect_op(")");
}

ExprPtr ExprParser::parse_call(ExprPtr callee) {
  auto node = std::make_unique<CallExpr>(cur().line, std::move(callee));
  parse_call_args(node->args);
  return finish(std::move(node));
}

std::string ExprParser::dotted_name() {
  std::string n = expect_name();
  while (skip_op(".")) n += "." + expect_name();
  return n;
}

ExprPtr ExprParser::parse_filter(ExprPtr node, bool start_inline) {
  while (is_op(cur(), "|") || start_inline) {
    if (!start_inline) next();
    int line = cur().line;
    auto f = std::make_unique<FilterExpr>(ExprKind::Filter, line, std::move(node), dotted_name());
    if (is_op(cur(), "(")) parse_call_args(f->args);
    node = finish(std::move(f));
    start_inline = false;
  }
  return node;
}

ExprPtr ExprParser::parse_test(ExprPtr node) {
  int line = next().line;
  bool negated = skip_name("not");
  auto t = std::make_unique<FilterExpr>(ExprKind::Test, line, std::move(node), dotted_name());
  const Token& c = cur();
  if (is_op(c, "(")) {
    parse_call_args(t->args);
  } else if ((c.type == TokenType::Name || c.type == TokenType::String ||
              c.type == TokenType::Integer || c.type == TokenType::Float || is_op(c, "[") ||
              is_op(c, "{")) &&
             !is_name(c, "else") && !is_name(c, "or") && !is_name(c, "and")) {
    if (is_name(c, "is")) error(c.line, "You cannot chain multiple tests with is");
    t->args.positional.push_back(parse_postfix(parse_primary()));
  }
  ExprPtr result = finish(std::move(t));
  if (negated) result = finish(std::make_unique<UnaryExpr>(ExprKind::Not, line, std::move(result)));
  return result;
}

}  // namespace ls::jinja
