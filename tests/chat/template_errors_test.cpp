// Failure behaviour of the template engine: every sandbox limit (loop iterations, recursion
// depth, output size, list size, value nesting, syntax nesting) fails with an ls::Error that
// names the limit, the template and the line; raise_exception() carries the template's own
// message; syntax errors carry the line of the offending tag.
#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

#include "jinja/template.h"

namespace ls::jinja {
namespace {

// Renders `source` and returns the TemplateError it must throw.
TemplateError render_error(
    const std::string& source, const RenderLimits& limits = {},
    const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
  try {
    Template::parse(source, "t.jinja").render(context, limits);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << source;
  return TemplateError("", 0, "");
}

TemplateError parse_error(const std::string& source) {
  try {
    Template::parse(source, "t.jinja");
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no syntax error for: " << source;
  return TemplateError("", 0, "");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(TemplateLimits, LoopIterations) {
  RenderLimits limits;
  limits.max_loop_iterations = 1000;
  auto e = render_error(
      "line1\n{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", limits);
  EXPECT_TRUE(contains(e.what(), "loop iteration limit (1000)")) << e.what();
  EXPECT_TRUE(contains(e.what(), "max_loop_iterations")) << e.what();
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.template_name(), "t.jinja");
  EXPECT_TRUE(contains(e.what(), "t.jinja:2:")) << e.what();
  // the same loops fit the default limit
  EXPECT_NO_THROW(
      Template::parse("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}")
          .render(nlohmann::ordered_json::object()));
}

// Loops and depth bound nothing here: two calls per level, 2^60 calls in all (issue 14). The
// operation budget stops it; CTest's timeout would catch a hang.
TEST(TemplateLimits, ExponentialMacroHitsTheOperationLimit) {
  auto e = render_error(
      "{% macro f(n) %}{% if n > 0 %}{% set a = f(n-1) %}{% set b = f(n-1) %}{% endif %}"
      "{% endmacro %}{{ f(60) }}x");
  EXPECT_TRUE(contains(e.what(), "operation limit (20000000)")) << e.what();
  EXPECT_TRUE(contains(e.what(), "max_operations")) << e.what();
  RenderLimits limits;
  limits.max_operations = 1000;
  e = render_error("{% for i in range(10000) %}{{ i }}{% endfor %}", limits);
  EXPECT_TRUE(contains(e.what(), "operation limit (1000)")) << e.what();
}

// A long string is shared, not copied, on every access, and its length is counted once: a
// loop over `s|length` of an 8 MB string costs what a loop over a short one does.
TEST(TemplateLimits, LongStringsAreSharedNotCopied) {
  nlohmann::ordered_json context = {{"s", std::string(8u << 20, 'a') + "\u00e9"}};
  const std::string out = Template::parse(
                              "{% for i in range(20000) %}{% set n = s|length %}{% set t = s %}"
                              "{% endfor %}{{ s|length }}")
                              .render(context);
  EXPECT_EQ(out, std::to_string((8u << 20) + 1));
}

TEST(TemplateLimits, LoopFilterCountsToo) {
  RenderLimits limits;
  limits.max_loop_iterations = 50;
  auto e = render_error("{% for i in range(1000) if i < 0 %}{% endfor %}", limits);
  EXPECT_TRUE(contains(e.what(), "loop iteration limit (50)")) << e.what();
}

TEST(TemplateLimits, MacroRecursion) {
  auto e = render_error("{% macro f(n) %}\n{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_TRUE(contains(e.what(), "recursion depth limit (100)")) << e.what();
  EXPECT_TRUE(contains(e.what(), "max_recursion_depth")) << e.what();
  EXPECT_EQ(e.line(), 2);
  RenderLimits limits;
  limits.max_recursion_depth = 5;
  auto small = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", limits);
  EXPECT_TRUE(contains(small.what(), "recursion depth limit (5)")) << small.what();
  // bounded recursion below the limit renders
  EXPECT_EQ(
      Template::parse(
          "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }}")
          .render(nlohmann::ordered_json::object(), limits),
      "4321");
}

TEST(TemplateLimits, RecursiveLoopAndCaller) {
  RenderLimits limits;
  limits.max_recursion_depth = 10;
  nlohmann::ordered_json deep = nlohmann::ordered_json::array();
  for (int i = 0; i < 20; ++i) deep = nlohmann::ordered_json::array({deep});
  auto e = render_error("{% for x in tree recursive %}{{ loop(x) }}{% endfor %}", limits,
                        {{"tree", deep}});
  EXPECT_TRUE(contains(e.what(), "recursion depth limit (10)")) << e.what();
  auto c = render_error(
      "{% macro m() %}{{ caller() }}{% endmacro %}{% macro r() %}{% call m() %}{{ r() }}{% endcall "
      "%}{% endmacro %}{{ r() }}",
      limits);
  EXPECT_TRUE(contains(c.what(), "recursion depth limit (10)")) << c.what();
}

TEST(TemplateLimits, OutputSize) {
  RenderLimits limits;
  limits.max_output_bytes = 100;
  auto e = render_error("{% for i in range(1000) %}0123456789{% endfor %}", limits);
  EXPECT_TRUE(contains(e.what(), "output size limit (100 bytes)")) << e.what();
  EXPECT_TRUE(contains(e.what(), "max_output_bytes")) << e.what();
  // strings built without output are bounded too
  auto doubling = render_error(
      "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% "
      "endfor %}",
      limits);
  EXPECT_TRUE(contains(doubling.what(), "output size limit")) << doubling.what();
  auto repeat = render_error("{% set s = 'x' * 1000000000000 %}");
  EXPECT_TRUE(contains(repeat.what(), "output size limit")) << repeat.what();
  auto replaced = render_error("{{ ('ab' * 20) | replace('', 'xxxxxxxxxx') }}", limits);
  EXPECT_TRUE(contains(replaced.what(), "limit")) << replaced.what();
}

TEST(TemplateLimits, ListSizeAndRange) {
  auto e = render_error("{% set l = [0] * 100000000000 %}");
  EXPECT_TRUE(contains(e.what(), "max_loop_iterations")) << e.what();
  auto r = render_error("{{ range(100001) | length }}");
  EXPECT_TRUE(contains(r.what(), "Range too big")) << r.what();
}

TEST(TemplateLimits, ValueNesting) {
  auto e = render_error(
      "{% set ns = namespace(v=[]) %}{% for i in range(1000) %}{% set ns.v = [ns.v] %}{% endfor "
      "%}");
  EXPECT_TRUE(contains(e.what(), "nesting deeper than")) << e.what();
  auto cycle = render_error(
      "{% set ns = namespace() %}{% for i in range(1000) %}{% set ns.self = [ns] %}{% endfor %}{{ "
      "ns }}");
  EXPECT_TRUE(contains(cycle.what(), "nesting deeper than")) << cycle.what();
}

TEST(TemplateLimits, IntegerOverflowIsAnError) {
  auto e = render_error("{{ 2 ** 64 }}");
  EXPECT_TRUE(contains(e.what(), "integer overflow")) << e.what();
}

// The small stack: 1 MiB; 4 MiB under AddressSanitizer (scripts/sanitize.sh), whose redzones
// make every interpreter frame several times larger than in a normal build.
#if defined(__SANITIZE_ADDRESS__)
#define LS_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LS_TEST_ASAN 1
#endif
#endif
#ifdef LS_TEST_ASAN
constexpr std::size_t kSmallStack = std::size_t{4} << 20;
#else
constexpr std::size_t kSmallStack = std::size_t{1} << 20;
#endif

// Runs `fn` on a thread with a kSmallStack stack (server worker threads may have small stacks).
template <typename Fn>
void on_small_stack(Fn fn) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, kSmallStack);
  pthread_t thread;
  auto trampoline = [](void* arg) -> void* {
    (*static_cast<Fn*>(arg))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attr, trampoline, &fn), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
}

TEST(TemplateLimits, DeepEvaluationFitsASmallStack) {
  // every level of recursion carries nested blocks and a long expression: the evaluation
  // depth bound must trip long before a 1 MiB stack runs out
  std::string blocks, ends, sum = "f(n + 1)";
  for (int i = 0; i < 30; ++i) {
    blocks += "{% if true %}";
    ends += "{% endif %}";
  }
  for (int i = 0; i < 250; ++i) sum += " + 1";
  std::string deep_blocks =
      "{% macro f(n) %}" + blocks + "{{ f(n + 1) }}" + ends + "{% endmacro %}{{ f(0) }}";
  std::string deep_expr = "{% macro f(n) %}{{ " + sum + " }}{% endmacro %}{{ f(0) }}";
  std::string messages[2];
  on_small_stack([&] {
    RenderLimits limits;
    limits.max_recursion_depth = 1000;
    for (int k = 0; k < 2; ++k) {
      try {
        Template::parse(k == 0 ? deep_blocks : deep_expr, "t.jinja")
            .render(nlohmann::ordered_json::object(), limits);
      } catch (const TemplateError& e) {
        messages[k] = e.what();
      }
    }
  });
  for (const auto& m : messages) EXPECT_TRUE(contains(m, "nested deeper than 1000 levels")) << m;
}

TEST(TemplateSyntax, NestingIsBounded) {
  std::string parens = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_TRUE(contains(parse_error(parens).what(), "nesting deeper than"));
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  EXPECT_TRUE(contains(parse_error(blocks).what(), "nesting deeper than"));
  std::string chain = "{{ x";
  for (int i = 0; i < 5000; ++i) chain += ".a";
  EXPECT_TRUE(contains(parse_error(chain + " }}").what(), "nested deeper than"));
  std::string sum = "{{ 1";
  for (int i = 0; i < 5000; ++i) sum += " + 1";
  EXPECT_TRUE(contains(parse_error(sum + " }}").what(), "nested deeper than"));
  std::string nots = "{{ " + [] {
    std::string s;
    for (int i = 0; i < 5000; ++i) s += "not ";
    return s;
  }() + "1 }}";
  EXPECT_TRUE(contains(parse_error(nots).what(), "nesting deeper than"));
}

TEST(TemplateSyntax, ErrorsNameTemplateAndLine) {
  auto unknown = parse_error("a\nb\nc\n{% frobnicate %}");
  EXPECT_EQ(unknown.line(), 4);
  EXPECT_TRUE(
      contains(unknown.what(), "t.jinja:4: syntax error: encountered unknown tag 'frobnicate'"))
      << unknown.what();
  auto unclosed = parse_error("{% for x in xs %}\n{{ x }}\n");
  EXPECT_TRUE(contains(unclosed.what(), "unexpected end of template")) << unclosed.what();
  EXPECT_TRUE(contains(unclosed.what(), "'endfor'")) << unclosed.what();
  EXPECT_EQ(unclosed.line(), 2);
  auto comment = parse_error("x\n\n{# open");
  EXPECT_EQ(comment.line(), 3);
  EXPECT_TRUE(contains(comment.what(), "Missing end of comment tag")) << comment.what();
  auto bad_char = parse_error("\n{{ 1 $ 2 }}");
  EXPECT_EQ(bad_char.line(), 2);
  auto include = parse_error("{% include 'x' %}");
  EXPECT_TRUE(contains(include.what(), "'include' is not supported")) << include.what();
  EXPECT_NO_THROW(Template::parse("{% if x %}{% endif %}"));
}

TEST(TemplateErrors, RaiseException) {
  auto e = render_error(
      "{% if messages | length == 0 %}\n  {{- raise_exception('No messages given!') }}\n{% endif "
      "%}",
      {}, {{"messages", nlohmann::ordered_json::array()}});
  EXPECT_TRUE(e.raised_by_template());
  EXPECT_EQ(e.message(), "No messages given!");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(std::string(e.what()), "t.jinja:2: No messages given!");
  const ls::Error& base = e;  // callers can catch the project's error type
  EXPECT_TRUE(contains(base.what(), "No messages given!"));
}

TEST(TemplateErrors, RuntimeErrorsCarryTheirLine) {
  auto e = render_error("ok\n{{ 'x' }}\n{{ 1 + 'a' }}");
  EXPECT_EQ(e.line(), 3);
  EXPECT_FALSE(e.raised_by_template());
  EXPECT_TRUE(contains(e.what(), "t.jinja:3: unsupported operand type(s) for +: 'int' and 'str'"))
      << e.what();
  auto m = render_error("{% macro m() %}\n\n{{ missing.attr }}{% endmacro %}\n{{ m() }}");
  EXPECT_EQ(m.line(), 3);
  EXPECT_TRUE(contains(m.what(), "'missing' is undefined")) << m.what();
}

TEST(TemplateErrors, ContextMustBeAnObject) {
  EXPECT_THROW(Template::parse("x").render(nlohmann::ordered_json::array()), ls::Error);
  EXPECT_EQ(Template::parse("x{{ a }}").render(nullptr), "x");
}

TEST(TemplateErrors, NoFileOrEnvironmentAccess) {
  // none of jinja2's loaders or Python's escape hatches exist
  EXPECT_THROW(Template::parse("{% include '/etc/passwd' %}"), TemplateError);
  EXPECT_THROW(Template::parse("{% import 'x' as y %}"), TemplateError);
  EXPECT_EQ(
      Template::parse("[{{ self }}][{{ environ }}][{{ ''.__class__ }}][{{ cycler.__init__ }}]")
          .render(nlohmann::ordered_json::object()),
      "[][][][]");
  auto e = render_error("{{ ''.__class__.__mro__[1].__subclasses__() }}");
  EXPECT_TRUE(contains(e.what(), "unsafe")) << e.what();
}

}  // namespace
}  // namespace ls::jinja
