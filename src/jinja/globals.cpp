// The global functions a chat template can call: jinja2's range (capped as in its sandbox),
// dict, namespace, cycler and joiner, plus the raise_exception and strftime_now helpers that
// Hugging Face's transformers adds.
#include <ctime>

#include "jinja/library.h"

namespace ls::jinja {

namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr std::int64_t kMaxRange = 100000;

Value range(Interpreter& in, const CallArgs& a) {
  if (!a.keywords.empty()) fail("range() takes no keyword arguments");
  std::int64_t start = 0, stop = 0, step = 1;
  for (const auto& v : a.positional) {
    if (!v.is_integral()) fail("'{}' object cannot be interpreted as an integer", type_name(v));
  }
  switch (a.positional.size()) {
    case 1:
      stop = a.positional[0].as_int();
      break;
    case 2:
    case 3:
      start = a.positional[0].as_int();
      stop = a.positional[1].as_int();
      if (a.positional.size() == 3) step = a.positional[2].as_int();
      break;
    default:
      fail("range expected 1 to 3 arguments, got {}", a.positional.size());
  }
  if (step == 0) fail("range() arg 3 must not be zero");
  long double count = step > 0 ? (static_cast<long double>(stop) - start + step - 1) / step
                               : (static_cast<long double>(start) - stop - step - 1) / -step;
  if (count > kMaxRange) {
    fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", kMaxRange);
  }
  std::vector<Value> out;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    out.push_back(Value::integer(i));
  }
  in.check_list_size(out.size());
  return Value::list(std::move(out));
}

Value dict(Interpreter&, const CallArgs& a) {
  Dict d;
  if (a.positional.size() > 1)
    fail("dict expected at most 1 argument, got {}", a.positional.size());
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (src.is_dict()) {
      d = src.as_dict();
    } else {
      for (const auto& pair : iterate(src)) {
        auto kv = iterate(pair);
        if (kv.size() != 2)
          fail("dictionary update sequence element has length {}; 2 is required", kv.size());
        hash(kv[0]);
        d.set(kv[0], kv[1]);
      }
    }
  }
  for (const auto& [k, v] : a.keywords) d.set(Value::string(k), v);
  return Value::dict(std::move(d));
}

Value make_namespace(Interpreter& in, const CallArgs& a) {
  auto ns = std::make_shared<Namespace>();
  if (a.positional.size() > 1) fail("namespace() takes at most 1 positional argument");
  if (!a.positional.empty()) {
    const Value& src = a.positional[0];
    if (!src.is_dict()) fail("namespace() argument must be a mapping, not {}", type_name(src));
    for (const auto& [k, v] : src.as_dict().entries) ns->set(to_str(k), v);
  }
  for (const auto& [k, v] : a.keywords) ns->set(k, v);
  return in.track(ns);
}

Value raise_exception(Interpreter&, const CallArgs& a) {
  auto b = bind_args("raise_exception", a, {Param("message")});
  throw RaisedError(to_str(b[0]));
}

Value strftime_now(Interpreter&, const CallArgs& a) {
  auto b = bind_args("strftime_now", a, {Param("format")});
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[512];
  std::size_t n = std::strftime(buf, sizeof buf, to_str(b[0]).c_str(), &local);
  return Value::string(std::string(buf, n));
}

}  // namespace

void add_globals(Scope& globals) {
  globals.set("range", make_builtin("range", range));
  globals.set("dict", make_builtin("dict", dict));
  globals.set("namespace", make_builtin("namespace", make_namespace));
  globals.set("raise_exception", make_builtin("raise_exception", raise_exception));
  globals.set("strftime_now", make_builtin("strftime_now", strftime_now));
  globals.set("cycler", make_builtin("cycler", [](Interpreter& in, const CallArgs& a) {
                return in.track(make_cycler(a).as_object());
              }));
  globals.set("joiner", make_builtin("joiner", [](Interpreter&, const CallArgs& a) {
                return make_joiner(a);
              }));
}

}  // namespace ls::jinja
