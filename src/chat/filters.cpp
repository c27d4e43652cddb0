// jinja2's builtin filters, with Hugging Face's tojson (json.dumps with ensure_ascii=False).
// Filters that return generators in jinja2 (map, select, reject, selectattr, rejectattr,
// unique, items, batch, slice) return SeqType::Generator lists, which - like Python
// generators - have no length and are always true; `|list` turns them into lists.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "chat/library.h"
#include "chat/pyjson.h"
#include "chat/pystr.h"

namespace ls::chat {

namespace {

Value str_v(std::string s) {
  return Value::string(std::move(s));
}
Value generator(std::vector<Value> items) {
  return Value::list(std::move(items), SeqType::Generator);
}

std::vector<Value> args_with(const Value& operand, const CallArgs& a) {
  std::vector<Value> out{operand};
  out.insert(out.end(), a.positional.begin(), a.positional.end());
  return out;
}

// bind_args() for a filter: the operand is the first parameter.
std::vector<Value> bind_filter(const char* name, const Value& operand, const CallArgs& a,
                               std::vector<Param> params) {
  CallArgs full{args_with(operand, a), a.keywords};
  return bind_args(name, full, params);
}

// jinja2's attribute getter: "a.b.0" looks up item by item (digits as integers).
Value get_path(Interpreter& in, Value v, const Value& attribute) {
  if (attribute.is_none()) return v;
  if (!attribute.is_string()) return in.get_item(v, attribute);
  for (const auto& part : pystr::split(attribute.as_string(), std::string("."), -1, false)) {
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit);
    v = in.get_item(v,
                    digits ? Value::integer(std::stoll(part.substr(0, 18))) : Value::string(part));
  }
  return v;
}

Value lower_if_string(const Value& v) {
  return v.is_string() ? str_v(pystr::lower(v.as_string())) : v;
}

// A stable merge sort: unlike std::sort it stays safe with inconsistent comparisons (NaN).
void stable_sort(std::vector<Value>& items, const std::vector<Value>& keys, bool reverse) {
  std::vector<std::size_t> order(items.size()), tmp(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto less = [&](std::size_t a, std::size_t b) {
    return reverse ? compare(keys[b], keys[a], CmpOp::Lt) : compare(keys[a], keys[b], CmpOp::Lt);
  };
  for (std::size_t width = 1; width < order.size(); width *= 2) {
    for (std::size_t lo = 0; lo < order.size(); lo += 2 * width) {
      std::size_t mid = std::min(lo + width, order.size()),
                  hi = std::min(lo + 2 * width, order.size());
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) tmp[k++] = less(order[j], order[i]) ? order[j++] : order[i++];
      while (i < mid) tmp[k++] = order[i++];
      while (j < hi) tmp[k++] = order[j++];
    }
    order.swap(tmp);
  }
  std::vector<Value> out;
  for (auto i : order) out.push_back(items[i]);
  items = std::move(out);
}

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

Value f_attr(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter("attr", v, a, {Param("obj"), Param("name")});
  if (v.is_undefined()) fail_undefined(v);
  std::string name = to_str(b[1]);
  if (v.is_object()) {
    if (auto r = v.as_object()->attribute(name)) return *r;
  } else if (auto m = find_method(v, name)) {
    return *m;
  }
  return Value::undefined(fmt::format("'{} object' has no attribute '{}'", type_name(v), name));
}

Value f_batch(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter("batch", v, a,
                       {Param("value"), Param("linecount"), Param("fill_with", Value::none())});
  if (!b[1].is_integral() || b[1].as_int() <= 0)
    fail("batch() needs a positive integer line count");
  auto n = static_cast<std::size_t>(b[1].as_int());
  std::vector<Value> out, cur;
  for (auto& item : iterate(v)) {
    cur.push_back(item);
    if (cur.size() == n) out.push_back(Value::list(std::exchange(cur, {})));
  }
  if (!cur.empty()) {
    if (!b[2].is_none()) cur.resize(n, b[2]);
    out.push_back(Value::list(std::move(cur)));
  }
  return generator(std::move(out));
}

Value f_capitalize(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("capitalize", v, a, {Param("s")});
  return str_v(pystr::capitalize(to_str(v)));
}

Value f_center(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("center", v, a, {Param("value"), Param("width", Value::integer(80))});
  return in.call(in.get_attr(str_v(to_str(v)), "center"), CallArgs{{b[1]}, {}});
}

Value f_length(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("length", v, a, {Param("obj")});
  auto n = length(v);
  if (!n) fail("object of type '{}' has no len()", type_name(v));
  return Value::integer(static_cast<std::int64_t>(*n));
}

Value f_default(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "default", v, a,
      {Param("value"), Param("default_value", str_v("")), Param("boolean", Value::boolean(false))});
  if (v.is_undefined() || (truthy(b[2]) && !truthy(v))) return b[1];
  return v;
}

Value f_dictsort(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter("dictsort", v, a,
                       {Param("value"), Param("case_sensitive", Value::boolean(false)),
                        Param("by", str_v("key")), Param("reverse", Value::boolean(false))});
  if (!v.is_dict()) fail("dictsort: value must be a mapping, not {}", type_name(v));
  std::string by = to_str(b[2]);
  if (by != "key" && by != "value") fail("You can only sort by either \"key\" or \"value\"");
  std::vector<Value> items, keys;
  for (const auto& [k, val] : v.as_dict().entries) {
    items.push_back(Value::tuple({k, val}));
    const Value& key = by == "key" ? k : val;
    keys.push_back(truthy(b[1]) ? key : lower_if_string(key));
  }
  stable_sort(items, keys, truthy(b[3]));
  return Value::list(std::move(items));
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

Value f_first(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("first", v, a, {Param("seq")});
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("last", v, a, {Param("seq")});
  if (v.is_list() &&
      (v.seq_type() == SeqType::Generator || v.seq_type() == SeqType::ReverseIterator)) {
    fail("'{}' object is not reversible", type_name(v));
  }
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
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

Value f_groupby(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("groupby", v, a,
                       {Param("value"), Param("attribute"), Param("default", Value::none()),
                        Param("case_sensitive", Value::boolean(false))});
  std::vector<Value> items = iterate(v), keys;
  for (const auto& item : items) {
    Value key = get_path(in, item, b[1]);
    if (key.is_undefined() && !b[2].is_none()) key = b[2];
    keys.push_back(truthy(b[3]) ? key : lower_if_string(key));
  }
  std::vector<Value> sorted_keys = keys, sorted_items = items;
  stable_sort(sorted_items, keys, false);
  stable_sort(sorted_keys, keys, false);
  std::vector<Value> groups, members;
  for (std::size_t i = 0; i < sorted_items.size(); ++i) {
    members.push_back(sorted_items[i]);
    if (i + 1 == sorted_items.size() || !equals(sorted_keys[i], sorted_keys[i + 1])) {
      groups.push_back(Value::tuple({sorted_keys[i], Value::list(std::exchange(members, {}))}));
    }
  }
  return Value::list(std::move(groups));
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

Value f_join(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("join", v, a,
                       {Param("value"), Param("d", str_v("")), Param("attribute", Value::none())});
  std::string sep = to_str(b[1]), out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(get_path(in, item, b[2]));
    in.check_string_size(out.size());
  }
  return str_v(std::move(out));
}

Value f_list(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("list", v, a, {Param("value")});
  return Value::list(iterate(v));
}

Value f_lower(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("lower", v, a, {Param("s")});
  return str_v(pystr::lower(to_str(v)));
}

Value f_upper(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("upper", v, a, {Param("s")});
  return str_v(pystr::upper(to_str(v)));
}

Value f_items(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("items", v, a, {Param("value")});
  if (v.is_undefined()) return generator({});
  if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::tuple({k, val}));
  return generator(std::move(out));
}

Value f_map(Interpreter& in, const Value& v, const CallArgs& a) {
  std::vector<Value> out;
  if (!truthy(v)) return generator({});
  if (a.positional.empty()) {
    Value attribute, fallback = Value::none();
    bool has_attribute = false;
    for (const auto& [k, val] : a.keywords) {
      if (k == "attribute") {
        attribute = val;
        has_attribute = true;
      } else if (k == "default") {
        fallback = val;
      } else {
        fail("Unexpected keyword argument '{}'", k);
      }
    }
    if (!has_attribute) fail("map requires a filter argument");
    for (const auto& item : iterate(v)) {
      Value r = get_path(in, item, attribute);
      out.push_back(r.is_undefined() && !fallback.is_none() ? fallback : r);
    }
    return generator(std::move(out));
  }
  std::string filter = to_str(a.positional[0]);
  CallArgs rest{{a.positional.begin() + 1, a.positional.end()}, a.keywords};
  for (const auto& item : iterate(v)) out.push_back(in.call_filter(filter, item, rest));
  return generator(std::move(out));
}

Value select_or_reject(Interpreter& in, const Value& v, const CallArgs& a, bool select,
                       bool by_attr) {
  if (!truthy(v)) return generator({});
  std::size_t off = by_attr ? 1 : 0;
  if (by_attr && a.positional.empty()) fail("Missing parameter for attribute name");
  std::vector<Value> out;
  for (const auto& item : iterate(v)) {
    Value probe = by_attr ? get_path(in, item, a.positional[0]) : item;
    bool ok;
    if (a.positional.size() > off) {
      CallArgs rest{
          {a.positional.begin() + static_cast<std::ptrdiff_t>(off) + 1, a.positional.end()},
          a.keywords};
      ok = in.call_test(to_str(a.positional[off]), probe, rest);
    } else {
      ok = truthy(probe);
    }
    if (ok == select) out.push_back(item);
  }
  return generator(std::move(out));
}

Value f_select(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, true, false);
}
Value f_reject(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, const CallArgs& a) {
  return select_or_reject(in, v, a, false, true);
}

Value min_max(Interpreter& in, const Value& v, const CallArgs& a, bool want_max) {
  auto b = bind_filter(want_max ? "max" : "min", v, a,
                       {Param("value"), Param("case_sensitive", Value::boolean(false)),
                        Param("attribute", Value::none())});
  auto items = iterate(v);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& item) {
    Value k = get_path(in, item, b[2]);
    return truthy(b[1]) ? k : lower_if_string(k);
  };
  std::size_t best = 0;
  Value best_key = key(items[0]);
  for (std::size_t i = 1; i < items.size(); ++i) {
    Value k = key(items[i]);
    if (compare(k, best_key, want_max ? CmpOp::Gt : CmpOp::Lt)) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

Value f_max(Interpreter& in, const Value& v, const CallArgs& a) {
  return min_max(in, v, a, true);
}
Value f_min(Interpreter& in, const Value& v, const CallArgs& a) {
  return min_max(in, v, a, false);
}

Value f_replace(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("replace", v, a,
                       {Param("s"), Param("old"), Param("new"), Param("count", Value::none())});
  std::int64_t count = b[3].is_none() ? -1 : b[3].is_integral() ? b[3].as_int() : -1;
  return str_v(
      pystr::replace(to_str(v), to_str(b[1]), to_str(b[2]), count, in.limits().max_output_bytes));
}

Value f_reverse(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("reverse", v, a, {Param("value")});
  if (v.is_string()) {
    auto cps = pystr::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return str_v(pystr::encode(cps));
  }
  if (v.is_undefined() || !is_iterable(v)) fail("argument must be iterable");
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  bool plain = v.is_list() && v.seq_type() == SeqType::List;
  return Value::list(std::move(items), plain ? SeqType::ReverseIterator : SeqType::Generator);
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

Value f_slice(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter("slice", v, a,
                       {Param("value"), Param("slices"), Param("fill_with", Value::none())});
  if (!b[1].is_integral() || b[1].as_int() <= 0) fail("slice() needs a positive number of slices");
  auto items = iterate(v);
  auto slices = static_cast<std::size_t>(b[1].as_int());
  std::size_t per = items.size() / slices, extra = items.size() % slices, offset = 0;
  std::vector<Value> out;
  for (std::size_t s = 0; s < slices; ++s) {
    std::size_t start = offset + s * per;
    if (s < extra) ++offset;
    std::size_t end = offset + (s + 1) * per;
    std::vector<Value> part(items.begin() + static_cast<std::ptrdiff_t>(start),
                            items.begin() + static_cast<std::ptrdiff_t>(end));
    if (!b[2].is_none() && s >= extra) part.push_back(b[2]);
    out.push_back(Value::list(std::move(part)));
  }
  return generator(std::move(out));
}

Value f_sort(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "sort", v, a,
      {Param("value"), Param("reverse", Value::boolean(false)),
       Param("case_sensitive", Value::boolean(false)), Param("attribute", Value::none())});
  auto items = iterate(v);
  std::vector<std::string> attrs;
  if (b[3].is_string()) {
    attrs = pystr::split(b[3].as_string(), std::string(","), -1, false);
  } else {
    attrs.emplace_back();
  }
  std::vector<Value> keys;
  for (const auto& item : items) {
    std::vector<Value> parts;
    for (const auto& attr : attrs) {
      Value k = b[3].is_string() ? get_path(in, item, str_v(attr)) : get_path(in, item, b[3]);
      parts.push_back(truthy(b[2]) ? k : lower_if_string(k));
    }
    keys.push_back(Value::list(std::move(parts)));
  }
  stable_sort(items, keys, truthy(b[1]));
  return Value::list(std::move(items));
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

Value f_sum(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "sum", v, a,
      {Param("iterable"), Param("attribute", Value::none()), Param("start", Value::integer(0))});
  Value total = b[2];
  for (const auto& item : iterate(v))
    total = binary_op(in, ast::BinOp::Add, total, get_path(in, item, b[1]));
  return total;
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
  if (!b[1].is_none()) chars = to_str(b[1]);
  return str_v(pystr::strip(to_str(v), chars, true, true));
}

Value f_truncate(Interpreter&, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "truncate", v, a,
      {Param("s"), Param("length", Value::integer(255)), Param("killwords", Value::boolean(false)),
       Param("end", str_v("...")), Param("leeway", Value::none())});
  auto cps = pystr::decode(to_str(v));
  std::u32string end = pystr::decode(to_str(b[3]));
  std::int64_t length = b[1].is_integral() ? b[1].as_int() : 255;
  std::int64_t leeway = b[4].is_integral() ? b[4].as_int() : 5;
  if (length < static_cast<std::int64_t>(end.size()))
    fail("expected length >= {}, got {}", end.size(), length);
  if (static_cast<std::int64_t>(cps.size()) <= length + leeway) return str_v(pystr::encode(cps));
  std::u32string head = cps.substr(0, static_cast<std::size_t>(length) - end.size());
  if (!truthy(b[2])) {
    auto space = head.rfind(U' ');
    if (space != std::u32string::npos) head.resize(space);
  }
  return str_v(pystr::encode(head + end));
}

Value f_unique(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter("unique", v, a,
                       {Param("value"), Param("case_sensitive", Value::boolean(false)),
                        Param("attribute", Value::none())});
  std::unordered_multimap<std::size_t, Value> seen;
  std::vector<Value> out;
  for (const auto& item : iterate(v)) {
    Value key = get_path(in, item, b[2]);
    if (!truthy(b[1])) key = lower_if_string(key);
    std::size_t h = hash(key);
    auto [lo, hi] = seen.equal_range(h);
    if (std::any_of(lo, hi, [&](const auto& e) { return equals(e.second, key); })) continue;
    seen.emplace(h, key);
    out.push_back(item);
  }
  return generator(std::move(out));
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

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", f_batch},
      {"capitalize", f_capitalize},
      {"center", f_center},
      {"count", f_length},
      {"d", f_default},
      {"default", f_default},
      {"dictsort", f_dictsort},
      {"e", f_escape},
      {"escape", f_escape},
      {"forceescape", f_escape},
      {"first", f_first},
      {"float", f_float},
      {"format", f_format},
      {"groupby", f_groupby},
      {"indent", f_indent},
      {"int", f_int},
      {"items", f_items},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", f_map},
      {"max", f_max},
      {"min", f_min},
      {"reject", f_reject},
      {"rejectattr", f_rejectattr},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", f_select},
      {"selectattr", f_selectattr},
      {"slice", f_slice},
      {"sort", f_sort},
      {"string", f_string},
      {"striptags", f_striptags},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"truncate", f_truncate},
      {"unique", f_unique},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
  auto it = filters().find(name);
  return it == filters().end() ? nullptr : it->second;
}

}  // namespace ls::chat
