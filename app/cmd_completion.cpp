// `logitscope completion bash` prints a bash completion script built from the command tree
// itself (every subcommand and its flags, so it never goes stale), and `--help-all` prints the
// help of every command at once (the reference a man page would give).
#include <fmt/format.h>

#include <map>
#include <string>

#include "app/commands.h"
#include "core/error.h"

namespace ls::app {

namespace {

// Every long and short name of a command's options: "--model -m --threads ...".
std::string flag_words(const CLI::App& cmd) {
  std::string words;
  for (const CLI::Option* opt : cmd.get_options()) {
    for (const std::string& n : opt->get_lnames()) words += (words.empty() ? "--" : " --") + n;
    for (const std::string& n : opt->get_snames()) words += (words.empty() ? "-" : " -") + n;
  }
  return words;
}

std::string bash_script(const CLI::App& root) {
  std::string commands, cases;
  for (const CLI::App* sub : root.get_subcommands({})) {
    commands += (commands.empty() ? "" : " ") + sub->get_name();
    cases += fmt::format("    {}) flags=\"{}\" ;;\n", sub->get_name(), flag_words(*sub));
  }
  // A word that does not start with '-' gets no candidates here, so `complete -o default` falls
  // back to file names: flag values are mostly paths (models, prompts, outputs).
  return fmt::format(
      "# bash completion for logitscope: eval \"$(logitscope completion bash)\", or save it as\n"
      "# ~/.local/share/bash-completion/completions/logitscope\n"
      "_logitscope() {{\n"
      "  local cur=\"${{COMP_WORDS[COMP_CWORD]}}\" flags=\"\"\n"
      "  if [ \"$COMP_CWORD\" -eq 1 ]; then\n"
      "    COMPREPLY=($(compgen -W \"{} --help --help-all --version\" -- \"$cur\"))\n"
      "    return\n"
      "  fi\n"
      "  case \"${{COMP_WORDS[1]}}\" in\n"
      "{}"
      "  esac\n"
      "  if [[ \"$cur\" == -* ]]; then\n"
      "    COMPREPLY=($(compgen -W \"$flags --help\" -- \"$cur\"))\n"
      "  else\n"
      "    COMPREPLY=()\n"
      "  fi\n"
      "}}\n"
      "complete -o default -F _logitscope logitscope\n",
      commands, cases);
}

}  // namespace

void add_completion_command(CLI::App& app) {
  auto shell = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("completion", "Print a shell completion script: completion bash");
  cmd->add_option("shell", *shell, "The shell (bash)")->required();
  cmd->callback([&app, shell] {
    if (*shell != "bash") fail("completion: only bash is supported, got '{}'", *shell);
    fmt::print("{}", bash_script(app));
  });
  // Every command's help in one text; CLI::Success ends the parse with status 0, as --help does.
  app.add_flag_callback(
      "--help-all",
      [&app] {
        fmt::print("{}\n", app.help());
        for (const CLI::App* sub : app.get_subcommands({}))
          fmt::print("\n──── logitscope {} ────\n{}", sub->get_name(), sub->help());
        throw CLI::Success();
      },
      "Print the help of every command");
}

}  // namespace ls::app
