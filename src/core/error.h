// The one exception type of logitscope. Library code throws it with a message that names the
// file, key, tensor or flag and says what was expected versus what was found; only the CLI and
// server edges catch it (and turn it into a message and a non-zero exit code or an HTTP error).
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace ls {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// fail("{}: tensor '{}' has shape {}, expected {}", path, name, got, want) throws ls::Error.
template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace ls
