// Renders template test cases with logitscope's interpreter, for the jinja2 reference test.
// Input: a JSON file with a list of cases, each either
//   {"name", "template", "context"}                       (Template::parse + render), or
//   {"name", "tokenizer_config", "messages", "tools", "add_generation_prompt", "extra"}
//                                                          (ChatTemplate, as apply_chat_template).
// Output (stdout): one JSON object per line, {"name", "output"} or {"name", "error"}.
#include <fstream>
#include <iostream>
#include <sstream>

#include "chat/chat_template.h"
#include "jinja/template.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: ls_chat_render CASES.json\n";
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  auto cases = nlohmann::ordered_json::parse(ss.str());
  for (const auto& c : cases) {
    nlohmann::ordered_json result;
    result["name"] = c.at("name");
    try {
      if (c.contains("tokenizer_config")) {
        auto t =
            ls::chat::ChatTemplate::from_tokenizer_config(c["tokenizer_config"].get<std::string>());
        result["output"] = t.render(c.at("messages"), c.value("tools", nlohmann::ordered_json()),
                                    c.value("add_generation_prompt", false),
                                    c.value("extra", nlohmann::ordered_json()));
      } else {
        auto t = ls::jinja::Template::parse(c.at("template").get<std::string>(), "case");
        result["output"] = t.render(c.value("context", nlohmann::ordered_json::object()));
      }
    } catch (const ls::Error& e) {
      result["error"] = e.what();
    }
    std::cout << result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
