// Loading a chat template from tokenizer_config.json and rendering it like transformers'
// apply_chat_template (see chat_template.h).
#include "chat/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "core/mapped_file.h"

namespace ls::chat {

namespace {

std::string read_file(const std::string& path) {
  return read_text_file(path);
}

// A special token is a string or an AddedToken object {"content": ...}; null means unset.
std::optional<std::string> token_text(const nlohmann::ordered_json& v, const std::string& path,
                                      const std::string& key) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return v["content"].get<std::string>();
  }
  fail("{}: field '{}' must be a string or an object with a string 'content', got {}", path, key,
       v.dump());
}

std::shared_ptr<const jinja::Template> compile(const std::string& source, const std::string& name) {
  return std::make_shared<const jinja::Template>(jinja::Template::parse(source, name));
}

}  // namespace

ChatTemplate ChatTemplate::from_tokenizer_config(const std::string& path) {
  nlohmann::ordered_json config;
  try {
    config = nlohmann::ordered_json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    fail("{}: invalid JSON: {}", path, e.what());
  }
  if (!config.is_object()) fail("{}: expected a JSON object", path);
  ChatTemplate t;
  t.name = path + " (chat_template)";
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) {
    auto sibling = std::filesystem::path(path).parent_path() / "chat_template.jinja";
    if (!std::filesystem::exists(sibling)) {
      fail(
          "{}: no 'chat_template' field (and no chat_template.jinja beside it): this tokenizer "
          "has no chat template",
          path);
    }
    t.source = read_file(sibling.string());
    t.name = sibling.string();
  } else if (it->is_string()) {
    t.source = it->get<std::string>();
  } else if (it->is_array()) {
    std::string names;
    bool found = false;
    for (const auto& entry : *it) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") ||
          !entry["name"].is_string() || !entry["template"].is_string()) {
        fail("{}: field 'chat_template' must list objects {{\"name\": ..., \"template\": ...}}",
             path);
      }
      std::string n = entry["name"].get<std::string>();
      names += (names.empty() ? "" : ", ") + n;
      if (n == "default") {
        t.source = entry["template"].get<std::string>();
        found = true;
      } else if (n == "tool_use") {
        t.tool_use_source = entry["template"].get<std::string>();
      }
    }
    if (!found)
      fail("{}: field 'chat_template' has no template named 'default' (has: {})", path, names);
  } else {
    fail("{}: field 'chat_template' must be a string or a list, got {}", path, it->type_name());
  }
  static const char* kTokenKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                     "pad_token", "cls_token", "mask_token"};
  for (const char* key : kTokenKeys) {
    if (!config.contains(key)) continue;
    if (auto text = token_text(config[key], path, key)) t.special_tokens[key] = *text;
  }
  if (config.contains("additional_special_tokens") &&
      config["additional_special_tokens"].is_array()) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& v : config["additional_special_tokens"]) {
      if (auto text = token_text(v, path, "additional_special_tokens")) list.push_back(*text);
    }
    t.special_tokens["additional_special_tokens"] = list;
  }
  t.bos_token = t.special_tokens.value("bos_token", "");
  t.eos_token = t.special_tokens.value("eos_token", "");
  t.compiled_ = compile(t.source, t.name);
  t.compiled_source_ = t.source;
  if (!t.tool_use_source.empty()) {
    t.compiled_tool_use_ = compile(t.tool_use_source, t.name + "[tool_use]");
    t.compiled_tool_use_source_ = t.tool_use_source;
  }
  return t;
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const nlohmann::ordered_json& tools,
                                 bool add_generation_prompt) const {
  return render(messages, tools, add_generation_prompt, nullptr);
}

std::string ChatTemplate::render(const nlohmann::ordered_json& messages,
                                 const nlohmann::ordered_json& tools, bool add_generation_prompt,
                                 const nlohmann::ordered_json& extra_context) const {
  if (!messages.is_array())
    fail("{}: messages must be a JSON array, got {}", name, messages.type_name());
  if (!tools.is_null() && !tools.is_array()) {
    fail("{}: tools must be a JSON array or null, got {}", name, tools.type_name());
  }
  // transformers: render(messages=..., tools=..., documents=..., add_generation_prompt=...,
  // **special_tokens_map, **kwargs)
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  context["messages"] = messages;
  context["tools"] = tools;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  for (const auto& [k, v] : special_tokens.items()) context[k] = v;
  if (!bos_token.empty()) context["bos_token"] = bos_token;
  if (!eos_token.empty()) context["eos_token"] = eos_token;
  if (extra_context.is_object()) {
    for (const auto& [k, v] : extra_context.items()) context[k] = v;
  } else if (!extra_context.is_null()) {
    fail("{}: extra template context must be a JSON object", name);
  }
  bool tool_use = !tools.is_null() && !tool_use_source.empty();
  const std::string& src = tool_use ? tool_use_source : source;
  const auto& cached = tool_use ? compiled_tool_use_ : compiled_;
  const std::string& cached_source = tool_use ? compiled_tool_use_source_ : compiled_source_;
  if (cached && cached_source == src) return cached->render(context);
  return jinja::Template::parse(src, name).render(context);
}

nlohmann::ordered_json make_messages(const std::string& prompt, const std::string& system) {
  auto messages = nlohmann::ordered_json::array();
  if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  messages.push_back({{"role", "user"}, {"content", prompt}});
  return messages;
}

}  // namespace ls::chat
