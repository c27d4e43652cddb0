// The error type of template parsing and rendering: an ls::Error whose what() is
// "<template>:<line>: <message>" and which also keeps the parts, so that callers (the server)
// can show a template's own raise_exception() message exactly.
#pragma once

#include <string>

#include "core/error.h"

namespace ls::jinja {

class TemplateError : public ls::Error {
 public:
  TemplateError(std::string name, int line, std::string message, bool raised = false)
      : ls::Error(name + ":" + std::to_string(line) + ": " + message),
        name_(std::move(name)),
        line_(line),
        message_(std::move(message)),
        raised_(raised) {}
  const std::string& template_name() const { return name_; }
  int line() const { return line_; }
  const std::string& message() const { return message_; }
  bool raised_by_template() const { return raised_; }  // the template called raise_exception()

 private:
  std::string name_;
  int line_;
  std::string message_;
  bool raised_;
};

[[noreturn]] inline void syntax_error(const std::string& name, int line, const std::string& msg) {
  throw TemplateError(name, line, "syntax error: " + msg);
}

}  // namespace ls::jinja
