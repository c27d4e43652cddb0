// The `logitscope` command: parses the command line and runs one subcommand. This is the only
// place that catches ls::Error: it prints "logitscope: error: <message>" and exits with the
// status contract of commands.h (README: "Exit status").
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "app/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"logitscope: see how a Qwen2.5 model chooses its next token"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "logitscope 0.1.0");
  app.footer(
      "Exit status: 0 success; 1 bad input or a model problem (the message names the file, field "
      "or flag); 2 usage (a flag that does not parse, named); 3 a lab threshold not met (eval "
      "--min-rate); 4 an internal error (a bug: please report it).\n"
      "Files: inputs must be regular files (text inputs at most 64 MiB); devices, FIFOs and "
      "directories are refused. Outputs are written whole (FILE.partial, then renamed) and "
      "replace only a regular file; a symlink is written through (the file it names is "
      "replaced).");
  ls::app::add_synth_command(app);
  ls::app::add_next_command(app);
  ls::app::add_bench_command(app);
  ls::app::add_generate_command(app);
  ls::app::add_score_command(app);
  ls::app::add_chat_command(app);
  ls::app::add_tokenize_command(app);
  ls::app::add_template_command(app);
  ls::app::add_quantize_command(app);
  ls::app::add_sweep_command(app);
  ls::app::add_compare_command(app);
  ls::app::add_seeds_command(app);
  ls::app::add_eval_command(app);
  ls::app::add_replay_command(app);
  ls::app::add_serve_command(app);
  // CLI11 says only "A subcommand is required" for an unknown one: name it and the known ones.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands({})) {
      found = found || sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::fprintf(stderr, "logitscope: unknown command '%s'; the commands are: %s\n", argv[1],
                   known.c_str());
      return ls::app::kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" that CLI11 answers with status 0; every other parse
    // error is a usage error (status 2), its message naming the flag.
    const int code = app.exit(e);
    return code == 0 ? 0 : ls::app::kExitUsage;
  } catch (const ls::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "logitscope: error: %s\n", e.what());
    return ls::app::kExitBadInput;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the file system refuses (a symlink loop, no permission).
    std::fflush(stdout);
    std::fprintf(stderr, "logitscope: error: %s: %s\n", e.path1().c_str(),
                 e.code().message().c_str());
    return ls::app::kExitBadInput;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "logitscope: internal error: %s\n"
                 "This is a bug in logitscope, not in your input: please report it with the "
                 "command line that caused it.\n",
                 e.what());
    return ls::app::kExitInternal;
  }
  return ls::app::exit_status;
}
