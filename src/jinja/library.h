// The builtin library of the template language, as jinja2 and Hugging Face provide it:
// filters, tests, the methods of str/dict/list values, global functions (range, namespace,
// dict, raise_exception, strftime_now, cycler, joiner), Python's % and str.format()
// formatting, and the operators' arithmetic.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "core/error.h"
#include "jinja/ast.h"
#include "jinja/interpreter.h"

namespace ls::jinja {

// Thrown by raise_exception(): the render fails with exactly this message.
class RaisedError : public ls::Error {
 public:
  using ls::Error::Error;
};

using FilterFn = Value (*)(Interpreter&, const Value& operand, const CallArgs& args);
using TestFn = bool (*)(Interpreter&, const Value& operand, const CallArgs& args);
FilterFn find_filter(std::string_view name);  // nullptr if unknown
TestFn find_test(std::string_view name);

// The attribute `name` of a str/list/dict/number value: a bound method, an Undefined for a
// method the sandbox blocks or logitscope lacks, or nullopt if Python has no such attribute.
std::optional<Value> find_method(const Value& self, const std::string& name);

void add_globals(Scope& globals);

std::string percent_format(Interpreter& in, const std::string& format, const Value& args);
std::string brace_format(Interpreter& in, const std::string& format, const CallArgs& args);

Value binary_op(Interpreter& in, ast::BinOp op, const Value& a, const Value& b);
Value unary_minus(const Value& v);
Value unary_plus(const Value& v);
bool contains(const Value& container, const Value& item);  // `item in container`
// obj[start:stop:step], with Python's errors for objects and indices that cannot be sliced.
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
// Python's int(x) / float(x) conversions used by filters; nullopt where Python raises.
std::optional<std::int64_t> to_int(const Value& v, int base);
std::optional<double> to_float(const Value& v);

[[noreturn]] void fail_undefined(const Value& v);

}  // namespace ls::jinja
