// Expression evaluation for the template interpreter: names, literals, operators, attribute
// and item access with jinja2's sandboxed lookup rules (attribute first for `.`, item first
// for `[]`, Undefined instead of errors where jinja2 returns it), calls, filters and tests.
#include "jinja/interpreter.h"
#include "jinja/library.h"

namespace ls::jinja {

using namespace ast;

Value Interpreter::lookup(const std::string& name, const ScopePtr& scope) const {
  if (const Value* v = scope->find(name)) return *v;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

static std::string no_attribute(const Value& obj, const std::string& name) {
  return fmt::format("'{} object' has no attribute '{}'", type_name(obj), name);
}

Value Interpreter::get_attr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (!name.empty() && name[0] == '_') {
    return Value::undefined(
        fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type_name(obj)));
  }
  if (obj.is_object()) {
    if (auto v = obj.as_object()->attribute(name)) return *v;
    return Value::undefined(no_attribute(obj, name));
  }
  if (obj.is_list() && obj.as_list().group && (name == "grouper" || name == "list")) {
    return obj.items()[name == "grouper" ? 0 : 1];
  }
  if (auto m = find_method(obj, name)) return *m;
  if (obj.is_dict()) {
    if (const Value* v = obj.as_dict().find(std::string_view(name))) return *v;
  }
  return Value::undefined(no_attribute(obj, name));
}

Value Interpreter::get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (obj.is_dict()) {
    if (key.is_list() && key.seq_type() != SeqType::Tuple) {
      // unhashable key: Python raises TypeError, which jinja2 turns into Undefined
    } else if (const Value* v = obj.as_dict().find(key)) {
      return *v;
    }
  } else if (key.is_integral() &&
             (obj.is_string() || (obj.is_list() && (obj.seq_type() == SeqType::List ||
                                                    obj.seq_type() == SeqType::Tuple)))) {
    std::int64_t n = static_cast<std::int64_t>(*length(obj));
    std::int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (obj.is_list()) return obj.items()[static_cast<std::size_t>(i)];
      return slice(obj, Value::integer(i), Value::integer(i + 1), Value::none());
    }
  }
  if (key.is_string()) {
    // obj[name] failed: jinja2 falls back to the attribute of that name
    if (key.as_string().empty() || key.as_string()[0] != '_') {
      if (obj.is_object()) {
        if (auto v = obj.as_object()->attribute(key.as_string())) return *v;
      } else if (auto m = find_method(obj, key.as_string())) {
        return *m;
      }
    }
    return Value::undefined(no_attribute(obj, key.as_string()));
  }
  return Value::undefined(fmt::format("{} object has no element {}", type_name(obj), repr(key)));
}

Value Interpreter::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (!callee.is_object() || !callee.as_object()->is_callable()) {
    fail("'{}' object is not callable", type_name(callee));
  }
  // keep the object alive across the call even if the call drops the last other reference
  std::shared_ptr<Object> keep = callee.as_object();
  return keep->call(*this, args);
}

Value Interpreter::call_filter(const std::string& name, const Value& operand,
                               const CallArgs& args) {
  FilterFn f = find_filter(name);
  if (!f) fail("no filter named '{}'", name);
  return f(*this, operand, args);
}

bool Interpreter::call_test(const std::string& name, const Value& operand, const CallArgs& args) {
  TestFn t = find_test(name);
  if (!t) fail("no test named '{}'", name);
  return t(*this, operand, args);
}

CallArgs Interpreter::eval_args(const Arguments& a, const ScopePtr& scope) {
  CallArgs out;
  for (const auto& p : a.positional) out.positional.push_back(eval(*p, scope));
  for (const auto& [k, v] : a.keywords) out.keywords.emplace_back(k, eval(*v, scope));
  if (a.star) {
    for (auto& v : iterate(eval(*a.star, scope))) out.positional.push_back(std::move(v));
  }
  if (a.star_star) {
    Value kw = eval(*a.star_star, scope);
    if (!kw.is_dict()) fail("argument after ** must be a mapping, not {}", type_name(kw));
    for (const auto& [k, v] : kw.as_dict().entries) {
      if (!k.is_string()) fail("keywords must be strings");
      out.keywords.emplace_back(k.as_string(), v);
    }
  }
  return out;
}

Value Interpreter::eval_filter(const FilterExpr& e, const ScopePtr& scope, const Value* hole) {
  Value operand;
  if (e.operand) {
    operand = e.operand->kind == ExprKind::Filter
                  ? eval_filter(static_cast<const FilterExpr&>(*e.operand), scope, hole)
                  : eval(*e.operand, scope);
  } else if (hole) {
    operand = *hole;
  }
  CallArgs args = eval_args(e.args, scope);
  line_ = e.line;
  return call_filter(e.name, operand, args);
}

Value Interpreter::eval_call(const CallExpr& e, const ScopePtr& scope, const Value* caller) {
  Value callee = eval(*e.callee, scope);
  CallArgs args = eval_args(e.args, scope);
  if (caller) args.keywords.emplace_back("caller", *caller);
  line_ = e.line;
  return call(callee, args);
}

Value Interpreter::eval_item(const ItemExpr& e, const ScopePtr& scope) {
  Value obj = eval(*e.object, scope);
  if (e.key->kind == ExprKind::Slice) {
    const auto& s = static_cast<const SliceExpr&>(*e.key);
    auto part = [&](const ExprPtr& p) { return p ? eval(*p, scope) : Value::none(); };
    Value start = part(s.start), stop = part(s.stop), step = part(s.step);
    if (obj.is_undefined()) fail_undefined(obj);
    return slice(obj, start, stop, step);
  }
  return get_item(obj, eval(*e.key, scope));
}

Value Interpreter::eval_compare(const CompareExpr& e, const ScopePtr& scope) {
  Value left = eval(*e.first, scope);
  for (const auto& [op, expr] : e.rest) {
    Value right = eval(*expr, scope);
    bool ok = false;
    switch (op) {
      case CmpKind::Eq:
        ok = equals(left, right);
        break;
      case CmpKind::Ne:
        ok = !equals(left, right);
        break;
      case CmpKind::Lt:
        ok = compare(left, right, CmpOp::Lt);
        break;
      case CmpKind::Le:
        ok = compare(left, right, CmpOp::Le);
        break;
      case CmpKind::Gt:
        ok = compare(left, right, CmpOp::Gt);
        break;
      case CmpKind::Ge:
        ok = compare(left, right, CmpOp::Ge);
        break;
      case CmpKind::In:
        ok = contains(right, left);
        break;
      case CmpKind::NotIn:
        ok = !contains(right, left);
        break;
    }
    if (!ok) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

Value Interpreter::eval(const Expr& e, const ScopePtr& scope) {
  DepthGuard depth(*this);
  line_ = e.line;
  switch (e.kind) {
    case ExprKind::Const:
      return static_cast<const ConstExpr&>(e).value;
    case ExprKind::Name:
      return lookup(static_cast<const NameExpr&>(e).name, scope);
    case ExprKind::Tuple:
    case ExprKind::List: {
      std::vector<Value> items;
      for (const auto& item : static_cast<const SeqExpr&>(e).items)
        items.push_back(eval(*item, scope));
      return Value::list(std::move(items),
                         e.kind == ExprKind::Tuple ? SeqType::Tuple : SeqType::List);
    }
    case ExprKind::Dict: {
      Dict d;
      for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
        Value key = eval(*k, scope);
        hash(key);  // Python rejects unhashable keys
        d.set(std::move(key), eval(*v, scope));
      }
      return Value::dict(std::move(d));
    }
    case ExprKind::Attr: {
      const auto& a = static_cast<const AttrExpr&>(e);
      return get_attr(eval(*a.object, scope), a.name);
    }
    case ExprKind::Item:
      return eval_item(static_cast<const ItemExpr&>(e), scope);
    case ExprKind::Slice:
      fail("a slice is only allowed inside []");
    case ExprKind::Call:
      return eval_call(static_cast<const CallExpr&>(e), scope, nullptr);
    case ExprKind::Filter:
      return eval_filter(static_cast<const FilterExpr&>(e), scope, nullptr);
    case ExprKind::Test: {
      const auto& t = static_cast<const FilterExpr&>(e);
      Value operand = eval(*t.operand, scope);
      CallArgs args = eval_args(t.args, scope);
      line_ = e.line;
      return Value::boolean(call_test(t.name, operand, args));
    }
    case ExprKind::Neg:
      return unary_minus(eval(*static_cast<const UnaryExpr&>(e).operand, scope));
    case ExprKind::Pos:
      return unary_plus(eval(*static_cast<const UnaryExpr&>(e).operand, scope));
    case ExprKind::Not:
      return Value::boolean(!truthy(eval(*static_cast<const UnaryExpr&>(e).operand, scope)));
    case ExprKind::Binary: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, scope);
      Value right = eval(*b.right, scope);
      line_ = e.line;
      return binary_op(*this, b.op, left, right);
    }
    case ExprKind::And:
    case ExprKind::Or: {
      const auto& b = static_cast<const BinaryExpr&>(e);
      Value left = eval(*b.left, scope);
      bool t = truthy(left);
      if ((e.kind == ExprKind::And) ? !t : t) return left;
      return eval(*b.right, scope);
    }
    case ExprKind::Compare:
      return eval_compare(static_cast<const CompareExpr&>(e), scope);
    case ExprKind::Concat: {
      std::string s;
      for (const auto& item : static_cast<const SeqExpr&>(e).items) {
        s += to_str(eval(*item, scope));
        check_string_size(s.size());
      }
      return Value::string(std::move(s));
    }
    case ExprKind::Cond: {
      const auto& c = static_cast<const CondExpr&>(e);
      if (truthy(eval(*c.test, scope))) return eval(*c.then, scope);
      if (c.otherwise) return eval(*c.otherwise, scope);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.",
          e.line));
    }
  }
  return Value();
}

}  // namespace ls::jinja
