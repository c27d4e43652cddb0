// Walks over the syntax tree (see scan.h).
#include "jinja/scan.h"

#include "jinja/library.h"
#include "jinja/template_error.h"

namespace ls::jinja {

using namespace ast;

void for_each_child(const Expr& e, const std::function<void(const Expr&)>& f) {
  auto visit = [&](const ExprPtr& c) {
    if (c) f(*c);
  };
  auto visit_args = [&](const Arguments& a) {
    for (const auto& p : a.positional) visit(p);
    for (const auto& [k, v] : a.keywords) visit(v);
    visit(a.star);
    visit(a.star_star);
  };
  switch (e.kind) {
    case ExprKind::Const:
    case ExprKind::Name:
      return;
    case ExprKind::Tuple:
    case ExprKind::List:
    case ExprKind::Concat:
      for (const auto& c : static_cast<const SeqExpr&>(e).items) visit(c);
      return;
    case ExprKind::Dict:
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        visit(k);
        visit(v);
      }
      return;
    case ExprKind::Attr:
      visit(static_cast<const AttrExpr&>(e).object);
      return;
    case ExprKind::Item:
      visit(static_cast<const ItemExpr&>(e).object);
      visit(static_cast<const ItemExpr&>(e).key);
      return;
    case ExprKind::Slice: {
      const auto& s = static_cast<const SliceExpr&>(e);
      visit(s.start);
      visit(s.stop);
      visit(s.step);
      return;
    }
    case ExprKind::Call:
      visit(static_cast<const CallExpr&>(e).callee);
      visit_args(static_cast<const CallExpr&>(e).args);
      return;
    case ExprKind::Filter:
    case ExprKind::Test:
      visit(static_cast<const FilterExpr&>(e).operand);
      visit_args(static_cast<const FilterExpr&>(e).args);
      return;
    case ExprKind::Neg:
    case ExprKind::Pos:
    case ExprKind::Not:
      visit(static_cast<const UnaryExpr&>(e).operand);
      return;
    case ExprKind::Binary:
    case ExprKind::And:
    case ExprKind::Or:
      visit(static_cast<const BinaryExpr&>(e).left);
      visit(static_cast<const BinaryExpr&>(e).right);
      return;
    case ExprKind::Compare:
      visit(static_cast<const CompareExpr&>(e).first);
      for (const auto& [op, c] : static_cast<const CompareExpr&>(e).rest) visit(c);
      return;
    case ExprKind::Cond: {
      const auto& c = static_cast<const CondExpr&>(e);
      visit(c.test);
      visit(c.then);
      visit(c.otherwise);
      return;
    }
  }
}

static bool expr_references(const Expr* e, std::string_view name) {
  if (!e) return false;
  if (e->kind == ExprKind::Name && static_cast<const NameExpr*>(e)->name == name) return true;
  bool found = false;
  for_each_child(*e, [&](const Expr& c) { found = found || expr_references(&c, name); });
  return found;
}

static bool stmt_references(const Stmt& s, std::string_view name) {
  switch (s.kind) {
    case StmtKind::Text:
    case StmtKind::Break:
    case StmtKind::Continue:
    case StmtKind::Macro:
      return false;
    case StmtKind::Print:
      return expr_references(static_cast<const PrintStmt&>(s).expr.get(), name);
    case StmtKind::If: {
      const auto& i = static_cast<const IfStmt&>(s);
      for (const auto& [test, body] : i.branches) {
        if (expr_references(test.get(), name) || body_references(body, name)) return true;
      }
      return body_references(i.otherwise, name);
    }
    case StmtKind::For: {
      const auto& f = static_cast<const ForStmt&>(s);
      return expr_references(f.iter.get(), name) || expr_references(f.filter.get(), name) ||
             body_references(f.body, name) || body_references(f.otherwise, name);
    }
    case StmtKind::Set:
      return expr_references(static_cast<const SetStmt&>(s).value.get(), name);
    case StmtKind::SetBlock: {
      const auto& b = static_cast<const SetBlockStmt&>(s);
      return expr_references(b.filter.get(), name) || body_references(b.body, name);
    }
    case StmtKind::CallBlock: {
      const auto& c = static_cast<const CallBlockStmt&>(s);
      if (expr_references(c.call.get(), name)) return true;
      for (const auto& d : c.caller.defaults) {
        if (expr_references(d.get(), name)) return true;
      }
      return body_references(c.caller.body, name);
    }
    case StmtKind::FilterBlock: {
      const auto& f = static_cast<const FilterBlockStmt&>(s);
      return expr_references(f.filter.get(), name) || body_references(f.body, name);
    }
    case StmtKind::With: {
      const auto& w = static_cast<const WithStmt&>(s);
      for (const auto& [target, value] : w.assignments) {
        if (expr_references(value.get(), name)) return true;
      }
      return body_references(w.body, name);
    }
    case StmtKind::Generation:
      return body_references(static_cast<const BlockStmt&>(s).body, name);
  }
  return false;
}

bool body_references(const Body& body, std::string_view name) {
  for (const auto& s : body) {
    if (stmt_references(*s, name)) return true;
  }
  return false;
}

namespace {

class NameChecker {
 public:
  explicit NameChecker(const std::string& name) : name_(name) {}

  void expr(const Expr* e, bool soft) {
    if (!e) return;
    if (e->kind == ExprKind::Cond) soft = true;  // jinja2 compiles it in a "soft" frame
    if (!soft && (e->kind == ExprKind::Filter || e->kind == ExprKind::Test)) {
      const auto& f = static_cast<const FilterExpr&>(*e);
      bool known = e->kind == ExprKind::Filter ? find_filter(f.name) != nullptr
                                               : find_test(f.name) != nullptr;
      if (!known) {
        syntax_error(name_, e->line,
                     fmt::format("no {} named '{}'",
                                 e->kind == ExprKind::Filter ? "filter" : "test", f.name));
      }
    }
    for_each_child(*e, [&](const Expr& c) { expr(&c, soft); });
  }

  void body(const Body& b, bool soft) {
    for (const auto& s : b) stmt(*s, soft);
  }

  void stmt(const Stmt& s, bool soft) {
    switch (s.kind) {
      case StmtKind::Text:
      case StmtKind::Break:
      case StmtKind::Continue:
        return;
      case StmtKind::Print:
        expr(static_cast<const PrintStmt&>(s).expr.get(), soft);
        return;
      case StmtKind::If: {
        const auto& i = static_cast<const IfStmt&>(s);
        for (const auto& [test, b] : i.branches) {
          expr(test.get(), true);
          body(b, true);
        }
        body(i.otherwise, true);
        return;
      }
      case StmtKind::For: {  // the loop body is a new (not soft) frame
        const auto& f = static_cast<const ForStmt&>(s);
        expr(f.iter.get(), soft);
        expr(f.filter.get(), false);
        body(f.body, false);
        body(f.otherwise, false);
        return;
      }
      case StmtKind::Set:
        expr(static_cast<const SetStmt&>(s).value.get(), soft);
        return;
      case StmtKind::SetBlock: {
        const auto& b = static_cast<const SetBlockStmt&>(s);
        expr(b.filter.get(), false);
        body(b.body, false);
        return;
      }
      case StmtKind::Macro: {
        const auto& def = static_cast<const MacroStmt&>(s).def;
        for (const auto& d : def.defaults) expr(d.get(), false);
        body(def.body, false);
        return;
      }
      case StmtKind::CallBlock: {
        const auto& c = static_cast<const CallBlockStmt&>(s);
        expr(c.call.get(), soft);
        for (const auto& d : c.caller.defaults) expr(d.get(), false);
        body(c.caller.body, false);
        return;
      }
      case StmtKind::FilterBlock: {
        const auto& f = static_cast<const FilterBlockStmt&>(s);
        expr(f.filter.get(), false);
        body(f.body, false);
        return;
      }
      case StmtKind::With: {
        const auto& w = static_cast<const WithStmt&>(s);
        for (const auto& [target, value] : w.assignments) expr(value.get(), soft);
        body(w.body, false);
        return;
      }
      case StmtKind::Generation:
        body(static_cast<const BlockStmt&>(s).body, false);
        return;
    }
  }

 private:
  const std::string& name_;
};

}  // namespace

void check_filter_and_test_names(const TemplateAst& tpl) {
  NameChecker(tpl.name).body(tpl.body, false);
}

}  // namespace ls::jinja
