// jinja2's builtin tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...), with
// Python's answers for every kind of value: e.g. an undefined value is a sequence and
// iterable, a bool is a number, a dict is a sequence.
#include <unordered_map>

#include "jinja/library.h"
#include "jinja/pystr.h"

namespace ls::jinja {

namespace {

const Value& arg(const CallArgs& a, const char* test) {
  if (a.positional.size() != 1 || !a.keywords.empty()) fail("test '{}' takes one argument", test);
  return a.positional[0];
}

void no_args(const CallArgs& a, const char* test) {
  if (!a.positional.empty() || !a.keywords.empty()) fail("test '{}' takes no arguments", test);
}

#define LS_SIMPLE_TEST(fname, expr)                             \
  bool fname(Interpreter&, const Value& v, const CallArgs& a) { \
    no_args(a, #fname);                                         \
    return (expr);                                              \
  }

LS_SIMPLE_TEST(t_defined, !v.is_undefined())
LS_SIMPLE_TEST(t_undefined, v.is_undefined())
LS_SIMPLE_TEST(t_none, v.is_none())
LS_SIMPLE_TEST(t_boolean, v.is_bool())
LS_SIMPLE_TEST(t_false, v.is_bool() && !v.as_bool())
LS_SIMPLE_TEST(t_true, v.is_bool() && v.as_bool())
LS_SIMPLE_TEST(t_integer, v.is_int())
LS_SIMPLE_TEST(t_float, v.is_float())
LS_SIMPLE_TEST(t_string, v.is_string())
LS_SIMPLE_TEST(t_mapping, v.is_dict())
LS_SIMPLE_TEST(t_number, v.is_numeric())
LS_SIMPLE_TEST(t_iterable, is_iterable(v))
LS_SIMPLE_TEST(t_callable, v.is_undefined() || (v.is_object() && v.as_object()->is_callable()))
#undef LS_SIMPLE_TEST

bool t_escaped(Interpreter&, const Value&, const CallArgs& a) {
  no_args(a, "escaped");
  return false;  // no Markup values: autoescaping is off, as in Hugging Face's environment
}

bool t_sequence(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "sequence");
  // len() and __getitem__ both exist: str, list, tuple, dict - and Undefined
  return v.is_undefined() || v.is_string() || v.is_dict() ||
         (v.is_list() && (v.seq_type() == SeqType::List || v.seq_type() == SeqType::Tuple));
}

Value mod2(Interpreter& in, const Value& v) {
  return binary_op(in, ast::BinOp::Mod, v, Value::integer(2));
}

bool t_odd(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(a, "odd");
  return equals(mod2(in, v), Value::integer(1));
}

bool t_even(Interpreter& in, const Value& v, const CallArgs& a) {
  no_args(a, "even");
  return equals(mod2(in, v), Value::integer(0));
}

bool t_divisibleby(Interpreter& in, const Value& v, const CallArgs& a) {
  return equals(binary_op(in, ast::BinOp::Mod, v, arg(a, "divisibleby")), Value::integer(0));
}

bool cased_all(const std::string& s, bool lower) {
  bool cased = false;
  for (char32_t cp : pystr::decode(s)) {
    if (lower ? pystr::is_upper(cp) : pystr::is_lower(cp)) return false;
    cased = cased || (lower ? pystr::is_lower(cp) : pystr::is_upper(cp));
  }
  return cased;
}

bool t_lower(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "lower");
  return cased_all(to_str(v), true);
}

bool t_upper(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "upper");
  return cased_all(to_str(v), false);
}

bool t_sameas(Interpreter&, const Value& v, const CallArgs& a) {
  const Value& other = arg(a, "sameas");
  if (v.kind() != other.kind()) return false;
  switch (v.kind()) {
    case Kind::None:
    case Kind::Undefined:
      return v.is_none();  // distinct Undefined objects are never the same object
    case Kind::Bool:
      return v.as_bool() == other.as_bool();
    case Kind::Int:  // CPython caches small ints
      return v.as_int() == other.as_int() && v.as_int() >= -5 && v.as_int() <= 256;
    case Kind::List:
    case Kind::Dict:
    case Kind::Object:
      return v.identity() == other.identity();
    default:
      return false;
  }
}

bool t_in(Interpreter&, const Value& v, const CallArgs& a) {
  return contains(arg(a, "in"), v);
}
bool t_eq(Interpreter&, const Value& v, const CallArgs& a) {
  return equals(v, arg(a, "eq"));
}
bool t_ne(Interpreter&, const Value& v, const CallArgs& a) {
  return !equals(v, arg(a, "ne"));
}
bool t_lt(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "lt"), CmpOp::Lt);
}
bool t_le(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "le"), CmpOp::Le);
}
bool t_gt(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "gt"), CmpOp::Gt);
}
bool t_ge(Interpreter&, const Value& v, const CallArgs& a) {
  return compare(v, arg(a, "ge"), CmpOp::Ge);
}

bool t_filter(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "filter");
  return v.is_string() && find_filter(v.as_string()) != nullptr;
}

bool t_test(Interpreter&, const Value& v, const CallArgs& a) {
  no_args(a, "test");
  return v.is_string() && find_test(v.as_string()) != nullptr;
}

const std::unordered_map<std::string_view, TestFn>& tests() {
  static const std::unordered_map<std::string_view, TestFn> table = {
      {"odd", t_odd},
      {"even", t_even},
      {"divisibleby", t_divisibleby},
      {"defined", t_defined},
      {"undefined", t_undefined},
      {"filter", t_filter},
      {"test", t_test},
      {"none", t_none},
      {"boolean", t_boolean},
      {"false", t_false},
      {"true", t_true},
      {"integer", t_integer},
      {"float", t_float},
      {"lower", t_lower},
      {"upper", t_upper},
      {"string", t_string},
      {"mapping", t_mapping},
      {"number", t_number},
      {"sequence", t_sequence},
      {"iterable", t_iterable},
      {"callable", t_callable},
      {"sameas", t_sameas},
      {"escaped", t_escaped},
      {"in", t_in},
      {"==", t_eq},
      {"eq", t_eq},
      {"equalto", t_eq},
      {"!=", t_ne},
      {"ne", t_ne},
      {">", t_gt},
      {"gt", t_gt},
      {"greaterthan", t_gt},
      {">=", t_ge},
      {"ge", t_ge},
      {"<", t_lt},
      {"lt", t_lt},
      {"lessthan", t_lt},
      {"<=", t_le},
      {"le", t_le},
  };
  return table;
}

}  // namespace

TestFn find_test(std::string_view name) {
  auto it = tests().find(name);
  return it == tests().end() ? nullptr : it->second;
}

}  // namespace ls::jinja
