// A sandboxed Jinja template, rendered the way Hugging Face renders chat templates with
// jinja2 (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls, a tojson
// that keeps non-ASCII, raise_exception and strftime_now). No file, environment or Python
// attribute access; output size, loop iterations and recursion depth are bounded.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "jinja/interpreter.h"
#include "jinja/template_error.h"

namespace ls::jinja {

namespace ast {
struct TemplateAst;
}

class Template {
 public:
  // Throws TemplateError "<name>:<line>: syntax error: ...".
  static Template parse(std::string source, std::string name = "chat_template");
  std::string render(const nlohmann::ordered_json& context) const;
  std::string render(const nlohmann::ordered_json& context, const RenderLimits& limits) const;
  const std::string& name() const;

 private:
  std::shared_ptr<const ast::TemplateAst> ast_;
};

}  // namespace ls::jinja
