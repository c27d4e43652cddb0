// The lens and attribution routes (see inside.h).
#include "server/inside.h"

#include <fmt/format.h>

#include "decode/distribution.h"
#include "engine/lens.h"
#include "inspect/lens.h"
#include "inspect/tree.h"
#include "server/body_fields.h"

namespace ls::server {

using nlohmann::json;

namespace {

using body::bad;

std::optional<std::int32_t> token_field(const json& body, const char* name,
                                        const ServerLimits& limits) {
  if (!body.contains(name) || body[name].is_null()) return std::nullopt;
  const std::int64_t vocab = limits.model->model().config().vocab_size;
  return static_cast<std::int32_t>(optional_int(body, name, 0, vocab - 1, 0));
}

std::string token_text(const ServerLimits& limits, std::int32_t id) {
  return limits.model->token_text(id);
}

}  // namespace

InsideTarget inside_target(const json& body, const ServerLimits& limits, const KeptLookup& kept) {
  if (!body.is_object()) bad("", "the body must be a JSON object");
  InsideTarget t;
  const int inputs =
      static_cast<int>(body.contains("generation")) + static_cast<int>(body.contains("tokens")) +
      static_cast<int>(body.contains("prompt")) + static_cast<int>(body.contains("messages"));
  if (inputs != 1)
    bad("generation",
        "give exactly one of 'generation' (with 'step'), 'tokens', 'prompt' or 'messages'");
  if (body.contains("generation")) {
    if (!body["generation"].is_string()) bad("generation", "'generation' must be a string id");
    const KeptGeneration::Snapshot g = kept(body["generation"].get<std::string>());
    if (!body.contains("step")) bad("step", "'step' is required with 'generation'");
    const auto n = static_cast<std::int64_t>(g.tokens.size());
    if (n == 0) bad("step", fmt::format("generation {} has no tokens yet", g.id));
    t.step = static_cast<int>(optional_int(body, "step", 0, n - 1, 0));
    t.generation = g.id;
    t.tokens = g.prompt;
    t.prompt_length = g.prompt.size();
    t.tokens.insert(t.tokens.end(), g.tokens.begin(), g.tokens.begin() + t.step);
    t.config = g.config;
    t.token = g.tokens[static_cast<std::size_t>(t.step)];
    t.draw = g.draws[static_cast<std::size_t>(t.step)];
  } else {
    if (body.contains("step")) bad("step", "'step' needs 'generation' (a kept generation's id)");
    if (body.contains("tokens")) {
      t.tokens = token_ids(body["tokens"], "tokens", limits);
    } else if (body.contains("prompt")) {
      if (!body["prompt"].is_string()) bad("prompt", "'prompt' must be a string");
      t.tokens =
          limits.model->require_tokenizer("prompt").encode(body["prompt"].get<std::string>());
    } else {
      const std::string text = render_chat(body["messages"], json(), true, limits);
      t.tokens = limits.model->require_tokenizer("messages").encode(text);
    }
    t.config = limits.defaults;
    t.prompt_length = t.tokens.size();
  }
  if (body.contains("settings")) apply_replay_settings(body["settings"], t.config, limits);
  if (t.tokens.empty())
    bad(body.contains("generation") ? "step" : "tokens", "the context is empty");
  if (static_cast<std::int64_t>(t.tokens.size()) > limits.ctx)
    bad("tokens", fmt::format("the context has {} tokens, more than the server's {}",
                              t.tokens.size(), limits.ctx));
  return t;
}

LensQuery parse_lens(const json& body, const ServerLimits& limits, const KeptLookup& kept) {
  LensQuery q;
  q.target = inside_target(body, limits, kept);
  const int n_layers = limits.model->model().config().num_hidden_layers;
  q.top = static_cast<int>(optional_int(body, "top", 1, 100, 5));
  if (body.contains("track")) q.track = token_ids(body["track"], "track", limits);
  if (body.contains("layers")) {
    if (!body["layers"].is_array()) bad("layers", "'layers' must be a list of layer indices");
    for (std::size_t i = 0; i < body["layers"].size(); ++i) {
      const json& l = body["layers"][i];
      if (!l.is_number_integer() || l.get<std::int64_t>() < 0 || l.get<std::int64_t>() > n_layers)
        bad(fmt::format("layers[{}]", i),
            fmt::format("'layers[{}]' must be a layer index in [0, {}] (0: the embedding)", i,
                        n_layers));
      q.layers.push_back(l.get<int>());
    }
  }
  if (const auto token = token_field(body, "token", limits)) q.target.token = token;
  if (body.contains("draw") && !body["draw"].is_null()) {
    const json& d = body["draw"];
    if (!d.is_number() || !(d.get<double>() >= 0 && d.get<double>() < 1))
      bad("draw", "'draw' must be a number in [0, 1)");
    q.target.draw = d.get<double>();
  }
  if (decode::is_beam(decode::decode_mode(q.target.config)))
    bad("settings", "the lens follows one sequence: num_beams must be 1");
  return q;
}

AttributeQuery parse_attribute(const json& body, const ServerLimits& limits,
                               const KeptLookup& kept) {
  AttributeQuery q;
  q.target = inside_target(body, limits, kept);
  q.max_prompt = static_cast<std::size_t>(optional_int(body, "max_prompt", 1, 1024, 256));
  if (const auto token = token_field(body, "target", limits))
    q.token = *token;
  else if (q.target.token)
    q.token = *q.target.token;
  q.replace_with = token_field(body, "replace_with", limits);
  const std::size_t n = q.target.tokens.size();
  if (n > q.max_prompt)
    bad("max_prompt", fmt::format("the context has {} tokens, more than max_prompt {} (the work "
                                  "grows with its square; at most 1024)",
                                  n, q.max_prompt));
  if (!q.replace_with && n < 2)
    bad("tokens",
        "a 1-token context has nothing left when its token is removed: give "
        "'replace_with' or a longer context");
  return q;
}

TreeQuery parse_tree(const json& body, const ServerLimits& limits, const KeptLookup& kept) {
  TreeQuery q;
  q.target = inside_target(body, limits, kept);
  q.k = static_cast<int>(optional_int(body, "k", 1, 100, 3));
  q.depth = static_cast<int>(optional_int(body, "depth", 1, 16, 3));
  q.max_nodes = static_cast<std::size_t>(optional_int(body, "max_nodes", 1, 2000, 500));
  if (body.contains("min_prob") && !body["min_prob"].is_null()) {
    const json& v = body["min_prob"];
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1))
      bad("min_prob", "'min_prob' must be a number in [0, 1]");
    q.min_prob = v.get<double>();
  }
  if (inspect::tree_node_bound(q.k, q.depth, q.max_nodes) > q.max_nodes)
    bad("max_nodes", fmt::format("k {} and depth {} could make more than max_nodes {} nodes "
                                 "(k + k^2 + ... + k^depth; max_nodes is at most 2000)",
                                 q.k, q.depth, q.max_nodes));
  if (decode::is_beam(decode::decode_mode(q.target.config)))
    bad("settings", "the tree expands one chain: num_beams must be 1");
  return q;
}

json run_tree(const TreeQuery& q, const ServerLimits& limits, ThreadPool& pool) {
  engine::Engine engine(limits.model->model(), pool);
  inspect::TreeOptions o;
  o.k = q.k;
  o.depth = q.depth;
  o.min_prob = q.min_prob;
  o.max_nodes = q.max_nodes;
  const inspect::TreeResult t =
      inspect::continuation_tree(engine, q.target.tokens, q.target.config, o);
  // Flat, parents first: the page nests them by `parent`.
  json nodes = json::array();
  for (const inspect::TreeNode& n : t.nodes)
    nodes.push_back({{"id", n.token},
                     {"token", token_text(limits, n.token)},
                     {"parent", n.parent},
                     {"depth", n.depth},
                     {"prob", n.prob},
                     {"logprob", n.logprob},
                     {"raw_logprob", n.raw_logprob},
                     {"path_logprob", n.path_logprob},
                     {"path_raw_logprob", n.path_raw_logprob}});
  json out = {{"object", "logitscope.tree"},
              {"context_tokens", q.target.tokens.size()},
              {"chain", t.chain},
              {"k", q.k},
              {"depth", q.depth},
              {"min_prob", q.min_prob},
              {"forward_steps", t.forward_steps},
              {"nodes", std::move(nodes)}};
  if (!q.target.generation.empty()) {
    out["generation"] = q.target.generation;
    out["step"] = q.target.step;
  }
  return out;
}

json run_lens(const LensQuery& q, const ServerLimits& limits, ThreadPool& pool) {
  const model::Model& model = limits.model->model();
  const model::ModelConfig& c = model.config();
  const std::vector<float> rows = engine::lens_logits(model, pool, q.target.tokens);
  inspect::LensRequest r;
  r.rows = rows;
  r.vocab = static_cast<std::int32_t>(c.vocab_size);
  r.history = q.target.tokens;
  r.prompt_length = q.target.prompt_length;
  r.config = &q.target.config;
  r.draw = q.target.draw;
  r.token = q.target.token;
  r.track = q.track;
  r.top = q.top;
  const inspect::LensReport report = inspect::lens_report(r);
  json out = {{"object", "logitscope.lens"},
              {"n_layers", c.num_hidden_layers},
              {"position", q.target.tokens.size() - 1},
              {"context_tokens", q.target.tokens.size()}};
  if (!q.target.generation.empty()) {
    out["generation"] = q.target.generation;
    out["step"] = q.target.step;
  }
  const auto text = [&](std::int32_t id) { return token_text(limits, id); };
  const nlohmann::ordered_json lens = inspect::lens_json(report, text, q.layers);
  for (const auto& [key, value] : lens.items()) out[key] = value;
  return out;
}

json run_attribute(const AttributeQuery& q, const ServerLimits& limits, ThreadPool& pool) {
  engine::Engine engine(limits.model->model(), pool);
  engine::AttributionRequest r;
  r.prompt = q.target.tokens;
  r.replacement = q.replace_with;
  r.max_prompt = q.max_prompt;
  r.target = q.token;
  if (r.target < 0) {
    r.target = decode::ids_by_score_desc(engine.feed(0, r.prompt), 1, false).at(0);
    engine.release(0);
  }
  const engine::Attribution a = engine::attribute(engine, r);
  json out = {{"object", "logitscope.attribution"}, {"context_tokens", r.prompt.size()}};
  if (!q.target.generation.empty()) {
    out["generation"] = q.target.generation;
    out["step"] = q.target.step;
  }
  const auto text = [&](std::int32_t id) { return token_text(limits, id); };
  const nlohmann::ordered_json attribution = engine::attribution_json(a, r, text);
  for (const auto& [key, value] : attribution.items()) out[key] = value;
  return out;
}

}  // namespace ls::server
