// Template: parse once, render many times (see template.h).
#include "jinja/template.h"

#include "jinja/parser.h"
#include "jinja/scan.h"

namespace ls::jinja {

Template Template::parse(std::string source, std::string name) {
  Template t;
  t.ast_ = parse_template(source, name);
  check_filter_and_test_names(*t.ast_);
  return t;
}

const std::string& Template::name() const {
  return ast_->name;
}

std::string Template::render(const nlohmann::ordered_json& context) const {
  return render(context, RenderLimits{});
}

std::string Template::render(const nlohmann::ordered_json& context,
                             const RenderLimits& limits) const {
  Value ctx;
  try {
    ctx = Value::from_json(context);
  } catch (const ls::Error& e) {
    throw TemplateError(ast_->name, 0, e.what());
  }
  Interpreter interpreter(*ast_, limits);
  return interpreter.render(ctx);
}

}  // namespace ls::jinja
