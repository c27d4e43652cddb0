// The continuation tree (see tree.h). Level by level: the parents' score rows go through the
// chain (a fresh Sampler per node, so stateful stages see exactly that node's history), the k
// most probable tokens above the cut become children, and the children that will have children
// of their own are fed as one batched step, each on a fork of its parent's sequence.
#include "inspect/tree.h"

#include <cmath>
#include <limits>

#include "core/error.h"
#include "decode/distribution.h"
#include "decode/order.h"
#include "decode/sampler.h"

namespace ls::inspect {

std::size_t tree_node_bound(int k, int depth, std::size_t cap) {
  std::size_t total = 0, level = 1;
  for (int d = 0; d < depth; ++d) {
    level *= static_cast<std::size_t>(k);
    total += level;
    if (level > cap || total > cap) return cap + 1;
  }
  return total;
}

TreeResult continuation_tree(decode::LogitsSource& source, std::span<const std::int32_t> prompt,
                             const decode::GenerationConfig& config, const TreeOptions& o) {
  if (o.k < 1) fail("tree: k must be at least 1, got {}", o.k);
  if (o.depth < 1) fail("tree: depth must be at least 1, got {}", o.depth);
  if (!(o.min_prob >= 0 && o.min_prob <= 1))
    fail("tree: the minimum probability must be in [0, 1], got {}", o.min_prob);
  if (prompt.empty()) fail("tree: the prompt is empty");
  const std::size_t bound = tree_node_bound(o.k, o.depth, o.max_nodes);
  if (bound > o.max_nodes)
    fail(
        "tree: k {} and depth {} could make more than {} nodes (k + k^2 + ... + k^depth); "
        "lower them or raise the node limit",
        o.k, o.depth, o.max_nodes);
  const decode::DecodeMode mode = decode::decode_mode(config);
  if (decode::is_beam(mode)) fail("tree: beam search is a tree of its own; use num_beams 1");
  if (mode == decode::DecodeMode::sample && config.mirostat != 0 && o.depth > 1)
    fail(
        "tree: mirostat ({} {}) moves mu with each chosen token, so each path would need its "
        "own; the tree re-runs every node afresh: use depth 1 or mirostat 0",
        config.origin_of("mirostat"), config.mirostat);
  const std::int32_t vocab = source.vocab_size();
  const auto V = static_cast<std::size_t>(vocab);

  TreeResult out;
  // The nodes of the level being expanded (node -1: the prompt, on sequence 0); their score
  // rows are copied out of the step's spans into `rows`, in the same order.
  struct Open {
    int node;
    int seq;
  };
  std::vector<Open> open = {{-1, 0}};
  const std::span<const float> first = source.feed(0, prompt);
  std::vector<float> rows(first.begin(), first.end());
  out.forward_steps = 1;
  int next_seq = 1;
  std::vector<std::int32_t> history;
  for (int depth = 1; depth <= o.depth && !open.empty(); ++depth) {
    std::vector<Open> expand;       // children that get children of their own
    std::vector<std::int32_t> fed;  // their tokens, one each
    for (std::size_t i = 0; i < open.size(); ++i) {
      const std::span<const float> raw(&rows[i * V], V);
      history.assign(prompt.begin(), prompt.end());
      for (int n = open[i].node; n >= 0; n = out.nodes[static_cast<std::size_t>(n)].parent)
        history.insert(history.begin() + static_cast<std::ptrdiff_t>(prompt.size()),
                       out.nodes[static_cast<std::size_t>(n)].token);
      decode::Sampler sampler(config, mode, vocab, config.seed.value_or(0));
      std::vector<float> work(raw.begin(), raw.end());
      sampler.process(work, {history, prompt.size()});
      if (out.chain.empty()) out.chain = sampler.chain().describe();
      const double lse = decode::log_sum_exp(work), raw_lse = decode::log_sum_exp(raw);
      const TreeNode* parent =
          open[i].node < 0 ? nullptr : &out.nodes[static_cast<std::size_t>(open[i].node)];
      const double base = parent ? parent->path_logprob : 0.0;
      const double raw_base = parent ? parent->path_raw_logprob : 0.0;
      const int parent_index = open[i].node;
      for (std::int32_t id : decode::ids_by_score_desc(work, o.k, true)) {
        TreeNode n;
        n.token = id;
        n.parent = parent_index;
        n.depth = depth;
        n.logprob = static_cast<double>(work[static_cast<std::size_t>(id)]) - lse;
        n.prob = std::exp(n.logprob);
        if (n.prob < o.min_prob) break;  // best first: the rest are below the cut too
        n.raw_logprob = static_cast<double>(raw[static_cast<std::size_t>(id)]) - raw_lse;
        n.path_logprob = base + n.logprob;
        n.path_raw_logprob = raw_base + n.raw_logprob;
        const int index = static_cast<int>(out.nodes.size());
        out.nodes.push_back(n);
        (parent_index < 0 ? out.roots : out.nodes[static_cast<std::size_t>(parent_index)].children)
            .push_back(index);
        if (depth < o.depth) {
          const int seq = next_seq++;
          source.fork(open[i].seq, seq);
          expand.push_back({index, seq});
          fed.push_back(id);
        }
      }
    }
    for (const Open& p : open) source.release(p.seq);
    open = std::move(expand);
    if (open.empty()) break;
    std::vector<decode::Feed> feeds;
    for (std::size_t i = 0; i < open.size(); ++i) feeds.push_back({open[i].seq, {&fed[i], 1}});
    const auto scores = source.step(feeds);
    ++out.forward_steps;
    rows.resize(open.size() * V);
    for (std::size_t i = 0; i < open.size(); ++i)
      std::copy(scores[i].begin(), scores[i].end(), rows.begin() + static_cast<long>(i * V));
  }
  for (const Open& p : open) source.release(p.seq);
  return out;
}

}  // namespace ls::inspect
