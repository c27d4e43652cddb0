// Every subcommand of the `logitscope` binary registers itself through one function here.
// Each add_*_command creates its CLI11 subcommand, owns its options and sets the callback that
// runs it. Callbacks throw ls::Error on bad input; main() turns that into a message and exit 1.
#pragma once

#include <CLI/CLI.hpp>

namespace ls::app {

void add_synth_command(CLI::App& app);
void add_next_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_score_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_template_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_seeds_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_replay_command(CLI::App& app);
void add_serve_command(CLI::App& app);

// A command that wants a specific non-zero exit status (e.g. a failed eval) sets this.
inline int exit_status = 0;

}  // namespace ls::app
