// Fuzz target: the sandboxed Jinja interpreter (src/jinja/template.h). Each input is a template
// source, parsed and rendered over a fixed chat context (messages with a tool call, tools,
// add_generation_prompt) under small RenderLimits, so every input finishes fast. It must render
// or throw ls::Error (TemplateError); an "internal error" message, any other exception, a
// crash or a hang is a finding (as in tests/chat/fuzz_test.cpp). A message the template raised
// itself (raise_exception) is its own text, whatever it says, so it is never a finding.
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz_util.h"
#include "jinja/template.h"

namespace {

const nlohmann::ordered_json& context() {
  static const nlohmann::ordered_json c = {
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
      {"bos_token", ""},
      {"eos_token", "<|im_end|>"},
      {"xs", {1, 2, 3}},
      {"name", "n"}};
  return c;
}

ls::jinja::RenderLimits limits() {
  ls::jinja::RenderLimits l;
  l.max_output_bytes = 64 << 10;
  // Small budgets: a mutated loop runs into them at once, so each input costs ~1 ms, not ~40
  // (the limits' own checks are what is tested; tests/chat covers the default values).
  l.max_loop_iterations = 1'000;
  l.max_recursion_depth = 30;
  l.max_operations = 20'000;
  return l;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const ls::jinja::RenderLimits kLimits = limits();
  try {
    const auto t =
        ls::jinja::Template::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    const std::string out = t.render(context(), kLimits);
    if (out.size() > kLimits.max_output_bytes) ls::fuzz::finding("output above max_output_bytes");
  } catch (const ls::jinja::TemplateError& e) {
    if (!e.raised_by_template() && e.message().find("internal error") != std::string::npos)
      ls::fuzz::finding(std::string("internal error: ") + e.what());
  } catch (const ls::Error& e) {
    if (std::string(e.what()).find("internal error") != std::string::npos)
      ls::fuzz::finding(std::string("internal error: ") + e.what());
  } catch (const std::exception& e) {
    ls::fuzz::finding(std::string("not an ls::Error: ") + e.what());
  } catch (...) {
    ls::fuzz::finding("a non-std::exception escaped");
  }
  return 0;
}
