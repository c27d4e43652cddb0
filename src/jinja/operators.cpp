// Python's arithmetic, `in`, slicing and int()/float() conversions for template values.
// Integers are 64-bit here (Python's are unbounded): an overflow is an error, never a wrap.
#include <cmath>
#include <limits>

#include "jinja/library.h"
#include "jinja/pystr.h"

namespace ls::jinja {

using ast::BinOp;

void fail_undefined(const Value& v) {
  const std::string& hint = v.undefined_hint();
  fail("{}", hint.empty() ? std::string("value is undefined") : hint);
}

namespace {

[[noreturn]] void overflow() {
  fail("integer overflow: the result does not fit in 64 bits");
}

// Python ints do not overflow; ours are 64-bit, so an overflow is an error.
std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t sub(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) overflow();
  return r;
}
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) overflow();
  return r;
}

const char* symbol(BinOp op) {
  switch (op) {
    case BinOp::Add:
      return "+";
    case BinOp::Sub:
      return "-";
    case BinOp::Mul:
      return "*";
    case BinOp::Div:
      return "/";
    case BinOp::FloorDiv:
      return "//";
    case BinOp::Mod:
      return "%";
    case BinOp::Pow:
      return "** or pow()";
  }
  return "?";
}

[[noreturn]] void unsupported(BinOp op, const Value& a, const Value& b) {
  fail("unsupported operand type(s) for {}: '{}' and '{}'", symbol(op), type_name(a), type_name(b));
}

Value int_pow(std::int64_t base, std::int64_t exp) {
  if (exp < 0) {
    if (base == 0) fail("0.0 cannot be raised to a negative power");
    return Value::number(std::pow(static_cast<double>(base), static_cast<double>(exp)));
  }
  std::int64_t result = 1;
  while (exp > 0) {
    if (exp & 1) result = mul(result, base);
    exp >>= 1;
    if (exp > 0) base = mul(base, base);
  }
  return Value::integer(result);
}

Value float_op(BinOp op, double x, double y) {
  switch (op) {
    case BinOp::Add:
      return Value::number(x + y);
    case BinOp::Sub:
      return Value::number(x - y);
    case BinOp::Mul:
      return Value::number(x * y);
    case BinOp::Div:
      if (y == 0) fail("float division by zero");
      return Value::number(x / y);
    case BinOp::FloorDiv:
    case BinOp::Mod: {
      if (y == 0 && op == BinOp::Mod) fail("float modulo by zero");
      if (y == 0) fail("float floor division by zero");
      double mod = std::fmod(x, y);
      double div = (x - mod) / y;
      if (mod != 0) {
        if ((y < 0) != (mod < 0)) {
          mod += y;
          div -= 1.0;
        }
      } else {
        mod = std::copysign(0.0, y);
      }
      if (op == BinOp::Mod) return Value::number(mod);
      double floordiv;
      if (div != 0) {
        floordiv = std::floor(div);
        if (div - floordiv > 0.5) floordiv += 1.0;
      } else {
        floordiv = std::copysign(0.0, x / y);
      }
      return Value::number(floordiv);
    }
    case BinOp::Pow: {
      if (x == 0 && y < 0) fail("0.0 cannot be raised to a negative power");
      if (x < 0 && std::floor(y) != y) fail("complex results are not supported");
      double r = std::pow(x, y);
      if (std::isinf(r) && std::isfinite(x) && std::isfinite(y))
        fail("numerical result out of range");
      return Value::number(r);
    }
  }
  return Value::none();
}

Value int_op(BinOp op, std::int64_t x, std::int64_t y) {
  switch (op) {
    case BinOp::Add:
      return Value::integer(add(x, y));
    case BinOp::Sub:
      return Value::integer(sub(x, y));
    case BinOp::Mul:
      return Value::integer(mul(x, y));
    case BinOp::Div:
      if (y == 0) fail("division by zero");
      return Value::number(static_cast<double>(x) / static_cast<double>(y));
    case BinOp::FloorDiv:
    case BinOp::Mod: {
      if (y == 0) fail("integer division or modulo by zero");
      if (x == std::numeric_limits<std::int64_t>::min() && y == -1) {
        if (op == BinOp::Mod) return Value::integer(0);
        overflow();
      }
      std::int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {
        --q;
        m += y;
      }
      return Value::integer(op == BinOp::Mod ? m : q);
    }
    case BinOp::Pow:
      return int_pow(x, y);
  }
  return Value::none();
}

bool is_plain_seq(const Value& v) {
  return v.is_list() && (v.seq_type() == SeqType::List || v.seq_type() == SeqType::Tuple);
}

Value repeat(Interpreter& in, const Value& seq, std::int64_t times) {
  if (times <= 0) return seq.is_string() ? Value::string("") : Value::list({}, seq.seq_type());
  // n * times, saturated, so that the size checks below cannot be fooled by overflow
  auto total = [&](std::size_t n) {
    auto t = static_cast<std::size_t>(times);
    return (n != 0 && t > SIZE_MAX / n) ? SIZE_MAX : n * t;
  };
  if (seq.is_string()) {
    std::size_t n = seq.as_string().size();
    in.check_string_size(total(n));
    if (n == 0) return Value::string("");
    std::string out;
    out.reserve(n * static_cast<std::size_t>(times));
    for (std::int64_t k = 0; k < times; ++k) out += seq.as_string();
    return Value::string(std::move(out));
  }
  std::size_t n = seq.items().size();
  in.check_list_size(total(n));
  std::vector<Value> out;
  for (std::int64_t k = 0; k < times && n != 0; ++k) {
    out.insert(out.end(), seq.items().begin(), seq.items().end());
  }
  return Value::list(std::move(out), seq.seq_type());
}

}  // namespace

Value binary_op(Interpreter& in, BinOp op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  // str % x formats any x (an undefined one prints as ""); other operators on an undefined
  // operand reach Undefined's reflected method, which raises
  if (op == BinOp::Mod && a.is_string()) return Value::string(percent_format(in, a.as_string(), b));
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_numeric() && b.is_numeric()) {
    if (a.is_integral() && b.is_integral()) return int_op(op, a.as_int(), b.as_int());
    return float_op(op, a.as_float(), b.as_float());
  }
  switch (op) {
    case BinOp::Add:
      if (a.is_string() && b.is_string()) {
        in.check_string_size(a.as_string().size() + b.as_string().size());
        return Value::string(a.as_string() + b.as_string());
      }
      if (is_plain_seq(a) && is_plain_seq(b) && a.seq_type() == b.seq_type()) {
        in.check_list_size(a.items().size() + b.items().size());
        std::vector<Value> items = a.items();
        items.insert(items.end(), b.items().begin(), b.items().end());
        return Value::list(std::move(items), a.seq_type());
      }
      if (a.is_string() || is_plain_seq(a)) {
        fail("can only concatenate {} (not \"{}\") to {}", type_name(a), type_name(b),
             type_name(a));
      }
      break;
    case BinOp::Mul:
      if ((a.is_string() || is_plain_seq(a)) && b.is_integral()) return repeat(in, a, b.as_int());
      if ((b.is_string() || is_plain_seq(b)) && a.is_integral()) return repeat(in, b, a.as_int());
      if (a.is_string() || is_plain_seq(a) || b.is_string() || is_plain_seq(b)) {
        fail("can't multiply sequence by non-int of type '{}'",
             type_name(a.is_string() || is_plain_seq(a) ? b : a));
      }
      break;
    case BinOp::Mod:
      if (a.is_string()) return Value::string(percent_format(in, a.as_string(), b));
      break;
    default:
      break;
  }
  unsupported(op, a, b);
}

Value unary_minus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) {
    if (v.as_int() == std::numeric_limits<std::int64_t>::min()) overflow();
    return Value::integer(-v.as_int());
  }
  if (v.is_float()) return Value::number(-v.as_float());
  fail("bad operand type for unary -: '{}'", type_name(v));
}

Value unary_plus(const Value& v) {
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.is_float()) return v;
  fail("bad operand type for unary +: '{}'", type_name(v));
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Kind::Undefined:
      return false;
    case Kind::String:
      if (!item.is_string()) {
        fail("'in <string>' requires string as left operand, not {}", type_name(item));
      }
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Kind::List:
      if (is_iterator(container)) {  // consumes the iterator up to the match, as Python does
        while (auto v = next_item(container)) {
          if (equals(*v, item)) return true;
        }
        return false;
      }
      for (const auto& v : container.items()) {
        if (equals(v, item)) return true;
      }
      return false;
    case Kind::Dict:
      hash(item);
      return container.as_dict().find(item) != nullptr;
    default:
      fail("argument of type '{}' is not iterable", type_name(container));
  }
}

Value slice(const Value& obj, const Value& start_v, const Value& stop_v, const Value& step_v) {
  // jinja2 evaluates obj[a:b:c] with Python's own subscript (not its getitem), so these are
  // Python's errors; Python checks the step first, then start and stop.
  if (obj.is_dict()) fail("unhashable type: 'slice'");
  if (!obj.is_string() && !is_plain_seq(obj))
    fail("'{}' object is not subscriptable", type_name(obj));
  for (const Value* v : {&step_v, &start_v, &stop_v}) {
    if (v->is_undefined()) fail_undefined(*v);
    if (!v->is_none() && !v->is_integral()) {
      fail("slice indices must be integers or None or have an __index__ method");
    }
  }
  std::int64_t step = step_v.is_none() ? 1 : step_v.as_int();
  if (step == 0) fail("slice step cannot be zero");
  auto index = [&](const Value& v) -> std::optional<std::int64_t> {
    if (v.is_none()) return std::nullopt;
    return v.as_int();
  };
  std::u32string cps;
  if (obj.is_string()) cps = pystr::decode(obj.as_string());
  std::int64_t len = obj.is_string() ? static_cast<std::int64_t>(cps.size())
                                     : static_cast<std::int64_t>(obj.items().size());
  auto adjust = [&](std::optional<std::int64_t> v, bool is_start) {
    if (!v) return step < 0 ? (is_start ? len - 1 : -1) : (is_start ? 0 : len);
    std::int64_t i = *v;
    if (i < 0) {
      i = (i < -len) ? (step < 0 ? -1 : 0) : i + len;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
    return i;
  };
  std::int64_t start = adjust(index(start_v), true), stop = adjust(index(stop_v), false);
  std::vector<std::int64_t> picks;
  for (std::int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    picks.push_back(i);
    if (step > 0 ? i > std::numeric_limits<std::int64_t>::max() - step
                 : i < std::numeric_limits<std::int64_t>::min() - step) {
      break;
    }
  }
  if (obj.is_string()) {
    std::u32string out;
    for (auto i : picks) out += cps[static_cast<std::size_t>(i)];
    return Value::string(pystr::encode(out));
  }
  std::vector<Value> out;
  for (auto i : picks) out.push_back(obj.items()[static_cast<std::size_t>(i)]);
  return Value::list(std::move(out), obj.seq_type());
}

static std::optional<std::string> python_number_text(const std::string& raw) {
  // Python allows surrounding whitespace and single underscores between digits.
  std::string s = pystr::strip(raw, std::nullopt, true, true);
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i - 1])) &&
                std::isxdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    out += s[i];
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::int64_t> to_int(const Value& v, int base) {
  if (v.is_integral()) return v.as_int();
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::abs(d) >= 9.2e18) return std::nullopt;
    return static_cast<std::int64_t>(d);
  }
  if (!v.is_string()) return std::nullopt;
  auto text = python_number_text(v.as_string());
  if (!text) return std::nullopt;
  std::string s = *text;
  bool negative = false;
  if (s[0] == '+' || s[0] == '-') {
    negative = s[0] == '-';
    s.erase(0, 1);
  }
  if (s.size() > 2 && s[0] == '0') {
    char p = static_cast<char>(s[1] | 0x20);
    if ((p == 'x' && base == 16) || (p == 'o' && base == 8) || (p == 'b' && base == 2))
      s.erase(0, 2);
  }
  if (s.empty()) return std::nullopt;
  std::int64_t result = 0;
  for (char c : s) {
    int d = std::isdigit(static_cast<unsigned char>(c))   ? c - '0'
            : std::isalpha(static_cast<unsigned char>(c)) ? (c | 0x20) - 'a' + 10
                                                          : 99;
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(result, base, &result) ||
        __builtin_add_overflow(result, d, &result)) {
      return std::nullopt;
    }
  }
  return negative ? -result : result;
}

std::optional<double> to_float(const Value& v) {
  if (v.is_numeric()) return v.as_float();
  if (!v.is_string()) return std::nullopt;
  auto text = python_number_text(v.as_string());
  if (!text) return std::nullopt;
  std::string s = *text;
  std::string lower = pystr::lower(s);
  std::string body = (lower[0] == '+' || lower[0] == '-') ? lower.substr(1) : lower;
  double sign = lower[0] == '-' ? -1.0 : 1.0;
  if (body == "inf" || body == "infinity") return sign * std::numeric_limits<double>::infinity();
  if (body == "nan") return std::numeric_limits<double>::quiet_NaN();
  // digits [. digits] [e [sign] digits], or . digits [...]
  std::size_t i = 0, digits = 0;
  while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++digits;
  }
  if (digits == 0) return std::nullopt;
  if (i < body.size() && body[i] == 'e') {
    ++i;
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    std::size_t exp_digits = 0;
    while (i < body.size() && std::isdigit(static_cast<unsigned char>(body[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != body.size()) return std::nullopt;
  return std::strtod(s.c_str(), nullptr);
}

}  // namespace ls::jinja
