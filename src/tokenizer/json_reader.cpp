#include "tokenizer/json_reader.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "tokenizer/unicode.h"

namespace ls::tok {
namespace {

using json = nlohmann::json;

class Reader {
 public:
  Reader(std::string_view text, nlohmann::json_sax<json>& sax)
      : p_(text.data()), end_(text.data() + text.size()), begin_(text.data()), sax_(sax) {}

  bool run(std::string* error) {
    skip_ws();
    if (!value(0)) {
      *error = error_;
      return false;
    }
    skip_ws();
    if (p_ != end_) {
      *error = where("unexpected text after the JSON value");
      return false;
    }
    return true;
  }

 private:
  static constexpr int kMaxDepth = 256;

  std::string where(const char* what) const {
    std::size_t line = 1, col = 1;
    for (const char* q = begin_; q < p_ && q < end_; ++q) {
      if (*q == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return fmt::format("{} at line {}, column {}", what, line, col);
  }
  bool syntax(const char* what) {
    if (error_.empty()) error_ = where(what);
    return false;
  }
  // The handler said stop (it keeps its own message).
  bool refused() { return false; }

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }

  bool value(int depth) {
    if (p_ >= end_) return syntax("unexpected end of input");
    switch (*p_) {
      case '{':
        return object(depth);
      case '[':
        return array(depth);
      case '"': {
        if (!string(&buf_)) return false;
        return sax_.string(buf_) || refused();
      }
      case 't':
        return literal("true") && (sax_.boolean(true) || refused());
      case 'f':
        return literal("false") && (sax_.boolean(false) || refused());
      case 'n':
        return literal("null") && (sax_.null() || refused());
      default:
        return number();
    }
  }

  bool literal(const char* word) {
    const std::size_t n = std::strlen(word);
    if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) {
      return syntax("invalid literal");
    }
    p_ += n;
    return true;
  }

  bool object(int depth) {
    if (depth >= kMaxDepth) return syntax("nesting too deep");
    ++p_;
    if (!sax_.start_object(static_cast<std::size_t>(-1))) return refused();
    skip_ws();
    if (p_ < end_ && *p_ == '}') {
      ++p_;
      return sax_.end_object() || refused();
    }
    while (true) {
      skip_ws();
      if (p_ >= end_ || *p_ != '"') return syntax("expected a string key");
      if (!string(&buf_)) return false;
      if (!sax_.key(buf_)) return refused();
      skip_ws();
      if (p_ >= end_ || *p_ != ':') return syntax("expected ':'");
      ++p_;
      skip_ws();
      if (!value(depth + 1)) return false;
      skip_ws();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == '}') {
        ++p_;
        return sax_.end_object() || refused();
      }
      return syntax("expected ',' or '}'");
    }
  }

  bool array(int depth) {
    if (depth >= kMaxDepth) return syntax("nesting too deep");
    ++p_;
    if (!sax_.start_array(static_cast<std::size_t>(-1))) return refused();
    skip_ws();
    if (p_ < end_ && *p_ == ']') {
      ++p_;
      return sax_.end_array() || refused();
    }
    while (true) {
      skip_ws();
      if (!value(depth + 1)) return false;
      skip_ws();
      if (p_ < end_ && *p_ == ',') {
        ++p_;
        continue;
      }
      if (p_ < end_ && *p_ == ']') {
        ++p_;
        return sax_.end_array() || refused();
      }
      return syntax("expected ',' or ']'");
    }
  }

  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }
  bool hex4(unsigned* out) {
    if (end_ - p_ < 4) return syntax("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const int h = hex(p_[i]);
      if (h < 0) return syntax("invalid \\u escape");
      v = (v << 4) | static_cast<unsigned>(h);
    }
    p_ += 4;
    *out = v;
    return true;
  }

  // p_ at the opening quote.
  bool string(std::string* out) {
    out->clear();
    ++p_;
    while (true) {
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20)
        ++p_;
      if (p_ > run) {
        const std::string_view raw(run, static_cast<std::size_t>(p_ - run));
        if (utf8_validate(raw) != raw.size()) {
          p_ = run + utf8_validate(raw);
          return syntax("invalid UTF-8 in a string");
        }
        out->append(raw);
      }
      if (p_ >= end_) return syntax("unterminated string");
      const char c = *p_;
      if (c == '"') {
        ++p_;
        return true;
      }
      if (c != '\\') return syntax("control character in a string");
      ++p_;
      if (p_ >= end_) return syntax("unterminated string");
      const char e = *p_++;
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          unsigned u;
          if (!hex4(&u)) return false;
          char32_t cp = u;
          if (u >= 0xD800 && u <= 0xDBFF) {
            unsigned lo;
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u')
              return syntax("lone surrogate in a \\u escape");
            p_ += 2;
            if (!hex4(&lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return syntax("lone surrogate in a \\u escape");
            cp = 0x10000 + ((char32_t(u) - 0xD800) << 10) + (lo - 0xDC00);
          } else if (u >= 0xDC00 && u <= 0xDFFF) {
            return syntax("lone surrogate in a \\u escape");
          }
          append_utf8(*out, cp);
          break;
        }
        default:
          return syntax("invalid escape in a string");
      }
    }
  }

  bool number() {
    const char* start = p_;
    bool negative = false;
    if (p_ < end_ && *p_ == '-') {
      negative = true;
      ++p_;
    }
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return syntax("invalid value");
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    bool integer = true;
    if (p_ < end_ && *p_ == '.') {
      integer = false;
      ++p_;
      if (p_ >= end_ || *p_ < '0' || *p_ > '9') return syntax("invalid number");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      integer = false;
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (p_ >= end_ || *p_ < '0' || *p_ > '9') return syntax("invalid number");
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    const std::size_t digits = static_cast<std::size_t>(p_ - start) - (negative ? 1 : 0);
    if (integer && digits <= 18) {  // fits: exact without strtoll
      std::int64_t v = 0;
      for (const char* q = start + (negative ? 1 : 0); q < p_; ++q) v = v * 10 + (*q - '0');
      if (negative) return sax_.number_integer(-v) || refused();
      return sax_.number_unsigned(static_cast<std::uint64_t>(v)) || refused();
    }
    const std::string text(start, static_cast<std::size_t>(p_ - start));
    if (integer) {
      errno = 0;
      if (negative) {
        const long long v = std::strtoll(text.c_str(), nullptr, 10);
        if (errno == 0) return sax_.number_integer(v) || refused();
      } else {
        const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
        if (errno == 0) return sax_.number_unsigned(v) || refused();
      }
    }
    return sax_.number_float(std::strtod(text.c_str(), nullptr), text) || refused();
  }

  const char* p_;
  const char* end_;
  const char* begin_;
  nlohmann::json_sax<json>& sax_;
  std::string buf_;
  std::string error_;
};

}  // namespace

bool read_json(std::string_view text, nlohmann::json_sax<nlohmann::json>& sax, std::string* error) {
  error->clear();
  Reader r(text, sax);
  return r.run(error);
}

}  // namespace ls::tok
