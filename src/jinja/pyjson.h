// Python's json.dumps() for template values: Hugging Face's `tojson` filter calls it with
// ensure_ascii=False (and optional indent, separators, sort_keys), so its exact spacing, float
// formatting (Python repr) and escaping are part of every tool-calling prompt.
#pragma once

#include <optional>
#include <string>

#include "jinja/value.h"

namespace ls::jinja {

struct JsonDumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;          // nullopt: single line
  std::optional<std::string> item_separator;  // default ", " (or "," with indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
};

// Throws ls::Error "Object of type X is not JSON serializable" like Python.
std::string json_dumps(const Value& v, const JsonDumpOptions& options);

}  // namespace ls::jinja
