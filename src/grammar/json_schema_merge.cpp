// allOf (and a $ref or anyOf with sibling keywords) as one schema: each keyword combined with its
// meaning kept. Object keywords are combined per key the way JSON Schema applies them: a key's
// value must satisfy, in every part, that part's `properties` entry for it or else that part's
// `additionalProperties`; array items likewise per index with prefixItems and items.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "grammar/json_schema_internal.h"

namespace ls::grammar::detail {

bool is_annotation(std::string_view k) {
  static const std::set<std::string_view> names = {
      "title",    "description", "$schema",    "$id",      "default",
      "examples", "$comment",    "deprecated", "readOnly", "writeOnly"};
  return names.count(k) != 0;
}

bool is_container(std::string_view k) {
  return k == "$defs" || k == "definitions";
}

namespace {

constexpr int kMaxDepth = 32;

bool json_equal(const Json& a, const Json& b) {
  // ordered_json compares objects in key order; JSON equality does not.
  return nlohmann::json::parse(a.dump()) == nlohmann::json::parse(b.dump());
}

// All of `list` as one schema: true when empty, false if any is false.
Json all_of(std::vector<Json> list) {
  std::vector<Json> kept;
  for (Json& s : list) {
    if (s.is_boolean() && !s.get<bool>()) return false;
    if (s.is_boolean() || (s.is_object() && s.empty())) continue;
    if (std::none_of(kept.begin(), kept.end(), [&](const Json& k) { return k == s; }))
      kept.push_back(std::move(s));
  }
  if (kept.empty()) return true;
  if (kept.size() == 1) return kept[0];
  return Json{{"allOf", kept}};
}

std::set<std::string> types_of(const Json& t) {
  std::set<std::string> out;
  if (t.is_string()) out.insert(t.get<std::string>());
  if (t.is_array())
    for (const Json& x : t)
      if (x.is_string()) out.insert(x.get<std::string>());
  if (out.count("number")) out.insert("integer");  // an integer is a number
  return out;
}

class Merger {
 public:
  explicit Merger(const Resolver& resolve) : resolve_(resolve) {}

  Json merge(const std::vector<Json>& parts) {
    for (const Json& p : parts) flatten(p, 0);
    if (never_) return false;
    Json out = Json::object();
    if (!merge_types(out) || !merge_enums(out)) return false;
    merge_choices(out);
    merge_objects(out);
    merge_arrays(out);
    merge_scalars(out);
    return out;
  }

 private:
  void flatten(const Json& s, int depth) {
    if (depth > kMaxDepth)
      throw MergeError{
          fmt::format("$ref and allOf nest deeper than {} (a $ref cycle?)", kMaxDepth)};
    if (s.is_boolean()) {
      never_ = never_ || !s.get<bool>();
      return;
    }
    if (!s.is_object()) throw MergeError{"a schema must be an object or a boolean"};
    Json rest = Json::object();
    for (const auto& [k, v] : s.items())
      if (!is_annotation(k) && !is_container(k) && k != "$ref" && k != "allOf") rest[k] = v;
    if (s.contains("$ref")) {
      if (!s["$ref"].is_string()) throw MergeError{"$ref must be a string"};
      flatten(resolve_(s["$ref"].get<std::string>()), depth + 1);
    }
    if (s.contains("allOf")) {
      if (!s["allOf"].is_array()) throw MergeError{"allOf must be an array"};
      for (const Json& p : s["allOf"]) flatten(p, depth + 1);
    }
    if (!rest.empty()) parts_.push_back(std::move(rest));
  }

  std::vector<const Json*> with(std::string_view key) const {
    std::vector<const Json*> out;
    for (const Json& p : parts_)
      if (p.contains(key)) out.push_back(&p[std::string(key)]);
    return out;
  }

  bool merge_types(Json& out) {
    std::optional<std::set<std::string>> types;
    for (const Json* t : with("type")) {
      std::set<std::string> mine = types_of(*t), both;
      if (!types) {
        types = mine;
        continue;
      }
      std::set_intersection(types->begin(), types->end(), mine.begin(), mine.end(),
                            std::inserter(both, both.end()));
      types = both;
    }
    if (!types) return true;
    if (types->empty()) return false;
    if (types->count("number")) types->erase("integer");
    Json list = Json::array();
    for (const std::string& t : *types) list.push_back(t);
    out["type"] = list.size() == 1 ? list[0] : list;
    return true;
  }

  bool merge_enums(Json& out) {
    std::optional<std::vector<Json>> values;
    const auto narrow = [&](const std::vector<Json>& mine) {
      if (!values) {
        values = mine;
        return;
      }
      std::vector<Json> both;
      for (const Json& v : *values)
        if (std::any_of(mine.begin(), mine.end(), [&](const Json& m) { return json_equal(v, m); }))
          both.push_back(v);
      values = both;
    };
    for (const Json* c : with("const")) narrow({*c});
    for (const Json* e : with("enum")) {
      if (!e->is_array()) throw MergeError{"enum must be an array"};
      narrow(std::vector<Json>(e->begin(), e->end()));
    }
    if (!values) return true;
    if (values->empty()) return false;
    out["enum"] = *values;
    return true;
  }

  void merge_choices(Json& out) {
    const auto any = with("anyOf"), one = with("oneOf");
    if (any.size() + one.size() > 1)
      throw MergeError{"two anyOf/oneOf under one allOf are not merged"};
    if (!any.empty()) out["anyOf"] = *any[0];
    if (!one.empty()) out["oneOf"] = *one[0];
  }

  void merge_objects(Json& out) {
    std::vector<std::string> keys;
    for (const Json* props : with("properties")) {
      if (!props->is_object()) throw MergeError{"properties must be an object"};
      for (const auto& [k, v] : props->items())
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
    }
    if (!keys.empty()) {
      Json props = Json::object();
      for (const std::string& k : keys) {
        std::vector<Json> list;
        for (const Json& p : parts_) {
          if (p.contains("properties") && p["properties"].contains(k))
            list.push_back(p["properties"][k]);
          else if (p.contains("additionalProperties"))
            list.push_back(p["additionalProperties"]);
        }
        props[k] = all_of(std::move(list));
      }
      out["properties"] = props;
    }
    std::vector<Json> extra;
    for (const Json* a : with("additionalProperties")) extra.push_back(*a);
    if (!extra.empty()) out["additionalProperties"] = all_of(std::move(extra));
    Json required = Json::array();
    for (const Json* r : with("required")) {
      if (!r->is_array()) throw MergeError{"required must be an array"};
      for (const Json& k : *r)
        if (std::find(required.begin(), required.end(), k) == required.end()) required.push_back(k);
    }
    if (!required.empty()) out["required"] = required;
  }

  void merge_arrays(Json& out) {
    std::size_t n = 0;
    for (const Json* p : with("prefixItems")) {
      if (!p->is_array()) throw MergeError{"prefixItems must be an array"};
      n = std::max(n, p->size());
    }
    if (n > 0) {
      Json prefix = Json::array();
      for (std::size_t i = 0; i < n; ++i) {
        std::vector<Json> list;
        for (const Json& p : parts_) {
          if (p.contains("prefixItems") && i < p["prefixItems"].size())
            list.push_back(p["prefixItems"][i]);
          else if (p.contains("items"))
            list.push_back(p["items"]);
        }
        prefix.push_back(all_of(std::move(list)));
      }
      out["prefixItems"] = prefix;
    }
    std::vector<Json> items;
    for (const Json* i : with("items")) items.push_back(*i);
    if (!items.empty()) out["items"] = all_of(std::move(items));
  }

  void merge_scalars(Json& out) {
    const auto tightest = [&](const char* key, bool largest) {
      for (const Json* v : with(key)) {
        if (!v->is_number()) throw MergeError{fmt::format("{} must be a number", key)};
        if (!out.contains(key) || (largest ? *v > out[key] : *v < out[key])) out[key] = *v;
      }
    };
    tightest("minLength", true);
    tightest("maxLength", false);
    tightest("minItems", true);
    tightest("maxItems", false);
    tightest("minimum", true);
    tightest("exclusiveMinimum", true);
    tightest("maximum", false);
    tightest("exclusiveMaximum", false);
    for (const char* key : {"pattern", "format"}) {
      for (const Json* v : with(key)) {
        if (out.contains(key) && out[key] != *v)
          throw MergeError{fmt::format("two different '{}' values are not merged", key)};
        out[key] = *v;
      }
    }
    // Whatever else is copied for the converter to accept or refuse with its path.
    static const std::set<std::string_view> done = {"type",        "enum",
                                                    "const",       "anyOf",
                                                    "oneOf",       "properties",
                                                    "required",    "additionalProperties",
                                                    "prefixItems", "items",
                                                    "minLength",   "maxLength",
                                                    "minItems",    "maxItems",
                                                    "minimum",     "exclusiveMinimum",
                                                    "maximum",     "exclusiveMaximum",
                                                    "pattern",     "format"};
    for (const Json& p : parts_)
      for (const auto& [k, v] : p.items())
        if (!done.count(k) && !out.contains(k)) out[k] = v;
  }

  const Resolver& resolve_;
  std::vector<Json> parts_;
  bool never_ = false;
};

}  // namespace

Json merge_schemas(const std::vector<Json>& parts, const Resolver& resolve) {
  return Merger(resolve).merge(parts);
}

}  // namespace ls::grammar::detail
