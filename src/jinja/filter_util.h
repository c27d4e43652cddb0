// Helpers shared by the filter implementations (filters.cpp, filters_text.cpp): argument
// binding with the operand first, jinja2's dotted attribute getter, and a stable sort.
#pragma once

#include <string>
#include <vector>

#include "jinja/library.h"

namespace ls::jinja::filters {

inline Value str_v(std::string s) {
  return Value::string(std::move(s));
}
inline Value generator(std::vector<Value> items) {
  return Value::list(std::move(items), SeqType::Generator);
}
// bind_args() for a filter: the operand is the first parameter.
std::vector<Value> bind_filter(const char* name, const Value& operand, const CallArgs& a,
                               std::vector<Param> params);
// jinja2's attribute getter: "a.b.0" looks up item by item (digits as integers).
Value get_path(Interpreter& in, Value v, const Value& attribute);
Value lower_if_string(const Value& v);
// A stable merge sort: unlike std::sort it stays safe with inconsistent comparisons (NaN).
void stable_sort(std::vector<Value>& items, const std::vector<Value>& keys, bool reverse);

Value f_abs(Interpreter& in, const Value& v, const CallArgs& a);
Value f_capitalize(Interpreter& in, const Value& v, const CallArgs& a);
Value f_center(Interpreter& in, const Value& v, const CallArgs& a);
Value f_escape(Interpreter& in, const Value& v, const CallArgs& a);
Value f_float(Interpreter& in, const Value& v, const CallArgs& a);
Value f_int(Interpreter& in, const Value& v, const CallArgs& a);
Value f_format(Interpreter& in, const Value& v, const CallArgs& a);
Value f_indent(Interpreter& in, const Value& v, const CallArgs& a);
Value f_lower(Interpreter& in, const Value& v, const CallArgs& a);
Value f_upper(Interpreter& in, const Value& v, const CallArgs& a);
Value f_replace(Interpreter& in, const Value& v, const CallArgs& a);
Value f_round(Interpreter& in, const Value& v, const CallArgs& a);
Value f_safe(Interpreter& in, const Value& v, const CallArgs& a);
Value f_string(Interpreter& in, const Value& v, const CallArgs& a);
Value f_striptags(Interpreter& in, const Value& v, const CallArgs& a);
Value f_title(Interpreter& in, const Value& v, const CallArgs& a);
Value f_tojson(Interpreter& in, const Value& v, const CallArgs& a);
Value f_trim(Interpreter& in, const Value& v, const CallArgs& a);
Value f_truncate(Interpreter& in, const Value& v, const CallArgs& a);
Value f_wordcount(Interpreter& in, const Value& v, const CallArgs& a);

}  // namespace ls::jinja::filters
