// The continuation tree: the top-k branches of a prompt to depth d under the request's own
// decoding chain, each node with its exact probability after the chain and the model's raw
// log-probability, and each path's sums. Every level is one batched step: each expanded node
// forks its parent's KV cache (sharing the prefix) and feeds only its own token.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "decode/generation_config.h"
#include "decode/logits_source.h"

namespace ls::inspect {

struct TreeOptions {
  int k = 3;                     // children per node: the chain's k most probable tokens
  int depth = 3;                 // levels below the prompt
  double min_prob = 0.0;         // a child whose probability after the chain is below it is cut
  std::size_t max_nodes = 2000;  // refused upfront when k^1 + ... + k^depth could exceed it
};

struct TreeNode {
  std::int32_t token = 0;
  int parent = -1;  // index into TreeResult::nodes (-1: a child of the prompt)
  int depth = 1;
  double prob = 0;              // in the parent's distribution after the chain
  double logprob = 0;           // log of prob
  double raw_logprob = 0;       // log_softmax of the parent's raw logits: the model's own
  double path_logprob = 0;      // the sum of logprob from the root: the chain's sequence logprob
  double path_raw_logprob = 0;  // the sum of raw_logprob: what `score` gives the path
  std::vector<int> children;
};

struct TreeResult {
  std::vector<TreeNode> nodes;  // parents before children, level by level
  std::vector<int> roots;       // the prompt's children
  std::string chain;
  int forward_steps = 0;  // batched steps run (the prompt, then one per expanded level)
};

// k + k^2 + ... + k^depth, the most nodes such a tree can have; cap + 1 once it exceeds cap.
std::size_t tree_node_bound(int k, int depth, std::size_t cap);

// Throws naming the option on k < 1, depth < 1, min_prob outside [0, 1], a beam config, or a
// bound over max_nodes. Uses sequences 0.. of `source` and releases them.
TreeResult continuation_tree(decode::LogitsSource& source, std::span<const std::int32_t> prompt,
                             const decode::GenerationConfig& config, const TreeOptions& options);

}  // namespace ls::inspect
