// Responses request checking and its translation to a chat request (see responses_request.h):
// each item and field checked under its Responses name, then parse_chat_request on the result,
// its errors renamed back to the Responses fields.
#include "server/responses_request.h"

#include <limits>
#include <set>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "server/body_fields.h"

namespace ls::server {

using nlohmann::json;
using ordered = nlohmann::ordered_json;

namespace {

using body::bad;
using body::boolean;
using body::field;
using body::string;
using body::type_name;

// The chat route's fields passed through under their own names: the sampling extensions every
// route shares, and top_k, stop, logprobs_mode and chat_template_kwargs, which Responses lacks.
constexpr const char* kChatOnlyFields[] = {"top_k", "stop", "logprobs_mode",
                                           "chat_template_kwargs"};

const ordered& required(const ordered& obj, const char* key, const std::string& param) {
  const ordered* v = field(obj, key);
  if (v == nullptr) bad(param, fmt::format("'{}' is required", param));
  return *v;
}

[[noreturn]] void unsupported(const std::string& param, const std::string& why) {
  bad(param, fmt::format("'{}' would change the output and is not supported: {}", param, why),
      "unsupported_field");
}

// A message's content parts ({type: input_text | output_text | refusal, ...}) as chat text parts.
ordered content_parts(const ordered& content, const std::string& p) {
  if (content.is_string()) return content;
  if (!content.is_array())
    bad(p, fmt::format("'{}' must be a string or a list of content parts", p));
  ordered parts = ordered::array();
  for (std::size_t k = 0; k < content.size(); ++k) {
    const std::string pp = fmt::format("{}[{}]", p, k);
    const ordered& part = content[k];
    if (!part.is_object()) bad(pp, fmt::format("'{}' must be a content part object", pp));
    const std::string& type = string(required(part, "type", pp + ".type"), pp + ".type");
    const char* key = type == "input_text" || type == "output_text" ? "text"
                      : type == "refusal"                           ? "refusal"
                                                                    : nullptr;
    if (key == nullptr)
      bad(pp + ".type", fmt::format("'{}.type' is \"{}\": only text parts (input_text, "
                                    "output_text, refusal) are supported",
                                    pp, type));
    parts.push_back(
        {{"type", "text"}, {"text", string(required(part, key, pp + "." + key), pp + "." + key)}});
  }
  return parts;
}

// A function_call_output's output: a string or input_text parts, as text.
std::string output_text(const ordered& v, const std::string& p) {
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) bad(p, fmt::format("'{}' must be a string or a list of input_text parts", p));
  std::string text;
  for (std::size_t k = 0; k < v.size(); ++k) {
    const std::string pp = fmt::format("{}[{}]", p, k);
    if (!v[k].is_object() || v[k].value("type", ordered()) != "input_text")
      bad(pp, fmt::format("'{}' must be {{\"type\": \"input_text\", \"text\": ...}}", pp));
    text += string(required(v[k], "text", pp + ".text"), pp + ".text");
  }
  return text;
}

// The tool call ids of chat messages (a stored conversation's).
std::set<std::string> call_ids(const ordered& messages) {
  std::set<std::string> ids;
  for (const ordered& m : messages)
    if (const auto calls = m.find("tool_calls"); calls != m.end() && calls->is_array())
      for (const ordered& c : *calls)
        if (c.contains("id") && c["id"].is_string()) ids.insert(c["id"].get<std::string>());
  return ids;
}

// Input items appended to `out` as chat messages. `calls`: the call ids so far (a
// function_call_output must answer one of them).
void translate_input(const ordered& input, std::set<std::string>& calls, ordered& out) {
  if (input.is_string()) {
    out.push_back({{"role", "user"}, {"content", input}});
    return;
  }
  if (!input.is_array()) bad("input", "'input' must be a string or a list of input items");
  if (input.empty()) bad("input", "'input' must hold at least one item");
  for (std::size_t i = 0; i < input.size(); ++i) {
    const std::string p = fmt::format("input[{}]", i);
    const ordered& item = input[i];
    if (!item.is_object()) bad(p, fmt::format("'{}' must be an input item object", p));
    const ordered* t = field(item, "type");
    const std::string type = t != nullptr ? string(*t, p + ".type") : "message";
    if (type == "message") {
      const std::string& role = string(required(item, "role", p + ".role"), p + ".role");
      if (role != "user" && role != "assistant" && role != "system" && role != "developer")
        bad(p + ".role",
            fmt::format("'{}.role' must be user, assistant, system or developer, got \"{}\"", p,
                        role));
      out.push_back(
          {{"role", role},
           {"content", content_parts(required(item, "content", p + ".content"), p + ".content")}});
    } else if (type == "function_call") {
      const std::string& id = string(required(item, "call_id", p + ".call_id"), p + ".call_id");
      const std::string& name = string(required(item, "name", p + ".name"), p + ".name");
      const std::string& args =
          string(required(item, "arguments", p + ".arguments"), p + ".arguments");
      if (!calls.insert(id).second)
        bad(p + ".call_id", fmt::format("'{}.call_id' repeats the call_id \"{}\"", p, id));
      // Calls after an assistant message (or after each other) are that message's tool_calls,
      // as a Response lists a reply's message and then its calls.
      if (out.empty() || out.back()["role"] != "assistant")
        out.push_back({{"role", "assistant"}, {"content", ""}});
      ordered& m = out.back();
      if (!m.contains("tool_calls")) m["tool_calls"] = ordered::array();
      m["tool_calls"].push_back(
          {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}});
    } else if (type == "function_call_output") {
      const std::string& id = string(required(item, "call_id", p + ".call_id"), p + ".call_id");
      if (calls.count(id) == 0)
        bad(p + ".call_id",
            fmt::format("'{}.call_id' is \"{}\", which no earlier function_call has", p, id));
      out.push_back(
          {{"role", "tool"},
           {"tool_call_id", id},
           {"content", output_text(required(item, "output", p + ".output"), p + ".output")}});
    } else if (type == "reasoning") {
      // An earlier turn's reasoning sent back: the template writes no reasoning of past turns.
    } else {
      bad(p + ".type",
          fmt::format("'{}.type' is \"{}\": the items supported are message, function_call, "
                      "function_call_output and reasoning (item_reference: use "
                      "previous_response_id)",
                      p, type));
    }
  }
}

// Flat function tools ({type: "function", name, description, parameters, strict}) as chat tools.
ordered translate_tools(const ordered& tools, std::set<std::string>& names, json& echo) {
  if (!tools.is_array()) bad("tools", "'tools' must be a list of tools");
  ordered out = ordered::array();
  echo = json::array();
  for (std::size_t i = 0; i < tools.size(); ++i) {
    const std::string p = fmt::format("tools[{}]", i);
    const ordered& t = tools[i];
    if (!t.is_object()) bad(p, fmt::format("'{}' must be a tool object", p));
    const std::string& type = string(required(t, "type", p + ".type"), p + ".type");
    if (type != "function")
      unsupported(p + ".type", fmt::format("tools of type \"{}\" do not run here: give function "
                                           "tools, which the client runs",
                                           type));
    const std::string& name = string(required(t, "name", p + ".name"), p + ".name");
    if (name.empty()) bad(p + ".name", fmt::format("'{}.name' must not be empty", p));
    if (!names.insert(name).second)
      bad(p + ".name", fmt::format("'{}.name' repeats the tool name \"{}\"", p, name));
    ordered fn = {{"name", name}};
    json e = {{"type", "function"},
              {"name", name},
              {"description", nullptr},
              {"parameters", nullptr},
              {"strict", nullptr}};
    if (const ordered* d = field(t, "description")) {
      fn["description"] = string(*d, p + ".description");
      e["description"] = *d;
    }
    if (const ordered* s = field(t, "parameters")) {
      if (!s->is_object())
        bad(p + ".parameters",
            fmt::format("'{}.parameters' must be a JSON Schema object, got {}", p, type_name(*s)));
      fn["parameters"] = *s;
      e["parameters"] = json::parse(s->dump());
    }
    if (const ordered* s = field(t, "strict")) e["strict"] = boolean(*s, p + ".strict");
    if (const ordered* d = field(t, "defer_loading");
        d != nullptr && boolean(*d, p + ".defer_loading"))
      unsupported(p + ".defer_loading", "every tool is in the prompt (false passes)");
    out.push_back({{"type", "function"}, {"function", std::move(fn)}});
    echo.push_back(std::move(e));
  }
  return out;
}

// tool_choice "auto" | "none" | "required" | {type: "function", name} into `chat`.
void translate_tool_choice(const ordered& choice, const std::set<std::string>& names,
                           ordered& chat) {
  if (choice.is_string()) {
    if (choice != "auto" && choice != "none" && choice != "required")
      bad("tool_choice", fmt::format("'tool_choice' must be \"auto\", \"none\", \"required\" or "
                                     "{{\"type\": \"function\", \"name\": ...}}, got {}",
                                     choice.dump()));
    if (choice == "required" && names.empty())
      bad("tool_choice", "'tool_choice' required forces a tool call: give 'tools'");
    chat["tool_choice"] = choice;
    return;
  }
  if (!choice.is_object())
    bad("tool_choice", "'tool_choice' must be a string or {\"type\": \"function\", \"name\": ...}");
  const std::string& type =
      string(required(choice, "type", "tool_choice.type"), "tool_choice.type");
  if (type != "function")
    unsupported("tool_choice.type",
                fmt::format("tool_choice of type \"{}\" (only \"function\", or the strings auto, "
                            "none and required)",
                            type));
  const std::string& name =
      string(required(choice, "name", "tool_choice.name"), "tool_choice.name");
  if (names.count(name) == 0)
    bad("tool_choice.name",
        fmt::format("'tool_choice.name' is \"{}\", which is not among 'tools'", name));
  chat["tool_choice"] = {{"type", "function"}, {"function", {{"name", name}}}};
}

// text: {format: {type: text | json_object | json_schema, ...}, verbosity} as response_format.
void translate_text(const ordered& text, ordered& chat, json& echo) {
  if (!text.is_object()) bad("text", "'text' must be an object {\"format\": {...}}");
  if (const ordered* v = field(text, "verbosity"); v != nullptr && *v != "medium")
    unsupported("text.verbosity", "the length of the reply is not steered (\"medium\" passes)");
  const ordered* f = field(text, "format");
  if (f == nullptr) return;
  if (!f->is_object()) bad("text.format", "'text.format' must be an object {\"type\": ...}");
  const std::string& type = string(required(*f, "type", "text.format.type"), "text.format.type");
  if (type == "json_object") {
    chat["response_format"] = {{"type", "json_object"}};
  } else if (type == "json_schema") {
    ordered js = {{"name", string(required(*f, "name", "text.format.name"), "text.format.name")}};
    const ordered& schema = required(*f, "schema", "text.format.schema");
    if (!schema.is_object())
      bad("text.format.schema", "'text.format.schema' must be a JSON Schema object");
    js["schema"] = schema;
    if (const ordered* s = field(*f, "strict")) js["strict"] = boolean(*s, "text.format.strict");
    if (const ordered* d = field(*f, "description"))
      string(*d, "text.format.description");  // checked; it guides the model, not the grammar
    chat["response_format"] = {{"type", "json_schema"}, {"json_schema", std::move(js)}};
  } else if (type != "text") {
    bad("text.format.type",
        fmt::format("'text.format.type' must be \"text\", \"json_object\" or \"json_schema\", got "
                    "\"{}\"",
                    type));
  }
  echo["format"] = json::parse(f->dump());
}

// Fields that would change the output but have no implementation here, unless neutral.
void refuse_fields(const ordered& body) {
  if (const ordered* v = field(body, "background"); v != nullptr && boolean(*v, "background"))
    unsupported("background", "responses run in the foreground (false passes)");
  for (const char* key :
       {"conversation", "prompt", "context_management", "moderation", "max_tool_calls"})
    if (field(body, key) != nullptr)
      unsupported(key, key == std::string("conversation")
                           ? "there is no Conversations API here: use previous_response_id"
                           : "it has no implementation here");
  if (const ordered* v = field(body, "truncation"); v != nullptr && *v != "disabled")
    unsupported("truncation", "the input is never truncated (\"disabled\" passes)");
  if (const ordered* r = field(body, "reasoning")) {
    if (!r->is_object()) bad("reasoning", "'reasoning' must be an object");
    for (const char* key : {"effort", "summary", "generate_summary"})
      if (field(*r, key) != nullptr)
        unsupported(std::string("reasoning.") + key,
                    "there is no reasoning budget or summary; Qwen3 thinking is switched with "
                    "'chat_template_kwargs': {\"enable_thinking\": false}");
  }
}

// include: "message.output_text.logprobs" turns the chat logprobs on; "reasoning.encrypted_content"
// is accepted and changes nothing.
bool logprobs_included(const ordered& body) {
  const ordered* v = field(body, "include");
  if (v == nullptr) return false;
  if (!v->is_array()) bad("include", "'include' must be a list of strings");
  bool logprobs = false;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const std::string p = fmt::format("include[{}]", i);
    const std::string& s = string((*v)[i], p);
    // Encrypted reasoning is for stateless turns; reasoning items sent back are dropped here
    // anyway (the template writes no past reasoning), so asking for it changes nothing.
    if (s == "reasoning.encrypted_content") continue;
    if (s != "message.output_text.logprobs")
      unsupported(p, fmt::format("\"{}\" (only \"message.output_text.logprobs\")", s));
    logprobs = true;
  }
  return logprobs;
}

}  // namespace

ResponsesTranslation translate_responses(const ordered& body, ResponseStore* store) {
  if (!body.is_object()) bad("", "the request body must be a JSON object");
  refuse_fields(body);
  ResponsesTranslation t;
  ordered& chat = t.chat;
  chat = ordered::object();
  json& echo = t.echo;
  echo = {{"instructions", nullptr},
          {"metadata", json::object()},
          {"tools", json::array()},
          {"tool_choice", "auto"},
          {"parallel_tool_calls", true},
          {"max_output_tokens", nullptr},
          {"previous_response_id", nullptr},
          {"text", {{"format", {{"type", "text"}}}}},
          {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
          {"truncation", "disabled"},
          {"top_logprobs", 0},
          {"store", true},
          {"background", false},
          {"service_tier", "default"}};
  if (const ordered* v = field(body, "model")) chat["model"] = string(*v, "model");
  if (const ordered* v = field(body, "stream")) t.stream = boolean(*v, "stream");
  if (const ordered* v = field(body, "store")) t.store = boolean(*v, "store");
  echo["store"] = t.store;
  if (const ordered* v = field(body, "metadata")) {
    if (!v->is_object()) bad("metadata", "'metadata' must be an object of strings");
    echo["metadata"] = json::parse(v->dump());
  }
  if (const ordered* v = field(body, "user")) echo["user"] = string(*v, "user");

  // The conversation: a stored response's, then the input; the instructions come first.
  ordered& conversation = t.conversation;
  conversation = ordered::array();
  if (const ordered* v = field(body, "previous_response_id")) {
    const std::string& id = string(*v, "previous_response_id");
    std::optional<StoredResponse> prior = store != nullptr ? store->find(id) : std::nullopt;
    if (!prior)
      throw ApiError(400,
                     fmt::format("'previous_response_id' is \"{}\", which is no stored response "
                                 "(it was made with store false, deleted, or dropped: the "
                                 "server keeps the last {})",
                                 id, store != nullptr ? store->capacity() : 0),
                     "previous_response_id", "previous_response_not_found");
    conversation = std::move(prior->messages);
    echo["previous_response_id"] = id;
  }
  std::set<std::string> calls = call_ids(conversation);
  const ordered* input = field(body, "input");
  if (input == nullptr) bad("input", "'input' is required");
  translate_input(*input, calls, conversation);
  ordered messages = ordered::array();
  if (const ordered* v = field(body, "instructions")) {
    messages.push_back({{"role", "system"}, {"content", string(*v, "instructions")}});
    echo["instructions"] = *v;
  }
  for (const ordered& m : conversation) messages.push_back(m);
  chat["messages"] = std::move(messages);

  std::set<std::string> names;
  if (const ordered* v = field(body, "tools"))
    chat["tools"] = translate_tools(*v, names, echo["tools"]);
  if (const ordered* v = field(body, "tool_choice")) {
    translate_tool_choice(*v, names, chat);
    echo["tool_choice"] = json::parse(v->dump());
  }
  if (const ordered* v = field(body, "parallel_tool_calls")) {
    chat["parallel_tool_calls"] = boolean(*v, "parallel_tool_calls");
    echo["parallel_tool_calls"] = *v;
  }
  if (const ordered* v = field(body, "max_output_tokens")) {
    chat["max_tokens"] =
        body::integer(*v, "max_output_tokens", 1, std::numeric_limits<std::int32_t>::max());
    echo["max_output_tokens"] = chat["max_tokens"];
  }
  for (const char* key : {"temperature", "top_p"})
    if (const ordered* v = field(body, key)) chat[key] = *v;
  if (const ordered* v = field(body, "text")) translate_text(*v, chat, echo["text"]);
  const bool logprobs = logprobs_included(body);
  if (const ordered* v = field(body, "top_logprobs")) {
    echo["top_logprobs"] = body::integer(*v, "top_logprobs", 0, 20);
    if (logprobs) chat["top_logprobs"] = echo["top_logprobs"];
  }
  if (logprobs) chat["logprobs"] = true;
  for (const char* key : body::kSamplingExtensions)
    if (const ordered* v = field(body, key)) chat[key] = *v;
  for (const char* key : kChatOnlyFields)
    if (const ordered* v = field(body, key)) chat[key] = *v;
  chat["stream"] = true;  // the Response and its events are both made from chat chunks
  return t;
}

namespace {

// An error of the chat route named in the chat body's terms, renamed to the Responses fields.
ApiError renamed(const ApiError& e) {
  const auto rename = [](std::string s) {
    return body::replace_each(std::move(s),
                              {{"response_format.json_schema.schema", "text.format.schema"},
                               {"response_format.json_schema.strict", "text.format.strict"},
                               {"response_format.json_schema", "text.format"},
                               {"response_format", "text.format"},
                               {"tool_choice.function.name", "tool_choice.name"},
                               {".function.parameters", ".parameters"},
                               {".function.name", ".name"},
                               {"'max_tokens'", "'max_output_tokens'"}});
  };
  std::string param = rename(e.param);
  if (param == "max_tokens") param = "max_output_tokens";
  if (param == "logprobs") param = "include";
  // Chat message indexes are not the input's (instructions, a stored conversation): name input.
  if (param.rfind("messages", 0) == 0) param = "input";
  return ApiError(e.status, rename(e.what()), param, e.code, e.type);
}

}  // namespace

ResponsesRequest parse_responses_request(const ordered& body, const ServerLimits& limits,
                                         ResponseStore* store) {
  ResponsesRequest r;
  r.t = translate_responses(body, store);
  try {
    r.parsed = parse_chat_request(json::parse(r.t.chat.dump()), limits, &r.t.chat);
  } catch (const ApiError& e) {
    throw renamed(e);
  }
  const decode::GenerationConfig& c = r.parsed.jobs.at(0).config;
  r.t.echo["temperature"] = c.temperature;
  r.t.echo["top_p"] = c.top_p;
  return r;
}

}  // namespace ls::server
