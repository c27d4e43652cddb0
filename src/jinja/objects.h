// The host objects a template can hold: namespace() (the only mutable value, as in jinja2),
// the `loop` variable of a for loop, macros (and the `caller` of a call block), builtin
// functions and bound methods, cycler and joiner.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace ls::jinja {

struct Scope;
using ScopePtr = std::shared_ptr<Scope>;

// Python-style argument binding for builtins: bind_args("round", args, {{"value"}, {"precision",
// 0}}) returns one Value per parameter; required parameters have no default.
struct Param {
  Param(const char* n) : name(n) {}  // NOLINT: required parameter
  Param(const char* n, Value d) : name(n), fallback(std::move(d)), has_default(true) {}
  const char* name;
  Value fallback;
  bool has_default = false;
};
std::vector<Value> bind_args(const std::string& function, const CallArgs& args,
                             const std::vector<Param>& params);

class Namespace : public Object {
 public:
  std::string type_name() const override { return "Namespace"; }
  std::string repr() const override;
  std::optional<Value> attribute(const std::string& name) const override;
  int depth() const override { return depth_; }
  void release() override { attrs_.entries.clear(); }
  void set(const std::string& name, Value v);

 private:
  Dict attrs_;
  int depth_ = 1;
};

class Builtin : public Object {
 public:
  using Fn = std::function<Value(Interpreter&, const CallArgs&)>;
  Builtin(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}
  std::string type_name() const override { return "builtin_function_or_method"; }
  std::string repr() const override { return "<built-in function " + name_ + ">"; }
  bool is_callable() const override { return true; }
  Value call(Interpreter& in, CallArgs args) override { return fn_(in, args); }
  void release() override { fn_ = nullptr; }

 private:
  std::string name_;
  Fn fn_;
};

Value make_builtin(std::string name, Builtin::Fn fn);

// A macro (or a call block's caller) closed over the scope it was defined in.
class Macro : public Object {
 public:
  Macro(const ast::MacroDef& def, ScopePtr closure) : def_(def), closure_(std::move(closure)) {}
  std::string type_name() const override { return "Macro"; }
  std::string repr() const override { return "<Macro '" + def_.name + "'>"; }
  std::optional<Value> attribute(const std::string& name) const override;
  bool is_callable() const override { return true; }
  Value call(Interpreter& in, CallArgs args) override;
  void release() override { closure_.reset(); }

 private:
  const ast::MacroDef& def_;
  ScopePtr closure_;
};

// The `loop` variable. One object per loop run; the interpreter advances `index0`.
class Loop : public Object {
 public:
  Loop(std::vector<Value> items, int depth, const ast::ForStmt* recursive_stmt, ScopePtr scope)
      : items_(std::move(items)), depth_(depth), stmt_(recursive_stmt), scope_(std::move(scope)) {}
  std::string type_name() const override { return "LoopContext"; }
  std::string repr() const override;
  std::optional<Value> attribute(const std::string& name) const override;
  bool is_callable() const override { return stmt_ != nullptr; }
  Value call(Interpreter& in, CallArgs args) override;
  void release() override;
  void advance(std::size_t index0) { index0_ = index0; }

 private:
  std::vector<Value> items_;
  std::size_t index0_ = 0;
  int depth_;
  const ast::ForStmt* stmt_;  // set when the loop is `recursive`
  ScopePtr scope_;
  std::shared_ptr<Value> last_changed_ = std::make_shared<Value>();
};

Value make_cycler(const CallArgs& args);
Value make_joiner(const CallArgs& args);

}  // namespace ls::jinja
