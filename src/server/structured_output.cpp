// request_constraint (structured_output.h): which field asks for a grammar, the grammar it is,
// and errors as 400s naming the field (the schema converter's messages carry the keyword's path).
#include "server/structured_output.h"

#include <functional>
#include <variant>

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/compose.h"
#include "grammar/json_schema.h"
#include "server/body_fields.h"

namespace ls::server {

using nlohmann::json;

namespace {

using body::bad;
using body::field;

// GBNF text (or a schema's) compiled for the model; errors become 400s naming `param`.
// A thinking model's reasoning block comes first; the constraint starts after it.
std::shared_ptr<const grammar::Constraint> compile(const std::string& param,
                                                   const std::function<grammar::Grammar()>& make,
                                                   std::string description,
                                                   const ServerLimits& limits, bool thinking) {
  try {
    grammar::Grammar made = make();
    if (thinking) {
      made = grammar::after_thinking(std::move(made));
      description += " after </think>";
    }
    auto g = std::make_shared<const grammar::Grammar>(std::move(made));
    return std::make_shared<const grammar::Constraint>(grammar::Constraint{
        std::move(g), limits.model->grammar_vocabulary(param), std::move(description)});
  } catch (const ApiError&) {
    throw;
  } catch (const std::exception& e) {
    bad(param, e.what());
  }
}

using ordered = nlohmann::ordered_json;

// `value` of the body at `path` as written (keys in their order), or in key order without one.
ordered as_written(const json& value, const ordered* written,
                   std::initializer_list<std::variant<const char*, std::size_t>> path) {
  const ordered* at = written;
  for (const auto& step : path) {
    if (at == nullptr) break;
    if (const auto* key = std::get_if<const char*>(&step))
      at = at->is_object() && at->contains(*key) ? &(*at)[*key] : nullptr;
    else
      at = at->is_array() && std::get<std::size_t>(step) < at->size()
               ? &(*at)[std::get<std::size_t>(step)]
               : nullptr;
  }
  return at != nullptr ? *at : ordered::parse(value.dump());
}

std::shared_ptr<const grammar::Constraint> from_schema(const ordered& schema,
                                                       const std::string& param,
                                                       const ServerLimits& limits, bool thinking) {
  return compile(
      param,
      [&] { return grammar::parse_gbnf(grammar::json_schema_to_gbnf(schema, param), param); },
      "json_schema", limits, thinking);
}

// One tool's call as Qwen writes it: {"name": "NAME", "arguments": {...}} (in that order) with
// the arguments under the tool's `parameters` schema (any object when it has none).
ordered call_schema(const ordered& tool) {
  const ordered& fn = tool["function"];
  ordered params = fn.contains("parameters") && !fn["parameters"].is_null()
                       ? fn["parameters"]
                       : ordered{{"type", "object"}};
  ordered properties = ordered::object();
  properties["name"] = {{"const", fn["name"]}};
  properties["arguments"] = std::move(params);
  return {{"type", "object"},
          {"properties", std::move(properties)},
          {"required", {"name", "arguments"}},
          {"additionalProperties", false}};
}

// tool_choice "required" (any tool) or {"type": "function", "function": {"name": N}}: one call
// (several, separated by newlines, when parallel_tool_calls allows) and nothing else.
std::shared_ptr<const grammar::Constraint> forced_calls(const json& body, const json& choice,
                                                        const json& tools,
                                                        const ServerLimits& limits, bool thinking,
                                                        const ordered* written) {
  if (!tools.is_array() || tools.empty())
    bad("tool_choice", "'tool_choice' forces a tool call: give 'tools'");
  std::vector<ordered> chosen;
  std::string description = "tool_choice required";
  if (choice.is_string()) {
    for (std::size_t i = 0; i < tools.size(); ++i)
      chosen.push_back(as_written(tools[i], written, {"tools", i}));
  } else {
    const json* fn = choice.is_object() ? field(choice, "function") : nullptr;
    const json* name = fn != nullptr && fn->is_object() ? field(*fn, "name") : nullptr;
    if (choice.value("type", json()) != "function" || name == nullptr || !name->is_string())
      bad("tool_choice",
          "'tool_choice' must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", "
          "\"function\": {\"name\": ...}}");
    for (std::size_t i = 0; i < tools.size(); ++i)
      if (tools[i]["function"]["name"] == *name)
        chosen.push_back(as_written(tools[i], written, {"tools", i}));
    if (chosen.empty())
      bad("tool_choice.function.name",
          fmt::format("'tool_choice.function.name' names \"{}\", which is not among 'tools'",
                      name->get<std::string>()));
    description = fmt::format("tool_choice {}", name->get<std::string>());
  }
  bool parallel = true;
  if (const json* v = field(body, "parallel_tool_calls")) {
    if (!v->is_boolean()) bad("parallel_tool_calls", "'parallel_tool_calls' must be true or false");
    parallel = v->get<bool>();
  }
  return compile(
      "tool_choice",
      [&] {
        std::vector<grammar::Grammar> calls;
        for (std::size_t i = 0; i < chosen.size(); ++i) {
          const std::string origin = fmt::format("tools[{}].function.parameters", i);
          calls.push_back(grammar::parse_gbnf(
              grammar::json_schema_to_gbnf(call_schema(chosen[i]), origin), origin));
        }
        grammar::Grammar one =
            calls.size() == 1 ? std::move(calls[0]) : grammar::any_of(calls, "tool_choice");
        return grammar::enclose(std::move(one), "<tool_call>\n", "\n</tool_call>", parallel, "\n");
      },
      description, limits, thinking);
}

}  // namespace

std::shared_ptr<const grammar::Constraint> request_constraint(const json& body, bool chat,
                                                              const json& tools,
                                                              const ServerLimits& limits,
                                                              bool thinking,
                                                              const ordered* written) {
  std::vector<std::string> asked;
  std::shared_ptr<const grammar::Constraint> out;
  if (const json* v = field(body, "grammar")) {
    asked.push_back("grammar");
    if (!v->is_string() || v->get_ref<const std::string&>().empty())
      bad("grammar", "'grammar' must be GBNF text (a non-empty string)");
    out = compile(
        "grammar", [&] { return grammar::parse_gbnf(v->get<std::string>(), "grammar"); }, "grammar",
        limits, thinking);
  }
  if (const json* v = field(body, "json_schema")) {
    asked.push_back("json_schema");
    out = from_schema(as_written(*v, written, {"json_schema"}), "json_schema", limits, thinking);
  }
  if (const json* v = chat ? field(body, "response_format") : nullptr) {
    const json* type = v->is_object() ? field(*v, "type") : nullptr;
    if (type == nullptr || !type->is_string())
      bad("response_format",
          "'response_format' must be {\"type\": \"text\" | \"json_object\" | "
          "\"json_schema\", ...}");
    const std::string& t = type->get_ref<const std::string&>();
    if (t == "json_object") {
      asked.push_back("response_format");
      out = compile(
          "response_format",
          [] { return grammar::parse_gbnf(grammar::json_object_gbnf(), "response_format"); },
          "json_object", limits, thinking);
    } else if (t == "json_schema") {
      asked.push_back("response_format");
      const json* js = field(*v, "json_schema");
      const json* schema = js != nullptr && js->is_object() ? field(*js, "schema") : nullptr;
      if (js == nullptr || !js->is_object())
        bad("response_format.json_schema",
            "'response_format.json_schema' must be {\"name\": ..., \"schema\": {...}}");
      if (const json* strict = field(*js, "strict"); strict != nullptr && !strict->is_boolean())
        bad("response_format.json_schema.strict",
            "'response_format.json_schema.strict' must be true or false");
      // Without a schema OpenAI accepts any JSON; here: any JSON object.
      out = schema != nullptr
                ? from_schema(
                      as_written(*schema, written, {"response_format", "json_schema", "schema"}),
                      "response_format.json_schema.schema", limits, thinking)
                : compile(
                      "response_format",
                      [] {
                        return grammar::parse_gbnf(grammar::json_object_gbnf(), "response_format");
                      },
                      "json_object", limits, thinking);
    } else if (t != "text") {
      bad("response_format.type",
          fmt::format("'response_format.type' must be \"text\", \"json_object\" or "
                      "\"json_schema\", got \"{}\"",
                      t));
    }
  }
  if (const json* v = chat ? field(body, "tool_choice") : nullptr;
      v != nullptr && !(v->is_string() && (*v == "auto" || *v == "none"))) {
    asked.push_back("tool_choice");
    if (v->is_string() && *v != "required")
      bad("tool_choice", fmt::format("'tool_choice' must be \"auto\", \"none\", \"required\" or a "
                                     "function, got {}",
                                     v->dump()));
    out = forced_calls(body, *v, tools, limits, thinking, written);
  }
  if (asked.size() > 1)
    bad(asked[1],
        fmt::format("'{}' and '{}' both constrain the text: give one", asked[0], asked[1]));
  return out;
}

}  // namespace ls::server
