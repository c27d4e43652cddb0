// `logitscope template`: render the model's chat template (tokenizer_config.json) for a
// conversation, exactly as Hugging Face's apply_chat_template would, and print the prompt.
//
//   logitscope template --model DIR --messages chat.json [--tools tools.json]
//                       [--no-generation-prompt] [--context vars.json] [--json]
//
// chat.json is a JSON array of messages, or an object {"messages": [...], "tools": [...]}.
// --context adds template variables (e.g. {"enable_thinking": false}); --json prints the prompt
// as a JSON string so that every newline and space is visible.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "core/mapped_file.h"
#include "engine/loaded_model.h"

namespace ls::app {

namespace {

struct TemplateOptions {
  std::string model;
  std::string config;
  std::string messages;
  std::string tools;
  std::string context;
  bool no_generation_prompt = false;
  bool json = false;
};

nlohmann::ordered_json read_json(const std::string& path, const char* flag) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    require_regular_file(path, kMaxTextFileBytes, flag);
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open ({})", path, flag);
    text << in.rdbuf();
  }
  try {
    return nlohmann::ordered_json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON ({}): {}", path, flag, e.what());
  }
}

void run_template(const TemplateOptions& o) {
  std::string config = o.config;
  std::optional<engine::LoadedModel> gguf;  // a GGUF: the template in its metadata
  if (config.empty() && std::filesystem::is_regular_file(o.model))
    gguf = engine::LoadedModel::tokenizer_only(o.model);
  if (config.empty() && !gguf) {
    if (o.model.empty()) fail("give the model with --model DIR or --tokenizer-config FILE");
    config = (std::filesystem::path(o.model) / "tokenizer_config.json").string();
    if (!std::filesystem::exists(config)) {
      fail("{}: no tokenizer_config.json in this model directory (--model)", o.model);
    }
  }
  const chat::ChatTemplate chat =
      gguf ? gguf->chat_template() : chat::ChatTemplate::from_tokenizer_config(config);

  nlohmann::ordered_json messages = read_json(o.messages, "--messages");
  nlohmann::ordered_json tools = nullptr;
  if (messages.is_object()) {
    if (messages.contains("tools")) tools = messages["tools"];
    if (!messages.contains("messages"))
      fail("{}: expected a \"messages\" field (--messages)", o.messages);
    messages = nlohmann::ordered_json(messages["messages"]);
  }
  if (!messages.is_array()) fail("{}: expected a JSON array of messages (--messages)", o.messages);
  if (!o.tools.empty()) tools = read_json(o.tools, "--tools");
  if (!tools.is_null() && !tools.is_array())
    fail("{}: tools must be a JSON array (--tools)", o.tools);
  nlohmann::ordered_json extra = nullptr;
  if (!o.context.empty()) {
    extra = read_json(o.context, "--context");
    if (!extra.is_object())
      fail("{}: expected a JSON object of template variables (--context)", o.context);
  }

  std::string prompt = chat.render(messages, tools, !o.no_generation_prompt, extra);
  if (o.json) {
    std::cout << nlohmann::ordered_json(prompt).dump() << "\n";
  } else {
    std::cout << prompt;
  }
  std::cout.flush();
}

}  // namespace

void add_template_command(CLI::App& app) {
  auto opts = std::make_shared<TemplateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "template", "Render the model's chat template for a conversation and print the prompt");
  auto* model = cmd->add_option("-m,--model", opts->model,
                                "Model directory (uses DIR/tokenizer_config.json)");
  auto* config =
      cmd->add_option("--tokenizer-config", opts->config, "A tokenizer_config.json file");
  model->excludes(config);
  cmd->add_option("--messages", opts->messages,
                  "JSON file (- for stdin): an array of messages, or {\"messages\": [...], "
                  "\"tools\": [...]}")
      ->required();
  cmd->add_option("--tools", opts->tools,
                  "JSON file with the array of tool (function) definitions");
  cmd->add_option("--context", opts->context,
                  "JSON file with extra template variables, e.g. {\"enable_thinking\": false}");
  cmd->add_flag("--no-generation-prompt", opts->no_generation_prompt,
                "Do not append the assistant turn opener (add_generation_prompt=False)");
  cmd->add_flag("--json", opts->json, "Print the prompt as one JSON string");
  cmd->callback([opts] { run_template(*opts); });
}

}  // namespace ls::app
