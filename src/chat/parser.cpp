// A recursive-descent parser mirroring jinja2's Parser (see parser.h): the same precedence
// levels (condexpr, or, and, not, compare, + -, ~, * / // %, **, unary, postfix, filters and
// tests), the same tuple rules and the same statement set, plus loop controls (break/continue)
// and Hugging Face's {% generation %} tag that transformers enables.
#include "chat/parser.h"

#include <algorithm>
#include <initializer_list>

#include "chat/lexer.h"
#include "chat/scan.h"
#include "chat/template_error.h"

namespace ls::chat {

using namespace ast;

namespace {

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& name)
      : toks_(std::move(tokens)), name_(name) {}

  std::shared_ptr<const TemplateAst> run() {
    auto t = std::make_shared<TemplateAst>();
    t->name = name_;
    t->body = subparse({});
    return t;
  }

 private:
  // ----- token stream -----
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
    Nesting(Parser& p, int line) : p_(p) {
      if (++p_.nesting_ > kMaxParseNesting) {
        p_.error(line, fmt::format("nesting deeper than {} levels", kMaxParseNesting));
      }
    }
    ~Nesting() { --p_.nesting_; }
    Parser& p_;
  };

  // Records the subtree height of a new node and bounds it.
  template <typename T>
  ExprPtr finish(std::unique_ptr<T> node) {
    int d = 0;
    for_each_child(*node, [&](const Expr& c) { d = std::max(d, c.depth); });
    node->depth = d + 1;
    if (node->depth > kMaxExprDepth) {
      error(node->line, fmt::format("expression nested deeper than {} levels", kMaxExprDepth));
    }
    return node;
  }

  // ----- statements -----
  Body subparse(const std::vector<std::string>& end_tokens) {
    Body body;
    while (cur().type != TokenType::Eof) {
      const Token& t = cur();
      if (t.type == TokenType::Data) {
        body.push_back(std::make_unique<TextStmt>(t.line, t.value));
        next();
      } else if (t.type == TokenType::VariableBegin) {
        int line = next().line;
        auto e = parse_tuple(false, true, {}, false);
        expect(TokenType::VariableEnd);
        body.push_back(std::make_unique<PrintStmt>(line, std::move(e)));
      } else if (t.type == TokenType::BlockBegin) {
        next();
        if (cur().type == TokenType::Name &&
            std::find(end_tokens.begin(), end_tokens.end(), cur().value) != end_tokens.end()) {
          return body;
        }
        body.push_back(parse_statement());
        expect(TokenType::BlockEnd);
      } else {
        error(t.line, fmt::format("unexpected '{}'", show(t)));
      }
    }
    return body;
  }

  Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
    skip_op(":");
    expect(TokenType::BlockEnd);
    Body body = subparse(end_tokens);
    if (cur().type == TokenType::Eof) {
      std::string expected;
      for (std::size_t k = 0; k < end_tokens.size(); ++k) {
        expected += (k ? " or '" : "'") + end_tokens[k] + "'";
      }
      unexpected_eof(expected);
    }
    if (drop_needle) next();
    return body;
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != TokenType::Name) error(t.line, "tag name expected");
    Nesting guard(*this, t.line);
    std::string tag = t.value;
    open_tags_.push_back(tag);
    StmtPtr s = parse_tag(tag, t.line);
    open_tags_.pop_back();
    return s;
  }

  StmtPtr parse_tag(const std::string& tag, int line) {
    if (tag == "if") return parse_if();
    if (tag == "for") return parse_for();
    if (tag == "set") return parse_set();
    if (tag == "macro") return parse_macro();
    if (tag == "call") return parse_call_block();
    if (tag == "filter") return parse_filter_block();
    if (tag == "with") return parse_with();
    if (tag == "print") return parse_print();
    if (tag == "generation") {
      next();
      auto s = std::make_unique<BlockStmt>(StmtKind::Generation, line);
      s->body = parse_statements({"endgeneration"}, true);
      return s;
    }
    if (tag == "break" || tag == "continue") {
      next();
      if (loop_depth_ == 0) error(line, "'" + tag + "' outside of a loop");
      return std::make_unique<BlockStmt>(tag == "break" ? StmtKind::Break : StmtKind::Continue,
                                         line);
    }
    if (tag == "include" || tag == "import" || tag == "from" || tag == "extends" ||
        tag == "block" || tag == "autoescape") {
      error(line, "'" + tag + "' is not supported: a chat template is rendered alone, sandboxed");
    }
    std::string msg = "encountered unknown tag '" + tag + "'";
    if (!open_tags_.empty() && open_tags_.size() > 1) {
      msg += "; the innermost open block is '" + open_tags_[open_tags_.size() - 2] + "'";
    }
    error(line, msg);
  }

  StmtPtr parse_if() {
    auto s = std::make_unique<IfStmt>(next().line);
    while (true) {
      auto test = parse_tuple(false, false, {}, false);
      Body body = parse_statements({"elif", "else", "endif"}, false);
      s->branches.emplace_back(std::move(test), std::move(body));
      std::string token = next().value;
      if (token == "elif") continue;
      if (token == "else") s->otherwise = parse_statements({"endif"}, true);
      break;
    }
    return s;
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<ForStmt>(next().line);
    s->target = parse_target({"in"});
    if (!skip_name("in")) expect_op("in");
    s->iter = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().value == "else") s->otherwise = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_set() {
    int line = next().line;
    Target target;
    if (cur().type == TokenType::Name && is_op(look(), ".")) {
      target.name = next().value;
      next();
      target.attr = expect_name();
    } else {
      target = parse_target({});
    }
    if (skip_op("=")) {
      auto s = std::make_unique<SetStmt>(line);
      s->target = std::move(target);
      s->value = parse_tuple(false, true, {}, false);
      return s;
    }
    auto s = std::make_unique<SetBlockStmt>(line);
    s->target = std::move(target);
    s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(MacroDef& def) {
    expect_op("(");
    while (!is_op(cur(), ")")) {
      if (!def.params.empty()) expect_op(",");
      def.params.push_back(expect_name());
      if (skip_op("=")) {
        def.defaults.push_back(parse_expression(true));
      } else if (!def.defaults.empty()) {
        error(cur().line, "non-default argument follows default argument");
      }
    }
    expect_op(")");
  }

  void parse_macro_body(MacroDef& def, const std::string& end) {
    int saved = loop_depth_;
    loop_depth_ = 0;
    def.body = parse_statements({end}, true);
    loop_depth_ = saved;
    def.uses_caller = body_references(def.body, "caller");
    def.uses_varargs = body_references(def.body, "varargs");
    def.uses_kwargs = body_references(def.body, "kwargs");
  }

  StmtPtr parse_macro() {
    auto s = std::make_unique<MacroStmt>(next().line);
    s->def.name = expect_name();
    parse_signature(s->def);
    parse_macro_body(s->def, "endmacro");
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = std::make_unique<CallBlockStmt>(next().line);
    s->caller.name = "caller";
    if (is_op(cur(), "(")) parse_signature(s->caller);
    s->call = parse_expression(true);
    if (s->call->kind != ExprKind::Call) error(s->line, "expected call");
    parse_macro_body(s->caller, "endcall");
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = std::make_unique<FilterBlockStmt>(next().line);
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = std::make_unique<WithStmt>(next().line);
    while (cur().type != TokenType::BlockEnd) {
      if (!s->assignments.empty()) expect_op(",");
      Target t = parse_target({});
      expect_op("=");
      s->assignments.emplace_back(std::move(t), parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  StmtPtr parse_print() {
    auto s = std::make_unique<BlockStmt>(StmtKind::Generation, next().line);
    while (cur().type != TokenType::BlockEnd) {
      if (!s->body.empty()) expect_op(",");
      int line = cur().line;
      s->body.push_back(std::make_unique<PrintStmt>(line, parse_expression(true)));
    }
    return s;
  }

  // Assignment targets: names and (possibly parenthesized) tuples of names.
  bool tuple_end(const std::vector<std::string>& extra) const {
    const Token& t = cur();
    if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || is_op(t, ")")) {
      return true;
    }
    return t.type == TokenType::Name &&
           std::find(extra.begin(), extra.end(), t.value) != extra.end();
  }

  Target parse_target(const std::vector<std::string>& extra_end) {
    Target tuple;
    tuple.is_tuple = false;
    while (true) {
      if (!tuple.items.empty()) expect_op(",");
      if (tuple_end(extra_end)) break;
      tuple.items.push_back(parse_target_primary());
      if (is_op(cur(), ",")) {
        tuple.is_tuple = true;
      } else {
        break;
      }
    }
    if (!tuple.is_tuple) {
      if (tuple.items.empty()) error(cur().line, "expected an assignment target");
      return std::move(tuple.items.front());
    }
    return tuple;
  }

  Target parse_target_primary() {
    const Token& t = cur();
    if (t.type == TokenType::Name) {
      static constexpr std::string_view consts[] = {"true",  "false", "True",
                                                    "False", "none",  "None"};
      if (std::find(std::begin(consts), std::end(consts), t.value) != std::end(consts)) {
        error(t.line, "can't assign to 'const'");
      }
      Target target;
      target.name = next().value;
      return target;
    }
    if (is_op(t, "(")) {
      Nesting guard(*this, t.line);
      next();
      Target inner = parse_target({});
      expect_op(")");
      return inner;
    }
    if (t.type == TokenType::Eof) unexpected_eof("an assignment target");
    error(t.line, fmt::format("can't assign to '{}'", show(t)));
  }

  // ----- expressions -----
  ExprPtr parse_expression(bool with_condexpr) {
    Nesting guard(*this, cur().line);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr expr1 = parse_or();
    while (true) {
      int line = cur().line;
      if (!skip_name("if")) break;
      ExprPtr test = parse_or();
      ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
      expr1 = finish(std::make_unique<CondExpr>(line, std::move(test), std::move(expr1),
                                                std::move(otherwise)));
    }
    return expr1;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (is_name(cur(), "or")) {
      int line = next().line;
      left = finish(std::make_unique<BinaryExpr>(ExprKind::Or, line, BinOp::Add, std::move(left),
                                                 parse_and()));
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (is_name(cur(), "and")) {
      int line = next().line;
      left = finish(std::make_unique<BinaryExpr>(ExprKind::And, line, BinOp::Add, std::move(left),
                                                 parse_not()));
    }
    return left;
  }

  ExprPtr parse_not() {
    if (is_name(cur(), "not")) {
      Nesting guard(*this, cur().line);
      int line = next().line;
      return finish(std::make_unique<UnaryExpr>(ExprKind::Not, line, parse_not()));
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
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

  ExprPtr binary(BinOp op, int line, ExprPtr a, ExprPtr b) {
    return finish(
        std::make_unique<BinaryExpr>(ExprKind::Binary, line, op, std::move(a), std::move(b)));
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (is_op(cur(), "+") || is_op(cur(), "-")) {
      BinOp op = cur().value == "+" ? BinOp::Add : BinOp::Sub;
      int line = next().line;
      left = binary(op, line, std::move(left), parse_concat());
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op(cur(), "~")) return first;
    auto node = std::make_unique<SeqExpr>(ExprKind::Concat, line);
    node->items.push_back(std::move(first));
    while (skip_op("~")) node->items.push_back(parse_math2());
    return finish(std::move(node));
  }

  ExprPtr parse_math2() {
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

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (is_op(cur(), "**")) {
      int line = next().line;
      left = binary(BinOp::Pow, line, std::move(left), parse_unary(true));
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
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

  ExprPtr parse_primary() {
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

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra,
                      bool explicit_parentheses) {
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

  ExprPtr parse_list() {
    auto node = std::make_unique<SeqExpr>(ExprKind::List, next().line);
    while (!is_op(cur(), "]")) {
      if (!node->items.empty()) expect_op(",");
      if (is_op(cur(), "]")) break;
      node->items.push_back(parse_expression(true));
    }
    expect_op("]");
    return finish(std::move(node));
  }

  ExprPtr parse_dict() {
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

  ExprPtr parse_postfix(ExprPtr node) {
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

  ExprPtr parse_filter_expr(ExprPtr node) {
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

  ExprPtr parse_subscript(ExprPtr node) {
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
    ExprPtr key =
        args->items.size() == 1 ? std::move(args->items.front()) : finish(std::move(args));
    return finish(std::make_unique<ItemExpr>(t.line, std::move(node), std::move(key)));
  }

  ExprPtr parse_subscribed() {
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

  void parse_call_args(Arguments& a) {
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

  ExprPtr parse_call(ExprPtr callee) {
    auto node = std::make_unique<CallExpr>(cur().line, std::move(callee));
    parse_call_args(node->args);
    return finish(std::move(node));
  }

  std::string dotted_name() {
    std::string n = expect_name();
    while (skip_op(".")) n += "." + expect_name();
    return n;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
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

  ExprPtr parse_test(ExprPtr node) {
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
    if (negated)
      result = finish(std::make_unique<UnaryExpr>(ExprKind::Not, line, std::move(result)));
    return result;
  }

  std::vector<Token> toks_;
  std::size_t i_ = 0;
  const std::string& name_;
  int nesting_ = 0;
  int loop_depth_ = 0;
  std::vector<std::string> open_tags_;
};

}  // namespace

std::shared_ptr<const TemplateAst> parse_template(std::string_view source,
                                                  const std::string& name) {
  return Parser(tokenize(source, name), name).run();
}

}  // namespace ls::chat
