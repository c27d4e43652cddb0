// `logitscope chat`: an interactive multi-turn conversation through the model's chat template,
// streaming each reply, with the same decoding flags as `generate` and commands to reset the
// conversation, change a parameter, show the settings or trace the next replies. Each turn
// re-renders the whole conversation and prefills it again (no KV reuse across turns yet).
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include <nlohmann/json.hpp>

#include "app/commands.h"
#include "app/common.h"
#include "app/generation_cli.h"
#include "app/prompt.h"
#include "chat/chat_template.h"
#include "core/error.h"
#include "decode/generate.h"
#include "decode/trace_text.h"
#include "engine/engine.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace ls::app {

namespace {

struct ChatCli {
  ModelOptions model;
  GenerationFlags flags;
  std::string system;
  bool no_think = false;
  int trace = 0;
};

constexpr const char* kHelp =
    "commands:\n"
    "  /reset               forget the conversation (keeps the settings)\n"
    "  /set NAME VALUE      change a setting, e.g. /set temperature 0.3, /set top-k 20\n"
    "                       (a list is replaced: /set stop END)\n"
    "  /add NAME VALUE      add to a list setting, e.g. /add stop \\n\\n\n"
    "  /show                the settings in force and where each came from\n"
    "  /trace [N]           toggle the stage trace of each reply; N candidates per stage (0: off)\n"
    "  /quit                leave (end of input does too)\n";

// "\n" and "\t" typed in a /set or /add value (a stop string of a newline).
std::string unescape_chat(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == 'n' || s[i + 1] == 't')) {
      out += s[++i] == 'n' ? '\n' : '\t';
      continue;
    }
    out += s[i];
  }
  return out;
}

// "top-k", "--top-k" or "top_k" -> "top_k"; "stop" -> "stop_strings".
std::string field_name(std::string name) {
  while (!name.empty() && name[0] == '-') name.erase(0, 1);
  for (char& c : name) c = c == '-' ? '_' : c;
  for (const auto& f : decode::generation_fields()) {
    if (f.flag.substr(2) == name || f.name == name) return std::string(f.name);
  }
  std::string flag = name;
  for (char& c : flag) c = c == '_' ? '-' : c;
  for (const auto& f : decode::generation_fields()) {
    if (f.flag.substr(2) == flag) return std::string(f.name);
  }
  fail("/set: unknown setting '{}'; try /show for the names", name);
}

bool is_list_field(const std::string& name) {
  for (const auto& f : decode::generation_fields())
    if (f.name == name) return f.repeatable;
  return false;
}

void show(const decode::GenerationConfig& config) {
  // Named: a range-for over items() of a temporary would iterate a destroyed object.
  const auto settings = decode::settings_json(config);
  for (const auto& [name, entry] : settings.items()) {
    fmt::print("  {:<22} {:<24} {}\n", name, entry["value"].dump(),
               entry["source"].get<std::string>());
  }
}

void run_chat(ChatCli& o) {
  LoadedModel lm = load_model(o.model);
  if (!lm.tokenizer())
    fail("{}: chat needs a tokenizer (tokenizer.json, or tokenizer.ggml.* metadata in a GGUF)",
         lm.model().path());
  const chat::ChatTemplate& tmpl = lm.chat_template();
  decode::GenerationConfig config = generation_config_from(o.flags, lm);
  ThreadPool pool(o.model.threads);
  engine::Engine source(lm.model(), pool);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  auto start_conversation = [&] {
    messages = nlohmann::ordered_json::array();
    if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  };
  start_conversation();
  std::uint64_t turns = 0;  // replies so far, over /reset too
  fmt::print("chatting with {} ({}); /help for commands\n", lm.model().path(),
             decode::to_string(decode::decode_mode(config)));
  std::string line;
  while (true) {
    fmt::print("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line.empty()) continue;
    // A bad command or a failed turn must not end an interactive session: report and go on.
    try {
      if (line[0] == '/') {
        const auto space = line.find(' ');
        const std::string cmd = line.substr(0, space);
        const std::string rest = space == std::string::npos ? "" : line.substr(space + 1);
        if (cmd == "/quit" || cmd == "/exit") break;
        if (cmd == "/help") {
          fmt::print("{}", kHelp);
        } else if (cmd == "/reset") {
          start_conversation();
          fmt::print("(conversation cleared)\n");
        } else if (cmd == "/show") {
          show(config);
        } else if (cmd == "/trace") {
          // "/trace" toggles (5 candidates per stage); "/trace N" sets N, 0 turns it off.
          o.trace = rest.empty() ? (o.trace > 0 ? 0 : 5) : std::stoi(rest);
          fmt::print("(trace {})\n", o.trace > 0 ? fmt::format("on, top {}", o.trace) : "off");
        } else if (cmd == "/set" || cmd == "/add") {
          const auto sp = rest.find(' ');
          if (sp == std::string::npos)
            fail("{} needs NAME VALUE, e.g. {}", cmd,
                 cmd == "/set" ? "/set temperature 0.3" : "/add stop END");
          decode::GenerationConfig next = config;
          const std::string name = field_name(rest.substr(0, sp));
          const bool list = is_list_field(name);
          if (cmd == "/add" && !list)
            fail(
                "/add takes a list setting (stop, eos_token_id, suppress_tokens, ...); {} is one "
                "value: use /set",
                name);
          // set_from_flag appends to a list that flags already set: /set starts it afresh, /add
          // appends to whatever is in force (the model's, a flag's or an earlier /add's).
          if (list) next.sources[name] = cmd == "/add" ? "flag" : "default";
          decode::set_from_flag(next, name, unescape_chat(rest.substr(sp + 1)));
          decode::validate(next);
          config = std::move(next);
          fmt::print("({} = {})\n", name, decode::settings_json(config)[name]["value"].dump());
        } else {
          fmt::print("unknown command {}; /help lists them\n", cmd);
        }
        continue;
      }
      messages.push_back({{"role", "user"}, {"content", line}});
      const nlohmann::ordered_json vars =
          o.no_think ? nlohmann::ordered_json{{"enable_thinking", false}} : nullptr;
      const std::string text = tmpl.render(messages, nullptr, /*add_generation_prompt=*/true, vars);
      const std::vector<std::int32_t> ids = lm.tokenizer()->encode(text);
      decode::GenerateOptions go;
      go.token_bytes = [&](std::int32_t id) { return lm.token_bytes(id); };
      go.on_text = [](int, std::string_view t) {
        fmt::print("{}", t);
        std::fflush(stdout);
      };
      if (o.trace > 0) {
        go.trace_top_n = o.trace;
        // A mixture of experts: each step's router choice too, the best 2 per layer (as
        // generate --trace shows them by default).
        go.expert_routes = lm.model().config().moe.experts_per_token > 0;
        go.on_step = [&](const decode::StepTrace& s) {
          fmt::print(stderr, "{}", decode::format_step(s, go.token_bytes, 2));
        };
      }
      decode::GenerationConfig turn = for_reply(config, text, lm);
      turn.num_return_sequences = 1;
      // A fixed --seed gives each turn its own draws (seed + turn number), reproducibly: the
      // same seed every turn would replay the same random numbers in every reply.
      if (config.seed) turn.seed = *config.seed + turns;
      ++turns;
      const auto t0 = std::chrono::steady_clock::now();
      decode::GenerationRun run;
      try {
        run = decode::generate(source, ids, turn, go);
      } catch (...) {
        messages.erase(messages.size() - 1);
        throw;
      }
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const auto& r = run.sequences.front();
      messages.push_back({{"role", "assistant"}, {"content", r.text}});
      fmt::print("\n");
      fmt::print(stderr, "[{} tokens · finish {} · {:.1f} tok/s · prompt {} tokens]\n",
                 r.tokens.size(), decode::to_string(r.finish),
                 seconds > 0 ? static_cast<double>(r.tokens.size()) / seconds : 0.0, ids.size());
    } catch (const Error& e) {
      fmt::print(stderr, "error: {}\n", e.what());
    } catch (const std::logic_error&) {  // std::stoi in /trace
      fmt::print(stderr, "error: /trace expects a number\n");
    }
  }
  fmt::print("\n");
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto o = std::make_shared<ChatCli>();
  auto* cmd = app.add_subcommand("chat", "Interactive multi-turn chat through the chat template");
  o->model.huge_pages = true;  // long-running: decode speed over load time
  add_model_options(*cmd, o->model);
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--system", o->system, "System message");
  cmd->add_flag("--no-think", o->no_think,
                "Render the template with enable_thinking=false (Qwen3 answers without a <think> "
                "block)");
  cmd->add_option("--trace", o->trace, "Show every decoding stage of each reply (on stderr)")
      ->expected(0, 1)
      ->default_str("5");
  cmd->callback([o] { run_chat(*o); });
}

}  // namespace ls::app
