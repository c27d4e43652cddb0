// Test driver for check_json_schema.py and check_gbnf_reference.py: reads cases from a JSON file,
// [{"schema": S, "texts": [T, ...]}, ...] (or {"gbnf": G, ...}: the grammar text itself),
// converts each schema with json_schema_to_gbnf (schemas parsed in written order) and prints,
// per case, {"error": message or null, "accept": [bool per text]} as one JSON array. `--gbnf`
// prints each case's grammar instead.
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

int main(int argc, char** argv) {
  const bool print_gbnf = argc == 3 && std::string(argv[2]) == "--gbnf";
  if (argc != 2 && !print_gbnf) {
    std::cerr << "usage: grammar_driver CASES.json [--gbnf]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  const auto cases = nlohmann::ordered_json::parse(text.str());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : cases) {
    nlohmann::json result = {{"error", nullptr}, {"accept", nlohmann::json::array()}};
    try {
      const std::string gbnf = c.contains("gbnf")
                                   ? c["gbnf"].get<std::string>()
                                   : ls::grammar::json_schema_to_gbnf(c["schema"], "schema");
      if (print_gbnf) {
        std::cout << gbnf << "\n";
        continue;
      }
      ls::grammar::Matcher m(std::make_shared<const ls::grammar::Grammar>(
          ls::grammar::parse_gbnf(gbnf, "schema.gbnf")));
      for (const auto& t : c["texts"]) {
        m.reset();
        result["accept"].push_back(m.advance(t.get<std::string>()) && m.can_end());
      }
    } catch (const ls::Error& e) {
      result["error"] = e.what();
    }
    out.push_back(result);
  }
  if (!print_gbnf) std::cout << out.dump() << "\n";
  return 0;
}
