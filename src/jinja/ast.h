// The syntax tree of a parsed template: expressions (constants, names, operators, attribute
// and item access, calls, filters, tests) and statements (text, output, if, for, set, macro,
// call, filter, with, break/continue). Nodes are immutable after parsing and shared by every
// render of the template; each carries the source line used in error messages.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace ls::jinja::ast {

enum class ExprKind {
  Const,
  Name,
  Tuple,
  List,
  Dict,
  Attr,   // x.name
  Item,   // x[key]
  Slice,  // start:stop:step inside []
  Call,
  Filter,
  Test,  // x is name(args)
  Neg,
  Pos,
  Not,
  Binary,
  And,
  Or,
  Compare,
  Concat,  // a ~ b ~ c
  Cond,    // a if test else b
};

enum class BinOp { Add, Sub, Mul, Div, FloorDiv, Mod, Pow };
enum class CmpKind { Eq, Ne, Lt, Le, Gt, Ge, In, NotIn };

struct Expr {
  Expr(ExprKind k, int l) : kind(k), line(l) {}
  virtual ~Expr() = default;
  ExprKind kind;
  int line;
  int depth = 1;  // height of this subtree, bounded by the parser
};
using ExprPtr = std::unique_ptr<Expr>;

struct ConstExpr : Expr {
  ConstExpr(int l, Value v) : Expr(ExprKind::Const, l), value(std::move(v)) {}
  Value value;
};

struct NameExpr : Expr {
  NameExpr(int l, std::string n) : Expr(ExprKind::Name, l), name(std::move(n)) {}
  std::string name;
};

// Tuple, List and Concat: an ordered list of operands.
struct SeqExpr : Expr {
  using Expr::Expr;
  std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
  explicit DictExpr(int l) : Expr(ExprKind::Dict, l) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct AttrExpr : Expr {
  AttrExpr(int l, ExprPtr o, std::string n)
      : Expr(ExprKind::Attr, l), object(std::move(o)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};

struct ItemExpr : Expr {
  ItemExpr(int l, ExprPtr o, ExprPtr k)
      : Expr(ExprKind::Item, l), object(std::move(o)), key(std::move(k)) {}
  ExprPtr object;
  ExprPtr key;
};

struct SliceExpr : Expr {
  explicit SliceExpr(int l) : Expr(ExprKind::Slice, l) {}
  ExprPtr start, stop, step;  // null when omitted
};

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  ExprPtr star;       // *args
  ExprPtr star_star;  // **kwargs
};

struct CallExpr : Expr {
  CallExpr(int l, ExprPtr c) : Expr(ExprKind::Call, l), callee(std::move(c)) {}
  ExprPtr callee;
  Arguments args;
};

// Filter and Test. A filter chain of a {% filter %} block or a `{% set x | f %}` block has a
// null operand at its innermost filter: the block's rendered text goes there.
struct FilterExpr : Expr {
  FilterExpr(ExprKind k, int l, ExprPtr o, std::string n)
      : Expr(k, l), operand(std::move(o)), name(std::move(n)) {}
  ExprPtr operand;
  std::string name;
  Arguments args;
};

// Neg, Pos, Not.
struct UnaryExpr : Expr {
  UnaryExpr(ExprKind k, int l, ExprPtr o) : Expr(k, l), operand(std::move(o)) {}
  ExprPtr operand;
};

// Binary (with op), And, Or.
struct BinaryExpr : Expr {
  BinaryExpr(ExprKind k, int l, BinOp o, ExprPtr a, ExprPtr b)
      : Expr(k, l), op(o), left(std::move(a)), right(std::move(b)) {}
  BinOp op;
  ExprPtr left, right;
};

struct CompareExpr : Expr {
  CompareExpr(int l, ExprPtr f) : Expr(ExprKind::Compare, l), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CmpKind, ExprPtr>> rest;
};

struct CondExpr : Expr {
  CondExpr(int l, ExprPtr t, ExprPtr a, ExprPtr b)
      : Expr(ExprKind::Cond, l), test(std::move(t)), then(std::move(a)), otherwise(std::move(b)) {}
  ExprPtr test, then, otherwise;  // otherwise may be null: undefined
};

enum class StmtKind {
  Text,
  Print,
  If,
  For,
  Set,
  SetBlock,
  Macro,
  CallBlock,
  FilterBlock,
  With,
  Break,
  Continue,
  Generation,  // Hugging Face's {% generation %}: renders its body in place
};

struct Stmt {
  Stmt(StmtKind k, int l) : kind(k), line(l) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Where an assignment stores: a name, `ns.attr`, or a tuple of targets to unpack into.
struct Target {
  std::string name;
  std::string attr;  // non-empty for a namespace attribute `name.attr`
  bool is_tuple = false;
  std::vector<Target> items;
};

struct TextStmt : Stmt {
  TextStmt(int l, std::string t) : Stmt(StmtKind::Text, l), text(std::move(t)) {}
  std::string text;
};

struct PrintStmt : Stmt {
  PrintStmt(int l, ExprPtr e) : Stmt(StmtKind::Print, l), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {
  explicit IfStmt(int l) : Stmt(StmtKind::If, l) {}
  std::vector<std::pair<ExprPtr, Body>> branches;  // if, elif...
  Body otherwise;
};

struct ForStmt : Stmt {
  explicit ForStmt(int l) : Stmt(StmtKind::For, l) {}
  Target target;
  ExprPtr iter;
  ExprPtr filter;  // `for x in xs if cond`, may be null
  bool recursive = false;
  Body body, otherwise;
};

struct SetStmt : Stmt {
  explicit SetStmt(int l) : Stmt(StmtKind::Set, l) {}
  Target target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {
  explicit SetBlockStmt(int l) : Stmt(StmtKind::SetBlock, l) {}
  Target target;
  ExprPtr filter;  // may be null
  Body body;
};

// A macro's signature and body; also the implicit `caller` of a call block.
struct MacroDef {
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // for the last defaults.size() params
  Body body;
  bool uses_caller = false, uses_varargs = false, uses_kwargs = false;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(int l) : Stmt(StmtKind::Macro, l) {}
  MacroDef def;
};

struct CallBlockStmt : Stmt {
  explicit CallBlockStmt(int l) : Stmt(StmtKind::CallBlock, l) {}
  MacroDef caller;
  ExprPtr call;  // a CallExpr
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(int l) : Stmt(StmtKind::FilterBlock, l) {}
  ExprPtr filter;
  Body body;
};

struct WithStmt : Stmt {
  explicit WithStmt(int l) : Stmt(StmtKind::With, l) {}
  std::vector<std::pair<Target, ExprPtr>> assignments;
  Body body;
};

// Break, Continue, Generation.
struct BlockStmt : Stmt {
  using Stmt::Stmt;
  Body body;
};

struct TemplateAst {
  std::string name;
  Body body;
};

}  // namespace ls::jinja::ast
