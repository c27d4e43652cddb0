// The JSON Schema converter's walk (json_schema.h), shared by json_schema.cpp (keywords, $ref,
// anyOf, allOf, enum) and json_schema_types.cpp (the rules of each type: objects, arrays,
// strings, integers, numbers). Internal to ls_grammar.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/json_schema_internal.h"

namespace ls::grammar::detail {

// A path's child: `$.properties.a`, `$.anyOf[1]`, `$.properties["a b"]`.
std::string child(const std::string& path, std::string_view key);
std::string child(const std::string& path, std::size_t index);
std::string join(const std::vector<std::string>& parts, std::string_view sep);

class Converter {
 public:
  Converter(const Json& root, std::string_view origin) : root_(root), origin_(origin) {}
  std::string run();

 private:
  [[noreturn]] void fail_at(const std::string& path, const std::string& what) const;
  long count(const Json& s, const char* key, const std::string& path) const;
  void check(const Json& s, const std::string& path) const;

  const Json& resolve(const std::string& ref, const std::string& path) const;
  std::string ref_rule(const std::string& ref, const std::string& path, const std::string& owner);
  void check_ref_cycles() const;
  Json merge(const std::vector<Json>& parts, const std::string& path) const;
  // `s` with a top-level allOf (or $ref beside other keywords) merged: `false` when it admits
  // nothing, which a property or an array element needs to know.
  Json normalized(const Json& s, const std::string& path) const;

  // The GBNF (a rule name or an atom) for the JSON texts valid under `s`. owner: the $ref whose
  // text starts here (empty once a character has been consumed); inlined: merges on the way.
  std::string value(const Json& s, const std::string& path, const std::string& hint,
                    const std::string& owner, int inlined);
  std::string value_of(const Json& s, const std::string& path, const std::string& hint,
                       const std::string& owner, int inlined);
  std::string choice(const Json& s, const char* key, const std::string& path,
                     const std::string& hint, const std::string& owner, int inlined);
  std::string enumeration(const Json& s, const std::string& path, const std::string& hint);
  std::string spell(const Json& v, const std::string& path);

  std::string string(const Json& s, const std::string& path, const std::string& hint);
  std::string integer(const Json& s, const std::string& path, const std::string& hint);
  std::string number(const Json& s, const std::string& path, const std::string& hint);
  std::string object(const Json& s, const std::string& path, const std::string& hint);
  std::string array(const Json& s, const std::string& path, const std::string& hint);

  std::string ws() { return primitive(rules_, "ws"); }
  std::string sep() { return ws() + " \",\" " + ws(); }

  const Json& root_;
  std::string origin_;
  RuleSet rules_;
  std::map<std::string, std::string> refs_;              // $ref -> its rule
  std::map<std::string, std::set<std::string>> starts_;  // $ref -> $refs its text starts with
  int nesting_ = 0;
};

}  // namespace ls::grammar::detail
