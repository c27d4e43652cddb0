// Messages request checking and its translation to a chat request (see anthropic_request.h):
// each block and field checked under its Anthropic name, then parse_chat_request on the result,
// its errors renamed back to the Messages fields; count_tokens renders the same prompt.
#include "server/anthropic_request.h"

#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include <fmt/format.h>

#include "server/body_fields.h"

namespace ls::server {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

namespace {

using body::bad;
using body::field;
using body::number;
using body::string;
using body::type_name;

const ordered& required(const ordered& obj, const char* key, const std::string& param) {
  const ordered* v = field(obj, key);
  if (v == nullptr) bad(param, fmt::format("'{}' is required", param));
  return *v;
}

// An integer >= lo (integral floats pass, as on the chat route); the value as written.
const ordered& integer_at_least(const ordered& v, const std::string& param, std::int64_t lo) {
  const bool integral = v.is_number_integer() || v.is_number_unsigned() ||
                        (v.is_number_float() && std::isfinite(v.get<double>()) &&
                         v.get<double>() == std::floor(v.get<double>()));
  if (!integral) bad(param, fmt::format("'{}' must be an integer, got {}", param, type_name(v)));
  if (!v.is_number_unsigned() && v.get<double>() < static_cast<double>(lo))
    bad(param, fmt::format("'{}' must be an integer >= {}, got {}", param, lo, v.dump()));
  return v;
}

// Text blocks ({"type": "text", "text": ...}) joined with newlines; a string as is.
std::string text_of(const ordered& v, const std::string& param, const char* what) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array())
    bad(param, fmt::format("'{}' must be a string or a list of text blocks", param));
  std::string text;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = fmt::format("{}[{}]", param, i);
    const ordered& block = v[i];
    if (!block.is_object()) bad(p, fmt::format("'{}' must be a content block object", p));
    const std::string& type = string(required(block, "type", p + ".type"), p + ".type");
    if (type != "text")
      bad(p + ".type",
          fmt::format("'{}.type' is \"{}\": {} takes text blocks only", p, type, what));
    if (i > 0) text += '\n';
    text += string(required(block, "text", p + ".text"), p + ".text");
  }
  return text;
}

// A user or assistant message's content as chat messages, appended to `out`. `previous_calls`:
// the tool_use ids of the message before (a tool_result must answer one of them); the ids this
// message's tool_use blocks declare are returned.
std::set<std::string> translate_message(const ordered& m, const std::string& p,
                                        const std::set<std::string>& previous_calls, ordered& out) {
  if (!m.is_object()) bad(p, fmt::format("'{}' must be a message object", p));
  const std::string& role = string(required(m, "role", p + ".role"), p + ".role");
  if (role != "user" && role != "assistant")
    bad(p + ".role",
        fmt::format("'{}.role' must be \"user\" or \"assistant\", got \"{}\" (a system prompt "
                    "goes in the top-level 'system')",
                    p, role));
  const ordered& content = required(m, "content", p + ".content");
  std::set<std::string> calls;
  if (content.is_string()) {
    out.push_back({{"role", role}, {"content", content}});
    return calls;
  }
  if (!content.is_array())
    bad(p + ".content",
        fmt::format("'{}.content' must be a string or a list of content blocks", p));
  if (content.empty())
    bad(p + ".content", fmt::format("'{}.content' must hold at least one block", p));
  std::string text;  // text blocks not yet written out
  bool has_text = false;
  ordered tool_calls = ordered::array();
  const auto flush_user_text = [&] {
    if (has_text) out.push_back({{"role", "user"}, {"content", text}});
    text.clear();
    has_text = false;
  };
  for (std::size_t i = 0; i < content.size(); ++i) {
    const std::string bp = fmt::format("{}.content[{}]", p, i);
    const ordered& block = content[i];
    if (!block.is_object()) bad(bp, fmt::format("'{}' must be a content block object", bp));
    const std::string& type = string(required(block, "type", bp + ".type"), bp + ".type");
    if (type == "text") {
      const std::string& t = string(required(block, "text", bp + ".text"), bp + ".text");
      text += has_text ? "\n" + t : t;
      has_text = true;
    } else if (type == "tool_use" && role == "assistant") {
      ordered call = {{"id", string(required(block, "id", bp + ".id"), bp + ".id")},
                      {"type", "function"}};
      const std::string& name = string(required(block, "name", bp + ".name"), bp + ".name");
      const ordered& input = required(block, "input", bp + ".input");
      if (!input.is_object())
        bad(bp + ".input",
            fmt::format("'{}.input' must be an object, got {}", bp, type_name(input)));
      call["function"] = {{"name", name}, {"arguments", input}};
      if (!calls.insert(call["id"].get<std::string>()).second)
        bad(bp + ".id", fmt::format("'{}.id' repeats the id of an earlier tool_use", bp));
      tool_calls.push_back(std::move(call));
    } else if (type == "tool_result" && role == "user") {
      const std::string& id =
          string(required(block, "tool_use_id", bp + ".tool_use_id"), bp + ".tool_use_id");
      if (previous_calls.count(id) == 0)
        bad(bp + ".tool_use_id",
            fmt::format("'{}.tool_use_id' is \"{}\", which no tool_use block of the previous "
                        "(assistant) message has",
                        bp, id));
      std::string result;
      if (const ordered* c = field(block, "content"))
        result = text_of(*c, bp + ".content", "a tool_result's content");
      if (const ordered* e = field(block, "is_error")) {
        if (!e->is_boolean())
          bad(bp + ".is_error", fmt::format("'{}.is_error' must be true or false", bp));
        if (e->get<bool>()) result = "Error: " + result;
      }
      flush_user_text();
      out.push_back({{"role", "tool"}, {"tool_call_id", id}, {"content", result}});
    } else if ((type == "thinking" || type == "redacted_thinking") && role == "assistant") {
      // An earlier turn's reasoning, sent back by clients that keep it: not in the template.
    } else if (type == "tool_use" || type == "tool_result" || type == "thinking" ||
               type == "redacted_thinking") {
      bad(bp + ".type",
          fmt::format("'{}.type' is \"{}\", which a {} message cannot hold", bp, type, role));
    } else {
      bad(bp + ".type",
          fmt::format("'{}.type' is \"{}\": the blocks supported are text, tool_use (assistant) "
                      "and tool_result (user)",
                      bp, type));
    }
  }
  if (role == "user") {
    flush_user_text();
  } else {
    ordered msg = {{"role", "assistant"}, {"content", text}};
    if (!tool_calls.empty()) msg["tool_calls"] = std::move(tool_calls);
    out.push_back(std::move(msg));
  }
  return calls;
}

// Anthropic tools ({name, description, input_schema}) as OpenAI function tools; their names.
ordered translate_tools(const ordered& tools, std::set<std::string>& names) {
  if (!tools.is_array()) bad("tools", "'tools' must be a list of tools");
  ordered out = ordered::array();
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string p = fmt::format("tools[{}]", i);
    const ordered& t = tools[i];
    if (!t.is_object()) bad(p, fmt::format("'{}' must be a tool object", p));
    if (const ordered* type = field(t, "type"); type != nullptr && *type != "custom")
      bad(p + ".type", fmt::format("'{}.type' is {}: only client tools (no type, or \"custom\") "
                                   "are supported, not Anthropic's server tools",
                                   p, type->dump()));
    const std::string& name = string(required(t, "name", p + ".name"), p + ".name");
    if (name.empty()) bad(p + ".name", fmt::format("'{}.name' must not be empty", p));
    if (!names.insert(name).second)
      bad(p + ".name", fmt::format("'{}.name' repeats the tool name \"{}\"", p, name));
    ordered fn = {{"name", name}};
    if (const ordered* d = field(t, "description"))
      fn["description"] = string(*d, p + ".description");
    const ordered& schema = required(t, "input_schema", p + ".input_schema");
    if (!schema.is_object())
      bad(p + ".input_schema", fmt::format("'{}.input_schema' must be a JSON Schema object, got {}",
                                           p, type_name(schema)));
    fn["parameters"] = schema;
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
  }
  return out;
}

// tool_choice {type: auto|any|tool|none, name, disable_parallel_tool_use} into `chat`.
void translate_tool_choice(const ordered& choice, const std::set<std::string>& names,
                           ordered& chat) {
  if (!choice.is_object())
    bad("tool_choice",
        "'tool_choice' must be an object {\"type\": \"auto\" | \"any\" | "
        "\"tool\" | \"none\", ...}");
  const std::string& type =
      string(required(choice, "type", "tool_choice.type"), "tool_choice.type");
  if (type == "auto" || type == "none") {
    chat["tool_choice"] = type;
  } else if (type == "any" || type == "tool") {
    if (names.empty())
      bad("tool_choice", fmt::format("'tool_choice' {} forces a tool call: give 'tools'", type));
    if (type == "any") {
      chat["tool_choice"] = "required";
    } else {
      const std::string& name =
          string(required(choice, "name", "tool_choice.name"), "tool_choice.name");
      if (names.count(name) == 0)
        bad("tool_choice.name",
            fmt::format("'tool_choice.name' is \"{}\", which is not among 'tools'", name));
      chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
    }
  } else {
    bad("tool_choice.type",
        fmt::format("'tool_choice.type' must be \"auto\", \"any\", \"tool\" or \"none\", got "
                    "\"{}\"",
                    type));
  }
  if (const ordered* v = field(choice, "disable_parallel_tool_use")) {
    if (!v->is_boolean())
      bad("tool_choice.disable_parallel_tool_use",
          "'tool_choice.disable_parallel_tool_use' must be true or false");
    if (v->get<bool>()) chat["parallel_tool_calls"] = false;
  }
}

// The sampling fields: Anthropic's, checked in its ranges, and the chat route's extensions
// (seed, penalties, logit_bias...) passed through under their own names.
void translate_sampling(const ordered& body, ordered& chat) {
  if (const ordered* v = field(body, "temperature"))
    chat["temperature"] = number(*v, "temperature", 0, 1);
  if (const ordered* v = field(body, "top_p")) chat["top_p"] = number(*v, "top_p", 0, 1);
  if (const ordered* v = field(body, "top_k")) chat["top_k"] = integer_at_least(*v, "top_k", 0);
  for (const char* key : body::kSamplingExtensions)
    if (const ordered* v = field(body, key)) chat[key] = *v;
}

}  // namespace

std::string tool_use_id(const std::string& call_id) {
  return call_id.rfind("call_", 0) == 0 ? "toolu_" + call_id.substr(5) : "toolu_" + call_id;
}

MessagesTranslation translate_messages(const ordered& body, bool count_only) {
  if (!body.is_object()) bad("", "the request body must be a JSON object");
  MessagesTranslation t;
  ordered& chat = t.chat;
  chat = ordered::object();
  if (const ordered* v = field(body, "model")) chat["model"] = string(*v, "model");
  if (!count_only) {
    const ordered* v = field(body, "max_tokens");
    if (v == nullptr) bad("max_tokens", "'max_tokens' is required");
    chat["max_tokens"] = integer_at_least(*v, "max_tokens", 1);
  }
  if (const ordered* v = field(body, "thinking")) {
    if (!v->is_object()) bad("thinking", "'thinking' must be an object {\"type\": ...}");
    const std::string& type = string(required(*v, "type", "thinking.type"), "thinking.type");
    if (type != "disabled")
      bad("thinking", fmt::format("'thinking' {} is not supported: extended thinking has no "
                                  "budget here; leave 'thinking' out or give {{\"type\": "
                                  "\"disabled\"}}",
                                  v->dump()));
  }
  if (const ordered* v = field(body, "metadata"); v != nullptr && !v->is_object())
    bad("metadata", "'metadata' must be an object");

  ordered messages = ordered::array();
  if (const ordered* v = field(body, "system")) {
    const std::string system = text_of(*v, "system", "'system'");
    messages.push_back({{"role", "system"}, {"content", system}});
  }
  const ordered* list = field(body, "messages");
  if (list == nullptr) bad("messages", "'messages' is required");
  if (!list->is_array()) bad("messages", "'messages' must be a list of messages");
  if (list->empty()) bad("messages", "'messages' must hold at least one message");
  std::set<std::string> previous_calls;
  for (std::size_t i = 0; i < list->size(); ++i)
    previous_calls =
        translate_message((*list)[i], fmt::format("messages[{}]", i), previous_calls, messages);
  if (list->back().value("role", ordered()) == "assistant")
    bad(fmt::format("messages[{}].role", list->size() - 1),
        fmt::format("'messages[{}].role' is assistant: continuing a prefilled reply is not "
                    "supported; end with a user message",
                    list->size() - 1));
  chat["messages"] = std::move(messages);

  std::set<std::string> names;
  if (const ordered* v = field(body, "tools")) chat["tools"] = translate_tools(*v, names);
  if (const ordered* v = field(body, "tool_choice")) translate_tool_choice(*v, names, chat);
  if (count_only) return t;

  if (const ordered* v = field(body, "stream")) {
    if (!v->is_boolean()) bad("stream", "'stream' must be true or false");
    chat["stream"] = *v;
  }
  if (const ordered* v = field(body, "stop_sequences")) {
    if (!v->is_array()) bad("stop_sequences", "'stop_sequences' must be a list of strings");
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = fmt::format("stop_sequences[{}]", i);
      const std::string& s = string((*v)[i], p);
      if (s.empty()) bad(p, fmt::format("'{}' must not be empty", p));
      t.stop_sequences.push_back(s);
    }
  }
  translate_sampling(body, chat);
  return t;
}

namespace {

// An error of the chat route named in the chat body's terms, renamed to the Messages fields.
ApiError renamed(const ApiError& e) {
  const auto rename = [](std::string s) {
    return body::replace_each(std::move(s), {{".function.parameters", ".input_schema"},
                                             {"tool_choice.function.name", "tool_choice.name"}});
  };
  // Chat message indexes are not the request's (system, tool results): name the list.
  std::string param = rename(e.param);
  if (param.rfind("messages[", 0) == 0) param = "messages";
  return ApiError(e.status, rename(e.what()), param, e.code, e.type);
}

json unordered(const ordered& v) {
  return json::parse(v.dump());
}

}  // namespace

ParsedRequest parse_messages_request(const ordered& body, const ServerLimits& limits) {
  const MessagesTranslation t = translate_messages(body, false);
  ParsedRequest r;
  try {
    r = parse_chat_request(unordered(t.chat), limits, &t.chat);
  } catch (const ApiError& e) {
    throw renamed(e);
  }
  if (!t.stop_sequences.empty()) {
    decode::GenerationConfig& c = r.jobs.at(0).config;
    c.stop_strings = t.stop_sequences;
    c.sources["stop_strings"] = "request";
  }
  return r;
}

std::size_t count_message_tokens(const ordered& body, const ServerLimits& limits) {
  const MessagesTranslation t = translate_messages(body, true);
  const json chat = unordered(t.chat);
  if (const auto it = chat.find("model"); it != chat.end() && *it != limits.served_name)
    throw ApiError(404,
                   fmt::format("the model '{}' does not exist; this server serves '{}'",
                               it->get<std::string>(), limits.served_name),
                   "model", "model_not_found");
  // As parse_chat_request renders it: the tools are left out under tool_choice none.
  json tools = chat.value("tools", json());
  if (chat.value("tool_choice", json()) == "none") tools = nullptr;
  try {
    const std::string text = render_chat(chat["messages"], tools, true, limits);
    return limits.model->require_tokenizer("messages").encode(text).size();
  } catch (const ApiError& e) {
    throw renamed(e);
  }
}

}  // namespace ls::server
