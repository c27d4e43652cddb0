// Renders a parsed template against a context, with jinja2's scoping rules: a for-loop
// iteration, a macro call, a with block and a captured block each get a fresh scope that reads
// through to the enclosing one; `if` does not. Every render is bounded (output size, loop
// iterations, recursion depth, total operations) and every failure is an ls::Error naming
// template and line.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/objects.h"
#include "jinja/value.h"

namespace ls::jinja {

struct RenderLimits {
  std::size_t max_output_bytes = 16u << 20;       // also bounds every string value built
  std::uint64_t max_loop_iterations = 1'000'000;  // total over the render; also bounds lists
  int max_recursion_depth = 100;                  // nested macro / caller / recursive-loop calls
  // Statements and expressions evaluated over the render: bounds total work where loops and
  // depth do not (a macro that calls itself twice per level runs 2^depth times).
  std::uint64_t max_operations = 20'000'000;
};

struct Scope {
  explicit Scope(ScopePtr p) : parent(std::move(p)) {}
  ScopePtr parent;
  std::vector<std::pair<std::string, Value>> vars;
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v);
};

class Interpreter {
 public:
  Interpreter(const ast::TemplateAst& tpl, const RenderLimits& limits);
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // `context` must be a dict; its entries become the template's variables.
  std::string render(const Value& context);

  // ----- services for filters, tests, methods and objects -----
  Value call(const Value& callee, const CallArgs& args);
  Value call_filter(const std::string& name, const Value& operand, const CallArgs& args);
  bool call_test(const std::string& name, const Value& operand, const CallArgs& args);
  Value get_attr(const Value& obj, const std::string& name);  // obj.name
  Value get_item(const Value& obj, const Value& key);         // obj[key]
  Value call_macro(const ast::MacroDef& def, const ScopePtr& closure, const CallArgs& args);
  std::string run_recursive_loop(const ast::ForStmt& stmt, const ScopePtr& scope,
                                 const Value& iterable, int depth);
  void check_string_size(std::size_t bytes) const;
  void check_list_size(std::size_t items) const;
  // Registers a host object so that its references are dropped when the render ends.
  Value track(std::shared_ptr<Object> object);
  const RenderLimits& limits() const { return limits_; }

 private:
  enum class Flow { Normal, Break, Continue };
  // Bound on nested exec()/eval() calls: keeps any template within a few MB of stack.
  static constexpr int kMaxEvalDepth = 1000;
  struct DepthGuard {
    explicit DepthGuard(Interpreter& in);
    ~DepthGuard() { --in_.depth_; }
    Interpreter& in_;
  };
  struct RecursionGuard {
    explicit RecursionGuard(Interpreter& in);
    ~RecursionGuard();
    Interpreter& in_;
    int line_;
  };

  Flow exec_body(const ast::Body& body, const ScopePtr& scope);
  Flow exec(const ast::Stmt& stmt, const ScopePtr& scope);
  void exec_for(const ast::ForStmt& stmt, const ScopePtr& scope, const Value& iterable, int depth);
  std::string capture(const ast::Body& body, const ScopePtr& scope);
  void assign(const ast::Target& target, const Value& value, const ScopePtr& scope);
  void emit(std::string_view text);
  void count_iteration();

  Value eval(const ast::Expr& e, const ScopePtr& scope);
  Value eval_filter(const ast::FilterExpr& e, const ScopePtr& scope, const Value* hole);
  Value eval_call(const ast::CallExpr& e, const ScopePtr& scope, const Value* caller);
  CallArgs eval_args(const ast::Arguments& a, const ScopePtr& scope);
  Value eval_item(const ast::ItemExpr& e, const ScopePtr& scope);
  Value eval_compare(const ast::CompareExpr& e, const ScopePtr& scope);
  Value lookup(const std::string& name, const ScopePtr& scope) const;

  const ast::TemplateAst& tpl_;
  RenderLimits limits_;
  std::string* out_ = nullptr;
  std::uint64_t iterations_ = 0;
  std::uint64_t operations_ = 0;
  int recursion_ = 0;
  int depth_ = 0;
  int line_ = 0;  // line of the statement or expression being evaluated
  std::vector<std::weak_ptr<Object>> objects_;
  ScopePtr globals_;
};

}  // namespace ls::jinja
