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
void add_lens_command(CLI::App& app);
void add_attribute_command(CLI::App& app);
void add_tree_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_pull_command(CLI::App& app);
void add_models_command(CLI::App& app);
// `completion bash` and the root's --help-all; both read the whole command tree, so they are
// added last.
void add_completion_command(CLI::App& app);

// The exit-status contract (docs/models.md, --help): 0 success, 1 bad input or a model problem, 2 a
// usage error (a flag that does not parse), 3 a lab threshold not met, 4 an internal error.
inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitThreshold = 3;
inline constexpr int kExitInternal = 4;

// A command that wants a specific non-zero exit status (a failed eval: kExitThreshold) sets this.
inline int exit_status = 0;

}  // namespace ls::app
