// The `logitscope` command: parses the command line and runs one subcommand. This is the only
// place that catches ls::Error: it prints "logitscope: error: <message>" and exits with the
// status contract of commands.h (docs/models.md: "Exit status").
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "app/commands.h"
#include "core/error.h"

namespace {

// Edit distance (insertions, deletions, substitutions), '-' and '_' counted as the same.
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const auto norm = [](char c) { return c == '_' ? '-' : c; };
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (norm(a[i - 1]) != norm(b[j - 1]))});
      diag = up;
    }
  }
  return row[b.size()];
}

// For "The following arguments were not expected": the closest flag of the command for each
// unknown one, one line each ("" when none is close: CLI11's own message is printed then).
std::string suggest_flags(const CLI::App& app) {
  std::string out;
  for (const CLI::App* sub : app.get_subcommands()) {
    for (const std::string& arg : sub->remaining()) {
      if (arg.rfind("--", 0) != 0) continue;
      const std::string flag = arg.substr(0, arg.find('='));
      std::string best;
      std::size_t best_d = flag.size() / 3 + 2;  // farther than this is no suggestion
      for (const CLI::Option* opt : sub->get_options())
        for (const std::string& name : opt->get_lnames()) {
          const std::size_t d = distance(flag, "--" + name);
          if (d < best_d) best_d = d, best = "--" + name;
        }
      if (!best.empty())
        out += "logitscope " + sub->get_name() + ": unknown flag " + flag + "; did you mean " +
               best + "?\n";
    }
  }
  return out;
}

}  // namespace

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
  ls::app::add_lens_command(app);
  ls::app::add_attribute_command(app);
  ls::app::add_tree_command(app);
  ls::app::add_serve_command(app);
  ls::app::add_pull_command(app);
  ls::app::add_models_command(app);
  ls::app::add_completion_command(app);  // last: it lists every command above
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
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr) {
      const std::string suggestions = suggest_flags(app);
      if (!suggestions.empty()) {  // one message, not CLI11's and ours
        std::fprintf(stderr, "%sRun with --help for more information.\n", suggestions.c_str());
        return ls::app::kExitUsage;
      }
    }
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
