// json_schema_to_gbnf: each schema's grammar (parsed by parse_gbnf, run by the Matcher) against
// lists of valid and invalid texts, and exhaustively where the language is small: every integer
// in [-1100, 1100] against many bounds, every key order of optional properties, every array
// length, every day of chosen years, every place whitespace may go; fixed strings (keys, enum
// values) in their one canonical spelling, free ones in all. The errors name the keyword and its
// path. check_json_schema.py compares far more texts with Python's jsonschema.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace ls::grammar {
namespace {

using Json = nlohmann::ordered_json;

// One grammar's language: whether it accepts a whole text (one matcher, reset per text, so the
// states it builds are shared across texts).
class Language {
 public:
  explicit Language(const std::string& gbnf)
      : matcher_(std::make_shared<const Grammar>(parse_gbnf(gbnf, "test.gbnf"))) {}
  bool operator()(std::string_view text) {
    matcher_.reset();
    return matcher_.advance(text) && matcher_.can_end();
  }

 private:
  Matcher matcher_;
};

Language schema_language(const std::string& schema) {
  return Language(json_schema_to_gbnf(Json::parse(schema), "test"));
}

std::string error_of(const std::string& schema) {
  try {
    json_schema_to_gbnf(Json::parse(schema), "req.schema");
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_language(const std::string& schema, const std::vector<std::string>& valid,
                     const std::vector<std::string>& invalid) {
  Language accepts = schema_language(schema);
  for (const std::string& t : valid) EXPECT_TRUE(accepts(t)) << schema << "\n  should accept " << t;
  for (const std::string& t : invalid)
    EXPECT_FALSE(accepts(t)) << schema << "\n  should reject " << t;
}

// --- integers ---

TEST(JsonSchemaIntegers, EveryIntegerAgainstManyBounds) {
  const std::vector<std::optional<long>> bounds = {
      std::nullopt, -150, -101, -100, -99, -11, -10, -9, -1, 0, 1, 9, 10, 11, 99, 100, 101, 150};
  int grammars = 0;
  long accepted = 0;
  for (const auto& lo : bounds) {
    for (const auto& hi : bounds) {
      for (int kind = 0; kind < 4; ++kind) {
        const bool lo_ex = kind & 1, hi_ex = kind & 2;
        const long least = lo ? *lo + (lo_ex ? 1 : 0) : -1'000'000;
        const long most = hi ? *hi - (hi_ex ? 1 : 0) : 1'000'000;
        Json schema = {{"type", "integer"}};
        if (lo) schema[lo_ex ? "exclusiveMinimum" : "minimum"] = *lo;
        if (hi) schema[hi_ex ? "exclusiveMaximum" : "maximum"] = *hi;
        if (least > most) {
          EXPECT_NE(error_of(schema.dump()).find("no integer"), std::string::npos) << schema.dump();
          continue;
        }
        Language accepts(json_schema_to_gbnf(schema, "test"));
        ++grammars;
        std::vector<std::string> wrong;
        for (long n = -1100; n <= 1100; ++n) {
          const bool got = accepts(std::to_string(n));
          accepted += got;
          if (got != (least <= n && n <= most)) wrong.push_back(std::to_string(n));
        }
        if (accepts("-0") != (least <= 0 && 0 <= most)) wrong.push_back("-0");
        for (const char* bad : {"00", "01", "-01", "+1", "1.0", "1e1", "", "-", "--1", "1-"})
          if (accepts(bad)) wrong.push_back(bad);
        EXPECT_TRUE(wrong.empty())
            << schema.dump() << " wrong on " << wrong.size() << " texts, e.g. " << wrong[0];
      }
    }
  }
  EXPECT_EQ(grammars, 691);  // the bound pairs that leave some integer
  EXPECT_GT(accepted, 200'000);
}

TEST(JsonSchemaIntegers, RandomRangesUpTo1e15) {
  std::mt19937_64 rng(7);
  const auto random_bound = [&] {
    const long magnitude =
        static_cast<long>(std::pow(10.0, std::uniform_int_distribution<int>(0, 15)(rng)));
    return std::uniform_int_distribution<long>(-magnitude, magnitude)(rng);
  };
  for (int i = 0; i < 150; ++i) {
    long lo = random_bound(), hi = random_bound();
    if (lo > hi) std::swap(lo, hi);
    Language accepts(
        json_schema_to_gbnf(Json{{"type", "integer"}, {"minimum", lo}, {"maximum", hi}}, "test"));
    std::vector<long> probes = {lo, hi, lo - 1, hi + 1,  lo + 1,     hi - 1,
                                0,  -1, 1,      lo / 10, hi * 10 + 3};
    for (long p = 1; p <= 10'000'000'000'000'000; p *= 10)
      probes.insert(probes.end(), {p, -p, p - 1, 1 - p});
    for (int k = 0; k < 20; ++k) probes.push_back(std::uniform_int_distribution<long>(lo, hi)(rng));
    for (long n : probes)
      EXPECT_EQ(accepts(std::to_string(n)), lo <= n && n <= hi)
          << "[" << lo << ", " << hi << "] " << n;
  }
}

TEST(JsonSchemaIntegers, FractionalAndHugeBounds) {
  expect_language(R"({"type":"integer","minimum":2.5,"maximum":7.5})", {"3", "7"},
                  {"2", "8", "2.5"});
  expect_language(R"({"type":"integer","exclusiveMinimum":-2.0,"exclusiveMaximum":-0.5})", {"-1"},
                  {"-2", "0", "-0"});
  expect_language(R"({"type":"integer","minimum":1e20})",
                  {"100000000000000000000", "999999999999999999999999"},
                  {"99999999999999999999", "-100000000000000000000"});
  expect_language(
      R"({"type":"integer","minimum":-9223372036854775808,"maximum":18446744073709551615})",
      {"-9223372036854775808", "18446744073709551615", "0"},
      {"-9223372036854775809", "18446744073709551616"});
  expect_language(R"({"type":"integer","exclusiveMaximum":18446744073709551615})",
                  {"18446744073709551614"}, {"18446744073709551615"});
}

// --- numbers and strings ---

TEST(JsonSchemaNumbers, JsonSyntaxAndBoundsOfZero) {
  expect_language(R"({"type":"number"})", {"0", "-0", "1.5", "-1.25e+10", "1E-7", "0.0e0", "123"},
                  {"01", "1.", ".5", "1e", "1e+", "+1", "NaN", "Infinity", "0x1", "1.5.2", "--1"});
  expect_language(R"({"type":"number","minimum":0})", {"0", "-0", "-0.00e5", "0.001", "7e3"},
                  {"-0.001", "-1"});
  expect_language(R"({"type":"number","exclusiveMinimum":0})", {"0.001", "1e-400", "0.10"},
                  {"0", "-0", "0.000"});
  expect_language(R"({"type":"number","maximum":0})", {"0", "-0.0", "-5"}, {"0.1", "1e-9"});
  expect_language(R"({"type":"number","exclusiveMaximum":0})", {"-0.1"}, {"0", "-0", "-0.0", "1"});
  expect_language(R"({"type":"number","minimum":0,"maximum":0})", {"0", "-0", "0.0E+3"},
                  {"0.1", "-1"});
  EXPECT_NE(error_of(R"({"type":"number","exclusiveMinimum":0,"maximum":0})").find("no number"),
            std::string::npos);
}

TEST(JsonSchemaStrings, EscapesAndControlCharacters) {
  expect_language(R"({"type":"string"})",
                  {R"("")", R"("a\"b\\c\/d\b\f\n\r\t")", R"("\u00e9\u00E9\uFFFF\u0000")",
                   "\"é中😀\x7f\"", R"("\ud83d\ude00")", R"("\uD83D\uDE00")"},
                  {R"("\a")", R"("\u12")", R"("\x41")", "\"a\nb\"", "\"\x01\"", R"("\ud83d")",
                   R"("\ude00")", R"("\ud83d\u0041")", R"("abc)", "abc", "'a'"});
}

TEST(JsonSchemaStrings, LengthsCountDecodedCharacters) {
  for (int least = 0; least <= 3; ++least) {
    for (int most = least; most <= 4; ++most) {
      Language accepts = schema_language(
          fmt::format(R"({{"type":"string","minLength":{},"maxLength":{}}})", least, most));
      for (int n = 0; n <= 6; ++n) {
        const bool want = least <= n && n <= most;
        std::string plain = "\"", escaped = "\"", astral = "\"";
        for (int i = 0; i < n; ++i) {
          plain += "x";
          escaped += i % 2 ? "\\n" : "\\u00e9";
          astral += i % 2 ? "😀" : "\\ud83d\\ude00";
        }
        EXPECT_EQ(accepts(plain + "\""), want) << least << ".." << most << " " << plain;
        EXPECT_EQ(accepts(escaped + "\""), want) << least << ".." << most << " " << escaped;
        EXPECT_EQ(accepts(astral + "\""), want) << least << ".." << most << " " << astral;
      }
    }
  }
  expect_language(R"({"type":"string","minLength":2})", {R"("ab")", R"("abcdefgh")"}, {R"("a")"});
}

TEST(JsonSchemaStrings, Formats) {
  Language date = schema_language(R"({"type":"string","format":"date"})");
  const auto leap = [](int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; };
  for (int year : {0, 1900, 2000, 2023, 2024, 2100, 2400, 9999}) {
    for (int month = 0; month <= 13; ++month) {
      for (int day = 0; day <= 32; ++day) {
        const int days = month == 2 ? (leap(year) ? 29 : 28)
                         : (month == 4 || month == 6 || month == 9 || month == 11) ? 30
                                                                                   : 31;
        const bool want = month >= 1 && month <= 12 && day >= 1 && day <= days;
        const std::string text = fmt::format("\"{:04}-{:02}-{:02}\"", year, month, day);
        EXPECT_EQ(date(text), want) << text;
      }
    }
  }
  EXPECT_TRUE(date(R"("\u0032024-01-01")"));  // a date spelled with an escape is a date
  EXPECT_FALSE(date(R"("2024-1-01")"));
  expect_language(
      R"({"type":"string","format":"time"})",
      {R"("00:00:00Z")", R"("23:59:60z")", R"("12:30:00.123456+05:30")", R"("12:30:00-23:59")"},
      {R"("24:00:00Z")", R"("12:60:00Z")", R"("12:00:61Z")", R"("12:00:00")", R"("12:00:00.Z")",
       R"("12:00:00+24:00")", R"("12:00Z")"});
  expect_language(R"({"type":"string","format":"date-time"})",
                  {R"("2024-02-29T23:59:59Z")", R"("2024-02-29t00:00:00.5+01:00")"},
                  {R"("2023-02-29T00:00:00Z")", R"("2024-02-29 23:59:59Z")", R"("2024-02-29")"});
  expect_language(
      R"({"type":"string","format":"uuid"})",
      {R"("123e4567-e89b-12d3-a456-426614174000")", R"("123E4567-E89B-12D3-A456-426614174000")"},
      {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
}

TEST(JsonSchemaStrings, Patterns) {
  struct Case {
    const char* pattern;
    std::vector<std::string> valid, invalid;  // the strings' contents, JSON-escaped
  };
  const std::vector<Case> cases = {
      {"^[a-z]+\\\\d{2,3}$", {"ab12", "x123", "\\u0078123"}, {"12", "ab1", "ab1234", "AB12"}},
      {"ab|^c", {"xxab", "cd", "a\\u0062"}, {"dc", "ba", ""}},
      {"^(ab)*c?$", {"", "ab", "ababc", "c"}, {"abca", "a", "cc"}},
      {"^(a|)+$", {"", "a", "aaa"}, {"b", "ab"}},
      {"^(a*b?)*$", {"", "ab", "bba"}, {"c", "abc"}},
      {"^.{2}$", {"ab", "😀é", "\\t\\t"}, {"a\\n", "\\r\\r", "abc", "a"}},
      {"^[\\\\-\\\\]x]$", {"-", "]", "x"}, {"\\\\", "y"}},
      {"^[^a-c\\\"]*$", {"xyz", "", "\\\\"}, {"a", "\\\""}},
      {"\\\\s", {"a b", "\\u2028", "\\u00a0", "\\t"}, {"ab"}},
      {"^\\\\S\\\\W$", {"a!", "\\u00e9 "}, {"ab", " !"}},
      {"^\\\\$\\\\d+(\\\\.\\\\d{2})?$", {"$5", "$5.00"}, {"$5.0", "5"}},
      {"^(?:x|y){2,}$", {"xy", "yyx"}, {"x", "xz"}},
      {"^(?<y>\\\\d{4})-\\\\D$", {"2024-x"}, {"2024-1"}},
      {"x*?y{1,2}?", {"y", "xxyy", "ay"}, {"x", ""}},
      {"^[😀-😂]$", {"😁", "\\ud83d\\ude02"}, {"😃"}},
      {"^\\\\u00e9?[\\\\u0100-\\\\u017f]*$", {"", "éĀſ"}, {"ſé", "ƀ"}},
  };
  for (const Case& c : cases) {
    std::vector<std::string> valid, invalid;
    for (const std::string& v : c.valid) valid.push_back("\"" + v + "\"");
    for (const std::string& v : c.invalid) invalid.push_back("\"" + v + "\"");
    invalid.push_back("1");
    expect_language(fmt::format(R"({{"type":"string","pattern":"{}"}})", c.pattern), valid,
                    invalid);
  }
}

TEST(JsonSchemaStrings, UnsupportedPatternsAreErrors) {
  for (const char* p :
       {"a(?=b)", "a(?!b)", "(?<=a)b", "(a)\\\\1", "\\\\bword", "\\\\p{L}", "[]", "a^b", "a$b",
        "(ab", "ab)", "*a", "a**", "\\\\k<x>", "[b-a]", "a{3,2}", "\\\\u{1F600}"}) {
    const std::string e =
        error_of(fmt::format(R"({{"properties":{{"s":{{"type":"string","pattern":"{}"}}}}}})", p));
    EXPECT_NE(e.find("req.schema: pattern"), std::string::npos) << p << ": " << e;
    EXPECT_NE(e.find("at $.properties.s"), std::string::npos) << p << ": " << e;
  }
}

TEST(JsonSchemaEnums, AnyJsonValueWithItsStringsCanonicallySpelled) {
  expect_language(R"({"enum":["red","grün",1,2.5,null,true,[1,"a"],{"k":"v","a":[]}]})",
                  {R"("red")", R"("grün")", "1", "2.5", "null", "true", R"([ 1 , "a" ])",
                   R"({"k":"v","a":[]})", R"( { "k" : "v" , "a" : [ ] } )"},
                  {R"("blue")", R"("r\u0065d")", R"("gr\u00FCn")", R"("gr\u00fcn")",
                   R"([1,"\u0061"])", R"({"\u006b":"v","a":[]})", R"({"k":"\u0076","a":[]})", "1.0",
                   "2.50", "false", R"(["a",1])", R"({"a":[],"k":"v"})", R"({"k":"v"})"});
  expect_language(R"({"const":"x\ny"})", {R"("x\ny")"},
                  {R"("x\u000Ay")", R"("x\u000ay")", R"("xy")"});
  expect_language(R"({"type":"string","enum":["a",1,"b"]})", {R"("a")", R"("b")"}, {"1"});
  expect_language(R"({"type":["integer","null"],"enum":[1,1.0,null,"x",2.5]})", {"1", "null"},
                  {"2.5", R"("x")"});
  EXPECT_NE(error_of(R"({"type":"string","enum":[1]})").find("no value of enum"),
            std::string::npos);
}

TEST(JsonSchemaEnums, OneCanonicalSpellingPerCharacter) {
  // Raw where JSON allows it (U+007F, U+2028, astral and "/" too), else the short escape, else
  // \u00xx in lowercase: Python's json.dumps(s, ensure_ascii=False).
  struct Case {
    const char* value;                   // the schema's string, as JSON
    std::string canonical;               // the one text accepted
    std::vector<std::string> spellings;  // the same string spelled otherwise
  };
  const std::vector<Case> cases = {
      {R"("a\"b")", R"("a\"b")", {R"("a\u0022b")", R"("\u0061\"b")"}},
      {R"("a\\b")", R"("a\\b")", {R"("a\u005cb")", R"("a\u005Cb")"}},
      {R"("t\tb\bf\fn\nr\r")",
       R"("t\tb\bf\fn\nr\r")",
       {R"("t\u0009b\bf\fn\nr\r")", R"("t\tb\u0008f\fn\nr\r")", R"("t\tb\bf\u000cn\nr\r")",
        R"("t\tb\bf\fn\u000ar\r")", R"("t\tb\bf\fn\nr\u000D")"}},
      {R"("\u0001\u001f")", R"("\u0001\u001f")", {R"("\u0001\u001F")"}},
      {R"("a/b")", R"("a/b")", {R"("a\/b")", R"("a\u002fb")"}},
      {R"("\u007f\u2028")", "\"\x7f\u2028\"", {R"("\u007f\u2028")", "\"\x7f\\u2028\""}},
      {R"("😀é")", R"("😀é")", {R"("\ud83d\ude00é")", R"("😀\u00e9")"}},
      {R"("")", R"("")", {}},
  };
  for (const Case& c : cases) {
    // The string as a const, one of an enum, a key inside a const, and a listed property's key.
    const std::vector<std::pair<std::string, std::string>> forms = {
        {fmt::format(R"({{"const":{}}})", c.value), "{}"},
        {fmt::format(R"({{"enum":[{},"zz"]}})", c.value), "{}"},
        {fmt::format(R"({{"const":[{{{}:1}}]}})", c.value), "[{{{}:1}}]"},
        {fmt::format(R"({{"properties":{{{}:{{"const":1}}}},"additionalProperties":false}})",
                     c.value),
         "{{{}:1}}"},
    };
    for (const auto& [schema, text] : forms) {
      std::vector<std::string> other;
      for (const std::string& o : c.spellings) other.push_back(fmt::format(fmt::runtime(text), o));
      expect_language(schema, {fmt::format(fmt::runtime(text), c.canonical)}, other);
    }
  }
}

// --- objects and arrays ---

TEST(JsonSchemaObjects, EveryKeySequenceAgainstRequiredAndExtras) {
  const std::vector<std::string> keys = {"a", "b", "c", "x"};  // x: not listed
  // Every sequence of distinct keys, length 0..4.
  std::vector<std::vector<int>> sequences = {{}};
  for (std::size_t at = 0; at < sequences.size(); ++at)
    for (int k = 0; k < 4; ++k) {
      if (std::find(sequences[at].begin(), sequences[at].end(), k) != sequences[at].end()) continue;
      auto longer = sequences[at];
      longer.push_back(k);
      sequences.push_back(longer);
    }
  for (int required_mask = 0; required_mask < 8; ++required_mask) {
    for (int extras = 0; extras < 3; ++extras) {  // additionalProperties: false, true, a schema
      Json schema = {{"type", "object"},
                     {"properties",
                      {{"a", {{"type", "integer"}}},
                       {"b", {{"type", "integer"}}},
                       {"c", {{"type", "integer"}}}}}};
      Json required = Json::array();
      for (int k = 0; k < 3; ++k)
        if (required_mask >> k & 1) required.push_back(keys[k]);
      schema["required"] = required;
      if (extras == 0) schema["additionalProperties"] = false;
      if (extras == 2) schema["additionalProperties"] = {{"type", "integer"}};
      Language accepts(json_schema_to_gbnf(schema, "test"));
      for (const auto& seq : sequences) {
        bool want = extras != 0 || std::find(seq.begin(), seq.end(), 3) == seq.end();
        for (std::size_t i = 1; i < seq.size(); ++i)
          want = want && seq[i] > seq[i - 1];  // x (3) last
        for (int k = 0; k < 3; ++k)
          if (required_mask >> k & 1)
            want = want && std::find(seq.begin(), seq.end(), k) != seq.end();
        std::string text = "{";
        for (std::size_t i = 0; i < seq.size(); ++i)
          text += fmt::format("{}\"{}\": {}", i ? ", " : "", keys[seq[i]], i);
        text += "}";
        EXPECT_EQ(accepts(text), want) << schema.dump() << " " << text;
      }
    }
  }
}

TEST(JsonSchemaObjects, ListedKeysCanonicalExtrasInEverySpellingButNeverListed) {
  const std::string schema =
      R"({"type":"object","properties":{"ab":{"type":"integer"},"é":{"type":"null"}},"additionalProperties":{"type":"string"}})";
  expect_language(schema,
                  {R"({"ab":1})", R"({"ab":1,"é":null})", R"({"a":"x","abc":"y","":"z"})",
                   R"({"ab":1,"b":"","a\u0062c":""})", R"({"é":null,"e":"x"})",
                   R"({"é":null,"\u0065":"x","\u00e9\u00E9":"y"})"},
                  {R"({"\u0061b":1})", R"({"\u00E9":null})", R"({"\u00e9":null})", R"({"ab":"1"})",
                   R"({"ab":1,"ab":2})", R"({"ab":1,"\u0061b":"x"})", R"({"ab":1,"\u00e9":"x"})",
                   R"({"\u00e9":null,"\u00e9":"x"})", R"({"x":"1","ab":1})", R"({"ab":1,})",
                   R"({,})", R"({"ab" 1})"});
  // Keys listed only in `required` are fixed strings too.
  expect_language(R"({"type":"object","required":["id"],"additionalProperties":{"type":"string"}})",
                  {R"({"id":"a"})", R"({"id":"a","x":"b"})", R"({"id":"a","\u0078":"b"})"},
                  {"{}", R"({"x":"b","id":"a"})", R"({"id":1})", R"({"\u0069d":"a"})",
                   R"({"id":"a","\u0069d":"b"})", R"({"id":"a","i\u0064":"b"})"});
}

TEST(JsonSchemaObjects, FixedStringsCanonicalFreeStringsInAnySpelling) {
  // What a random model wrote before: "\u0063ity" as a key. Only the fixed strings (keys, enum
  // values) are narrowed; what the model writes freely keeps every spelling.
  const std::string schema = R"({"type":"object","properties":{
      "city":{"enum":["Paris","Zürich"]},"note":{"type":"string"},"tag":{"type":"string","pattern":"^c"}},
      "required":["city"],"additionalProperties":{"type":"string"}})";
  expect_language(
      schema,
      {R"({"city":"Paris"})", R"({"city":"Zürich","note":"x"})",
       R"({"city":"Paris","note":"\u0063\u00E9\n\/\ud83d\ude00","tag":"\u0063x"})",
       R"({"city":"Paris","\u0063itx":"\u0079"})", R"({"city":"Paris","cit\u00fd":"y"})"},
      {R"({"\u0063ity":"Paris"})", R"({"c\u0069ty":"Paris"})", R"({"city":"P\u0061ris"})",
       R"({"city":"Z\u00fcrich"})", R"({"city":"Z\u00FCrich"})",
       R"({"city":"Paris","\u0063ity":"x"})", R"({"city":"Paris","\u006eote":"x"})",
       R"({"city":"Paris","note":"x","not\u0065":"y"})", R"({"city":"Paris","ta\u0067":"c"})"});
  // A forced tool call's shape: the name is a const.
  expect_language(R"({"type":"object","properties":{"name":{"const":"get_weather"},"arguments":{}},
                      "required":["name","arguments"],"additionalProperties":false})",
                  {R"({"name":"get_weather","arguments":{"\u0063ity":"Paris"}})"},
                  {R"({"name":"get\u005fweather","arguments":{}})",
                   R"({"n\u0061me":"get_weather","arguments":{}})"});
}

TEST(JsonSchemaObjects, PropertiesInTheOrderWritten) {
  const std::string text =
      R"({"type":"object","properties":{"zeta":{"type":"integer"},"alpha":{"type":"integer"}},
                              "required":["zeta","alpha"],"additionalProperties":false})";
  Language ordered(json_schema_to_gbnf(Json::parse(text), "test"));
  EXPECT_TRUE(ordered(R"({"zeta":1,"alpha":2})"));
  EXPECT_FALSE(ordered(R"({"alpha":2,"zeta":1})"));
  // nlohmann::json sorts keys, so that overload asks for them sorted.
  Language sorted(json_schema_to_gbnf(nlohmann::json::parse(text), "test"));
  EXPECT_TRUE(sorted(R"({"alpha":2,"zeta":1})"));
  EXPECT_FALSE(sorted(R"({"zeta":1,"alpha":2})"));
}

TEST(JsonSchemaArrays, EveryLengthAgainstMinAndMaxItems) {
  for (int least = 0; least <= 3; ++least) {
    for (int most = least; most <= 5; ++most) {
      for (int prefix = 0; prefix <= 2; ++prefix) {
        for (bool closed : {false, true}) {
          Json schema = {{"type", "array"},
                         {"items", closed ? Json(false) : Json{{"type", "integer"}}},
                         {"minItems", least},
                         {"maxItems", most},
                         {"prefixItems", Json::array()}};
          for (int i = 0; i < prefix; ++i)
            schema["prefixItems"].push_back({{"const", fmt::format("p{}", i)}});
          const int top = closed ? std::min(most, prefix) : most;
          if (least > top) {
            EXPECT_NE(error_of(schema.dump()).find("minItems"), std::string::npos) << schema.dump();
            continue;
          }
          Language accepts(json_schema_to_gbnf(schema, "test"));
          for (int n = 0; n <= 7; ++n) {
            std::string text = "[";
            for (int i = 0; i < n; ++i)
              text += (i ? "," : "") + (i < prefix ? fmt::format("\"p{}\"", i) : std::to_string(i));
            text += "]";
            EXPECT_EQ(accepts(text), least <= n && n <= top) << schema.dump() << " " << text;
          }
          if (prefix > 0) {
            EXPECT_FALSE(accepts(least > 0 ? "[7]" : "[7,8]")) << schema.dump();
          }
        }
      }
    }
  }
  expect_language(R"({"type":"array"})", {"[]", "[ ]", R"([1,"a",[{}],null])"},
                  {"[", "[1,]", "[,1]", "{}"});
}

// --- combinations and references ---

TEST(JsonSchemaRefs, RecursionBecomesRuleReferences) {
  const std::string tree =
      R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},
      "kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},
      "$ref":"#/$defs/node"})";
  std::string deep = R"({"v":0})";
  for (int i = 1; i < 60; ++i) deep = fmt::format(R"({{"v":{},"kids":[{},{{"v":1}}]}})", i, deep);
  expect_language(tree, {R"({"v":1})", R"({"v":1,"kids":[]})", deep},
                  {R"({"kids":[]})", R"({"v":1,"kids":[{}]})"});
  expect_language(
      R"({"definitions":{"list":{"anyOf":[{"type":"null"},{"type":"object","properties":{"head":{"type":"integer"},
          "tail":{"$ref":"#/definitions/list"}},"required":["head","tail"],"additionalProperties":false}]}},
          "$ref":"#/definitions/list"})",
      {"null", R"({"head":1,"tail":{"head":2,"tail":null}})"}, {R"({"head":1})", "[]"});
  expect_language(R"({"type":"array","items":{"anyOf":[{"type":"integer"},{"$ref":"#"}]}})",
                  {"[]", "[1,[2,[[]]]]"}, {"[1,[2,[[]]]", "[[\"a\"]]"});
  expect_language(R"({"$defs":{"s":{"type":"string"}},"$ref":"#/$defs/s","maxLength":3})",
                  {R"("abc")"}, {R"("abcd")", "1"});
  EXPECT_NE(
      error_of(
          R"({"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"},{"type":"null"}]},"b":{"$ref":"#/$defs/a"}},
                        "$ref":"#/$defs/a"})")
          .find("can begin with itself"),
      std::string::npos);
}

TEST(JsonSchemaCombinations, AnyOfOneOfAllOfAndTypeLists) {
  expect_language(R"({"anyOf":[{"type":"string","maxLength":1},{"type":"integer","minimum":5}]})",
                  {R"("a")", "5", "99"}, {R"("ab")", "4", "null"});
  expect_language(R"({"oneOf":[{"type":"integer"},{"type":"number","minimum":0}]})",
                  {"1", "-1", "1.5"}, {"-1.5"});
  expect_language(
      R"({"allOf":[{"type":"integer","minimum":0},{"maximum":10},{"exclusiveMaximum":10}]})",
      {"0", "9"}, {"10", "-1"});
  expect_language(R"({"type":["string","null"],"maxLength":2})", {R"("ab")", "null"},
                  {R"("abc")", "1"});
  expect_language(R"({"type":["integer","boolean"],"minimum":3})", {"3", "true"}, {"2", "null"});
  expect_language(R"({"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"],
                      "anyOf":[{"properties":{"n":{"type":"integer"}},"required":["n"]},{"properties":{"s":{}}}]})",
                  {R"({"k":"a","n":1})", R"({"k":"b"})", R"({"k":"b","s":[]})"},
                  {R"({"n":1})", R"({"k":"c"})"});
  expect_language("{}", {"1", "[]", R"({"a":[{}]})", R"("x")"}, {"nul", "", "[1,]"});
  expect_language("true", {"null", "{}"}, {"{", "x"});
  expect_language(
      R"({"title":"T","description":"d","$schema":"x","$id":"y","default":1,"examples":[1],
                      "$comment":"c","deprecated":true,"readOnly":true,"writeOnly":false,"type":"boolean"})",
      {"true", "false"}, {"1"});
}

TEST(JsonSchemaWhitespace, NothingOneSpaceOrNewlineAndIndent) {
  Language accepts = schema_language(
      R"({"type":"object","properties":{"a":{"type":"array"},"b":{"enum":[[1,{"k":2}]]}}})");
  // Every place whitespace may go (around the text, inside a listed member, an array, an enum
  // value), each filled with the same run.
  const auto spaced = [](const std::string& w) {
    return w + "{" + w + "\"a\"" + w + ":" + w + "[" + w + "1" + w + "," + w + "{" + w + "\"x\"" +
           w + ":" + w + "[" + w + "]" + w + "}" + w + "]" + w + "," + w + "\"b\"" + w + ":" + w +
           "[" + w + "1" + w + "," + w + "{" + w + "\"k\"" + w + ":" + w + "2" + w + "}" + w + "]" +
           w + "}" + w;
  };
  const std::string indent20(20, ' '), indent21(21, ' ');
  for (const std::string& ok :
       {std::string(), std::string(" "), std::string("\n"), std::string("\n    "),
        std::string("\n\t\t"), std::string("\n \t \t"), "\n" + indent20})
    EXPECT_TRUE(accepts(spaced(ok))) << spaced(ok);
  for (const std::string& bad :
       {std::string("  "), std::string("\n\n"), std::string("\r\n"), "\n" + indent21,
        std::string("\t"), std::string("\r"), std::string(" \n"), std::string("\n\r"),
        std::string("\n  \n"), std::string("\f"), std::string("\v")}) {
    EXPECT_FALSE(accepts(spaced(bad))) << spaced(bad);
    // Once, anywhere outside a string: each place rejects the run on its own.
    const std::string plain = spaced("");
    for (std::size_t at = 0; at <= plain.size(); ++at) {
      if (std::count(plain.begin(), plain.begin() + static_cast<long>(at), '"') % 2) continue;
      const std::string text = plain.substr(0, at) + bad + plain.substr(at);
      EXPECT_FALSE(accepts(text)) << text;
    }
  }
  EXPECT_TRUE(accepts("{\n  \"a\": [\n    1,\n    2\n  ]\n}\n"));  // json.dumps(indent=2)
  EXPECT_FALSE(accepts("{\n  \"a\": [1]\n}\n\n"));
}

TEST(JsonSchemaErrors, NameTheKeywordAndThePath) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"properties":{"a":{"patternProperties":{}}}})",
       "req.schema: unsupported keyword 'patternProperties' at $.properties.a"},
      {R"({"items":{"not":{}}})", "unsupported keyword 'not' at $.items"},
      {R"({"anyOf":[{"type":"integer"},{"multipleOf":2}]})",
       "unsupported keyword 'multipleOf' at $.anyOf[1]"},
      {R"({"properties":{"a b":{"type":"string","format":"email"}}})",
       "unsupported format 'email'"},
      {R"({"properties":{"a b":{"type":"string","format":"email"}}})", R"(at $.properties["a b"])"},
      {R"({"type":"array","minItems":-1})",
       "'minItems' must be a non-negative integer, got -1 at $"},
      {R"({"type":"array","minItems":3,"maxItems":2})", "'minItems' 3 is above 'maxItems' 2 at $"},
      {R"({"type":"integer","minimum":5,"maximum":4})",
       "no integer lies within minimum and maximum at $"},
      {R"({"prefixItems":[{"$ref":"#/$defs/x"}]})",
       "$ref target '#/$defs/x' not found at $.prefixItems[0]"},
      {R"({"$ref":"http://example.com/s.json"})", "only local $ref"},
      {R"({"type":"number","maximum":10})", "'maximum' 10 on a number is not enforced"},
      {R"({"type":"strin"})", "'type' must be a type name"},
      {R"({"type":"object","required":["x"],"additionalProperties":false})",
       "required property 'x' is not in properties and additionalProperties is false at "
       "$.required"},
      {R"({"type":"string","pattern":"a","minLength":1})", "'pattern' beside 'minLength'"},
      {R"({"enum":[1],"minimum":0})", "'minimum' beside enum or const"},
      {R"({"items":[{}]})", "use prefixItems"},
      {R"({"uniqueItems":true})", "uniqueItems"},
      {R"({"type":"string","maxLength":10001})", "'maxLength' above 10000"},
      {"false", "the schema false admits no value at $"},
      {R"({"properties":{"a":3}})", "a schema must be an object or a boolean at $.properties.a"},
      {R"({"allOf":[{"pattern":"a"},{"pattern":"b"}]})",
       "allOf cannot be merged: two different 'pattern'"},
      {R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "allOf admits no value"},
      {R"({"$defs":{"a":{"$ref":"#/$defs/a","minLength":1}},"$ref":"#/$defs/a"})", "a $ref cycle"},
  };
  for (const auto& [schema, want] : cases)
    EXPECT_NE(error_of(schema).find(want), std::string::npos)
        << schema << "\n  got: " << error_of(schema);
}

TEST(JsonObjectGbnf, AnyObjectAndNothingElse) {
  Language accepts(json_object_gbnf());
  for (const char* ok :
       {"{}", R"({"a":1,"b":[true,{"c":null}],"":"\u00e9"})", " {\n  \"a\": -1.5e3\n} "})
    EXPECT_TRUE(accepts(ok)) << ok;
  for (const char* bad : {"[]", "1", R"("a")", "{", R"({"a"})", R"({"a":01})", R"({a:1})", "{\r\n}",
                          R"({"a":1,  "b":2})"})
    EXPECT_FALSE(accepts(bad)) << bad;
}

}  // namespace
}  // namespace ls::grammar
