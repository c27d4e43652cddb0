// Python string formatting for templates: the % operator (and the `format` filter, which uses
// it) and str.format() with the format-spec mini-language ([[fill]align][sign][#][0][width]
// [,|_][.precision][type]). Numbers are formatted with the C library, whose correctly rounded
// output matches Python's for the f/e/g/d/x/o conversions.
#include <cmath>
#include <cstdio>

#include "jinja/library.h"
#include "jinja/pystr.h"

namespace ls::jinja {

namespace {

struct Spec {
  char32_t fill = U' ';
  char align = 0;  // '<', '>', '^', '=' or 0 for the type's default
  char sign = '-';
  bool alt = false;
  bool zero = false;
  std::int64_t width = -1;
  char grouping = 0;
  std::int64_t precision = -1;
  char type = 0;
};

std::string pad(Interpreter& in, const std::string& sign_prefix, const std::string& body,
                const Spec& s, char default_align) {
  char align = s.align ? s.align : default_align;
  std::size_t len = pystr::length(sign_prefix) + pystr::length(body);
  if (s.width <= 0 || static_cast<std::size_t>(s.width) <= len) return sign_prefix + body;
  std::size_t total = static_cast<std::size_t>(s.width) - len;
  in.check_string_size(static_cast<std::size_t>(s.width) * 4);
  std::string fill;
  pystr::append_utf8(fill, s.fill);
  auto fills = [&](std::size_t n) {
    std::string out;
    for (std::size_t k = 0; k < n; ++k) out += fill;
    return out;
  };
  switch (align) {
    case '<':
      return sign_prefix + body + fills(total);
    case '^':
      return fills(total / 2) + sign_prefix + body + fills(total - total / 2);
    case '=':
      return sign_prefix + fills(total) + body;
    default:
      return fills(total) + sign_prefix + body;
  }
}

std::string group_digits(const std::string& digits, char sep, std::size_t every) {
  std::string out;
  std::size_t n = digits.size();
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[i];
    std::size_t left = n - 1 - i;
    if (left > 0 && left % every == 0) out += sep;
  }
  return out;
}

std::string sign_of(bool negative, char sign) {
  if (negative) return "-";
  if (sign == '+') return "+";
  if (sign == ' ') return " ";
  return "";
}

std::string format_int(Interpreter& in, std::int64_t v, Spec s) {
  bool negative = v < 0;
  auto mag = negative ? static_cast<std::uint64_t>(0) - static_cast<std::uint64_t>(v)
                      : static_cast<std::uint64_t>(v);
  std::string digits, prefix;
  switch (s.type) {
    case 'x':
    case 'X':
      digits = s.type == 'x' ? fmt::format("{:x}", mag) : fmt::format("{:X}", mag);
      if (s.alt) prefix = s.type == 'x' ? "0x" : "0X";
      break;
    case 'o':
      digits = fmt::format("{:o}", mag);
      if (s.alt) prefix = "0o";
      break;
    case 'b':
      digits = fmt::format("{:b}", mag);
      if (s.alt) prefix = "0b";
      break;
    case 'c': {
      std::string out;
      pystr::append_utf8(out, static_cast<char32_t>(v));
      return pad(in, "", out, s, '<');
    }
    default:
      digits = std::to_string(mag);
  }
  // printf's precision for integers is a minimum number of digits ("%.5d" -> 00003)
  if (s.precision > static_cast<std::int64_t>(digits.size())) {
    digits.insert(0, static_cast<std::size_t>(s.precision) - digits.size(), '0');
  }
  if (s.grouping)
    digits =
        group_digits(digits, s.grouping, (s.type == 0 || s.type == 'd' || s.type == 'n') ? 3 : 4);
  if (s.zero && !s.align) {
    s.fill = U'0';
    s.align = '=';
  }
  return pad(in, sign_of(negative, s.sign) + prefix, digits, s, '>');
}

std::string format_float(Interpreter& in, double v, Spec s) {
  bool negative = std::signbit(v) && !std::isnan(v);
  double mag = std::fabs(v);
  std::string body;
  char type = s.type;
  bool percent = type == '%';
  if (percent) {
    mag *= 100;
    type = 'f';
  }
  if (s.precision > 1000) fail("precision too big");
  if (std::isinf(mag) || std::isnan(mag)) {
    body = std::isnan(mag) ? "nan" : "inf";
    if (type == 'E' || type == 'F' || type == 'G') body = pystr::upper(body);
  } else if (type == 0 && s.precision < 0) {
    body = float_repr(mag);
  } else {
    int precision = s.precision < 0 ? 6 : static_cast<int>(s.precision);
    char conv = type == 0 || type == 'n' ? 'g' : type;
    std::string f = std::string("%") + (s.alt ? "#" : "") + ".*" + conv;
    char buf[1100];
    std::snprintf(buf, sizeof buf, f.c_str(), precision, mag);
    body = buf;
    if (type == 0 && body.find_first_of(".e") == std::string::npos) body += ".0";
  }
  if (percent) body += "%";
  if (s.grouping) {
    auto end = body.find_first_not_of("0123456789");
    if (end == std::string::npos) end = body.size();
    body = group_digits(body.substr(0, end), s.grouping, 3) + body.substr(end);
  }
  if (s.zero && !s.align) {
    s.fill = U'0';
    s.align = '=';
  }
  return pad(in, sign_of(negative, s.sign), body, s, '>');
}

std::string truncate_to(const std::string& text, std::int64_t precision) {
  if (precision < 0) return text;
  std::u32string cps = pystr::decode(text);
  if (static_cast<std::int64_t>(cps.size()) > precision)
    cps.resize(static_cast<std::size_t>(precision));
  return pystr::encode(cps);
}

std::int64_t parse_number(const std::string& f, std::size_t& i) {
  std::int64_t n = 0;
  while (i < f.size() && std::isdigit(static_cast<unsigned char>(f[i]))) {
    n = n * 10 + (f[i++] - '0');
    if (n > 100'000'000) fail("width or precision too big in format string");
  }
  return n;
}

// One % conversion of `v`.
std::string percent_one(Interpreter& in, char conv, const Value& v, const Spec& s) {
  switch (conv) {
    case 's':
      return pad(in, "", truncate_to(to_str(v), s.precision), s, '>');
    case 'r':
    case 'a':
      return pad(in, "", truncate_to(repr(v), s.precision), s, '>');
    case 'd':
    case 'i':
    case 'u':
      if (v.is_undefined()) fail_undefined(v);
      if (v.is_integral()) return format_int(in, v.as_int(), s);
      if (v.is_float()) {
        auto i = to_int(v, 10);
        if (!i) fail("cannot convert float {} to integer", float_repr(v.as_float()));
        return format_int(in, *i, s);
      }
      fail("%{} format: a real number is required, not {}", conv, type_name(v));
    case 'x':
    case 'X':
    case 'o': {
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_integral()) fail("%{} format: an integer is required, not {}", conv, type_name(v));
      Spec t = s;
      t.type = conv;
      return format_int(in, v.as_int(), t);
    }
    case 'e':
    case 'E':
    case 'f':
    case 'F':
    case 'g':
    case 'G': {
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_numeric()) fail("must be real number, not {}", type_name(v));
      Spec t = s;
      t.type = conv;
      if (t.precision < 0) t.precision = 6;
      return format_float(in, v.as_float(), t);
    }
    case 'c':
      if (v.is_string() && pystr::length(v.as_string()) == 1)
        return pad(in, "", v.as_string(), s, '>');
      if (v.is_integral()) {
        Spec t = s;
        t.type = 'c';
        t.align = s.align ? s.align : '>';
        return format_int(in, v.as_int(), t);
      }
      fail("%c requires an int or a unicode character, not {}", type_name(v));
    default:
      fail("unsupported format character '{}'", conv);
  }
}

}  // namespace

std::string percent_format(Interpreter& in, const std::string& f, const Value& args) {
  std::vector<Value> list;
  bool is_tuple = args.is_list() && args.seq_type() == SeqType::Tuple;
  if (is_tuple) {
    list = args.items();
  } else {
    list.push_back(args);
  }
  std::size_t next = 0;
  auto take = [&]() -> const Value& {
    if (next >= list.size()) fail("not enough arguments for format string");
    return list[next++];
  };
  bool used_mapping = false;
  std::string out;
  for (std::size_t i = 0; i < f.size();) {
    if (f[i] != '%') {
      out += f[i++];
      continue;
    }
    ++i;
    if (i >= f.size()) fail("incomplete format");
    if (f[i] == '%') {
      out += '%';
      ++i;
      continue;
    }
    const Value* mapped = nullptr;
    Value key_value;
    if (f[i] == '(') {
      auto close = f.find(')', i);
      if (close == std::string::npos) fail("incomplete format key");
      if (!args.is_dict()) fail("format requires a mapping");
      std::string key = f.substr(i + 1, close - i - 1);
      const Value* found = args.as_dict().find(std::string_view(key));
      if (!found) fail("KeyError: '{}'", key);
      key_value = *found;
      mapped = &key_value;
      used_mapping = true;
      i = close + 1;
    }
    Spec s;
    s.align = '>';
    for (; i < f.size() && std::string_view("-+ #0").find(f[i]) != std::string_view::npos; ++i) {
      if (f[i] == '-') s.align = '<';
      if (f[i] == '+') s.sign = '+';
      if (f[i] == ' ' && s.sign != '+') s.sign = ' ';
      if (f[i] == '#') s.alt = true;
      if (f[i] == '0') s.zero = true;
    }
    if (s.align == '<') s.zero = false;
    if (s.zero) s.align = 0;
    if (i < f.size() && f[i] == '*') {
      ++i;
      const Value& w = take();
      if (!w.is_integral()) fail("* wants int");
      s.width = w.as_int();
      if (s.width < 0) {
        s.align = '<';
        s.width = -s.width;
      }
    } else {
      s.width = parse_number(f, i);
    }
    if (i < f.size() && f[i] == '.') {
      ++i;
      if (i < f.size() && f[i] == '*') {
        ++i;
        const Value& p = take();
        if (!p.is_integral()) fail("* wants int");
        s.precision = std::max<std::int64_t>(0, p.as_int());
      } else {
        s.precision = parse_number(f, i);
      }
    }
    while (i < f.size() && (f[i] == 'h' || f[i] == 'l' || f[i] == 'L')) ++i;
    if (i >= f.size()) fail("incomplete format");
    char conv = f[i++];
    const Value& v = mapped ? *mapped : take();
    out += percent_one(in, conv, v, s);
    in.check_string_size(out.size());
  }
  if (!used_mapping && next < list.size() && !(args.is_dict() && !is_tuple)) {
    fail("not all arguments converted during string formatting");
  }
  return out;
}

namespace {

Spec parse_spec(const std::string& spec) {
  Spec s;
  std::u32string cps = pystr::decode(spec);
  std::size_t i = 0;
  auto is_align = [](char32_t c) { return c == U'<' || c == U'>' || c == U'^' || c == U'='; };
  if (cps.size() >= 2 && is_align(cps[1])) {
    s.fill = cps[0];
    s.align = static_cast<char>(cps[1]);
    i = 2;
  } else if (!cps.empty() && is_align(cps[0])) {
    s.align = static_cast<char>(cps[0]);
    i = 1;
  }
  std::string rest = pystr::encode(std::u32string_view(cps).substr(i));
  std::size_t k = 0;
  if (k < rest.size() && (rest[k] == '+' || rest[k] == '-' || rest[k] == ' ')) s.sign = rest[k++];
  if (k < rest.size() && rest[k] == '#') s.alt = true, ++k;
  if (k < rest.size() && rest[k] == '0') s.zero = true, ++k;
  if (k < rest.size() && std::isdigit(static_cast<unsigned char>(rest[k])))
    s.width = parse_number(rest, k);
  if (k < rest.size() && (rest[k] == ',' || rest[k] == '_')) s.grouping = rest[k++];
  if (k < rest.size() && rest[k] == '.') {
    ++k;
    if (k >= rest.size() || !std::isdigit(static_cast<unsigned char>(rest[k]))) {
      fail("Format specifier missing precision");
    }
    s.precision = parse_number(rest, k);
  }
  if (k < rest.size()) s.type = rest[k++];
  if (k < rest.size()) fail("Invalid format specifier '{}'", spec);
  return s;
}

std::string format_value(Interpreter& in, const Value& v, const std::string& spec) {
  if (spec.empty()) return to_str(v);
  Spec s = parse_spec(spec);
  if (v.is_integral()) {
    if (std::string_view("eEfFgG%").find(s.type) != std::string_view::npos && s.type) {
      return format_float(in, static_cast<double>(v.as_int()), s);
    }
    if (s.type && std::string_view("dbcoxXn").find(s.type) == std::string_view::npos) {
      fail("Unknown format code '{}' for object of type '{}'", s.type, type_name(v));
    }
    if (s.precision >= 0) fail("Precision not allowed in integer format specifier");
    return format_int(in, v.as_int(), s);
  }
  if (v.is_float()) {
    if (s.type && std::string_view("eEfFgGn%").find(s.type) == std::string_view::npos) {
      fail("Unknown format code '{}' for object of type 'float'", s.type);
    }
    return format_float(in, v.as_float(), s);
  }
  if (v.is_string()) {
    if (s.type && s.type != 's') fail("Unknown format code '{}' for object of type 'str'", s.type);
    if (s.sign != '-' || s.alt || s.grouping) fail("invalid format specifier for a string");
    if (s.zero && !s.align) {
      s.fill = U'0';
      s.align = '<';
    }
    return pad(in, "", truncate_to(v.as_string(), s.precision), s, '<');
  }
  fail("unsupported format string passed to {}.__format__", type_name(v));
}

}  // namespace

std::string brace_format(Interpreter& in, const std::string& f, const CallArgs& args) {
  std::string out;
  std::size_t auto_index = 0;
  for (std::size_t i = 0; i < f.size();) {
    char c = f[i];
    if (c == '}') {
      if (i + 1 < f.size() && f[i + 1] == '}') {
        out += '}';
        i += 2;
        continue;
      }
      fail("Single '}}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      ++i;
      continue;
    }
    if (i + 1 < f.size() && f[i + 1] == '{') {
      out += '{';
      i += 2;
      continue;
    }
    auto close = f.find('}', i);
    if (close == std::string::npos) fail("Single '{{' encountered in format string");
    std::string field = f.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string::npos) fail("nested replacement fields are not supported");
    i = close + 1;
    std::string spec, conversion;
    if (auto colon = field.find(':'); colon != std::string::npos) {
      spec = field.substr(colon + 1);
      field.resize(colon);
    }
    if (auto bang = field.find('!'); bang != std::string::npos) {
      conversion = field.substr(bang + 1);
      field.resize(bang);
    }
    std::size_t k = 0;
    while (k < field.size() && field[k] != '.' && field[k] != '[') ++k;
    std::string head = field.substr(0, k);
    Value v;
    bool numeric = !head.empty() && head.find_first_not_of("0123456789") == std::string::npos;
    if (head.empty() || numeric) {
      std::size_t index = head.empty() ? auto_index++ : std::stoul(head.substr(0, 9));
      if (index >= args.positional.size()) fail("Replacement index {} out of range", index);
      v = args.positional[index];
    } else {
      auto it = std::find_if(args.keywords.begin(), args.keywords.end(),
                             [&](const auto& kw) { return kw.first == head; });
      if (it == args.keywords.end()) fail("KeyError: '{}'", head);
      v = it->second;
    }
    while (k < field.size()) {
      if (field[k] == '.') {
        std::size_t e = k + 1;
        while (e < field.size() && field[e] != '.' && field[e] != '[') ++e;
        v = in.get_attr(v, field.substr(k + 1, e - k - 1));
        k = e;
      } else {
        auto e = field.find(']', k);
        if (e == std::string::npos) fail("Missing ']' in format string");
        std::string key = field.substr(k + 1, e - k - 1);
        bool numeric_key = !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
        v = in.get_item(
            v, numeric_key ? Value::integer(std::stoll(key.substr(0, 18))) : Value::string(key));
        k = e + 1;
      }
    }
    if (conversion == "r" || conversion == "a") {
      v = Value::string(repr(v));
    } else if (conversion == "s") {
      v = Value::string(to_str(v));
    } else if (!conversion.empty()) {
      fail("Unknown conversion specifier {}", conversion);
    }
    out += format_value(in, v, spec);
    in.check_string_size(out.size());
  }
  return out;
}

}  // namespace ls::jinja
