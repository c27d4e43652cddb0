// The `logitscope` command: parses the command line and runs one subcommand. This is the only
// place that catches ls::Error: it prints "logitscope: <message>" and exits non-zero.
#include <cstdio>
#include <exception>

#include "app/commands.h"
#include "core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"logitscope: see how a Qwen2.5 model chooses its next token"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "logitscope 0.1.0");
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ls::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "logitscope: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "logitscope: internal error: %s\n", e.what());
    return 2;
  }
  return ls::app::exit_status;
}
