// Host objects (see objects.h) and Python-style argument binding for builtins.
#include "jinja/objects.h"

#include "core/error.h"
#include "jinja/interpreter.h"

namespace ls::jinja {

std::vector<Value> bind_args(const std::string& function, const CallArgs& args,
                             const std::vector<Param>& params) {
  if (args.positional.size() > params.size()) {
    fail("{}() takes at most {} argument(s) ({} given)", function, params.size(),
         args.positional.size());
  }
  std::vector<Value> out(params.size());
  std::vector<bool> set(params.size(), false);
  for (std::size_t i = 0; i < args.positional.size(); ++i) {
    out[i] = args.positional[i];
    set[i] = true;
  }
  for (const auto& [key, value] : args.keywords) {
    std::size_t i = 0;
    while (i < params.size() && key != params[i].name) ++i;
    if (i == params.size()) fail("{}() got an unexpected keyword argument '{}'", function, key);
    if (set[i]) fail("{}() got multiple values for argument '{}'", function, key);
    out[i] = value;
    set[i] = true;
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    if (set[i]) continue;
    if (!params[i].has_default) {
      fail("{}() missing required argument '{}'", function, params[i].name);
    }
    out[i] = params[i].fallback;
  }
  return out;
}

Value make_builtin(std::string name, Builtin::Fn fn) {
  return Value::object(std::make_shared<Builtin>(std::move(name), std::move(fn)));
}

std::string Namespace::repr() const {
  return "<Namespace " + ls::jinja::repr(Value::dict(attrs_)) + ">";
}

std::optional<Value> Namespace::attribute(const std::string& name) const {
  if (const Value* v = attrs_.find(std::string_view(name))) return *v;
  return std::nullopt;
}

void Namespace::set(const std::string& name, Value v) {
  int d = std::max(depth_, v.depth() + 1);
  if (d > kMaxNesting) fail("value nesting deeper than {} levels", kMaxNesting);
  depth_ = d;
  attrs_.set(Value::string(name), std::move(v));
}

std::optional<Value> Macro::attribute(const std::string& name) const {
  if (name == "name") return Value::string(def_.name);
  if (name == "arguments") {
    std::vector<Value> names;
    for (const auto& p : def_.params) names.push_back(Value::string(p));
    return Value::tuple(std::move(names));
  }
  if (name == "catch_kwargs") return Value::boolean(def_.uses_kwargs);
  if (name == "catch_varargs") return Value::boolean(def_.uses_varargs);
  if (name == "caller") return Value::boolean(def_.uses_caller);
  return std::nullopt;
}

Value Macro::call(Interpreter& in, CallArgs args) {
  if (!closure_) fail("macro '{}' called after its template finished rendering", def_.name);
  return in.call_macro(def_, closure_, args);
}

std::string Loop::repr() const {
  return fmt::format("<LoopContext {}/{}>", index0_ + 1, items_.size());
}

void Loop::release() {
  items_.clear();
  scope_.reset();
}

std::optional<Value> Loop::attribute(const std::string& name) const {
  auto n = static_cast<std::int64_t>(items_.size());
  auto i = static_cast<std::int64_t>(index0_);
  if (name == "index") return Value::integer(i + 1);
  if (name == "index0") return Value::integer(i);
  if (name == "revindex") return Value::integer(n - i);
  if (name == "revindex0") return Value::integer(n - i - 1);
  if (name == "first") return Value::boolean(i == 0);
  if (name == "last") return Value::boolean(i == n - 1);
  if (name == "length") return Value::integer(n);
  if (name == "depth") return Value::integer(depth_);
  if (name == "depth0") return Value::integer(depth_ - 1);
  if (name == "previtem") {
    if (i == 0) return Value::undefined("there is no previous item");
    return items_[index0_ - 1];
  }
  if (name == "nextitem") {
    if (i + 1 >= n) return Value::undefined("there is no next item");
    return items_[index0_ + 1];
  }
  if (name == "cycle") {
    std::size_t at = index0_;
    return make_builtin("cycle", [at](Interpreter&, const CallArgs& args) {
      if (args.positional.empty()) fail("no items for cycling given");
      return args.positional[at % args.positional.size()];
    });
  }
  if (name == "changed") {
    auto last = last_changed_;
    return make_builtin("changed", [last](Interpreter&, const CallArgs& args) {
      Value now = Value::tuple(args.positional);
      if (!last->is_undefined() && equals(*last, now)) return Value::boolean(false);
      *last = now;
      return Value::boolean(true);
    });
  }
  return std::nullopt;
}

Value Loop::call(Interpreter& in, CallArgs args) {
  if (!stmt_) fail("the loop must be marked 'recursive' to be called");
  auto bound = bind_args("loop", args, {Param("iterable")});
  return Value::string(in.run_recursive_loop(*stmt_, scope_, bound[0], depth_ + 1));
}

namespace {

class Cycler : public Object {
 public:
  explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
  std::string type_name() const override { return "Cycler"; }
  std::optional<Value> attribute(const std::string& name) const override {
    auto pos = pos_;
    const auto& items = items_;
    if (name == "current") return items[*pos];
    if (name == "next") {
      return make_builtin("next", [pos, items](Interpreter&, const CallArgs&) {
        Value v = items[*pos];
        *pos = (*pos + 1) % items.size();
        return v;
      });
    }
    if (name == "reset") {
      return make_builtin("reset", [pos](Interpreter&, const CallArgs&) {
        *pos = 0;
        return Value::none();
      });
    }
    return std::nullopt;
  }

 private:
  std::vector<Value> items_;
  std::shared_ptr<std::size_t> pos_ = std::make_shared<std::size_t>(0);
};

class Joiner : public Object {
 public:
  explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
  std::string type_name() const override { return "Joiner"; }
  bool is_callable() const override { return true; }
  Value call(Interpreter&, CallArgs) override {
    if (!used_) {
      used_ = true;
      return Value::string("");
    }
    return Value::string(sep_);
  }

 private:
  std::string sep_;
  bool used_ = false;
};

}  // namespace

Value make_cycler(const CallArgs& args) {
  if (args.positional.empty()) fail("at least one item has to be provided to cycler()");
  return Value::object(std::make_shared<Cycler>(args.positional));
}

Value make_joiner(const CallArgs& args) {
  auto a = bind_args("joiner", args, {Param("sep", Value::string(", "))});
  return Value::object(std::make_shared<Joiner>(to_str(a[0])));
}

}  // namespace ls::jinja
