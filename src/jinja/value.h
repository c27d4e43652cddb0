// The values a template computes with, modelled on the Python objects jinja2 sees: undefined,
// None, bool, int, float, str, list/tuple (and the generator and dict-view objects filters
// return), dict (insertion ordered) and host objects (namespace, loop, macros, methods).
// Containers are immutable and shared, as in jinja2's immutable sandbox; only namespaces change.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace ls::jinja {

class Interpreter;
class Value;

enum class Kind : std::uint8_t { Undefined, None, Bool, Int, Float, String, List, Dict, Object };

// What a list-like value is in Python: it decides repr() and whether len()/[] are allowed.
enum class SeqType : std::uint8_t {
  List,
  Tuple,
  Generator,  // map/select/unique/items results: no len(), no [], always true
  ReverseIterator,
  DictKeys,
  DictValues,
  DictItems,
};

// Deepest nesting of lists/dicts/namespaces a value may have; bounds every recursive walk
// (repr, tojson, comparison, destruction) so no template can exhaust the stack.
inline constexpr int kMaxNesting = 256;

struct Undefined {
  std::string hint;  // why it is undefined; the message when it is misused
};
struct None {};

struct List {
  std::vector<Value> items;
  SeqType type = SeqType::List;
  int depth = 1;
  bool group = false;  // a (grouper, list) tuple from |groupby, with those two attributes
  // Generator and ReverseIterator values are Python iterators: `produce` computes the items on
  // first use (so errors, like Python's, wait until then), and consuming them is final - a
  // second loop over the same generator sees nothing, as in jinja2.
  mutable std::function<std::vector<Value>()> produce;
  mutable std::size_t next = 0;
};

struct Dict {
  std::vector<std::pair<Value, Value>> entries;
  int depth = 1;
  const Value* find(const Value& key) const;
  const Value* find(std::string_view key) const;
  void set(Value key, Value value);  // replaces an existing equal key in place
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

// A host object: namespace, loop, macro, builtin function or bound method.
class Object {
 public:
  virtual ~Object() = default;
  virtual std::string type_name() const = 0;
  virtual std::string repr() const;
  // The attribute `name`, or nullopt when the object has none.
  virtual std::optional<Value> attribute(const std::string& name) const;
  virtual bool is_callable() const { return false; }
  virtual Value call(Interpreter& interpreter, CallArgs args);
  virtual int depth() const { return 1; }
  // Drops references to other values; the interpreter calls it after a render to free cycles.
  virtual void release() {}
};

class Value {
 public:
  Value() : v_(Undefined{}) {}
  static Value undefined(std::string hint = {}) { return Value(Undefined{std::move(hint)}); }
  static Value none() { return Value(None{}); }
  static Value boolean(bool b) { return Value(b); }
  static Value integer(std::int64_t i) { return Value(i); }
  static Value number(double d) { return Value(d); }
  static Value string(std::string s) { return Value(std::move(s)); }
  static Value list(std::vector<Value> items, SeqType type = SeqType::List);
  static Value tuple(std::vector<Value> items) { return list(std::move(items), SeqType::Tuple); }
  static Value group(Value grouper, Value members);  // |groupby's (grouper, list) tuple
  // A lazy iterator (SeqType::Generator or ReverseIterator); `depth` bounds what it captured.
  static Value iterator(std::function<std::vector<Value>()> produce, int depth,
                        SeqType type = SeqType::Generator);
  static Value dict(Dict d);
  static Value object(std::shared_ptr<Object> o) { return Value(std::move(o)); }
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::Undefined; }
  bool is_none() const { return kind() == Kind::None; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_float() const { return kind() == Kind::Float; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_object() const { return kind() == Kind::Object; }
  // Python int (bool included) / number (int, bool or float).
  bool is_integral() const { return is_int() || is_bool(); }
  bool is_numeric() const { return is_integral() || is_float(); }

  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }
  bool as_bool() const { return std::get<bool>(v_); }
  std::int64_t as_int() const {
    return is_bool() ? std::get<bool>(v_) : std::get<std::int64_t>(v_);
  }
  double as_float() const;  // any number
  const std::string& as_string() const { return std::get<std::shared_ptr<const Str>>(v_)->text; }
  // len() of a string in code points, counted once per string (a loop over `s|length` on a
  // long string must not rescan it every time).
  std::size_t code_points() const;
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(v_); }
  const std::vector<Value>& items() const { return as_list().items; }
  SeqType seq_type() const { return as_list().type; }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(v_); }
  const std::shared_ptr<Object>& as_object() const { return std::get<std::shared_ptr<Object>>(v_); }
  // Identity of the shared container/object (for `is sameas`), or nullptr.
  const void* identity() const;
  int depth() const;

 private:
  // Strings are shared like the containers: passing a value around (a variable read, an
  // argument, a loop over `s|length`) never copies its text.
  struct Str {
    // A constructor, not aggregate initialization: make_shared<const Str>(string) needs
    // parenthesized aggregate init (P0960) otherwise, which clang has only from version 16.
    explicit Str(std::string t) : text(std::move(t)) {}
    std::string text;
    mutable std::atomic<std::int64_t> code_points{-1};  // -1: not counted yet
  };
  using Storage = std::variant<Undefined, None, bool, std::int64_t, double,
                               std::shared_ptr<const Str>, std::shared_ptr<const List>,
                               std::shared_ptr<const Dict>, std::shared_ptr<Object>>;
  explicit Value(Storage v) : v_(std::move(v)) {}
  explicit Value(bool b) : v_(b) {}
  explicit Value(std::int64_t i) : v_(i) {}
  explicit Value(double d) : v_(d) {}
  explicit Value(std::string s) : v_(std::make_shared<const Str>(std::move(s))) {}
  explicit Value(std::shared_ptr<Object> o) : v_(std::move(o)) {}
  Storage v_;
};

// Python semantics of the basic protocols. Errors are ls::Error with Python-like messages.
std::string type_name(const Value& v);  // "str", "int", "dict", "NoneType", ...
bool truthy(const Value& v);
std::string to_str(const Value& v);  // str(v); undefined prints as ""
std::string repr(const Value& v);
std::string float_repr(double d);  // Python's shortest round-trip repr: 1.0, 1e+16, 1e-05
bool equals(const Value& a, const Value& b);
enum class CmpOp { Lt, Le, Gt, Ge };
bool compare(const Value& a, const Value& b, CmpOp op);  // throws when Python would
std::size_t hash(const Value& v);                        // throws for unhashable values
// len(v) where Python allows it, else nullopt.
std::optional<std::size_t> length(const Value& v);
// iter(v) materialized: list items, dict keys, string characters; throws if not iterable.
// Consumes iterators (generators): what remains of them, then they are exhausted.
std::vector<Value> iterate(const Value& v);
// next(iter(v)) for an iterator: its next item (consumed), or nullopt when exhausted.
std::optional<Value> next_item(const Value& iterator);
bool is_iterator(const Value& v);  // a Generator or ReverseIterator
bool is_iterable(const Value& v);

}  // namespace ls::jinja
