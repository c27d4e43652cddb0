// Methods of str, list, tuple and dict values (`message.content.startswith('<think>')`,
// `tool.items()`...). Python methods that modify a list or dict are blocked, as jinja2's
// ImmutableSandboxedEnvironment blocks them; Python methods logitscope does not implement give
// an Undefined that fails with a clear message when used.
#include <algorithm>
#include <array>

#include "jinja/library.h"
#include "jinja/pystr.h"

namespace ls::jinja {

namespace {

using Fn = Builtin::Fn;

Value method(const std::string& name, Fn fn) {
  return make_builtin(name, std::move(fn));
}

Value unsafe(const Value& self, const std::string& name) {
  return Value::undefined(
      fmt::format("access to attribute '{}' of '{}' object is unsafe.", name, type_name(self)));
}

Value unsupported(const Value& self, const std::string& name) {
  return Value::undefined(fmt::format("the method {}.{}() is not supported in logitscope templates",
                                      type_name(self), name));
}

std::string str_arg(const Value& v, const char* what) {
  if (!v.is_string()) fail("{} must be str, not {}", what, type_name(v));
  return v.as_string();
}

std::optional<std::string> opt_str(const Value& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  return str_arg(v, what);
}

std::int64_t int_arg(const Value& v, const char* what) {
  if (!v.is_integral()) fail("{} must be int, not {}", what, type_name(v));
  return v.as_int();
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> out;
  for (const auto& p : parts) out.push_back(Value::string(p));
  return Value::list(std::move(out));
}

// startswith/endswith accept a string or a tuple of strings.
bool affix_match(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    std::string t = str_arg(a, prefix ? "startswith first arg" : "endswith first arg");
    if (t.size() > s.size()) return false;
    return prefix ? s.compare(0, t.size(), t) == 0
                  : s.compare(s.size() - t.size(), t.size(), t) == 0;
  };
  if (affix.is_list() && affix.seq_type() == SeqType::Tuple) {
    return std::any_of(affix.items().begin(), affix.items().end(), one);
  }
  return one(affix);
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  auto cps = pystr::decode(s);
  return !cps.empty() && std::all_of(cps.begin(), cps.end(), pred);
}

std::string justify(Interpreter& in, const std::string& s, const Value& width_v,
                    const Value& fill_v, char how) {
  std::int64_t width = int_arg(width_v, "width");
  std::string fill = str_arg(fill_v, "fillchar");
  if (pystr::length(fill) != 1) fail("The fill character must be exactly one character long");
  auto len = static_cast<std::int64_t>(pystr::length(s));
  if (width <= len) return s;
  in.check_string_size(static_cast<std::size_t>(width) * fill.size());
  auto total = static_cast<std::size_t>(width - len);
  std::size_t left = how == '<'   ? 0
                     : how == '>' ? total
                                  : total / 2 + (total & static_cast<std::size_t>(width) & 1);
  std::string out;
  for (std::size_t k = 0; k < left; ++k) out += fill;
  out += s;
  for (std::size_t k = left; k < total; ++k) out += fill;
  return out;
}

std::optional<Value> string_method(const Value& self, const std::string& name) {
  const std::string s = self.as_string();
  auto m = [&](Fn fn) { return method(name, std::move(fn)); };
  if (name == "startswith" || name == "endswith") {
    bool prefix = name == "startswith";
    return m([s, name, prefix](Interpreter&, const CallArgs& a) {
      auto b = bind_args(name, a, {Param("prefix")});
      return Value::boolean(affix_match(s, b[0], prefix));
    });
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    bool left = name != "rstrip", right = name != "lstrip";
    return m([s, name, left, right](Interpreter&, const CallArgs& a) {
      auto b = bind_args(name, a, {Param("chars", Value::none())});
      return Value::string(pystr::strip(s, opt_str(b[0], "chars"), left, right));
    });
  }
  if (name == "split" || name == "rsplit") {
    bool from_right = name == "rsplit";
    return m([s, name, from_right](Interpreter&, const CallArgs& a) {
      auto b =
          bind_args(name, a, {Param("sep", Value::none()), Param("maxsplit", Value::integer(-1))});
      return string_list(
          pystr::split(s, opt_str(b[0], "sep"), int_arg(b[1], "maxsplit"), from_right));
    });
  }
  if (name == "splitlines") {
    return m([s](Interpreter&, const CallArgs& a) {
      auto b = bind_args("splitlines", a, {Param("keepends", Value::boolean(false))});
      return string_list(pystr::splitlines(s, truthy(b[0])));
    });
  }
  if (name == "replace") {
    return m([s](Interpreter& in, const CallArgs& a) {
      auto b =
          bind_args("replace", a, {Param("old"), Param("new"), Param("count", Value::integer(-1))});
      return Value::string(pystr::replace(s, str_arg(b[0], "old"), str_arg(b[1], "new"),
                                          int_arg(b[2], "count"), in.limits().max_output_bytes));
    });
  }
  using Conv = std::string (*)(std::string_view);
  static const std::pair<const char*, Conv> conversions[] = {
      {"upper", pystr::upper}, {"lower", pystr::lower},           {"casefold", pystr::lower},
      {"title", pystr::title}, {"capitalize", pystr::capitalize}, {"swapcase", pystr::swapcase}};
  for (const auto& [n, conv] : conversions) {
    if (name == n) {
      Conv c = conv;
      return m([s, c, name](Interpreter&, const CallArgs& a) {
        bind_args(name, a, {});
        return Value::string(c(s));
      });
    }
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex") {
    bool from_right = name[0] == 'r';
    bool raise = name.find("index") != std::string::npos;
    return m([s, name, from_right, raise](Interpreter&, const CallArgs& a) {
      auto b = bind_args(name, a, {Param("sub")});
      auto at = pystr::find(s, str_arg(b[0], "sub"), from_right);
      if (at < 0 && raise) fail("substring not found");
      return Value::integer(at);
    });
  }
  if (name == "count") {
    return m([s](Interpreter&, const CallArgs& a) {
      auto b = bind_args("count", a, {Param("sub")});
      return Value::integer(pystr::count(s, str_arg(b[0], "sub")));
    });
  }
  if (name == "join") {
    return m([s](Interpreter& in, const CallArgs& a) {
      auto b = bind_args("join", a, {Param("iterable")});
      std::string out;
      std::size_t k = 0;
      for (const auto& item : iterate(b[0])) {
        if (!item.is_string()) {
          fail("sequence item {}: expected str instance, {} found", k, type_name(item));
        }
        if (k++) out += s;
        out += item.as_string();
        in.check_string_size(out.size());
      }
      return Value::string(std::move(out));
    });
  }
  if (name == "format") {
    return m(
        [s](Interpreter& in, const CallArgs& a) { return Value::string(brace_format(in, s, a)); });
  }
  using Pred = bool (*)(char32_t);
  static const std::pair<const char*, Pred> predicates[] = {
      {"isdigit", pystr::is_decimal},
      {"isdecimal", pystr::is_decimal},
      {"isnumeric", pystr::is_numeric},
      {"isalpha", pystr::is_alpha},
      {"isspace", pystr::is_space},
      {"isalnum", [](char32_t c) { return pystr::is_alpha(c) || pystr::is_numeric(c); }}};
  for (const auto& [n, pred] : predicates) {
    if (name == n) {
      Pred p = pred;
      return m([s, p, name](Interpreter&, const CallArgs& a) {
        bind_args(name, a, {});
        return Value::boolean(all_chars(s, p));
      });
    }
  }
  if (name == "islower" || name == "isupper") {
    bool lower = name == "islower";
    return m([s, lower, name](Interpreter&, const CallArgs& a) {
      bind_args(name, a, {});
      bool cased = false;
      for (char32_t cp : pystr::decode(s)) {
        if (lower ? pystr::is_upper(cp) : pystr::is_lower(cp)) return Value::boolean(false);
        cased = cased || (lower ? pystr::is_lower(cp) : pystr::is_upper(cp));
      }
      return Value::boolean(cased);
    });
  }
  if (name == "center" || name == "ljust" || name == "rjust") {
    char how = name == "center" ? '^' : name == "ljust" ? '<' : '>';
    return m([s, how, name](Interpreter& in, const CallArgs& a) {
      auto b = bind_args(name, a, {Param("width"), Param("fillchar", Value::string(" "))});
      return Value::string(justify(in, s, b[0], b[1], how));
    });
  }
  if (name == "zfill") {
    return m([s](Interpreter& in, const CallArgs& a) {
      auto b = bind_args("zfill", a, {Param("width")});
      std::int64_t width = int_arg(b[0], "width");
      auto len = static_cast<std::int64_t>(pystr::length(s));
      if (width <= len) return Value::string(s);
      in.check_string_size(static_cast<std::size_t>(width));
      std::string zeros(static_cast<std::size_t>(width - len), '0');
      bool sign = !s.empty() && (s[0] == '+' || s[0] == '-');
      return Value::string(sign ? s.substr(0, 1) + zeros + s.substr(1) : zeros + s);
    });
  }
  if (name == "removeprefix" || name == "removesuffix") {
    bool prefix = name == "removeprefix";
    return m([s, prefix, name](Interpreter&, const CallArgs& a) {
      auto b = bind_args(name, a, {Param(prefix ? "prefix" : "suffix")});
      std::string t = str_arg(b[0], "argument");
      if (!affix_match(s, b[0], prefix)) return Value::string(s);
      return Value::string(prefix ? s.substr(t.size()) : s.substr(0, s.size() - t.size()));
    });
  }
  if (name == "partition" || name == "rpartition") {
    bool from_right = name == "rpartition";
    return m([s, from_right, name](Interpreter&, const CallArgs& a) {
      auto b = bind_args(name, a, {Param("sep")});
      std::string sep = str_arg(b[0], "sep");
      if (sep.empty()) fail("empty separator");
      auto at = from_right ? s.rfind(sep) : s.find(sep);
      if (at == std::string::npos) {
        return Value::tuple(
            from_right
                ? std::vector<Value>{Value::string(""), Value::string(""), Value::string(s)}
                : std::vector<Value>{Value::string(s), Value::string(""), Value::string("")});
      }
      return Value::tuple({Value::string(s.substr(0, at)), Value::string(sep),
                           Value::string(s.substr(at + sep.size()))});
    });
  }
  static const std::array<const char*, 11> others = {
      "encode",  "expandtabs", "format_map", "isascii", "isidentifier", "isprintable",
      "istitle", "maketrans",  "translate",  "__len__", "__contains__"};
  if (std::find(others.begin(), others.end(), name) != others.end()) return unsupported(self, name);
  return std::nullopt;
}

std::optional<Value> list_method(const Value& self, const std::string& name) {
  bool is_list = self.seq_type() == SeqType::List;
  if (self.seq_type() != SeqType::List && self.seq_type() != SeqType::Tuple) return std::nullopt;
  if (name == "index" || name == "count") {
    bool index = name == "index";
    return method(name, [self, index, name](Interpreter&, const CallArgs& a) {
      auto b = bind_args(name, a, {Param("value")});
      std::int64_t n = 0;
      for (std::size_t k = 0; k < self.items().size(); ++k) {
        if (!equals(self.items()[k], b[0])) continue;
        if (index) return Value::integer(static_cast<std::int64_t>(k));
        ++n;
      }
      if (index) fail("{} is not in list", repr(b[0]));
      return Value::integer(n);
    });
  }
  if (is_list && name == "copy") {
    return method(name, [self](Interpreter&, const CallArgs& a) {
      bind_args("copy", a, {});
      return Value::list(self.items());
    });
  }
  static const std::array<const char*, 8> mutating = {"append", "clear",  "extend",  "insert",
                                                      "pop",    "remove", "reverse", "sort"};
  if (is_list && std::find(mutating.begin(), mutating.end(), name) != mutating.end()) {
    return unsafe(self, name);
  }
  return std::nullopt;
}

std::optional<Value> dict_method(const Value& self, const std::string& name) {
  auto view = [&](SeqType type) {
    return method(name, [self, type, name](Interpreter&, const CallArgs& a) {
      bind_args(name, a, {});
      std::vector<Value> out;
      for (const auto& [k, v] : self.as_dict().entries) {
        out.push_back(type == SeqType::DictKeys     ? k
                      : type == SeqType::DictValues ? v
                                                    : Value::tuple({k, v}));
      }
      return Value::list(std::move(out), type);
    });
  };
  if (name == "items") return view(SeqType::DictItems);
  if (name == "keys") return view(SeqType::DictKeys);
  if (name == "values") return view(SeqType::DictValues);
  if (name == "get") {
    return method(name, [self](Interpreter&, const CallArgs& a) {
      auto b = bind_args("get", a, {Param("key"), Param("default", Value::none())});
      hash(b[0]);
      const Value* v = self.as_dict().find(b[0]);
      return v ? *v : b[1];
    });
  }
  if (name == "copy") {
    return method(name, [self](Interpreter&, const CallArgs& a) {
      bind_args("copy", a, {});
      return Value::dict(self.as_dict());
    });
  }
  static const std::array<const char*, 5> mutating = {"clear", "pop", "popitem", "setdefault",
                                                      "update"};
  if (std::find(mutating.begin(), mutating.end(), name) != mutating.end())
    return unsafe(self, name);
  if (name == "fromkeys") return unsupported(self, name);
  return std::nullopt;
}

}  // namespace

std::optional<Value> find_method(const Value& self, const std::string& name) {
  switch (self.kind()) {
    case Kind::String:
      return string_method(self, name);
    case Kind::List:
      return list_method(self, name);
    case Kind::Dict:
      return dict_method(self, name);
    case Kind::Int:
    case Kind::Bool:
    case Kind::Float: {
      static const std::array<const char*, 9> numeric = {
          "real",      "imag",        "conjugate",        "bit_length",
          "numerator", "denominator", "as_integer_ratio", "is_integer",
          "hex"};
      if (std::find(numeric.begin(), numeric.end(), name) != numeric.end()) {
        return unsupported(self, name);
      }
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace ls::jinja
