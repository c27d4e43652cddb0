// jinja2's text and number filters (upper, trim, replace, indent, int, round, format, tojson
// with Hugging Face's json.dumps options, ...). Sequence filters are in filters.cpp.
#include <algorithm>
#include <cmath>

#include "jinja/filter_util.h"
#include "jinja/pyjson.h"
#include "jinja/pystr.h"

namespace ls::jinja::filters {

Value f_abs(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("abs", v, a, {Param("value")});
  if (v.is_undefined()) fail_undefined(v);
  if (v.is_integral()) {
    if (v.as_int() == INT64_MIN) fail("integer overflow: the result does not fit in 64 bits");
    return Value::integer(std::llabs(v.as_int()));
  }
  if (v.is_float()) return Value::number(std::fabs(v.as_float()));
  fail("bad operand type for abs(): '{}'", type_name(v));
}

Value f_capitalize(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("capitalize", v, a, {Param("s")});
  return str_v(pystr::capitalize(to_str(v)));
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("center", v, a, {Param("value"), Param("width", Value::integer(80))});
  return in.call(in.get_attr(str_v(to_str(v)), "center"), CallArgs{{b[1]}, {}});
}

Value f_escape(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("escape", v, a, {Param("s")});
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return str_v(std::move(out));
}

Value f_float(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter("float", v, a, {Param("value"), Param("default", Value::number(0.0))});
  if (v.is_undefined()) fail_undefined(v);
  auto f = to_float(v);
  return f ? Value::number(*f) : b[1];
}

Value f_int(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "int", v, a,
      {Param("value"), Param("default", Value::integer(0)), Param("base", Value::integer(10))});
  if (v.is_undefined()) fail_undefined(v);
  int base =
      b[2].is_integral() ? static_cast<int>(std::clamp<std::int64_t>(b[2].as_int(), 2, 36)) : 10;
  if (auto i = to_int(v, base)) return Value::integer(*i);
  if (auto f = to_float(v); f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
    return Value::integer(static_cast<std::int64_t>(*f));
  }
  return b[1];
}

Value f_format(Interpreter& in, const Value& v, const CallArgs& a) {
  if (!a.positional.empty() && !a.keywords.empty()) {
    fail("can't handle positional and keyword arguments at the same time");
  }
  if (!a.keywords.empty()) {
    Dict d;
    for (const auto& [k, val] : a.keywords) d.set(str_v(k), val);
    return str_v(percent_format(in, to_str(v), Value::dict(std::move(d))));
  }
  return str_v(percent_format(in, to_str(v), Value::tuple(a.positional)));
}

Value f_indent(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b =
      bind_filter("indent", v, a,
                  {Param("s"), Param("width", Value::integer(4)),
                   Param("first", Value::boolean(false)), Param("blank", Value::boolean(false))});
  std::string indent;
  if (b[1].is_string()) {
    indent = b[1].as_string();
  } else {
    std::int64_t w = b[1].is_integral() ? b[1].as_int() : 0;
    in.check_string_size(static_cast<std::size_t>(std::max<std::int64_t>(w, 0)));
    indent.assign(static_cast<std::size_t>(std::max<std::int64_t>(w, 0)), ' ');
  }
  if (v.is_undefined()) fail_undefined(v);  // jinja2 appends "\n" to it first
  auto lines = pystr::splitlines(to_str(v) + "\n", false);
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    bool add = i > 0 && (truthy(b[3]) || !lines[i].empty());
    if (add) out += indent;
    out += lines[i];
    in.check_string_size(out.size());
  }
  if (truthy(b[2])) out = indent + out;
  return str_v(std::move(out));
}

Value f_lower(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("lower", v, a, {Param("s")});
  return str_v(pystr::lower(to_str(v)));
}

Value f_upper(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("upper", v, a, {Param("s")});
  return str_v(pystr::upper(to_str(v)));
}

Value f_replace(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("replace", v, a,
                       {Param("s"), Param("old"), Param("new"), Param("count", Value::none())});
  std::int64_t count = b[3].is_none() ? -1 : b[3].is_integral() ? b[3].as_int() : -1;
  return str_v(
      pystr::replace(to_str(v), to_str(b[1]), to_str(b[2]), count, in.limits().max_output_bytes));
}

Value f_round(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "round", v, a,
      {Param("value"), Param("precision", Value::integer(0)), Param("method", str_v("common"))});
  std::string method = to_str(b[2]);
  if (method != "common" && method != "ceil" && method != "floor") {
    fail("method must be common, ceil or floor");
  }
  if (v.is_undefined()) fail_undefined(v);
  if (!v.is_numeric()) fail("type {} doesn't define __round__ method", type_name(v));
  if (!b[1].is_integral()) fail("'{}' object cannot be interpreted as an integer", type_name(b[1]));
  std::int64_t p = b[1].as_int();
  if (method == "common" && v.is_integral()) return Value::integer(v.as_int());  // round(int, n)
  double x = v.as_float();
  if (!std::isfinite(x)) return Value::number(x);
  if (method != "common") {
    double scale = std::pow(10.0, static_cast<double>(p));
    return Value::number((method == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
  }
  if (p > 300) return Value::number(x);
  if (p < 0) {
    double scale = std::pow(10.0, static_cast<double>(-p));
    return Value::number(std::nearbyint(x / scale) * scale);
  }
  // Python rounds the exact binary value half-to-even at `p` decimals: printf does the same
  char buf[400];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(p), x);
  return Value::number(std::strtod(buf, nullptr));
}

Value f_safe(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("safe", v, a, {Param("value")});
  return str_v(to_str(v));  // Markup(value): a string; no autoescaping to undo
}

Value f_string(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("string", v, a, {Param("value")});
  return str_v(to_str(v));
}

Value f_striptags(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("striptags", v, a, {Param("value")});
  std::string s = to_str(v), text;
  for (std::size_t i = 0; i < s.size();) {
    if (s.compare(i, 4, "<!--") == 0) {
      auto e = s.find("-->", i + 4);
      if (e == std::string::npos) {
        text += s.substr(i);
        break;
      }
      i = e + 3;
    } else if (s[i] == '<' && s.find('>', i + 1) != std::string::npos) {
      i = s.find('>', i + 1) + 1;
    } else {
      text += s[i++];
    }
  }
  static const std::pair<const char*, const char*> entities[] = {{"&lt;", "<"},    {"&gt;", ">"},
                                                                 {"&quot;", "\""}, {"&#34;", "\""},
                                                                 {"&#39;", "'"},   {"&amp;", "&"}};
  for (const auto& [from, to] : entities) text = pystr::replace(text, from, to, -1, SIZE_MAX);
  std::string joined;
  for (const auto& word : pystr::split(text, std::nullopt, -1, false)) {
    if (!joined.empty()) joined += ' ';
    joined += word;
  }
  return str_v(std::move(joined));
}

Value f_title(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("title", v, a, {Param("s")});
  // jinja2: words start after whitespace, '-', '(', '{', '[' or '<'
  std::string out;
  bool at_start = true;
  for (char32_t cp : pystr::decode(to_str(v))) {
    std::string one;
    pystr::append_utf8(one, cp);
    bool sep =
        pystr::is_space(cp) || cp == U'-' || cp == U'(' || cp == U'{' || cp == U'[' || cp == U'<';
    out += sep ? one : at_start ? pystr::upper(one) : pystr::lower(one);
    at_start = sep;
  }
  return str_v(std::move(out));
}

Value f_tojson(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "tojson", v, a,
      {Param("x"), Param("ensure_ascii", Value::boolean(false)), Param("indent", Value::none()),
       Param("separators", Value::none()), Param("sort_keys", Value::boolean(false))});
  JsonDumpOptions o;
  o.ensure_ascii = truthy(b[1]);
  if (b[2].is_string()) {
    o.indent = b[2].as_string();
  } else if (b[2].is_integral()) {
    o.indent = std::string(
        static_cast<std::size_t>(std::clamp<std::int64_t>(b[2].as_int(), 0, 1000)), ' ');
  } else if (!b[2].is_none()) {
    fail("tojson: indent must be an int, a string or none");
  }
  if (!b[3].is_none()) {
    auto seps = iterate(b[3]);
    if (seps.size() != 2 || !seps[0].is_string() || !seps[1].is_string()) {
      fail("tojson: separators must be a pair of strings");
    }
    o.item_separator = seps[0].as_string();
    o.key_separator = seps[1].as_string();
  }
  o.sort_keys = truthy(b[4]);
  return str_v(json_dumps(v, o));
}

Value f_trim(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter("trim", v, a, {Param("value"), Param("chars", Value::none())});
  std::optional<std::string> chars;
  if (!b[1].is_none()) {
    if (!b[1].is_string()) fail("strip arg must be None or str");
    chars = b[1].as_string();
  }
  return str_v(pystr::strip(to_str(v), chars, true, true));
}

Value f_truncate(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "truncate", v, a,
      {Param("s"), Param("length", Value::integer(255)), Param("killwords", Value::boolean(false)),
       Param("end", str_v("...")), Param("leeway", Value::none())});
  auto cps = pystr::decode(to_str(v));
  if (!b[3].is_string() && !b[3].is_undefined())
    fail("object of type '{}' has no len()", type_name(b[3]));
  std::u32string end = pystr::decode(to_str(b[3]));
  for (int k : {1, 4}) {
    if (b[k].is_undefined()) fail_undefined(b[k]);
    if (!b[k].is_integral() && !(k == 4 && b[k].is_none())) {
      fail("truncate: {} must be an integer, not {}", k == 1 ? "length" : "leeway",
           type_name(b[k]));
    }
  }
  std::int64_t length = b[1].as_int();
  std::int64_t leeway = b[4].is_none() ? 5 : b[4].as_int();
  if (leeway < 0) fail("expected leeway >= 0, got {}", leeway);
  if (length < static_cast<std::int64_t>(end.size()))
    fail("expected length >= {}, got {}", end.size(), length);
  if (static_cast<std::int64_t>(cps.size()) <= length + leeway) return str_v(pystr::encode(cps));
  if (b[3].is_undefined()) fail_undefined(b[3]);  // str + Undefined
  std::u32string head = cps.substr(0, static_cast<std::size_t>(length) - end.size());
  if (!truthy(b[2])) {
    auto space = head.rfind(U' ');
    if (space != std::u32string::npos) head.resize(space);
  }
  return str_v(pystr::encode(head + end));
}

Value f_wordcount(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("wordcount", v, a, {Param("s")});
  std::int64_t n = 0;
  bool in_word = false;
  for (char32_t cp : pystr::decode(to_str(v))) {
    bool w = pystr::is_word(cp);
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value::integer(n);
}

}  // namespace ls::jinja::filters
