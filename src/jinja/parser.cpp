// A recursive-descent parser mirroring jinja2's Parser (see parser.h): the same precedence
// levels (condexpr, or, and, not, compare, + -, ~, * / // %, **, unary, postfix, filters and
// tests), the same tuple rules and the same statement set, plus loop controls (break/continue)
// and Hugging Face's {% generation %} tag that transformers enables.
#include "jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "jinja/expr_parser.h"

namespace ls::jinja {

using namespace ast;

namespace {

class Parser : public ExprParser {
 public:
  using ExprParser::ExprParser;

  std::shared_ptr<const TemplateAst> run() {
    auto t = std::make_shared<TemplateAst>();
    t->name = name_;
    t->body = subparse({});
    return t;
  }

 private:
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
      if (skip_name("elif")) continue;
      if (skip_name("else")) {
        s->otherwise = parse_statements({"endif"}, true);
      } else {
        next();  // endif
      }
      break;
    }
    return s;
  }

  StmtPtr parse_for() {
    auto s = std::make_unique<ForStmt>(next().line);
    s->target = parse_target({"in"});
    if (target_names(s->target, "loop")) {
      error(s->line, "Can't assign to special loop variable in for-loop target");
    }
    if (!skip_name("in")) expect_op("in");
    s->iter = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->filter = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (skip_name("else")) {
      s->otherwise = parse_statements({"endfor"}, true);
    } else {
      next();  // endfor
    }
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

  static bool target_names(const Target& t, const std::string& name) {
    if (!t.is_tuple) return t.name == name;
    for (const auto& item : t.items) {
      if (target_names(item, name)) return true;
    }
    return false;
  }

  // Assignment targets: names and (possibly parenthesized) tuples of names.
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

  int loop_depth_ = 0;  // enclosing for loops (break/continue are only valid inside one)
};

}  // namespace

std::shared_ptr<const TemplateAst> parse_template(std::string_view source,
                                                  const std::string& name) {
  return Parser(tokenize(source, name), name).run();
}

}  // namespace ls::jinja
