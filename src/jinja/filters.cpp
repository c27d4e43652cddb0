// jinja2's sequence filters (map, select, join, sort, unique, ...) and the filter table.
// Filters that are generators in jinja2 (map, select, reject, selectattr, rejectattr, unique,
// items, batch, slice) return lazy iterators here too: they run when first iterated, have no
// length, are always true, and are empty once consumed. Text filters are in filters_text.cpp.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "jinja/filter_util.h"
#include "jinja/pystr.h"

namespace ls::jinja {

namespace filters {

static std::vector<Value> args_with(const Value& operand, const CallArgs& a) {
  std::vector<Value> out{operand};
  out.insert(out.end(), a.positional.begin(), a.positional.end());
  return out;
}

std::vector<Value> bind_filter(const char* name, const Value& operand, const CallArgs& a,
                               std::vector<Param> params) {
  CallArgs full{args_with(operand, a), a.keywords};
  return bind_args(name, full, params);
}

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

namespace {

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

Value f_first(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("first", v, a, {Param("seq")});
  if (is_iterator(v)) {  // next(iter(seq)) takes just one item from a generator
    if (auto item = next_item(v)) return *item;
    return Value::undefined("No first item, sequence was empty.");
  }
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
      groups.push_back(Value::group(sorted_keys[i], Value::list(std::exchange(members, {}))));
    }
  }
  return Value::list(std::move(groups));
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

Value f_reverse(Interpreter&, const Value& v, const CallArgs& a) {
  bind_filter("reverse", v, a, {Param("value")});
  if (v.is_string()) {
    auto cps = pystr::decode(v.as_string());
    std::reverse(cps.begin(), cps.end());
    return str_v(pystr::encode(cps));
  }
  if (v.is_undefined()) return Value::list({}, SeqType::ReverseIterator);  // len 0: empty
  if (!is_iterable(v)) fail("argument must be iterable");
  // reversed() where Python has it (a lazy iterator), else list(value) reversed
  bool reversible = v.is_dict() || (v.is_list() && !is_iterator(v));
  auto items = iterate(v);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items), reversible ? SeqType::ReverseIterator : SeqType::List);
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

Value f_sum(Interpreter& in, const Value& v, const CallArgs& a) {
  auto b = bind_filter(
      "sum", v, a,
      {Param("iterable"), Param("attribute", Value::none()), Param("start", Value::integer(0))});
  Value total = b[2];
  for (const auto& item : iterate(v))
    total = binary_op(in, ast::BinOp::Add, total, get_path(in, item, b[1]));
  return total;
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

// jinja2's generator filters run only when their result is iterated (and only once).
template <FilterFn eager>
Value lazy(Interpreter& in, const Value& v, const CallArgs& a) {
  int depth = v.depth();
  for (const auto& p : a.positional) depth = std::max(depth, p.depth());
  for (const auto& [k, p] : a.keywords) depth = std::max(depth, p.depth());
  Interpreter* interpreter = &in;  // generators never outlive the render that made them
  return Value::iterator([interpreter, v, a] { return iterate(eager(*interpreter, v, a)); }, depth);
}

const std::unordered_map<std::string_view, FilterFn>& filters() {
  static const std::unordered_map<std::string_view, FilterFn> table = {
      {"abs", f_abs},
      {"attr", f_attr},
      {"batch", lazy<f_batch>},
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
      {"items", lazy<f_items>},
      {"join", f_join},
      {"last", f_last},
      {"length", f_length},
      {"list", f_list},
      {"lower", f_lower},
      {"map", lazy<f_map>},
      {"max", f_max},
      {"min", f_min},
      {"reject", lazy<f_reject>},
      {"rejectattr", lazy<f_rejectattr>},
      {"replace", f_replace},
      {"reverse", f_reverse},
      {"round", f_round},
      {"safe", f_safe},
      {"select", lazy<f_select>},
      {"selectattr", lazy<f_selectattr>},
      {"slice", lazy<f_slice>},
      {"sort", f_sort},
      {"string", f_string},
      {"striptags", f_striptags},
      {"sum", f_sum},
      {"title", f_title},
      {"tojson", f_tojson},
      {"trim", f_trim},
      {"truncate", f_truncate},
      {"unique", lazy<f_unique>},
      {"upper", f_upper},
      {"wordcount", f_wordcount},
  };
  return table;
}

}  // namespace
}  // namespace filters

FilterFn find_filter(std::string_view name) {
  auto it = filters::filters().find(name);
  return it == filters::filters().end() ? nullptr : it->second;
}

}  // namespace ls::jinja
