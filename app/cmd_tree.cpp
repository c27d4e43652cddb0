// `logitscope tree`: the exact continuation tree of a prompt. The k most probable next tokens
// under the decoding chain the flags describe, then theirs, to --depth, each with its
// probability after the chain and the path's sequence log-probability (the chain's, and the
// model's raw one, which equals `score` of the path). KV forks share the prefix; one batched
// forward step per level.
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "app/commands.h"
#include "app/generation_cli.h"
#include "app/lab_common.h"
#include "app/prompt.h"
#include "core/error.h"
#include "core/text_width.h"
#include "engine/engine.h"
#include "inspect/tree.h"

namespace ls::app {

namespace {

struct TreeCli {
  ModelOptions model;
  PromptOptions prompt;
  GenerationFlags flags;
  inspect::TreeOptions tree;
  bool json = false;
};

nlohmann::ordered_json node_json(const inspect::TreeResult& t, int index, const LoadedModel& lm) {
  const inspect::TreeNode& n = t.nodes[static_cast<std::size_t>(index)];
  nlohmann::ordered_json j{{"id", n.token},
                           {"token", lm.token_text(n.token)},
                           {"prob", n.prob},
                           {"logprob", n.logprob},
                           {"raw_logprob", n.raw_logprob},
                           {"path_logprob", n.path_logprob},
                           {"path_raw_logprob", n.path_raw_logprob},
                           {"children", nlohmann::ordered_json::array()}};
  for (int c : n.children) j["children"].push_back(node_json(t, c, lm));
  return j;
}

void print_node(const inspect::TreeResult& t, int index, const LoadedModel& lm,
                const std::string& indent) {
  const inspect::TreeNode& n = t.nodes[static_cast<std::size_t>(index)];
  fmt::print("{}{} p {:>8.4f}   path p {:>10.6f}   path raw logprob {:>9.4f}\n", indent,
             pad_to_width(token_cell(lm, n.token), 24), n.prob, std::exp(n.path_logprob),
             n.path_raw_logprob);
  for (int c : n.children) print_node(t, c, lm, indent + "  ");
}

void run_tree(TreeCli& o) {
  LoadedModel lm = load_model(o.model);
  const std::vector<std::int32_t> ids = prompt_tokens(o.prompt, lm);
  if (ids.empty()) fail("the prompt is empty: give --prompt TEXT or --tokens IDS");
  const decode::GenerationConfig config = generation_config_from(o.flags, lm);
  ThreadPool pool(o.model.threads);
  engine::Engine engine(lm.model(), pool);
  inspect::TreeResult t;
  try {
    t = inspect::continuation_tree(engine, ids, config, o.tree);
  } catch (const Error& e) {
    // The library names k, depth and the node limit; the CLI adds the flags.
    fail("{} (--k {}, --depth {}, --max-nodes {})", e.what(), o.tree.k, o.tree.depth,
         o.tree.max_nodes);
  }
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = lm.path();
    j["input_tokens"] = ids;
    j["chain"] = t.chain;
    j["k"] = o.tree.k;
    j["depth"] = o.tree.depth;
    j["min_prob"] = o.tree.min_prob;
    j["nodes"] = t.nodes.size();
    j["forward_steps"] = t.forward_steps;
    j["children"] = nlohmann::ordered_json::array();
    for (int r : t.roots) j["children"].push_back(node_json(t, r, lm));
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    return;
  }
  fmt::print("model   {}\nprompt  {} tokens\nchain   {}\n", lm.path(), ids.size(), t.chain);
  fmt::print("tree    k {}, depth {}, min prob {}: {} nodes in {} batched forward steps\n\n",
             o.tree.k, o.tree.depth, o.tree.min_prob, t.nodes.size(), t.forward_steps);
  for (int r : t.roots) print_node(t, r, lm, "");
  fmt::print(
      "\np: after the chain, given the path before; path p: the product along the path; "
      "path raw logprob: the model's own, as `score` gives it\n");
}

}  // namespace

void add_tree_command(CLI::App& app) {
  auto o = std::make_shared<TreeCli>();
  auto* cmd = app.add_subcommand(
      "tree", "The exact continuation tree: the top-k branches to a depth, under the chain");
  add_model_options(*cmd, o->model);
  add_prompt_options(*cmd, o->prompt);
  add_generation_flags(*cmd, o->flags);
  cmd->add_option("--k", o->tree.k, "Branches per node (the chain's most probable tokens)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--depth", o->tree.depth, "Levels below the prompt")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--min-prob", o->tree.min_prob,
                  "Cut branches whose probability after the chain is below this")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--max-nodes", o->tree.max_nodes,
                  "Refuse a tree that could have more nodes (k + k^2 + ... + k^depth)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_flag("--json", o->json, "Print one JSON object (the tree nested) instead of the table");
  cmd->callback([o] { run_tree(*o); });
}

}  // namespace ls::app
