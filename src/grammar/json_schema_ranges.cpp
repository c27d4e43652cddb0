// Exact integer ranges as digit grammars: [lo, hi] splits into the texts of each length, and a
// range of one length into a few alternatives of per-digit spans (17..42 -> 1[7-9] | [2-3][0-9]
// | 4[0-2]). Bounds are decimal strings, so a bound beyond 64 bits is exact too. The same
// fixed-width split spells the \uXXXX escapes of a range of code points in base 16.
#include <fmt/format.h>

#include "grammar/json_schema_internal.h"

namespace ls::grammar::detail {

namespace {

void range_into(const std::vector<int>& lo, const std::vector<int>& hi, std::size_t pos, int base,
                DigitSpans& prefix, std::vector<DigitSpans>& out) {
  const std::size_t width = lo.size();
  if (pos == width) {
    out.push_back(prefix);
    return;
  }
  bool lo_min = true, hi_max = true;  // the digits after pos are all 0 / all base-1
  for (std::size_t k = pos + 1; k < width; ++k) {
    lo_min = lo_min && lo[k] == 0;
    hi_max = hi_max && hi[k] == base - 1;
  }
  int a = lo[pos];
  const int b = hi[pos];
  if (a == b) {
    prefix.push_back({a, a});
    range_into(lo, hi, pos + 1, base, prefix, out);
    prefix.pop_back();
    return;
  }
  // lo's first digit with lo's tail up to all nines; then the whole middle digits; then hi's
  // first digit with zeros up to hi's tail.
  if (!lo_min) {
    std::vector<int> top = hi;
    for (std::size_t k = pos + 1; k < width; ++k) top[k] = base - 1;
    prefix.push_back({a, a});
    range_into(lo, top, pos + 1, base, prefix, out);
    prefix.pop_back();
    ++a;
  }
  const int last = hi_max ? b : b - 1;
  if (a <= last) {
    DigitSpans full = prefix;
    full.push_back({a, last});
    for (std::size_t k = pos + 1; k < width; ++k) full.push_back({0, base - 1});
    out.push_back(std::move(full));
  }
  if (!hi_max) {
    std::vector<int> bottom = lo;
    for (std::size_t k = pos + 1; k < width; ++k) bottom[k] = 0;
    prefix.push_back({b, b});
    range_into(bottom, hi, pos + 1, base, prefix, out);
    prefix.pop_back();
  }
}

// Decimal spans as GBNF: runs of single digits as one literal, runs of [0-9] counted.
std::string render_decimal(const DigitSpans& spans) {
  std::vector<std::string> parts;
  std::string digits;
  for (std::size_t i = 0; i < spans.size();) {
    const auto [a, b] = spans[i];
    if (a == b) {
      digits += static_cast<char>('0' + a);
      ++i;
      continue;
    }
    if (!digits.empty()) parts.push_back("\"" + digits + "\"");
    digits.clear();
    if (a == 0 && b == 9) {
      std::size_t j = i;
      while (j < spans.size() && spans[j].first == 0 && spans[j].second == 9) ++j;
      parts.push_back(j - i == 1 ? "[0-9]" : fmt::format("[0-9]{{{}}}", j - i));
      i = j;
    } else {
      parts.push_back(fmt::format("[{}-{}]", a, b));
      ++i;
    }
  }
  if (!digits.empty()) parts.push_back("\"" + digits + "\"");
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::vector<int> digits_of(const std::string& s) {
  std::vector<int> d;
  for (char c : s) d.push_back(c - '0');
  return d;
}

void fixed_decimal(const std::string& lo, const std::string& hi, std::vector<std::string>& out) {
  for (const DigitSpans& spans : fixed_width_range(digits_of(lo), digits_of(hi), 10))
    out.push_back(render_decimal(spans));
}

// The magnitudes in [a, b] (b missing: unbounded), a >= 1, without leading zeros.
void positive_range(const std::string& a, const std::optional<std::string>& b,
                    std::vector<std::string>& out) {
  const std::size_t la = a.size();
  if (b && b->size() == la) {
    fixed_decimal(a, *b, out);
    return;
  }
  fixed_decimal(a, std::string(la, '9'), out);
  if (!b) {
    out.push_back(fmt::format("[1-9] [0-9]{{{},}}", la));
    return;
  }
  const std::size_t lb = b->size();
  if (lb >= la + 2)  // the lengths strictly between
    out.push_back(lb == la + 2 ? (la == 1 ? "[1-9] [0-9]" : fmt::format("[1-9] [0-9]{{{}}}", la))
                               : fmt::format("[1-9] [0-9]{{{},{}}}", la, lb - 2));
  fixed_decimal("1" + std::string(lb - 1, '0'), *b, out);
}

std::string magnitude_plus_one(std::string m) {
  for (std::size_t i = m.size(); i-- > 0;) {
    if (m[i] != '9') {
      ++m[i];
      return m;
    }
    m[i] = '0';
  }
  return "1" + m;
}

std::string magnitude_minus_one(std::string m) {  // m >= 1
  for (std::size_t i = m.size(); i-- > 0;) {
    if (m[i] != '0') {
      --m[i];
      break;
    }
    m[i] = '9';
  }
  const std::size_t nz = m.find_first_not_of('0');
  return nz == std::string::npos ? "0" : m.substr(nz);
}

int compare_magnitude(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

}  // namespace

std::vector<DigitSpans> fixed_width_range(const std::vector<int>& lo, const std::vector<int>& hi,
                                          int base) {
  std::vector<DigitSpans> out;
  DigitSpans prefix;
  range_into(lo, hi, 0, base, prefix, out);
  return out;
}

int compare(const BigInt& a, const BigInt& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int c = compare_magnitude(a.magnitude, b.magnitude);
  return a.negative ? -c : c;
}

BigInt plus_one(BigInt v) {
  if (!v.negative) return {false, magnitude_plus_one(v.magnitude)};
  v.magnitude = magnitude_minus_one(v.magnitude);
  v.negative = v.magnitude != "0";
  return v;
}

BigInt minus_one(BigInt v) {
  if (v.negative) return {true, magnitude_plus_one(v.magnitude)};
  if (v.magnitude == "0") return {true, "1"};
  return {false, magnitude_minus_one(v.magnitude)};
}

BigInt big_int_from_string(std::string_view s) {
  BigInt v;
  if (!s.empty() && s[0] == '-') {
    v.negative = true;
    s.remove_prefix(1);
  }
  const std::size_t nz = s.find_first_not_of('0');
  v.magnitude = nz == std::string_view::npos ? "0" : std::string(s.substr(nz));
  if (v.magnitude == "0") v.negative = false;
  return v;
}

std::string integer_range_gbnf(const std::optional<BigInt>& lo, const std::optional<BigInt>& hi) {
  const BigInt zero, one{false, "1"}, minus{true, "1"};
  std::vector<std::string> alts;
  if ((!lo || compare(*lo, zero) <= 0) && (!hi || compare(*hi, zero) >= 0))
    alts.push_back("\"-\"? \"0\"");  // JSON's -0 is the integer 0 too
  if (!hi || compare(*hi, one) >= 0) {
    const std::string a = lo && compare(*lo, one) > 0 ? lo->magnitude : "1";
    positive_range(a, hi ? std::optional(hi->magnitude) : std::nullopt, alts);
  }
  if (!lo || compare(*lo, minus) <= 0) {
    const std::string a = hi && compare(*hi, minus) < 0 ? hi->magnitude : "1";
    std::vector<std::string> neg;
    positive_range(a, lo ? std::optional(lo->magnitude) : std::nullopt, neg);
    std::string body;
    for (const std::string& n : neg) body += (body.empty() ? "" : " | ") + n;
    alts.push_back(neg.size() == 1 ? "\"-\" " + body : "\"-\" (" + body + ")");
  }
  std::string out;
  for (const std::string& a : alts) out += (out.empty() ? "" : " | ") + a;
  return alts.size() == 1 ? out : "(" + out + ")";
}

}  // namespace ls::grammar::detail
