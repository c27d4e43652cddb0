// Fuzz-style robustness test: thousands of randomly mutated templates (from the test corpus and
// the Qwen templates) must each either render or fail with an ls::Error - never crash, hang,
// or leak another exception type - under tight limits. Seeded, so failures reproduce.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "jinja/template.h"

namespace ls::jinja {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> seed_templates() {
  std::vector<std::string> seeds;
  auto read = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  fs::path root = LS_SOURCE_DIR;
  seeds.push_back(read(root / "data/qwen2.5_chat_template.jinja"));
  for (const auto& dir : {root / "tests/chat/templates", root / "tests/chat/cases"}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      std::string text = read(entry.path());
      if (entry.path().extension() == ".jinja") {
        seeds.push_back(text);
        continue;
      }
      if (entry.path().extension() != ".cases") continue;
      // one seed per case: the lines between "## case:" headers
      std::string current;
      std::size_t pos = 0;
      while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(pos, end - pos);
        if (line.rfind("## case:", 0) == 0) {
          if (!current.empty()) seeds.push_back(current);
          current.clear();
        } else if (line.rfind("## context:", 0) != 0) {
          current += line + "\n";
        }
        pos = end + 1;
      }
      if (!current.empty()) seeds.push_back(current);
    }
  }
  return seeds;
}

const char* const kFragments[] = {
    "{{",
    "}}",
    "{%",
    "%}",
    "{#",
    "#}",
    "{%-",
    "-%}",
    "{{-",
    "-}}",
    "{%+",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "|",
    "~",
    "*",
    "**",
    "//",
    "-",
    "+",
    "%",
    ".",
    ",",
    ":",
    "=",
    "==",
    "'",
    "\"",
    "\\",
    "\n",
    " ",
    " if ",
    " else ",
    " for x in ",
    " endfor ",
    " endif ",
    " in ",
    " not ",
    " is ",
    " and ",
    " or ",
    "loop",
    "loop.index",
    "loop(",
    "caller()",
    "recursive",
    "namespace(",
    "range(99999)",
    "messages",
    "messages[0]",
    "tools",
    ".content",
    "|tojson",
    "|join",
    "|map('upper')",
    "|selectattr('role')",
    "|sort",
    "|unique",
    "|indent(1000)",
    "|list",
    "|length",
    "|format(1)",
    "raise_exception('x')",
    "'%s%s%s' % ",
    "'{}{}'.format(",
    "* 999999999",
    "'x' * 99999",
    "{% macro m(a) %}{{ m(a) }}{% endmacro %}{{ m(1) }}",
    "{% for i in range(300) %}",
    "{% set ns = namespace(v=[]) %}",
    "{% set ns.v = [ns.v] %}",
    "{% raw %}",
    "{% endraw %}",
    "{% call m() %}",
    "{% endcall %}",
    "{% filter upper %}",
    "{% endfilter %}",
    "{% break %}",
    "\xff",
    "\xc3",
    "\xe4\xb8\xad",
    "\xf0\x9f\x98\x80",
    "\r\n",
    "\t",
    "0x",
    "1e999",
    "-9223372036854775808",
};

std::string mutate(std::string s, std::mt19937& rng) {
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n)(rng); };
  int steps = 1 + static_cast<int>(pick(4));
  for (int k = 0; k < steps; ++k) {
    std::size_t pos = s.empty() ? 0 : pick(s.size());
    switch (pick(5)) {
      case 0:  // delete a range
        if (!s.empty()) s.erase(std::min(pos, s.size() - 1), pick(20));
        break;
      case 1:  // duplicate a range
        if (!s.empty()) s.insert(pos, s.substr(pick(s.size() - 1), pick(40)));
        break;
      case 2:  // insert a random byte
        s.insert(pos, 1, static_cast<char>(pick(255)));
        break;
      default:  // insert a syntax fragment
        s.insert(pos, kFragments[pick(std::size(kFragments) - 1)]);
    }
  }
  return s;
}

TEST(TemplateFuzz, MutatedTemplatesRenderOrFailCleanly) {
  auto seeds = seed_templates();
  ASSERT_GT(seeds.size(), 50u);
  RenderLimits limits;
  limits.max_output_bytes = 1 << 20;
  limits.max_loop_iterations = 20000;
  limits.max_recursion_depth = 40;
  nlohmann::ordered_json context = {
      {"messages",
       {{{"role", "system"}, {"content", "sys"}},
        {{"role", "user"}, {"content", "hi 你好"}},
        {{"role", "assistant"},
         {"content", "<think>x</think>ok"},
         {"tool_calls", {{{"function", {{"name", "f"}, {"arguments", {{"a", 1}}}}}}}}},
        {{"role", "tool"}, {"content", "r"}}}},
      {"tools",
       {{{"type", "function"},
         {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}}},
      {"add_generation_prompt", true},
      {"xs", {1, 2, 3}},
      {"name", "n"}};
  std::mt19937 rng(20240601);
  int rendered = 0, failed = 0, internal = 0;
  auto start = std::chrono::steady_clock::now();
  // LS_FUZZ_CASES raises the count for long local runs (e.g. under AddressSanitizer)
  const char* env = std::getenv("LS_FUZZ_CASES");
  const int kCases = env ? std::atoi(env) : 20000;
  const char* seed_env = std::getenv("LS_FUZZ_SEED");
  if (seed_env) rng.seed(static_cast<unsigned>(std::atoi(seed_env)));
  for (int i = 0; i < kCases; ++i) {
    std::string source = mutate(seeds[rng() % seeds.size()], rng);
    try {
      Template::parse(source, "fuzz").render(context, limits);
      ++rendered;
    } catch (const ls::Error& e) {
      ++failed;
      if (std::string(e.what()).find("internal error") != std::string::npos) {
        ++internal;
        ADD_FAILURE() << "internal error: " << e.what() << "\nfor template:\n" << source;
      }
    } catch (const std::exception& e) {
      FAIL() << "non-ls::Error exception " << e.what() << "\nfor template:\n" << source;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fuzz: %d templates, %d rendered, %d failed with ls::Error, %.2f s\n", kCases,
              rendered, failed, seconds);
  EXPECT_EQ(internal, 0);
  EXPECT_GT(rendered, kCases / 20);    // the mutations must not be all syntax errors
  EXPECT_LT(seconds, 0.003 * kCases);  // no hang (20000 cases take ~2 s, ~8 s under ASan)
}

}  // namespace
}  // namespace ls::jinja
