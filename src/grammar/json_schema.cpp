// JSON Schema -> GBNF (json_schema.h): a walk over the schema that checks every keyword (refusing
// what it cannot enforce, with the keyword's path) and writes one rule per subschema: objects as
// their listed properties in order with optional ones skippable, arrays as counted elements, the
// scalar types through json_schema_text.cpp, json_schema_ranges.cpp and json_schema_regex.cpp, and
// each $ref target as one rule (so recursive schemas are recursive rules).
#include "grammar/json_schema.h"

#include <cmath>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/json_schema_converter.h"

namespace ls::grammar::detail {
namespace {

constexpr long kMaxCount = 10000;  // minLength .. maxItems: as many as parse_gbnf repeats
constexpr int kMaxNesting = 200;   // subschemas inside each other
constexpr int kMaxInline = 32;     // merges inside each other (a $ref cycle through allOf)

const char* const kTypes[] = {"object", "array", "string", "number", "integer", "boolean", "null"};

const std::set<std::string_view> kKeywords = {"type",
                                              "enum",
                                              "const",
                                              "anyOf",
                                              "oneOf",
                                              "allOf",
                                              "$ref",
                                              "properties",
                                              "required",
                                              "additionalProperties",
                                              "items",
                                              "prefixItems",
                                              "minItems",
                                              "maxItems",
                                              "uniqueItems",
                                              "minLength",
                                              "maxLength",
                                              "pattern",
                                              "format",
                                              "minimum",
                                              "maximum",
                                              "exclusiveMinimum",
                                              "exclusiveMaximum"};

}  // namespace

std::string child(const std::string& path, std::string_view key) {
  bool simple = !key.empty();
  for (char c : key)
    simple = simple && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '$' || c == '-');
  return simple ? path + "." + std::string(key) : path + "[" + Json(std::string(key)).dump() + "]";
}

std::string child(const std::string& path, std::size_t index) {
  return fmt::format("{}[{}]", path, index);
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : std::string(sep)) + p;
  return out;
}

namespace {

bool json_equal(const Json& a, const Json& b) {
  return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
}

// Whether a JSON value is of a schema type ("integer": a number with no fraction).
bool has_type(const Json& v, std::string_view t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "string") return v.is_string();
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "number") return v.is_number();
  if (t == "integer")
    return v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                     std::trunc(v.get<double>()) == v.get<double>());
  return false;
}

std::vector<std::string> split_pointer(const std::string& ref) {
  std::vector<std::string> out;
  Json::json_pointer p(ref.substr(1));
  while (!p.empty()) {
    out.insert(out.begin(), p.back());
    p.pop_back();
  }
  return out;
}

}  // namespace

std::string Converter::run() {
  rules_.reserve("root");
  const std::string body = value(root_, "$", "doc", "", 0);
  check_ref_cycles();
  const std::string ws = primitive(rules_, "ws");
  rules_.define("root", ws + " " + body + " " + ws);
  return rules_.text();
}

void Converter::fail_at(const std::string& path, const std::string& what) const {
  fail("{}: {} at {}", origin_, what, path);
}

// --- keywords ---

long Converter::count(const Json& s, const char* key, const std::string& path) const {
  const Json& v = s[key];
  const bool integral = v.is_number_integer() ||
                        (v.is_number_float() && std::trunc(v.get<double>()) == v.get<double>());
  if (!integral || v < 0)
    fail_at(path, fmt::format("'{}' must be a non-negative integer, got {}", key, v.dump()));
  if (v > kMaxCount)
    fail_at(path, fmt::format("'{}' above {} is not supported, got {}", key, kMaxCount, v.dump()));
  return v.get<long>();
}

void Converter::check(const Json& s, const std::string& path) const {
  for (const auto& [k, v] : s.items()) {
    if (is_annotation(k)) continue;
    if (is_container(k)) {
      if (!v.is_object()) fail_at(path, fmt::format("'{}' must be an object", k));
      continue;
    }
    if (!kKeywords.count(k)) fail_at(path, fmt::format("unsupported keyword '{}'", k));
    // (Named copies: clang 14 cannot capture structured bindings.)
    const std::string& key = k;
    const Json& value = v;
    const auto expect = [&](bool ok, const char* what) {
      if (!ok) fail_at(path, fmt::format("'{}' must be {}, got {}", key, what, value.dump()));
    };
    if (k == "type") {
      const auto known = [](const Json& t) {
        return t.is_string() && std::find(std::begin(kTypes), std::end(kTypes),
                                          t.get<std::string>()) != std::end(kTypes);
      };
      expect(known(v) || (v.is_array() && !v.empty() && std::all_of(v.begin(), v.end(), known)),
             "a type name or a non-empty list of them");
    } else if (k == "enum" || k == "anyOf" || k == "oneOf" || k == "allOf" || k == "prefixItems") {
      expect(v.is_array() && (k == "prefixItems" || !v.empty()), "a non-empty array");
    } else if (k == "$ref" || k == "pattern") {
      expect(v.is_string(), "a string");
    } else if (k == "properties") {
      expect(v.is_object(), "an object");
    } else if (k == "additionalProperties") {
      expect(v.is_object() || v.is_boolean(), "a schema");
    } else if (k == "items") {
      if (v.is_array())
        fail_at(path, "'items' as an array (draft 4 tuples) is not supported: use prefixItems");
      expect(v.is_object() || v.is_boolean(), "a schema");
    } else if (k == "required") {
      expect(v.is_array() &&
                 std::all_of(v.begin(), v.end(), [](const Json& r) { return r.is_string(); }),
             "an array of strings");
    } else if (k == "uniqueItems") {
      expect(v.is_boolean(), "a boolean");
      if (v.get<bool>()) fail_at(path, "unsupported keyword 'uniqueItems' (true)");
    } else if (k == "format") {
      expect(v.is_string(), "a string");
      const std::string f = v.get<std::string>();
      if (f != "date" && f != "time" && f != "date-time" && f != "uuid")
        fail_at(path,
                fmt::format("unsupported format '{}' (date, time, date-time and uuid are)", f));
    } else if (k.rfind("min", 0) == 0 || k.rfind("max", 0) == 0 || k.rfind("exclusive", 0) == 0) {
      if (k.find("Items") != std::string::npos || k.find("Length") != std::string::npos)
        count(s, k.c_str(), path);
      else
        expect(v.is_number(), "a number");
    }
  }
  for (const char* what : {"Items", "Length"}) {
    const std::string lo = fmt::format("min{}", what), hi = fmt::format("max{}", what);
    if (s.contains(lo) && s.contains(hi) && s[lo] > s[hi])
      fail_at(path, fmt::format("'{}' {} is above '{}' {}", lo, s[lo].dump(), hi, s[hi].dump()));
  }
}

// --- $ref ---

const Json& Converter::resolve(const std::string& ref, const std::string& path) const {
  if (ref.empty() || ref[0] != '#')
    fail_at(path, fmt::format("only local $ref (\"#/...\") is supported, got '{}'", ref));
  try {
    const Json::json_pointer pointer(ref.substr(1));
    if (root_.contains(pointer)) return root_.at(pointer);
  } catch (const nlohmann::json::exception&) {
  }
  fail_at(path, fmt::format("$ref target '{}' not found", ref));
}

std::string Converter::ref_rule(const std::string& ref, const std::string& path,
                                const std::string& owner) {
  if (!owner.empty()) starts_[owner].insert(ref);
  if (const auto it = refs_.find(ref); it != refs_.end()) return it->second;
  const Json& target = resolve(ref, path);
  const std::vector<std::string> tokens = split_pointer(ref);
  std::string where = "$";
  for (const std::string& token : tokens) where = child(where, token);
  const std::string name =
      rules_.reserve("def-" + (tokens.empty() ? std::string("root") : tokens.back()));
  refs_[ref] = name;
  rules_.define(name, value(target, where, name, ref, 0));
  return name;
}

// A $ref whose text can start with itself (through anyOf, allOf or another $ref, before any
// character) is left recursion: its language is not what the schema says.
void Converter::check_ref_cycles() const {
  std::map<std::string, int> mark;
  std::vector<std::string> trail;
  std::function<void(const std::string&)> visit = [&](const std::string& r) {
    mark[r] = 1;
    trail.push_back(r);
    if (const auto it = starts_.find(r); it != starts_.end())
      for (const std::string& next : it->second) {
        if (mark[next] == 1) {
          auto from = std::find(trail.begin(), trail.end(), next);
          std::string cycle;
          for (; from != trail.end(); ++from) cycle += *from + " -> ";
          fail("{}: $ref '{}' can begin with itself before any text ({}): the schema never ends",
               origin_, next, cycle + next);
        }
        if (mark[next] == 0) visit(next);
      }
    trail.pop_back();
    mark[r] = 2;
  };
  for (const auto& [r, _] : starts_)
    if (mark[r] == 0) visit(r);
}

Json Converter::merge(const std::vector<Json>& parts, const std::string& path) const {
  try {
    return merge_schemas(parts,
                         [&](const std::string& ref) -> const Json& { return resolve(ref, path); });
  } catch (const MergeError& e) {
    fail_at(path, "allOf cannot be merged: " + e.what);
  }
}

// --- values ---

std::string Converter::value(const Json& s, const std::string& path, const std::string& hint,
                             const std::string& owner, int inlined) {
  if (nesting_ >= kMaxNesting)
    fail_at(path, fmt::format("the schema nests deeper than {}", kMaxNesting));
  ++nesting_;
  std::string out = value_of(s, path, hint, owner, inlined);
  --nesting_;
  return out;
}

std::string Converter::value_of(const Json& s, const std::string& path, const std::string& hint,
                                const std::string& owner, int inlined) {
  if (s.is_boolean()) {
    if (!s.get<bool>()) fail_at(path, "the schema false admits no value");
    return primitive(rules_, "value");
  }
  if (!s.is_object()) fail_at(path, "a schema must be an object or a boolean");
  check(s, path);
  std::vector<std::string> keys;  // the keywords that validate
  for (const auto& [k, v] : s.items())
    if (!is_annotation(k) && !is_container(k)) keys.push_back(k);
  if (keys.empty()) return primitive(rules_, "value");
  const auto has = [&](const char* k) { return s.contains(k); };

  if ((has("$ref") && keys.size() > 1) || has("allOf")) {
    if (inlined >= kMaxInline)
      fail_at(path, "$ref and allOf expand without end (a $ref cycle through allOf?)");
    const Json merged = merge({s}, path);
    if (merged.is_boolean() && !merged.get<bool>())
      fail_at(path, "allOf admits no value (its parts contradict)");
    return value(merged, path, hint, owner, inlined + 1);
  }
  if (has("$ref")) return ref_rule(s["$ref"].get<std::string>(), path, owner);
  if (has("anyOf") && has("oneOf")) fail_at(path, "anyOf and oneOf together are not supported");
  if (has("anyOf") || has("oneOf"))
    return choice(s, has("anyOf") ? "anyOf" : "oneOf", path, hint, owner, inlined);
  if (has("enum") || has("const")) return enumeration(s, path, hint);

  std::vector<std::string> types;
  if (has("type")) {
    const Json& t = s["type"];
    for (const char* name : kTypes)
      if (t == name || (t.is_array() && std::find(t.begin(), t.end(), name) != t.end()))
        types.push_back(name);
  } else {
    types.assign(std::begin(kTypes), std::end(kTypes));
  }
  if (std::find(types.begin(), types.end(), "number") != types.end())
    std::erase(types, std::string("integer"));  // integers are numbers
  std::vector<std::string> alts;
  for (const std::string& t : types) {
    const std::string h = types.size() == 1 ? hint : hint + "-" + t;
    if (t == "object") alts.push_back(object(s, path, h));
    if (t == "array") alts.push_back(array(s, path, h));
    if (t == "string") alts.push_back(string(s, path, h));
    if (t == "number") alts.push_back(number(s, path, h));
    if (t == "integer") alts.push_back(integer(s, path, h));
    if (t == "boolean" || t == "null") alts.push_back(primitive(rules_, t));
  }
  return alts.size() == 1 ? alts[0] : rules_.add(hint, join(alts, " | "));
}

std::string Converter::choice(const Json& s, const char* key, const std::string& path,
                              const std::string& hint, const std::string& owner, int inlined) {
  // Keywords beside anyOf apply to every branch: each branch is merged with them.
  Json siblings = Json::object();
  for (const auto& [k, v] : s.items())
    if (k != key && !is_annotation(k) && !is_container(k)) siblings[k] = v;
  std::vector<std::string> alts;
  for (std::size_t i = 0; i < s[key].size(); ++i) {
    const std::string where = child(child(path, key), i);
    Json branch = s[key][i];
    if (!siblings.empty()) {
      if (inlined >= kMaxInline)
        fail_at(path, "$ref and allOf expand without end (a $ref cycle through allOf?)");
      branch = merge({siblings, branch}, where);
    }
    if (branch.is_boolean() && !branch.get<bool>()) continue;
    const std::string alt =
        value(branch, where, fmt::format("{}-{}{}", hint, key[0] == 'a' ? "any" : "one", i), owner,
              inlined + (siblings.empty() ? 0 : 1));
    if (std::find(alts.begin(), alts.end(), alt) == alts.end()) alts.push_back(alt);
  }
  if (alts.empty()) fail_at(path, fmt::format("no branch of {} admits a value", key));
  return alts.size() == 1 ? alts[0] : rules_.add(hint, join(alts, " | "));
}

std::string Converter::enumeration(const Json& s, const std::string& path,
                                   const std::string& hint) {
  for (const auto& [k, v] : s.items())
    if (k != "enum" && k != "const" && k != "type" && !is_annotation(k) && !is_container(k))
      fail_at(path, fmt::format("'{}' beside enum or const is not supported", k));
  std::vector<Json> values;
  if (s.contains("enum")) values.assign(s["enum"].begin(), s["enum"].end());
  if (s.contains("const")) {
    if (s.contains("enum") && std::none_of(values.begin(), values.end(), [&](const Json& v) {
          return json_equal(v, s["const"]);
        }))
      fail_at(path, "const is not one of enum");
    values = {s["const"]};
  }
  std::vector<std::string> alts, strings;
  std::set<std::string> seen;  // canonical texts: JSON-equal values once (1 and 1.0 stay two)
  for (const Json& v : values) {
    if (s.contains("type")) {
      const Json& t = s["type"];
      bool ok = false;
      for (const char* name : kTypes)
        ok = ok ||
             ((t == name || (t.is_array() && std::find(t.begin(), t.end(), name) != t.end())) &&
              has_type(v, name));
      if (!ok) continue;
    }
    if (!seen.insert(nlohmann::json::parse(v.dump()).dump()).second) continue;
    if (v.is_string())
      strings.push_back(v.get<std::string>());
    else
      alts.push_back(spell(v, path));
  }
  if (!strings.empty()) {  // one trie: a parse follows the strings' common prefixes once
    try {
      alts.push_back(json_string_one_of(rules_, strings, hint));
    } catch (const Error& e) {
      fail_at(path, e.what());
    }
  }
  if (alts.empty()) fail_at(path, "no value of enum/const has the schema's type");
  return rules_.add(hint, join(alts, " | "));
}

// One JSON value: numbers as the schema writes them, strings (keys too) in their canonical
// spelling, objects with their keys in the schema's order.
std::string Converter::spell(const Json& v, const std::string& path) {
  const std::string ws = primitive(rules_, "ws"), sep = ws + " \",\" " + ws;
  if (v.is_string()) {
    try {
      return json_string_literal(rules_, v.get<std::string>());
    } catch (const Error& e) {
      fail_at(path, e.what());
    }
  }
  if (v.is_array()) {
    if (v.empty()) return "\"[\" " + ws + " \"]\"";
    std::vector<std::string> items;
    for (const Json& x : v) items.push_back(spell(x, path));
    return "\"[\" " + ws + " " + join(items, " " + sep + " ") + " " + ws + " \"]\"";
  }
  if (v.is_object()) {
    if (v.empty()) return "\"{\" " + ws + " \"}\"";
    std::vector<std::string> members;
    for (const auto& [k, x] : v.items())
      members.push_back(spell(Json(k), path) + " " + ws + " \":\" " + ws + " " + spell(x, path));
    return "\"{\" " + ws + " " + join(members, " " + sep + " ") + " " + ws + " \"}\"";
  }
  if (v.is_number_float() && !std::isfinite(v.get<double>()))
    fail_at(path, "a non-finite number in enum/const");
  return gbnf_literal(v.dump());
}

}  // namespace ls::grammar::detail

namespace ls::grammar {

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, std::string_view origin) {
  return detail::Converter(schema, origin).run();
}

std::string json_schema_to_gbnf(const nlohmann::json& schema, std::string_view origin) {
  return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()), origin);
}

std::string json_object_gbnf() {
  detail::RuleSet rules;
  rules.reserve("root");
  const std::string ws = detail::primitive(rules, "ws");
  rules.define("root", ws + " " + detail::primitive(rules, "object") + " " + ws);
  return rules.text();
}

}  // namespace ls::grammar
