// jinja2's lexer rules, re-expressed as a hand-written scanner (see lexer.h). The whitespace
// rules follow jinja2 exactly: "-" strips all whitespace on that side, trim_blocks removes one
// newline after %} and #}, lstrip_blocks removes the indentation before {% and {# when only
// whitespace precedes them on their line, and a "+" disables either.
#include "jinja/lexer.h"

#include <cerrno>
#include <cstdlib>

#include "jinja/pystr.h"
#include "jinja/template_error.h"

namespace ls::jinja {

const char* describe(TokenType type) {
  switch (type) {
    case TokenType::Data:
      return "template data";
    case TokenType::VariableBegin:
      return "begin of print statement";
    case TokenType::VariableEnd:
      return "end of print statement";
    case TokenType::BlockBegin:
      return "begin of statement block";
    case TokenType::BlockEnd:
      return "end of statement block";
    case TokenType::Name:
      return "name";
    case TokenType::String:
      return "string";
    case TokenType::Integer:
      return "integer";
    case TokenType::Float:
      return "float";
    case TokenType::Operator:
      return "operator";
    case TokenType::Eof:
      return "end of template";
  }
  return "token";
}

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Replaces invalid UTF-8 with U+FFFD, turns \r\n and \r into \n and drops one trailing newline
// (jinja2 works on Python str, so its input is always valid text with normalized newlines).
std::string normalize_source(std::string_view raw) {
  std::string text = pystr::encode(pystr::decode(raw));
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\r') {
      out += '\n';
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else {
      out += text[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  Lexer(std::string source, const std::string& name) : src_(std::move(source)), name_(name) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    push(TokenType::Eof, "", pos_);
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void error(std::size_t at, const std::string& message) const {
    syntax_error(name_, line_at(at), message);
  }

  int line_at(std::size_t at) const {
    at = std::min(at, src_.size());
    while (line_pos_ < at) {
      if (src_[line_pos_++] == '\n') ++line_;
    }
    while (line_pos_ > at) {
      if (src_[--line_pos_] == '\n') --line_;
    }
    return line_;
  }

  Token& push(TokenType type, std::string value, std::size_t at) {
    Token t;
    t.type = type;
    t.value = std::move(value);
    t.line = line_at(at);
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  bool starts_with(std::size_t at, std::string_view s) const {
    return at <= src_.size() && src_.compare(at, s.size(), s) == 0;
  }

  // Length of the Python `\s` character at `at`, or 0.
  std::size_t space_at(std::size_t at) const {
    if (at >= src_.size()) return 0;
    unsigned char c = static_cast<unsigned char>(src_[at]);
    if (c < 0x80) return pystr::is_space(c) ? 1 : 0;
    std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    auto cps = pystr::decode(std::string_view(src_).substr(at, n));
    return (!cps.empty() && pystr::is_space(cps[0])) ? n : 0;
  }

  std::size_t skip_spaces(std::size_t at) const {
    while (std::size_t n = space_at(at)) at += n;
    return at;
  }

  static bool all_spaces(std::string_view s) {
    for (char32_t cp : pystr::decode(s)) {
      if (!pystr::is_space(cp)) return false;
    }
    return !s.empty();
  }

  // Text before a tag, with the tag's whitespace control applied to it.
  void emit_text(std::string text, std::size_t at, char sign, bool lstrip_applies) {
    if (sign == '-') {
      text = pystr::strip(text, std::nullopt, false, true);
    } else if (sign != '+' && lstrip_applies) {
      std::size_t nl = text.rfind('\n');
      std::size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && all_spaces(std::string_view(text).substr(l_pos))) {
        text.resize(l_pos);
      }
    }
    if (!text.empty()) push(TokenType::Data, std::move(text), at);
  }

  // Matches `{%[-+]? \s* raw \s* (-%}\s* | %})` at `at`; returns the end or npos.
  std::size_t match_raw_begin(std::size_t at, char* sign) const {
    std::size_t p = at + 2;
    *sign = 0;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) *sign = src_[p++];
    p = skip_spaces(p);
    if (!starts_with(p, "raw")) return std::string::npos;
    p = skip_spaces(p + 3);
    if (starts_with(p, "-%}")) return skip_spaces(p + 3);
    if (starts_with(p, "%}")) return p + 2;
    return std::string::npos;
  }

  void lex_root() {
    std::size_t open = src_.find('{', pos_);
    while (open != std::string::npos && open + 1 < src_.size() && src_[open + 1] != '{' &&
           src_[open + 1] != '%' && src_[open + 1] != '#') {
      open = src_.find('{', open + 1);
    }
    if (open == std::string::npos || open + 1 >= src_.size()) {
      push(TokenType::Data, src_.substr(pos_), pos_);
      pos_ = src_.size();
      return;
    }
    char kind = src_[open + 1];
    std::string text = src_.substr(pos_, open - pos_);
    std::size_t text_at = pos_;
    char sign = 0;
    if (open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+')) {
      sign = src_[open + 2];
    }
    if (kind == '%') {
      char raw_sign = 0;
      std::size_t raw_end = match_raw_begin(open, &raw_sign);
      if (raw_end != std::string::npos) {
        emit_text(std::move(text), text_at, raw_sign, true);
        line_starting_ = src_[raw_end - 1] == '\n';
        lex_raw(raw_end, open);
        return;
      }
    }
    emit_text(std::move(text), text_at, sign, kind != '{');
    line_starting_ = false;
    pos_ = open + 2 + (sign ? 1 : 0);
    if (kind == '#') {
      lex_comment(open);
    } else if (kind == '{') {
      push(TokenType::VariableBegin, "{{", open);
      lex_tag(false);
    } else {
      push(TokenType::BlockBegin, "{%", open);
      lex_tag(true);
    }
  }

  void lex_comment(std::size_t open) {
    for (std::size_t p = pos_; p < src_.size(); ++p) {
      if (starts_with(p, "+#}")) {
        pos_ = p + 3;
      } else if (starts_with(p, "-#}")) {
        pos_ = skip_spaces(p + 3);
      } else if (starts_with(p, "#}")) {
        pos_ = p + 2;
        if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
      } else {
        continue;
      }
      line_starting_ = src_[pos_ - 1] == '\n';
      return;
    }
    // jinja2 only notices a missing end when text follows the opening tag
    if (pos_ < src_.size()) error(open, "Missing end of comment tag");
    pos_ = src_.size();
  }

  void lex_raw(std::size_t content_at, std::size_t open) {
    for (std::size_t p = content_at; p < src_.size(); ++p) {
      if (!starts_with(p, "{%")) continue;
      std::size_t q = p + 2;
      char sign = 0;
      if (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) sign = src_[q++];
      q = skip_spaces(q);
      if (!starts_with(q, "endraw")) continue;
      q = skip_spaces(q + 6);
      std::size_t end;
      if (starts_with(q, "+%}")) {
        end = q + 3;
      } else if (starts_with(q, "-%}")) {
        end = skip_spaces(q + 3);
      } else if (starts_with(q, "%}")) {
        end = q + 2;
        if (end < src_.size() && src_[end] == '\n') ++end;
      } else {
        continue;
      }
      emit_text(src_.substr(content_at, p - content_at), content_at, sign, true);
      line_starting_ = src_[end - 1] == '\n';
      pos_ = end;
      return;
    }
    if (content_at < src_.size()) error(open, "Missing end of raw directive");
    pos_ = src_.size();
  }

  // The end delimiter of the current tag at pos_, consumed; false if not there.
  bool lex_tag_end(bool block) {
    std::string_view close = block ? "%}" : "}}";
    if (block && src_[pos_] == '+' && starts_with(pos_ + 1, close)) {
      push(TokenType::BlockEnd, "%}", pos_);
      pos_ += 3;
    } else if (src_[pos_] == '-' && starts_with(pos_ + 1, close)) {
      push(block ? TokenType::BlockEnd : TokenType::VariableEnd, std::string(close), pos_);
      pos_ = skip_spaces(pos_ + 3);
    } else if (starts_with(pos_, close)) {
      push(block ? TokenType::BlockEnd : TokenType::VariableEnd, std::string(close), pos_);
      pos_ += 2;
      if (block && pos_ < src_.size() && src_[pos_] == '\n') ++pos_;  // trim_blocks
    } else {
      return false;
    }
    line_starting_ = src_[pos_ - 1] == '\n';
    return true;
  }

  void lex_tag(bool block) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) return;  // the parser reports the unexpected end
      if (balance.empty() && lex_tag_end(block)) return;
      if (std::size_t n = space_at(pos_)) {
        pos_ = skip_spaces(pos_ + n);
        continue;
      }
      if (lex_number() || lex_name() || lex_string()) continue;
      lex_operator(balance);
    }
  }

  // `\d+(_\d+)*` at p: end position or npos.
  std::size_t digits_end(std::size_t p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return std::string::npos;
    while (true) {
      while (p < src_.size() && is_digit(src_[p])) ++p;
      if (p + 1 < src_.size() && src_[p] == '_' && is_digit(src_[p + 1])) {
        ++p;
        continue;
      }
      return p;
    }
  }

  std::size_t exponent_end(std::size_t p) const {
    if (p >= src_.size() || (src_[p] != 'e' && src_[p] != 'E')) return std::string::npos;
    ++p;
    if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
    return digits_end(p);
  }

  static std::string without_underscores(std::string_view s) {
    std::string out;
    for (char c : s) {
      if (c != '_') out += c;
    }
    return out;
  }

  bool lex_number() {
    std::size_t start = pos_;
    std::size_t int_end = digits_end(start);
    if (int_end == std::string::npos) return false;
    // float: digits followed by a fraction and/or an exponent, not right after a dot
    if (start == 0 || src_[start - 1] != '.') {
      std::size_t end = std::string::npos;
      std::size_t frac_end = (int_end < src_.size() && src_[int_end] == '.')
                                 ? digits_end(int_end + 1)
                                 : std::string::npos;
      if (frac_end != std::string::npos) end = exponent_end(frac_end);
      if (end == std::string::npos) end = exponent_end(int_end);
      if (end == std::string::npos) end = frac_end;
      if (end != std::string::npos) {
        std::string text = without_underscores(std::string_view(src_).substr(start, end - start));
        Token& t = push(TokenType::Float, text, start);
        t.number = std::strtod(text.c_str(), nullptr);
        pos_ = end;
        return true;
      }
    }
    return lex_integer(start);
  }

  bool lex_integer(std::size_t start) {
    int base = 10;
    std::size_t p = start;
    auto is_base_digit = [&](char c) {
      if (base == 2) return c == '0' || c == '1';
      if (base == 8) return c >= '0' && c <= '7';
      if (base == 16) return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
      return is_digit(c);
    };
    if (src_[p] == '0' && p + 1 < src_.size()) {
      char x = static_cast<char>(src_[p + 1] | 0x20);
      base = x == 'b' ? 2 : x == 'o' ? 8 : x == 'x' ? 16 : 10;
    }
    std::size_t end = p;
    if (base != 10) {
      std::size_t q = p + 2;
      while (q < src_.size()) {
        std::size_t r = (src_[q] == '_') ? q + 1 : q;
        if (r < src_.size() && is_base_digit(src_[r])) {
          q = r + 1;
        } else {
          break;
        }
      }
      if (q > p + 2) {
        end = q;
      } else {
        base = 10;
      }
    }
    if (base == 10) {
      // "0(_?0)*" or "[1-9](_?\d)*"
      char first = src_[p];
      end = p + 1;
      while (end < src_.size()) {
        std::size_t r = src_[end] == '_' ? end + 1 : end;
        if (r < src_.size() && (first == '0' ? src_[r] == '0' : is_digit(src_[r]))) {
          end = r + 1;
        } else {
          break;
        }
      }
    }
    std::string text = without_underscores(std::string_view(src_).substr(start, end - start));
    std::string digits = base == 10 ? text : text.substr(2);
    errno = 0;
    char* stop = nullptr;
    long long v = std::strtoll(digits.c_str(), &stop, base);
    if (errno == ERANGE) error(start, "integer literal " + text + " is too large");
    Token& t = push(TokenType::Integer, text, start);
    t.integer = v;
    pos_ = end;
    return true;
  }

  bool name_start(char32_t cp) const {
    return cp == U'_' ||
           (cp < 0x80 ? ((cp | 0x20) >= U'a' && (cp | 0x20) <= U'z') : pystr::is_alpha(cp));
  }

  bool lex_name() {
    std::size_t p = pos_;
    bool first = true;
    while (p < src_.size()) {
      unsigned char c = static_cast<unsigned char>(src_[p]);
      std::size_t n = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      auto cps = pystr::decode(std::string_view(src_).substr(p, n));
      char32_t cp = cps.empty() ? 0 : cps[0];
      bool ok = first ? name_start(cp)
                      : (name_start(cp) || (cp < 0x80 ? is_digit(c) : pystr::is_word(cp)));
      if (!ok) break;
      p += n;
      first = false;
    }
    if (p == pos_) return false;
    push(TokenType::Name, src_.substr(pos_, p - pos_), pos_);
    pos_ = p;
    return true;
  }

  bool lex_string() {
    char quote = src_[pos_];
    if (quote != '\'' && quote != '"') return false;
    std::size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) p += (src_[p] == '\\') ? 2 : 1;
    if (p >= src_.size()) error(pos_, "unexpected char '" + std::string(1, quote) + "'");
    push(TokenType::String, unescape(src_.substr(pos_ + 1, p - pos_ - 1), pos_), pos_);
    pos_ = p + 1;
    return true;
  }

  // Python's "unicode-escape" decoding of a string literal's body.
  std::string unescape(const std::string& s, std::size_t at) const {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\\' || i + 1 >= s.size()) {
        out += s[i];
        continue;
      }
      char e = s[++i];
      auto hex = [&](std::size_t count) {
        unsigned long v = 0;
        for (std::size_t k = 1; k <= count; ++k) {
          char h = i + k < s.size() ? s[i + k] : 'g';
          int d = is_digit(h)                                ? h - '0'
                  : ((h | 0x20) >= 'a' && (h | 0x20) <= 'f') ? (h | 0x20) - 'a' + 10
                                                             : -1;
          if (d < 0) error(at, fmt::format("truncated \\{}{} escape", e, std::string(count, 'X')));
          v = v * 16 + static_cast<unsigned long>(d);
        }
        i += count;
        if (v > 0x10FFFF) error(at, "illegal Unicode character in escape");
        pystr::append_utf8(out, static_cast<char32_t>(v));
      };
      switch (e) {
        case '\n':
          break;
        case '\\':
        case '\'':
        case '"':
          out += e;
          break;
        case 'a':
          out += '\a';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'v':
          out += '\v';
          break;
        case 'x':
          hex(2);
          break;
        case 'u':
          hex(4);
          break;
        case 'U':
          hex(8);
          break;
        case 'N':
          error(at, "\\N{...} escapes are not supported");
        default:
          if (e >= '0' && e <= '7') {
            unsigned v = static_cast<unsigned>(e - '0');
            for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k) {
              v = v * 8 + static_cast<unsigned>(s[++i] - '0');
            }
            pystr::append_utf8(out, v);
          } else {
            out += '\\';
            out += e;
          }
      }
    }
    return out;
  }

  void lex_operator(std::vector<char>& balance) {
    static constexpr std::string_view two[] = {"//", "**", "==", "!=", ">=", "<="};
    for (auto op : two) {
      if (starts_with(pos_, op)) {
        push(TokenType::Operator, std::string(op), pos_);
        pos_ += 2;
        return;
      }
    }
    char c = src_[pos_];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      unsigned char u = static_cast<unsigned char>(c);
      std::string shown = u < 0x80 ? std::string(1, c) : std::string("non-ASCII character");
      error(pos_, fmt::format("unexpected char '{}'", shown));
    }
    if (c == '{' || c == '(' || c == '[') {
      balance.push_back(c == '{' ? '}' : c == '(' ? ')' : ']');
    } else if (c == '}' || c == ')' || c == ']') {
      if (balance.empty()) error(pos_, fmt::format("unexpected '{}'", c));
      char expected = balance.back();
      balance.pop_back();
      if (expected != c) error(pos_, fmt::format("unexpected '{}', expected '{}'", c, expected));
    }
    push(TokenType::Operator, std::string(1, c), pos_);
    ++pos_;
  }

  std::string src_;
  const std::string& name_;
  std::size_t pos_ = 0;
  bool line_starting_ = true;
  mutable std::size_t line_pos_ = 0;
  mutable int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& name) {
  return Lexer(normalize_source(source), name).run();
}

}  // namespace ls::jinja
