// The rules of each JSON Schema type: objects (listed properties in their order, the optional
// ones skippable, then any additional ones under keys that are not listed), arrays (prefixItems,
// then items, counted between minItems and maxItems), strings (length, pattern, format), exact
// integer ranges, and numbers (bounds of 0 only: other bounds are not regular, so refused).
#include <cmath>

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/json_schema_converter.h"

namespace ls::grammar::detail {
namespace {

// Formats as patterns on the decoded string (RFC 3339 dates with real month lengths and leap
// years, times with an optional fraction and a Z or numeric offset, seconds up to 60; RFC 4122
// UUIDs in either case).
const char* const kDate =
    "[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|"
    "30)"
    "|02-(?:0[1-9]|1[0-9]|2[0-8]))|(?:[0-9]{2}(?:[02468][48]|[2468]0|[13579][26])|"
    "(?:[02468][048]|[13579][26])00)-02-29";
const char* const kTime =
    "(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]"
    "):"
    "[0-5][0-9])";
const char* const kUuid =
    "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

std::string format_pattern(const std::string& format) {
  if (format == "date") return fmt::format("^(?:{})$", kDate);
  if (format == "time") return fmt::format("^{}$", kTime);
  if (format == "date-time") return fmt::format("^(?:{})[Tt]{}$", kDate, kTime);
  return fmt::format("^{}$", kUuid);
}

bool is_false(const Json& s) {
  return s.is_boolean() && !s.get<bool>();
}

// true, {} or only annotations: any value.
bool is_any(const Json& s) {
  if (s.is_boolean()) return s.get<bool>();
  if (!s.is_object()) return false;
  for (const auto& [k, v] : s.items())
    if (!is_annotation(k) && !is_container(k)) return false;
  return true;
}

// x repeated between `least` and `most` times (most -1: unbounded); "" for never.
std::string repeat(const std::string& x, long least, long most) {
  if (most < 0)
    return least == 0 ? x + "*" : least == 1 ? x + "+" : fmt::format("{}{{{},}}", x, least);
  if (most == least) return most == 0 ? "" : most == 1 ? x : fmt::format("{}{{{}}}", x, most);
  if (least == 0 && most == 1) return x + "?";
  return fmt::format("{}{{{},{}}}", x, least, most);
}

BigInt integral(double x) {
  return big_int_from_string(fmt::format("{:.0f}", x));
}

}  // namespace

Json Converter::normalized(const Json& s, const std::string& path) const {
  if (!s.is_object()) return s;
  bool others = false;
  for (const auto& [k, v] : s.items())
    others = others || (k != "$ref" && !is_annotation(k) && !is_container(k));
  if (s.contains("allOf") || (s.contains("$ref") && others))
    return normalized(merge({s}, path), path);
  return s;
}

std::string Converter::object(const Json& s, const std::string& path, const std::string& hint) {
  const Json props = s.contains("properties") ? s["properties"] : Json::object();
  const Json extra = s.contains("additionalProperties") ? s["additionalProperties"] : Json(true);
  const std::string extra_path = child(path, "additionalProperties");
  std::vector<std::string> required;
  if (s.contains("required"))
    for (const Json& r : s["required"])
      if (std::find(required.begin(), required.end(), r) == required.end()) required.push_back(r);
  if (props.empty() && required.empty() && is_any(extra)) return primitive(rules_, "object");

  struct Member {
    std::string text;
    bool required;
  };
  std::vector<Member> members;
  std::vector<std::string> listed;  // keys an additional property may not have
  const auto add = [&](const std::string& key, const Json& schema, const std::string& where) {
    listed.push_back(key);
    const bool req = std::find(required.begin(), required.end(), key) != required.end();
    const Json n = normalized(schema, where);
    if (is_false(n)) {
      if (req) fail_at(where, fmt::format("required property '{}' admits no value", key));
      return;
    }
    const std::string v = value(n, where, hint + "-" + key, "", 0);
    std::string key_text;
    try {
      key_text = json_string_literal(rules_, key);
    } catch (const Error& e) {
      fail_at(where, e.what());
    }
    members.push_back({key_text + " " + ws() + " \":\" " + ws() + " " + v, req});
  };
  for (const auto& [k, v] : props.items()) add(k, v, child(child(path, "properties"), k));
  for (const std::string& r : required) {
    if (props.contains(r)) continue;
    if (is_false(extra))
      fail_at(
          child(path, "required"),
          fmt::format(
              "required property '{}' is not in properties and additionalProperties is false", r));
    add(r, extra, extra_path);
  }
  const Json extra_schema = normalized(extra, extra_path);
  std::string extra_member;
  if (!is_false(extra_schema)) {
    const std::string v = value(extra_schema, extra_path, hint + "-extra", "", 0);
    extra_member =
        rules_.add(hint + "-extra-member", json_string_except(rules_, listed, hint + "-extra-key") +
                                               " " + ws() + " \":\" " + ws() + " " + v);
  }

  const std::size_t n = members.size();
  const bool all_required =
      std::all_of(members.begin(), members.end(), [](const Member& m) { return m.required; });
  if (all_required && extra_member.empty()) {  // the common strict-mode case: one sequence
    if (n == 0) return rules_.add(hint, "\"{\" " + ws() + " \"}\"");
    std::vector<std::string> texts;
    for (const Member& m : members) texts.push_back(m.text);
    return rules_.add(
        hint, "\"{\" " + ws() + " " + join(texts, " " + sep() + " ") + " " + ws() + " \"}\"");
  }
  // after[i]: the members from i on when one has been written already (each after a comma).
  std::vector<std::string> names(n), after(n + 1);
  for (std::size_t i = 0; i < n; ++i) names[i] = rules_.add(hint + "-member", members[i].text);
  after[n] = extra_member.empty() ? "" : "(" + sep() + " " + extra_member + ")*";
  for (std::size_t i = n; i-- > 1;) {
    std::string t = sep() + " " + names[i];
    if (!members[i].required) t = "(" + t + ")?";
    if (!after[i + 1].empty()) t += " " + after[i + 1];
    after[i] = rules_.add(hint + "-rest", t);
  }
  // The first member written: each optional one up to the first required one, or an extra one
  // when nothing is required.
  std::vector<std::string> firsts;
  bool any_required = false;
  for (std::size_t i = 0; i < n && !any_required; ++i) {
    firsts.push_back(names[i] + (after[i + 1].empty() ? "" : " " + after[i + 1]));
    any_required = members[i].required;
  }
  if (!any_required && !extra_member.empty()) firsts.push_back(extra_member + " " + after[n]);
  const std::string inner = firsts.size() == 1 ? firsts[0] : "(" + join(firsts, " | ") + ")";
  return rules_.add(hint, any_required ? "\"{\" " + ws() + " " + inner + " " + ws() + " \"}\""
                                       : "\"{\" " + ws() + " (" + inner + " " + ws() + ")? \"}\"");
}

std::string Converter::array(const Json& s, const std::string& path, const std::string& hint) {
  std::vector<Json> prefix;
  if (s.contains("prefixItems"))
    for (std::size_t i = 0; i < s["prefixItems"].size(); ++i)
      prefix.push_back(normalized(s["prefixItems"][i], child(child(path, "prefixItems"), i)));
  const Json items =
      s.contains("items") ? normalized(s["items"], child(path, "items")) : Json(true);
  const long min = s.contains("minItems") ? count(s, "minItems", path) : 0;
  long max = s.contains("maxItems") ? count(s, "maxItems", path) : -1;
  const auto cap = [&](long m) {
    if (max < 0 || m < max) max = m;
  };
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (is_false(prefix[i])) cap(static_cast<long>(i));
  if (is_false(items)) cap(static_cast<long>(prefix.size()));
  if (max >= 0 && min > max)
    fail_at(path, fmt::format("no array has minItems {} elements that the items allow", min));
  if (max == 0) return rules_.add(hint, "\"[\" " + ws() + " \"]\"");
  if (prefix.empty() && min == 0 && max < 0 && is_any(items)) return primitive(rules_, "array");

  const std::size_t k =
      max < 0 ? prefix.size() : std::min(prefix.size(), static_cast<std::size_t>(max));
  std::vector<std::string> elements;
  for (std::size_t i = 0; i < k; ++i)
    elements.push_back(value(prefix[i], child(child(path, "prefixItems"), i),
                             fmt::format("{}-{}", hint, i), "", 0));
  std::string item;
  if (max < 0 || static_cast<std::size_t>(max) > k)
    item = value(items, child(path, "items"), hint + "-item", "", 0);
  // tail(i): the elements from i on, i having been written.
  std::function<std::string(long)> tail = [&](long i) -> std::string {
    if (max >= 0 && i >= max) return "";
    if (static_cast<std::size_t>(i) >= k)
      return repeat("(" + sep() + " " + item + ")", std::max(min - i, 0L), max < 0 ? -1 : max - i);
    const std::string rest = tail(i + 1);
    const std::string part =
        sep() + " " + elements[static_cast<std::size_t>(i)] + (rest.empty() ? "" : " " + rest);
    return i < min ? part : "(" + part + ")?";
  };
  const std::string rest = tail(1);
  const std::string first = (k > 0 ? elements[0] : item) + (rest.empty() ? "" : " " + rest);
  return rules_.add(hint, min == 0 ? "\"[\" " + ws() + " (" + first + " " + ws() + ")? \"]\""
                                   : "\"[\" " + ws() + " " + first + " " + ws() + " \"]\"");
}

std::string Converter::string(const Json& s, const std::string& path, const std::string& hint) {
  const bool length = s.contains("minLength") || s.contains("maxLength");
  if (s.contains("format")) {
    if (length || s.contains("pattern"))
      fail_at(path, "'format' beside 'pattern', 'minLength' or 'maxLength' is not supported");
    try {
      return regex_string_gbnf(rules_, format_pattern(s["format"].get<std::string>()), hint);
    } catch (const RegexError& e) {
      fail_at(path, "internal: the format's pattern: " + e.what);
    }
  }
  if (s.contains("pattern")) {
    if (length) fail_at(path, "'pattern' beside 'minLength' or 'maxLength' is not supported");
    try {
      return regex_string_gbnf(rules_, s["pattern"].get<std::string>(), hint);
    } catch (const RegexError& e) {
      fail_at(path, fmt::format("pattern {}: {}", s["pattern"].dump(), e.what));
    }
  }
  if (!length) return primitive(rules_, "string");
  const long least = s.contains("minLength") ? count(s, "minLength", path) : 0;
  const long most = s.contains("maxLength") ? count(s, "maxLength", path) : -1;
  const std::string chars = repeat(primitive(rules_, "char"), least, most);
  return rules_.add(hint, "\"\\\"\" " + (chars.empty() ? "" : chars + " ") + "\"\\\"\"");
}

std::string Converter::integer(const Json& s, const std::string& path, const std::string& hint) {
  std::optional<BigInt> lo, hi;
  const auto tighten = [&](const char* key, bool lower, bool exclusive) {
    if (!s.contains(key)) return;
    const Json& v = s[key];
    BigInt b;
    if (v.is_number_unsigned()) {
      b = big_int_from_string(std::to_string(v.get<std::uint64_t>()));
    } else if (v.is_number_integer()) {
      b = big_int_from_string(std::to_string(v.get<std::int64_t>()));
    } else {
      const double d = v.get<double>();
      if (!std::isfinite(d)) fail_at(path, fmt::format("'{}' must be finite", key));
      b = integral(lower == exclusive ? std::floor(d) : std::ceil(d));
      if (exclusive) b = lower ? plus_one(b) : minus_one(b);
      exclusive = false;
    }
    if (exclusive) b = lower ? plus_one(b) : minus_one(b);
    if (lower && (!lo || compare(b, *lo) > 0)) lo = b;
    if (!lower && (!hi || compare(b, *hi) < 0)) hi = b;
  };
  tighten("minimum", true, false);
  tighten("exclusiveMinimum", true, true);
  tighten("maximum", false, false);
  tighten("exclusiveMaximum", false, true);
  if (lo && hi && compare(*lo, *hi) > 0)
    fail_at(path, "no integer lies within minimum and maximum");
  if (!lo && !hi) return primitive(rules_, "integer");
  return rules_.add(hint, integer_range_gbnf(lo, hi));
}

std::string Converter::number(const Json& s, const std::string& path, const std::string& hint) {
  for (const char* key : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"})
    if (s.contains(key) && s[key] != Json(0))
      fail_at(
          path,
          fmt::format(
              "'{}' {} on a number is not enforced (only 0 is; with type integer, any bound is)",
              key, s[key].dump()));
  const bool negative = !s.contains("minimum") && !s.contains("exclusiveMinimum");
  const bool zero = !s.contains("exclusiveMinimum") && !s.contains("exclusiveMaximum");
  const bool positive = !s.contains("maximum") && !s.contains("exclusiveMaximum");
  if (negative && zero && positive) return primitive(rules_, "number");
  // A number is 0 when its digits are all zeros (the integer part is then "0").
  const std::string exponent = "([eE] [-+]? [0-9]+)?";
  const std::string nonzero =
      "([1-9] [0-9]* (\".\" [0-9]+)? | \"0.\" \"0\"* [1-9] [0-9]*) " + exponent;
  std::vector<std::string> alts;
  if (zero) alts.push_back("\"-\"? \"0\" (\".\" \"0\"+)? " + exponent);
  if (positive) alts.push_back(nonzero);
  if (negative) alts.push_back("\"-\" " + nonzero);
  if (alts.empty()) fail_at(path, "no number lies within the bounds");
  return rules_.add(hint, join(alts, " | "));
}

}  // namespace ls::grammar::detail
