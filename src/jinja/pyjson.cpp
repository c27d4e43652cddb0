// Python's json.dumps() over template values (see pyjson.h): separators, indentation, key
// conversion and the string escapes of CPython's json encoder, with or without ensure_ascii.
#include "jinja/pyjson.h"

#include <cmath>

#include "core/error.h"
#include "jinja/pystr.h"

namespace ls::jinja {

namespace {

void escape_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  auto hex4 = [&](unsigned v) { out += fmt::format("\\u{:04x}", v); };
  for (char32_t cp : pystr::decode(s)) {
    switch (cp) {
      case U'"':
        out += "\\\"";
        continue;
      case U'\\':
        out += "\\\\";
        continue;
      case U'\n':
        out += "\\n";
        continue;
      case U'\r':
        out += "\\r";
        continue;
      case U'\t':
        out += "\\t";
        continue;
      case U'\b':
        out += "\\b";
        continue;
      case U'\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ensure_ascii && cp > 0x7E)) {
      if (cp >= 0x10000) {  // UTF-16 surrogate pair, as Python writes it
        unsigned v = static_cast<unsigned>(cp) - 0x10000;
        hex4(0xD800 | (v >> 10));
        hex4(0xDC00 | (v & 0x3FF));
      } else {
        hex4(static_cast<unsigned>(cp));
      }
    } else {
      pystr::append_utf8(out, cp);
    }
  }
  out += '"';
}

std::string float_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return float_repr(d);
}

class Encoder {
 public:
  explicit Encoder(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator ? *o.item_separator : (o.indent ? "," : ", ");
  }

  void encode(const Value& v, int level) {
    switch (v.kind()) {
      case Kind::None:
        out_ += "null";
        return;
      case Kind::Bool:
        out_ += v.as_bool() ? "true" : "false";
        return;
      case Kind::Int:
        out_ += std::to_string(v.as_int());
        return;
      case Kind::Float:
        out_ += float_json(v.as_float());
        return;
      case Kind::String:
        escape_string(out_, v.as_string(), o_.ensure_ascii);
        return;
      case Kind::List:
        if (v.seq_type() == SeqType::List || v.seq_type() == SeqType::Tuple) {
          encode_list(v.items(), level);
          return;
        }
        break;
      case Kind::Dict:
        encode_dict(v.as_dict(), level);
        return;
      default:
        break;
    }
    fail("Object of type {} is not JSON serializable", type_name(v));
  }

  std::string take() { return std::move(out_); }

 private:
  void newline(int level) {
    if (!o_.indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += *o_.indent;
  }

  void encode_list(const std::vector<Value>& items, int level) {
    if (items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i) out_ += item_sep_;
      newline(level + 1);
      encode(items[i], level + 1);
    }
    newline(level);
    out_ += ']';
  }

  static std::string key_text(const Value& k) {
    switch (k.kind()) {
      case Kind::String:
        return k.as_string();
      case Kind::Float:
        return float_json(k.as_float());
      case Kind::Bool:
        return k.as_bool() ? "true" : "false";
      case Kind::None:
        return "null";
      case Kind::Int:
        return std::to_string(k.as_int());
      default:
        fail("keys must be str, int, float, bool or None, not {}", type_name(k));
    }
  }

  void encode_dict(const Dict& d, int level) {
    if (d.entries.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<Value, Value>*> entries;
    for (const auto& e : d.entries) entries.push_back(&e);
    if (o_.sort_keys) {
      // insertion sort keeps this simple and stable; dicts in templates are small
      for (std::size_t i = 1; i < entries.size(); ++i) {
        for (std::size_t j = i;
             j > 0 && compare(entries[j]->first, entries[j - 1]->first, CmpOp::Lt); --j) {
          std::swap(entries[j], entries[j - 1]);
        }
      }
    }
    out_ += '{';
    bool first = true;
    for (const auto* e : entries) {
      if (!first) out_ += item_sep_;
      first = false;
      newline(level + 1);
      escape_string(out_, key_text(e->first), o_.ensure_ascii);
      out_ += o_.key_separator;
      encode(e->second, level + 1);
    }
    newline(level);
    out_ += '}';
  }

  const JsonDumpOptions& o_;
  std::string item_sep_;
  std::string out_;
};

}  // namespace

std::string json_dumps(const Value& v, const JsonDumpOptions& options) {
  Encoder e(options);
  e.encode(v, 0);
  return e.take();
}

}  // namespace ls::jinja
