// Splits a Jinja template into tokens the way jinja2's lexer does with Hugging Face's settings
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off): text between tags, the
// {{ }} / {% %} delimiters with their whitespace control (- and +), and the expression tokens
// inside them. Comments and raw blocks are resolved here; the parser never sees them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ls::jinja {

enum class TokenType {
  Data,           // literal template text
  VariableBegin,  // {{
  VariableEnd,    // }}
  BlockBegin,     // {%
  BlockEnd,       // %}
  Name,
  String,  // value holds the decoded text
  Integer,
  Float,
  Operator,  // value holds the operator text: "+", "//", "==", "(", ...
  Eof,
};

struct Token {
  TokenType type = TokenType::Eof;
  std::string value;
  std::int64_t integer = 0;
  double number = 0;
  int line = 1;
};

// Throws ls::Error "<name>:<line>: syntax error: ..." on malformed input.
std::vector<Token> tokenize(std::string_view source, const std::string& name);

const char* describe(TokenType type);

}  // namespace ls::jinja
