// Statement execution for the template interpreter (see interpreter.h): output, if, for (with
// loop variables, filters, else, break/continue, recursion), set (names, tuples, namespace
// attributes, captured blocks), macros and call blocks, filter and with blocks, and the limits.
#include "jinja/interpreter.h"

#include <exception>
#include <new>

#include "core/error.h"
#include "jinja/library.h"
#include "jinja/template_error.h"

namespace ls::jinja {

using namespace ast;

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    for (const auto& [k, v] : s->vars) {
      if (k == name) return &v;
    }
  }
  return nullptr;
}

void Scope::set(const std::string& name, Value v) {
  for (auto& [k, old] : vars) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  vars.emplace_back(name, std::move(v));
}

Interpreter::RecursionGuard::RecursionGuard(Interpreter& in) : in_(in), line_(in.line_) {
  if (++in_.recursion_ > in_.limits_.max_recursion_depth) {
    --in_.recursion_;
    fail("recursion depth limit ({}) exceeded (max_recursion_depth)",
         in_.limits_.max_recursion_depth);
  }
}

Interpreter::RecursionGuard::~RecursionGuard() {
  --in_.recursion_;
  // back at the call site; while an error unwinds, keep the line where it happened
  if (std::uncaught_exceptions() == 0) in_.line_ = line_;
}

Interpreter::DepthGuard::DepthGuard(Interpreter& in) : in_(in) {
  if (++in_.operations_ > in_.limits_.max_operations)
    fail("operation limit ({}) exceeded (max_operations): the template does too much work",
         in_.limits_.max_operations);
  if (++in_.depth_ > kMaxEvalDepth) {
    --in_.depth_;
    fail("template evaluation nested deeper than {} levels", kMaxEvalDepth);
  }
}

Interpreter::Interpreter(const TemplateAst& tpl, const RenderLimits& limits)
    : tpl_(tpl), limits_(limits) {}

Interpreter::~Interpreter() {
  for (auto& weak : objects_) {
    if (auto o = weak.lock()) o->release();
  }
}

Value Interpreter::track(std::shared_ptr<Object> object) {
  objects_.push_back(object);
  if (objects_.size() > 64 && objects_.size() % 64 == 0) {
    std::erase_if(objects_, [](const auto& w) { return w.expired(); });
  }
  return Value::object(std::move(object));
}

void Interpreter::check_string_size(std::size_t bytes) const {
  if (bytes > limits_.max_output_bytes) {
    fail("output size limit ({} bytes) exceeded (max_output_bytes)", limits_.max_output_bytes);
  }
}

void Interpreter::check_list_size(std::size_t items) const {
  if (items > limits_.max_loop_iterations) {
    fail("list of {} items exceeds the loop iteration limit ({}) (max_loop_iterations)", items,
         limits_.max_loop_iterations);
  }
}

void Interpreter::emit(std::string_view text) {
  check_string_size(out_->size() + text.size());
  out_->append(text);
}

void Interpreter::count_iteration() {
  if (++iterations_ > limits_.max_loop_iterations) {
    fail("loop iteration limit ({}) exceeded (max_loop_iterations)", limits_.max_loop_iterations);
  }
}

std::string Interpreter::render(const Value& context) {
  globals_ = std::make_shared<Scope>(nullptr);
  add_globals(*globals_);
  auto ctx = std::make_shared<Scope>(globals_);
  if (context.is_dict()) {
    for (const auto& [k, v] : context.as_dict().entries) {
      if (!k.is_string()) fail("{}: context keys must be strings", tpl_.name);
      ctx->set(k.as_string(), v);
    }
  } else if (!context.is_undefined() && !context.is_none()) {
    fail("{}: the template context must be a JSON object, got {}", tpl_.name, type_name(context));
  }
  auto root = std::make_shared<Scope>(ctx);
  std::string out;
  out_ = &out;
  const std::string& name = tpl_.name;
  try {
    exec_body(tpl_.body, root);
  } catch (const TemplateError&) {
    throw;
  } catch (const RaisedError& e) {
    throw TemplateError(name, line_, e.what(), true);
  } catch (const ls::Error& e) {
    throw TemplateError(name, line_, e.what());
  } catch (const std::bad_alloc&) {
    throw TemplateError(name, line_, "out of memory");
  } catch (const std::exception& e) {
    std::string msg = std::string("internal error: ") + e.what();
    throw TemplateError(name, line_, msg);
  }
  return out;
}

Interpreter::Flow Interpreter::exec_body(const Body& body, const ScopePtr& scope) {
  for (const auto& s : body) {
    Flow f = exec(*s, scope);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

std::string Interpreter::capture(const Body& body, const ScopePtr& scope) {
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_body(body, scope);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, const ScopePtr& scope) {
  DepthGuard depth(*this);
  line_ = s.line;
  switch (s.kind) {
    case StmtKind::Text:
      emit(static_cast<const TextStmt&>(s).text);
      return Flow::Normal;
    case StmtKind::Print:
      emit(to_str(eval(*static_cast<const PrintStmt&>(s).expr, scope)));
      return Flow::Normal;
    case StmtKind::If: {
      const auto& i = static_cast<const IfStmt&>(s);
      for (const auto& [test, body] : i.branches) {
        if (truthy(eval(*test, scope))) return exec_body(body, scope);
      }
      return exec_body(i.otherwise, scope);
    }
    case StmtKind::For: {
      const auto& f = static_cast<const ForStmt&>(s);
      exec_for(f, scope, eval(*f.iter, scope), 1);
      return Flow::Normal;
    }
    case StmtKind::Set: {
      const auto& st = static_cast<const SetStmt&>(s);
      assign(st.target, eval(*st.value, scope), scope);
      return Flow::Normal;
    }
    case StmtKind::SetBlock: {
      const auto& b = static_cast<const SetBlockStmt&>(s);
      Value text = Value::string(capture(b.body, std::make_shared<Scope>(scope)));
      if (b.filter) text = eval_filter(static_cast<const FilterExpr&>(*b.filter), scope, &text);
      assign(b.target, text, scope);
      return Flow::Normal;
    }
    case StmtKind::Macro: {
      const auto& def = static_cast<const MacroStmt&>(s).def;
      scope->set(def.name, track(std::make_shared<Macro>(def, scope)));
      return Flow::Normal;
    }
    case StmtKind::CallBlock: {
      const auto& c = static_cast<const CallBlockStmt&>(s);
      Value caller = track(std::make_shared<Macro>(c.caller, scope));
      emit(to_str(eval_call(static_cast<const CallExpr&>(*c.call), scope, &caller)));
      return Flow::Normal;
    }
    case StmtKind::FilterBlock: {
      const auto& f = static_cast<const FilterBlockStmt&>(s);
      Value text = Value::string(capture(f.body, std::make_shared<Scope>(scope)));
      Value result = eval_filter(static_cast<const FilterExpr&>(*f.filter), scope, &text);
      // jinja2 writes the result into its output list as is; joining it needs a str
      if (!result.is_string()) {
        fail("sequence item 0: expected str instance, {} found", type_name(result));
      }
      emit(result.as_string());
      return Flow::Normal;
    }
    case StmtKind::With: {
      const auto& w = static_cast<const WithStmt&>(s);
      std::vector<Value> values;
      for (const auto& [target, value] : w.assignments) values.push_back(eval(*value, scope));
      auto inner = std::make_shared<Scope>(scope);
      for (std::size_t k = 0; k < values.size(); ++k)
        assign(w.assignments[k].first, values[k], inner);
      return exec_body(w.body, inner);
    }
    case StmtKind::Break:
      return Flow::Break;
    case StmtKind::Continue:
      return Flow::Continue;
    case StmtKind::Generation:
      return exec_body(static_cast<const BlockStmt&>(s).body, scope);
  }
  return Flow::Normal;
}

void Interpreter::exec_for(const ForStmt& f, const ScopePtr& scope, const Value& iterable,
                           int depth) {
  std::vector<Value> items = iterate(iterable);
  if (f.filter) {
    std::vector<Value> kept;
    for (auto& item : items) {
      count_iteration();
      auto probe = std::make_shared<Scope>(scope);
      assign(f.target, item, probe);
      if (truthy(eval(*f.filter, probe))) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(f.otherwise, std::make_shared<Scope>(scope));
    return;
  }
  auto loop = std::make_shared<Loop>(items, depth, f.recursive ? &f : nullptr, scope);
  Value loop_value = track(loop);
  // jinja2 runs the else block unless an iteration ran to its end (no break/continue)
  bool completed_one = false;
  for (std::size_t i = 0; i < items.size(); ++i) {
    count_iteration();
    line_ = f.line;
    auto inner = std::make_shared<Scope>(scope);
    assign(f.target, items[i], inner);
    loop->advance(i);
    inner->set("loop", loop_value);
    Flow flow = exec_body(f.body, inner);
    if (flow == Flow::Break) break;
    if (flow == Flow::Normal) completed_one = true;
  }
  if (!completed_one) exec_body(f.otherwise, std::make_shared<Scope>(scope));
}

std::string Interpreter::run_recursive_loop(const ForStmt& stmt, const ScopePtr& scope,
                                            const Value& iterable, int depth) {
  RecursionGuard guard(*this);
  std::string buffer;
  std::string* saved = out_;
  out_ = &buffer;
  try {
    exec_for(stmt, scope, iterable, depth);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buffer;
}

void Interpreter::assign(const Target& t, const Value& value, const ScopePtr& scope) {
  if (!t.attr.empty()) {
    const Value* ns = scope->find(t.name);
    auto* space =
        (ns && ns->is_object()) ? dynamic_cast<Namespace*>(ns->as_object().get()) : nullptr;
    if (!space) fail("cannot assign attribute on non-namespace object");
    space->set(t.attr, value);
    return;
  }
  if (!t.is_tuple) {
    scope->set(t.name, value);
    return;
  }
  std::vector<Value> items = iterate(value);
  if (items.size() < t.items.size()) {
    fail("not enough values to unpack (expected {}, got {})", t.items.size(), items.size());
  }
  if (items.size() > t.items.size())
    fail("too many values to unpack (expected {})", t.items.size());
  for (std::size_t k = 0; k < items.size(); ++k) assign(t.items[k], items[k], scope);
}

Value Interpreter::call_macro(const MacroDef& def, const ScopePtr& closure, const CallArgs& args) {
  RecursionGuard guard(*this);
  auto scope = std::make_shared<Scope>(closure);
  std::size_t n = def.params.size();
  std::size_t first_default = n - def.defaults.size();
  std::vector<bool> bound(n, false);
  for (std::size_t k = 0; k < args.positional.size() && k < n; ++k) {
    scope->set(def.params[k], args.positional[k]);
    bound[k] = true;
  }
  Dict extra_kwargs;
  Value caller = Value::undefined("No caller defined");
  bool caller_given = false;
  for (const auto& [key, value] : args.keywords) {
    std::size_t k = 0;
    while (k < n && def.params[k] != key) ++k;
    if (k < n && !bound[k]) {
      scope->set(key, value);
      bound[k] = true;
    } else if (key == "caller" && def.uses_caller && !caller_given) {
      caller = value;
      caller_given = true;
    } else {
      extra_kwargs.set(Value::string(key), value);
    }
  }
  for (std::size_t k = 0; k < n; ++k) {
    if (bound[k]) continue;
    if (k >= first_default) {
      scope->set(def.params[k], eval(*def.defaults[k - first_default], scope));
    } else {
      scope->set(def.params[k],
                 Value::undefined(fmt::format("parameter '{}' was not provided", def.params[k])));
    }
  }
  if (def.uses_caller) scope->set("caller", caller);
  if (def.uses_kwargs) {
    scope->set("kwargs", Value::dict(std::move(extra_kwargs)));
  } else if (!extra_kwargs.entries.empty()) {
    const std::string& key = extra_kwargs.entries.front().first.as_string();
    if (key == "caller") {
      fail("macro '{}' was invoked with two values for the special caller argument", def.name);
    }
    fail("macro '{}' takes no keyword argument '{}'", def.name, key);
  }
  if (def.uses_varargs) {
    std::vector<Value> rest;
    for (std::size_t k = n; k < args.positional.size(); ++k) rest.push_back(args.positional[k]);
    scope->set("varargs", Value::tuple(std::move(rest)));
  } else if (args.positional.size() > n) {
    fail("macro '{}' takes not more than {} argument(s)", def.name, n);
  }
  return Value::string(capture(def.body, scope));
}

}  // namespace ls::jinja
