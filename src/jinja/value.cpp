// Python semantics of template values: truthiness, str()/repr(), ==, ordering, hashing, len()
// and iteration, written to match what CPython does for the same objects, since jinja2 simply
// delegates to Python for all of these.
#include "jinja/value.h"

#include <charconv>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "jinja/pystr.h"

namespace ls::jinja {

namespace {

int child_depth(const Value& v) {
  switch (v.kind()) {
    case Kind::List:
    case Kind::Dict:
    case Kind::Object:
      return v.depth();
    default:
      return 0;
  }
}

void check_depth(int depth) {
  if (depth > kMaxNesting) fail("value nesting deeper than {} levels", kMaxNesting);
}

[[noreturn]] void fail_undefined(const Value& v) {
  const std::string& hint = v.undefined_hint();
  fail("{}", hint.empty() ? std::string("value is undefined") : hint);
}

// Guards repr() against cycles through namespaces (Python raises RecursionError there too).
thread_local int repr_depth = 0;
struct ReprGuard {
  ReprGuard() {
    if (++repr_depth > 2 * kMaxNesting) {
      --repr_depth;
      fail("maximum recursion depth exceeded while printing a value");
    }
  }
  ~ReprGuard() { --repr_depth; }
};

}  // namespace

const Value* Dict::find(const Value& key) const {
  if (key.is_string()) return find(std::string_view(key.as_string()));
  for (const auto& [k, v] : entries) {
    if (equals(k, key)) return &v;
  }
  return nullptr;
}

const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : entries) {
    if (k.is_string() && k.as_string() == key) return &v;
  }
  return nullptr;
}

void Dict::set(Value key, Value value) {
  for (auto& [k, v] : entries) {
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.emplace_back(std::move(key), std::move(value));
}

std::string Object::repr() const {
  return "<" + type_name() + " object>";
}
std::optional<Value> Object::attribute(const std::string&) const {
  return std::nullopt;
}
Value Object::call(Interpreter&, CallArgs) {
  fail("'{}' object is not callable", type_name());
}

Value Value::group(Value grouper, Value members) {
  Value v = tuple({std::move(grouper), std::move(members)});
  auto l = std::make_shared<List>(v.as_list());
  l->group = true;
  return Value(Storage(std::shared_ptr<const List>(std::move(l))));
}

Value Value::iterator(std::function<std::vector<Value>()> produce, int depth, SeqType type) {
  check_depth(depth + 1);
  auto l = std::make_shared<List>();
  l->type = type;
  l->depth = depth + 1;
  l->produce = std::move(produce);
  return Value(Storage(std::shared_ptr<const List>(std::move(l))));
}

bool is_iterator(const Value& v) {
  return v.is_list() &&
         (v.seq_type() == SeqType::Generator || v.seq_type() == SeqType::ReverseIterator);
}

// Runs an iterator's producer once; its items then live in `items` (cast: List is shared
// const everywhere else, but an iterator's state is meant to change, as in Python).
static List& produced(const Value& v) {
  auto& l = const_cast<List&>(v.as_list());
  if (l.produce) {
    auto produce = std::move(l.produce);
    l.produce = nullptr;
    l.items = produce();
    for (const auto& item : l.items) {
      if (item.depth() + 1 > l.depth) check_depth(item.depth() + 1);
    }
  }
  return l;
}

std::optional<Value> next_item(const Value& v) {
  List& l = produced(v);
  if (l.next >= l.items.size()) return std::nullopt;
  return l.items[l.next++];
}

Value Value::list(std::vector<Value> items, SeqType type) {
  auto l = std::make_shared<List>();
  int depth = 0;
  for (const auto& item : items) depth = std::max(depth, child_depth(item));
  check_depth(depth + 1);
  l->items = std::move(items);
  l->type = type;
  l->depth = depth + 1;
  return Value(Storage(std::shared_ptr<const List>(std::move(l))));
}

Value Value::dict(Dict d) {
  int depth = 0;
  for (const auto& [k, v] : d.entries) depth = std::max({depth, child_depth(k), child_depth(v)});
  check_depth(depth + 1);
  d.depth = depth + 1;
  return Value(Storage(std::make_shared<const Dict>(std::move(d))));
}

static Value from_json_at(const nlohmann::ordered_json& j, int depth) {
  check_depth(depth);
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::none();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::boolean(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::integer(j.get<std::int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<std::int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::number(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::string(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json_at(e, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.entries.reserve(j.size());
      for (const auto& [k, v] : j.items()) {
        d.entries.emplace_back(Value::string(k), from_json_at(v, depth + 1));
      }
      return Value::dict(std::move(d));
    }
    default:
      fail("unsupported JSON value of type {} in the template context", j.type_name());
  }
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  return from_json_at(j, 1);
}

double Value::as_float() const {
  if (is_float()) return std::get<double>(v_);
  return static_cast<double>(as_int());
}

const void* Value::identity() const {
  switch (kind()) {
    case Kind::List:
      return std::get<std::shared_ptr<const List>>(v_).get();
    case Kind::Dict:
      return std::get<std::shared_ptr<const Dict>>(v_).get();
    case Kind::Object:
      return std::get<std::shared_ptr<Object>>(v_).get();
    default:
      return nullptr;
  }
}

int Value::depth() const {
  switch (kind()) {
    case Kind::List:
      return as_list().depth;
    case Kind::Dict:
      return as_dict().depth;
    case Kind::Object:
      return as_object()->depth();
    default:
      return 0;
  }
}

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "NoneType";
    case Kind::Bool:
      return "bool";
    case Kind::Int:
      return "int";
    case Kind::Float:
      return "float";
    case Kind::String:
      return "str";
    case Kind::Dict:
      return "dict";
    case Kind::Object:
      return v.as_object()->type_name();
    case Kind::List:
      break;
  }
  switch (v.seq_type()) {
    case SeqType::List:
      return "list";
    case SeqType::Tuple:
      return "tuple";
    case SeqType::Generator:
      return "generator";
    case SeqType::ReverseIterator:
      return "list_reverseiterator";
    case SeqType::DictKeys:
      return "dict_keys";
    case SeqType::DictValues:
      return "dict_values";
    case SeqType::DictItems:
      return "dict_items";
  }
  return "list";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return false;
    case Kind::Bool:
      return v.as_bool();
    case Kind::Int:
      return v.as_int() != 0;
    case Kind::Float:
      return v.as_float() != 0.0;
    case Kind::String:
      return !v.as_string().empty();
    case Kind::List:
      if (v.seq_type() == SeqType::Generator || v.seq_type() == SeqType::ReverseIterator) {
        return true;  // Python iterators have no length: always true
      }
      return !v.items().empty();
    case Kind::Dict:
      return !v.as_dict().entries.empty();
    case Kind::Object:
      return true;
  }
  return false;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view s(buf, static_cast<std::size_t>(res.ptr - buf));
  std::string sign;
  if (s.front() == '-') {
    sign = "-";
    s.remove_prefix(1);
  }
  auto e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e)) {
    if (c != '.') digits += c;
  }
  int exp10 = 0;
  auto exp_text = s.substr(e + 1);
  if (!exp_text.empty() && exp_text.front() == '+') exp_text.remove_prefix(1);
  std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp10);
  int decpt = exp10 + 1;  // value = 0.DIGITS * 10^decpt
  int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    std::string mantissa = digits.substr(0, 1);
    if (n > 1) mantissa += "." + digits.substr(1);
    return sign + mantissa + fmt::format("e{}{:02d}", exp10 < 0 ? '-' : '+', std::abs(exp10));
  }
  if (decpt <= 0) return sign + "0." + std::string(static_cast<std::size_t>(-decpt), '0') + digits;
  if (decpt >= n)
    return sign + digits + std::string(static_cast<std::size_t>(decpt - n), '0') + ".0";
  return sign + digits.substr(0, static_cast<std::size_t>(decpt)) + "." +
         digits.substr(static_cast<std::size_t>(decpt));
}

static std::string join_repr(const std::vector<Value>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i) out += ", ";
    out += repr(items[i]);
  }
  return out;
}

std::string repr(const Value& v) {
  ReprGuard guard;
  switch (v.kind()) {
    case Kind::Undefined:
      return "Undefined";
    case Kind::None:
      return "None";
    case Kind::Bool:
      return v.as_bool() ? "True" : "False";
    case Kind::Int:
      return std::to_string(v.as_int());
    case Kind::Float:
      return float_repr(v.as_float());
    case Kind::String:
      return pystr::repr(v.as_string());
    case Kind::Dict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, val] : v.as_dict().entries) {
        if (!first) out += ", ";
        first = false;
        out += repr(k) + ": " + repr(val);
      }
      return out + "}";
    }
    case Kind::Object:
      return v.as_object()->repr();
    case Kind::List:
      break;
  }
  const auto& items = v.items();
  switch (v.seq_type()) {
    case SeqType::List:
      return "[" + join_repr(items) + "]";
    case SeqType::Tuple:
      return "(" + join_repr(items) + (items.size() == 1 ? ",)" : ")");
    case SeqType::Generator:
      return "<generator object>";
    case SeqType::ReverseIterator:
      return "<list_reverseiterator object>";
    case SeqType::DictKeys:
      return "dict_keys([" + join_repr(items) + "])";
    case SeqType::DictValues:
      return "dict_values([" + join_repr(items) + "])";
    case SeqType::DictItems:
      return "dict_items([" + join_repr(items) + "])";
  }
  return "";
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return "";
    case Kind::String:
      return v.as_string();
    default:
      return repr(v);
  }
}

static bool numbers_equal(const Value& a, const Value& b) {
  if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
  return a.as_float() == b.as_float();
}

bool equals(const Value& a, const Value& b) {
  if (a.is_numeric() && b.is_numeric()) return numbers_equal(a, b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::Undefined:
    case Kind::None:
      return true;
    case Kind::String:
      return a.as_string() == b.as_string();
    case Kind::List: {
      if (a.identity() == b.identity()) return true;
      SeqType ta = a.seq_type(), tb = b.seq_type();
      bool comparable = ta == tb && (ta == SeqType::List || ta == SeqType::Tuple);
      if (!comparable) return false;
      const auto &x = a.items(), &y = b.items();
      if (x.size() != y.size()) return false;
      for (std::size_t i = 0; i < x.size(); ++i) {
        if (!equals(x[i], y[i])) return false;
      }
      return true;
    }
    case Kind::Dict: {
      const auto &x = a.as_dict(), &y = b.as_dict();
      if (x.entries.size() != y.entries.size()) return false;
      for (const auto& [k, v] : x.entries) {
        const Value* other = y.find(k);
        if (!other || !equals(v, *other)) return false;
      }
      return true;
    }
    case Kind::Object:
      return a.identity() == b.identity();
    default:
      return false;
  }
}

static const char* op_symbol(CmpOp op) {
  switch (op) {
    case CmpOp::Lt:
      return "<";
    case CmpOp::Le:
      return "<=";
    case CmpOp::Gt:
      return ">";
    case CmpOp::Ge:
      return ">=";
  }
  return "?";
}

template <typename T>
static bool apply(const T& x, const T& y, CmpOp op) {
  switch (op) {
    case CmpOp::Lt:
      return x < y;
    case CmpOp::Le:
      return x <= y;
    case CmpOp::Gt:
      return x > y;
    case CmpOp::Ge:
      return x >= y;
  }
  return false;
}

bool compare(const Value& a, const Value& b, CmpOp op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_numeric() && b.is_numeric()) {
    if (a.is_integral() && b.is_integral()) return apply(a.as_int(), b.as_int(), op);
    return apply(a.as_float(), b.as_float(), op);
  }
  if (a.is_string() && b.is_string()) return apply(a.as_string(), b.as_string(), op);
  if (a.is_list() && b.is_list() && a.seq_type() == b.seq_type() &&
      (a.seq_type() == SeqType::List || a.seq_type() == SeqType::Tuple)) {
    const auto &x = a.items(), &y = b.items();
    for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare(x[i], y[i], op);
    }
    return apply(x.size(), y.size(), op);
  }
  fail("'{}' not supported between instances of '{}' and '{}'", op_symbol(op), type_name(a),
       type_name(b));
}

std::size_t hash(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return 0x5bd1e995;
    case Kind::None:
      return 0x27d4eb2d;
    case Kind::Bool:
    case Kind::Int:
      return std::hash<std::int64_t>{}(v.as_int());
    case Kind::Float: {
      double d = v.as_float();
      if (std::trunc(d) == d && std::abs(d) < 9.2e18) {
        return std::hash<std::int64_t>{}(static_cast<std::int64_t>(d));
      }
      return std::hash<double>{}(d);
    }
    case Kind::String:
      return std::hash<std::string>{}(v.as_string());
    case Kind::Object:
      return std::hash<const void*>{}(v.identity());
    case Kind::List:
      if (v.seq_type() == SeqType::Tuple) {
        std::size_t h = 0x345678;
        for (const auto& item : v.items()) h = h * 1000003 ^ hash(item);
        return h;
      }
      if (v.seq_type() != SeqType::List) return std::hash<const void*>{}(v.identity());
      break;
    case Kind::Dict:
      break;
  }
  fail("unhashable type: '{}'", type_name(v));
}

std::size_t Value::code_points() const {
  const Str& s = *std::get<std::shared_ptr<const Str>>(v_);
  std::int64_t n = s.code_points.load(std::memory_order_relaxed);
  if (n < 0) {
    n = static_cast<std::int64_t>(pystr::length(s.text));
    s.code_points.store(n, std::memory_order_relaxed);
  }
  return static_cast<std::size_t>(n);
}

std::optional<std::size_t> length(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return 0;
    case Kind::String:
      return v.code_points();
    case Kind::Dict:
      return v.as_dict().entries.size();
    case Kind::List:
      if (v.seq_type() == SeqType::Generator || v.seq_type() == SeqType::ReverseIterator) {
        return std::nullopt;
      }
      return v.items().size();
    default:
      return std::nullopt;
  }
}

bool is_iterable(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
    case Kind::String:
    case Kind::List:
    case Kind::Dict:
      return true;
    default:
      return false;
  }
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Kind::Undefined:
      return {};
    case Kind::List:
      if (is_iterator(v)) {
        List& l = produced(v);
        std::vector<Value> rest(l.items.begin() + static_cast<std::ptrdiff_t>(l.next),
                                l.items.end());
        l.next = l.items.size();
        return rest;
      }
      return v.items();
    case Kind::Dict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().entries.size());
      for (const auto& [k, val] : v.as_dict().entries) keys.push_back(k);
      return keys;
    }
    case Kind::String: {
      std::vector<Value> chars;
      for (char32_t cp : pystr::decode(v.as_string())) {
        std::string one;
        pystr::append_utf8(one, cp);
        chars.push_back(Value::string(std::move(one)));
      }
      return chars;
    }
    default:
      fail("'{}' object is not iterable", type_name(v));
  }
}

}  // namespace ls::jinja
