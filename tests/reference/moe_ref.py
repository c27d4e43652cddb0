#!/usr/bin/python3
"""Independent numpy reference of Qwen's mixture-of-experts forward pass (float64 internally).

Written from Hugging Face transformers' modeling_qwen2_moe.py (Qwen2MoeForCausalLM) and
modeling_qwen3_moe.py (Qwen3MoeForCausalLM), not from logitscope's C++ code.  The safetensors
loader, RMSNorm, RoPE and attention are qwen2_ref.py's (itself independent of the C++).

Families (config.json "model_type", else "architectures"):
  qwen2_moe  Qwen2 attention: q/k/v projections with bias, head_dim = hidden / heads (or config
             "head_dim" when present); sparse layers add a shared expert.
  qwen3_moe  Qwen3 attention: no bias, per-head q_norm / k_norm RMSNorm before RoPE, head_dim from
             config "head_dim" (else hidden / heads: Qwen3MoeAttention's getattr default;
             every published Qwen3-MoE config states head_dim).
Decoder layer l (pre-norm, residual) has a sparse MLP iff
    l not in mlp_only_layers and num_experts > 0 and (l + 1) % decoder_sparse_step == 0
(Qwen2MoeDecoderLayer / Qwen3MoeDecoderLayer), else a dense SwiGLU MLP of intermediate_size with
model.layers.{l}.mlp.{gate,up,down}_proj.weight.
Sparse MLP on the post-attention-normed input x [T, hidden] (Qwen*MoeSparseMoeBlock.forward):
    router_logits = x @ W_gate^T                  mlp.gate.weight [num_experts, hidden]
    p = softmax(router_logits) over all experts   (transformers: float32; here float64)
    w, e = top num_experts_per_tok of p           (ties: lower expert index first)
    w /= sum(w)                                   only if norm_topk_prob
    out = sum_k w_k * down_e(silu(gate_e(x)) * up_e(x))
          mlp.experts.{e}.gate_proj / up_proj [moe_intermediate_size, hidden], down_proj [hidden, moe_inter]
  qwen2_moe also adds  sigmoid(x @ mlp.shared_expert_gate.weight^T) * SwiGLU_shared(x)
          mlp.shared_expert_gate.weight [1, hidden]; mlp.shared_expert.{gate,up,down}_proj.weight
          of shared_expert_intermediate_size.
Config defaults as the HF config classes: norm_topk_prob false, decoder_sparse_step 1,
mlp_only_layers [] (null too); intermediate_size (only read by dense layers) 5632 for qwen2_moe,
6144 for qwen3_moe; num_experts / num_experts_per_tok / moe_intermediate_size (and
shared_expert_intermediate_size) are required here (the class defaults are a real model's sizes,
never what a small test file means).

    moe_ref.py --model DIR --tokens 1,2,3 --out ref.npy [--last-only]
    moe_ref.py --self-test         (numpy vs a second formulation and, when importable, torch
                                    float64 written as transformers writes it)

Mutants for the engine test's power check (MoeRef(dir, mutant=NAME) or the module-level MUTANT):
  renorm_flipped       norm_topk_prob read the other way
  no_shared_expert     qwen2_moe's shared expert (and its gate) left out
  softmax_topk_only    softmax over the top-k router logits only (== renormalised: a bug only
                       when norm_topk_prob is false)
  top_k_plus_1         num_experts_per_tok + 1 experts per token
  dense_as_sparse      a dense layer run as a sparse one (with the router and experts of the
                       nearest sparse layer: the tensors a wrong layer->MLP mapping would read)
  dense_skipped        a dense layer's MLP left out
  expert_gate_up_swapped  each routed expert's gate_proj and up_proj exchanged
  shared_gate_no_sigmoid  qwen2_moe's shared expert scaled by the raw gate logit
"""
import argparse
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2_ref as ref  # noqa: E402

FAMILIES = {"qwen2_moe": "Qwen2MoeForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM"}
DENSE_FAMILY = {"qwen2_moe": "qwen2", "qwen3_moe": "qwen3"}
DEFAULT_INTERMEDIATE = {"qwen2_moe": 5632, "qwen3_moe": 6144}
MUTANTS = ["renorm_flipped", "no_shared_expert", "softmax_topk_only", "top_k_plus_1", "dense_as_sparse",
           "dense_skipped", "expert_gate_up_swapped", "shared_gate_no_sigmoid"]
MUTANT = None   # module-level default mutant (None: the correct model)


class MoeConfig(ref.Config):
    """qwen2_ref.Config (attention, norms, RoPE) of the dense family, plus the MoE fields."""

    def __init__(self, d):
        mt = ref.family_of(d, FAMILIES, "the MoE reference")
        dense = dict(d)
        dense["model_type"] = DENSE_FAMILY[mt]
        dense["architectures"] = [ref.FAMILIES[DENSE_FAMILY[mt]]]
        dense.setdefault("intermediate_size", DEFAULT_INTERMEDIATE[mt])
        # both attentions: head_dim = getattr(config, "head_dim", hidden // heads)
        dense["head_dim"] = d.get("head_dim") or int(d["hidden_size"]) // int(d["num_attention_heads"])
        if mt == "qwen2_moe" and d.get("qkv_bias", True) is False:
            raise ValueError("qwen2_moe qkv_bias false unsupported by the reference")
        super().__init__(dense)
        self.model_type = mt
        for key in ("num_experts", "num_experts_per_tok", "moe_intermediate_size"):
            if not isinstance(d.get(key), int) or isinstance(d.get(key), bool):
                raise ValueError("config %s missing or not an integer: %r" % (key, d.get(key)))
        self.num_experts = int(d["num_experts"])
        self.num_experts_per_tok = int(d["num_experts_per_tok"])
        self.moe_intermediate_size = int(d["moe_intermediate_size"])
        self.norm_topk_prob = bool(d.get("norm_topk_prob", False))
        self.decoder_sparse_step = int(d.get("decoder_sparse_step", 1))
        self.mlp_only_layers = [int(i) for i in (d.get("mlp_only_layers") or [])]
        self.shared_expert = mt == "qwen2_moe"
        if self.shared_expert:
            if not isinstance(d.get("shared_expert_intermediate_size"), int):
                raise ValueError("qwen2_moe config needs shared_expert_intermediate_size")
            self.shared_expert_intermediate_size = int(d["shared_expert_intermediate_size"])
        if self.num_experts < 0 or self.decoder_sparse_step < 1:
            raise ValueError("num_experts %d / decoder_sparse_step %d out of range"
                             % (self.num_experts, self.decoder_sparse_step))
        if self.num_experts > 0 and not 1 <= self.num_experts_per_tok <= self.num_experts:
            raise ValueError("num_experts_per_tok %d outside [1, num_experts %d]"
                             % (self.num_experts_per_tok, self.num_experts))

    def is_sparse(self, layer):
        return (layer not in self.mlp_only_layers and self.num_experts > 0
                and (layer + 1) % self.decoder_sparse_step == 0)

    @staticmethod
    def load(model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            return MoeConfig(json.load(f))


# ---------------------------------------------------------------- the MoE block

def swiglu(x, g, u, d):
    """down(silu(gate(x)) * up(x)) with torch-layout weights."""
    return ref.linear(ref.silu(ref.linear(x, g)) * ref.linear(x, u), d)


def route(router_logits, top_k, norm, mutant=None):
    """(experts [T, k] int, weights [T, k]) as Qwen*MoeSparseMoeBlock chooses them: softmax over all
    experts, the top_k probabilities (descending; ties to the lower index), renormalised to sum 1 if
    norm.  Mutants: renorm_flipped, softmax_topk_only, top_k_plus_1."""
    if mutant == "renorm_flipped":
        norm = not norm
    if mutant == "top_k_plus_1":
        top_k = min(top_k + 1, router_logits.shape[-1])
    order = np.argsort(-router_logits, axis=-1, kind="stable")[:, :top_k]
    if mutant == "softmax_topk_only":
        sel = np.take_along_axis(router_logits, order, axis=-1)
        return order, ref.softmax(sel, axis=-1)
    p = ref.softmax(router_logits, axis=-1)
    w = np.take_along_axis(p, order, axis=-1)
    if norm:
        w = w / w.sum(axis=-1, keepdims=True)
    return order, w


def router_gaps(router_logits, top_k):
    """Per token, the gap between the k-th and (k+1)-th largest router logit (inf when every expert
    is chosen): how far the choice is from a tie that rounding could flip."""
    if top_k >= router_logits.shape[-1]:
        return np.full(router_logits.shape[0], np.inf)
    s = -np.sort(-router_logits, axis=-1)
    return s[:, top_k - 1] - s[:, top_k]


def router_margin(router_logits, top_k):
    """The smallest of router_gaps over the tokens."""
    return float(router_gaps(router_logits, top_k).min())


def sparse_moe(x, router_w, experts, top_k, norm, shared=None, mutant=None, stats=None):
    """The sparse MLP block on x [T, hidden]. experts: [(gate [I, H], up [I, H], down [H, I])] per
    expert; shared: None or (shared_expert_gate [1, H], gate, up, down). Written per token: each
    token's chosen experts in order of weight, each computed on that token alone."""
    logits = ref.linear(x, router_w)
    idx, wts = route(logits, top_k, norm, mutant)
    if stats is not None:
        stats.setdefault("margin", []).append(router_margin(logits, top_k))
        stats.setdefault("gaps", []).append(router_gaps(logits, top_k))
        stats.setdefault("chosen", []).append(idx.copy())
        stats.setdefault("weights", []).append(np.array(wts, dtype=np.float64))
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        for e, wt in zip(idx[t], wts[t]):
            g, u, d = experts[e]
            if mutant == "expert_gate_up_swapped":
                g, u = u, g
            out[t] += wt * swiglu(x[t:t + 1], g, u, d)[0]
    if shared is not None and mutant != "no_shared_expert":
        sg, g, u, d = shared
        gate = ref.linear(x, sg)                       # [T, 1]
        scale = gate if mutant == "shared_gate_no_sigmoid" else 1.0 / (1.0 + np.exp(-gate))
        out = out + scale * swiglu(x, g, u, d)
    return out


def sparse_moe_dense_gating(x, router_w, experts, top_k, norm, shared=None):
    """A second formulation: every expert on every token, weighted by a [T, E] gate matrix that is
    zero outside each token's top-k (experts chosen with argpartition on the probabilities)."""
    T, E = x.shape[0], router_w.shape[0]
    logits = x @ router_w.T
    p = np.exp(logits - logits.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    G = np.zeros((T, E))
    for t in range(T):
        chosen = np.argpartition(-p[t], top_k - 1)[:top_k] if top_k < E else np.arange(E)
        G[t, chosen] = p[t, chosen] / (p[t, chosen].sum() if norm else 1.0)
    out = np.zeros_like(x)
    for e, (g, u, d) in enumerate(experts):
        h = (x @ g.T) / (1.0 + np.exp(-(x @ g.T))) * (x @ u.T)
        out += G[:, e:e + 1] * (h @ d.T)
    if shared is not None:
        sg, g, u, d = shared
        h = (x @ g.T) / (1.0 + np.exp(-(x @ g.T))) * (x @ u.T)
        out += (h @ d.T) / (1.0 + np.exp(-(x @ sg.T)))
    return out


def torch_sparse_moe(torch, x, router_w, experts, top_k, norm, shared=None):
    """The block as transformers writes it (Qwen2MoeSparseMoeBlock / Qwen3MoeSparseMoeBlock.forward),
    in float64 torch tensors: F.softmax, torch.topk, the one_hot expert mask, index_add_."""
    import torch.nn.functional as F
    hidden_states = torch.as_tensor(x, dtype=torch.float64)
    hidden_dim = hidden_states.shape[-1]
    num_experts = router_w.shape[0]
    router_logits = F.linear(hidden_states, torch.as_tensor(router_w))
    routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float64)
    routing_weights, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    if norm:
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
    final_hidden_states = torch.zeros_like(hidden_states)
    expert_mask = F.one_hot(selected_experts, num_classes=num_experts).permute(2, 1, 0)
    for expert_idx in range(num_experts):
        g, u, d = (torch.as_tensor(a) for a in experts[expert_idx])
        idx, top_x = torch.where(expert_mask[expert_idx])
        current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
        current_hidden_states = F.linear(F.silu(F.linear(current_state, g)) * F.linear(current_state, u), d)
        current_hidden_states = current_hidden_states * routing_weights[top_x, idx, None]
        final_hidden_states.index_add_(0, top_x, current_hidden_states)
    if shared is not None:
        sg, g, u, d = (torch.as_tensor(a) for a in shared)
        shared_expert_output = F.linear(F.silu(F.linear(hidden_states, g)) * F.linear(hidden_states, u), d)
        shared_expert_output = torch.sigmoid(F.linear(hidden_states, sg)) * shared_expert_output
        final_hidden_states = final_hidden_states + shared_expert_output
    return final_hidden_states.numpy()


# ---------------------------------------------------------------- the model

class MoeRef(ref.Qwen2Ref):
    """Qwen2-MoE / Qwen3-MoE reference; logits(), hidden(), lens_logits() as Qwen2Ref's.
    After a forward pass, self.stats holds per sparse-layer call the router margin and the
    chosen experts ([T, k] arrays, in layer order)."""

    def __init__(self, model_dir, bf16_activations=False, mutant=None):
        self.bf16_activations = bf16_activations
        self.mutant = mutant
        if mutant is not None and mutant not in MUTANTS:
            raise ValueError("unknown mutant %r (%s)" % (mutant, ", ".join(MUTANTS)))
        self.cfg = MoeConfig.load(model_dir)
        self.w = ref.load_weights(model_dir)
        self.stats = {}
        self.sparse_impl = None   # None: sparse_moe; else a function with its signature (self-test)
        c = self.cfg
        emb = self.w["model.embed_tokens.weight"]
        if emb.shape != (c.vocab_size, c.hidden_size):
            raise ValueError("embed_tokens shape %r != (%d, %d)" % (emb.shape, c.vocab_size, c.hidden_size))
        self.lm_head = emb if c.tie_word_embeddings else self.w["lm_head.weight"]
        for name, shape in self.expected_shapes().items():
            if name not in self.w:
                raise ValueError("%s: tensor %s missing" % (model_dir, name))
            if self.w[name].shape != shape:
                raise ValueError("%s shape %r != %r" % (name, self.w[name].shape, shape))

    def expected_shapes(self):
        c = self.cfg
        H, KV, D, hid = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.hidden_size
        out = {}
        for i in range(c.num_hidden_layers):
            p = "model.layers.%d." % i
            out.update({p + "input_layernorm.weight": (hid,), p + "post_attention_layernorm.weight": (hid,),
                        p + "self_attn.q_proj.weight": (H * D, hid), p + "self_attn.k_proj.weight": (KV * D, hid),
                        p + "self_attn.v_proj.weight": (KV * D, hid), p + "self_attn.o_proj.weight": (hid, H * D)})
            if c.qkv_bias:
                out.update({p + "self_attn.q_proj.bias": (H * D,), p + "self_attn.k_proj.bias": (KV * D,),
                            p + "self_attn.v_proj.bias": (KV * D,)})
            if c.qk_norm:
                out.update({p + "self_attn.q_norm.weight": (D,), p + "self_attn.k_norm.weight": (D,)})
            if c.is_sparse(i):
                I = c.moe_intermediate_size
                out[p + "mlp.gate.weight"] = (c.num_experts, hid)
                for e in range(c.num_experts):
                    q = p + "mlp.experts.%d." % e
                    out.update({q + "gate_proj.weight": (I, hid), q + "up_proj.weight": (I, hid),
                                q + "down_proj.weight": (hid, I)})
                if c.shared_expert:
                    S = c.shared_expert_intermediate_size
                    out.update({p + "mlp.shared_expert.gate_proj.weight": (S, hid),
                                p + "mlp.shared_expert.up_proj.weight": (S, hid),
                                p + "mlp.shared_expert.down_proj.weight": (hid, S),
                                p + "mlp.shared_expert_gate.weight": (1, hid)})
            else:
                I = c.intermediate_size
                out.update({p + "mlp.gate_proj.weight": (I, hid), p + "mlp.up_proj.weight": (I, hid),
                            p + "mlp.down_proj.weight": (hid, I)})
        out["model.norm.weight"] = (hid,)
        return out

    def sparse_tensors(self, i):
        """(router [E, H], [(gate, up, down)] per expert, shared or None) of sparse layer i."""
        p = "model.layers.%d.mlp." % i
        w = self.w
        experts = [(w[p + "experts.%d.gate_proj.weight" % e], w[p + "experts.%d.up_proj.weight" % e],
                    w[p + "experts.%d.down_proj.weight" % e]) for e in range(self.cfg.num_experts)]
        shared = None
        if self.cfg.shared_expert:
            shared = (w[p + "shared_expert_gate.weight"], w[p + "shared_expert.gate_proj.weight"],
                      w[p + "shared_expert.up_proj.weight"], w[p + "shared_expert.down_proj.weight"])
        return w[p + "gate.weight"], experts, shared

    def mlp(self, i, h):
        c = self.cfg
        mutant = self.mutant if self.mutant is not None else MUTANT
        sparse_layer = i
        if not c.is_sparse(i):
            if mutant == "dense_skipped":
                return np.zeros_like(h)
            if mutant != "dense_as_sparse" or c.num_experts == 0:
                p = "model.layers.%d.mlp." % i
                return swiglu(h, self.w[p + "gate_proj.weight"], self.w[p + "up_proj.weight"],
                              self.w[p + "down_proj.weight"])
            sparse_layer = min((j for j in range(c.num_hidden_layers) if c.is_sparse(j)), key=lambda j: abs(j - i))
        router, experts, shared = self.sparse_tensors(sparse_layer)
        if self.sparse_impl is not None:
            return self.sparse_impl(h, router, experts, c.num_experts_per_tok, c.norm_topk_prob, shared)
        return sparse_moe(h, router, experts, c.num_experts_per_tok, c.norm_topk_prob, shared,
                          mutant=mutant, stats=self.stats)

    def layer(self, i, x, cos, sin):
        c = self.cfg
        p = "model.layers.%d." % i
        w = self.w
        T = x.shape[0]
        h = ref.rms_norm(x, w[p + "input_layernorm.weight"], c.rms_norm_eps)

        def bias(n):
            return w[p + "self_attn.%s_proj.bias" % n] if c.qkv_bias else None
        q = ref.linear(h, w[p + "self_attn.q_proj.weight"], bias("q"))
        k = ref.linear(h, w[p + "self_attn.k_proj.weight"], bias("k"))
        v = ref.linear(h, w[p + "self_attn.v_proj.weight"], bias("v"))
        D = c.head_dim
        q = q.reshape(T, c.num_attention_heads, D).transpose(1, 0, 2)
        k = k.reshape(T, c.num_key_value_heads, D).transpose(1, 0, 2)
        v = v.reshape(T, c.num_key_value_heads, D).transpose(1, 0, 2)
        if c.qk_norm:  # Qwen3: RMSNorm over head_dim of every head, before RoPE
            q = ref.rms_norm(q, w[p + "self_attn.q_norm.weight"], c.rms_norm_eps)
            k = ref.rms_norm(k, w[p + "self_attn.k_norm.weight"], c.rms_norm_eps)
        q = ref.apply_rope(q, cos, sin)
        k = ref.apply_rope(k, cos, sin)
        a = ref.attention(q, k, v).transpose(1, 0, 2).reshape(T, c.num_attention_heads * D)
        x = x + ref.linear(a, w[p + "self_attn.o_proj.weight"])
        h = ref.rms_norm(x, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
        return x + self.mlp(i, h)

    def _residuals(self, tokens):
        self.stats = {}
        return super()._residuals(tokens)

    def min_router_margin(self):
        m = self.stats.get("margin", [])
        return min(m) if m else float("inf")

    def routes(self, tokens):
        """The router's choice at every position of `tokens` (one causal forward pass): a list over
        positions of a list over layers, each (experts [k] ints, weights [k] floats, gap) best first
        (gap: the k-th minus the (k+1)-th router logit, how far from a tie that rounding could
        flip), or None for a dense layer."""
        self.logits(tokens)
        c = self.cfg
        sparse = [i for i in range(c.num_hidden_layers) if c.is_sparse(i)]
        chosen, wts, gaps = self.stats.get("chosen", []), self.stats.get("weights", []), self.stats.get("gaps", [])
        if not (len(chosen) == len(wts) == len(gaps) == len(sparse)):
            raise RuntimeError("routes: %d sparse layers but %d router records" % (len(sparse), len(chosen)))
        by_layer = dict(zip(sparse, zip(chosen, wts, gaps)))
        out = []
        for t in range(len(tokens)):
            row = []
            for i in range(c.num_hidden_layers):
                if i in by_layer:
                    e, w, g = by_layer[i]
                    row.append(([int(x) for x in e[t]], [float(x) for x in w[t]], float(g[t])))
                else:
                    row.append(None)
            out.append(row)
        return out

    def token_router_margins(self):
        """[T]: per position, the smallest router gap over the sparse layers of the last forward pass."""
        g = self.stats.get("gaps", [])
        return np.min(np.stack(g), axis=0) if g else None


def forward(model_dir, tokens, last_only=False, mutant=None):
    return MoeRef(model_dir, mutant=mutant).logits(tokens, last_only=last_only)


# ---------------------------------------------------------------- self-test

def torch_forward(torch, model_dir, tokens):
    """The whole model with torch ops in float64 as transformers writes it (eager attention with
    repeat_kv, rotate_half RoPE, additive causal mask, the decoder layer's sparse/dense choice, the
    sparse block of torch_sparse_moe), weights decoded by torch.frombuffer."""
    import struct
    import torch.nn.functional as F
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    files = [f for f in sorted(os.listdir(model_dir)) if f.endswith(".safetensors")]
    tdt = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
    W = {}
    for fn in files:
        blob = open(os.path.join(model_dir, fn), "rb").read()
        n = struct.unpack("<Q", blob[:8])[0]
        for k, info in json.loads(blob[8:8 + n]).items():
            if k != "__metadata__":
                a, b = info["data_offsets"]
                W[k] = torch.frombuffer(bytearray(blob[8 + n + a:8 + n + b]), dtype=tdt[info["dtype"]]) \
                    .reshape(info["shape"]).to(torch.float64)
    H, KV, hid = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    D = cfg.get("head_dim") or hid // H
    eps, T = cfg["rms_norm_eps"], len(tokens)
    qwen3 = cfg["model_type"] == "qwen3_moe"
    mlp_only = cfg.get("mlp_only_layers") or []

    def norm(x, g):  # Qwen3MoeRMSNorm
        return g * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))

    def rotate_half(x):
        return torch.cat((-x[..., x.shape[-1] // 2:], x[..., :x.shape[-1] // 2]), dim=-1)

    inv_freq = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.int64).to(torch.float64) / D))
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos()[None], emb.sin()[None]      # unsqueeze over heads
    mask = torch.full((T, T), torch.finfo(torch.float64).min, dtype=torch.float64).triu(1)
    x = F.embedding(torch.tensor(tokens), W["model.embed_tokens.weight"])
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        residual = x
        h = norm(x, W[p + "input_layernorm.weight"])
        q = F.linear(h, W[p + "self_attn.q_proj.weight"], W.get(p + "self_attn.q_proj.bias")).view(T, -1, D)
        k = F.linear(h, W[p + "self_attn.k_proj.weight"], W.get(p + "self_attn.k_proj.bias")).view(T, -1, D)
        v = F.linear(h, W[p + "self_attn.v_proj.weight"], W.get(p + "self_attn.v_proj.bias")).view(T, -1, D)
        if qwen3:
            q, k = norm(q, W[p + "self_attn.q_norm.weight"]), norm(k, W[p + "self_attn.k_norm.weight"])
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)   # [heads, T, D]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k = k[:, None].expand(KV, H // KV, T, D).reshape(H, T, D)          # repeat_kv
        v = v[:, None].expand(KV, H // KV, T, D).reshape(H, T, D)
        s = torch.matmul(q, k.transpose(1, 2)) * D ** -0.5 + mask
        a = torch.matmul(F.softmax(s, dim=-1), v).transpose(0, 1).reshape(T, H * D)
        x = residual + F.linear(a, W[p + "self_attn.o_proj.weight"])
        residual = x
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        if L not in mlp_only and cfg["num_experts"] > 0 and (L + 1) % cfg.get("decoder_sparse_step", 1) == 0:
            m = p + "mlp."
            experts = [tuple(W[m + "experts.%d.%s_proj.weight" % (e, n)].numpy() for n in ("gate", "up", "down"))
                       for e in range(cfg["num_experts"])]
            shared = None
            if not qwen3:
                shared = (W[m + "shared_expert_gate.weight"].numpy(),) + tuple(
                    W[m + "shared_expert.%s_proj.weight" % n].numpy() for n in ("gate", "up", "down"))
            out = torch_sparse_moe(torch, h.numpy(), W[m + "gate.weight"].numpy(), experts,
                                   cfg["num_experts_per_tok"], cfg.get("norm_topk_prob", False), shared)
            x = residual + torch.as_tensor(out)
        else:
            x = residual + F.linear(F.silu(F.linear(h, W[p + "mlp.gate_proj.weight"])) * F.linear(h, W[p + "mlp.up_proj.weight"]),
                                    W[p + "mlp.down_proj.weight"])
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return F.linear(norm(x, W["model.norm.weight"]), head).numpy()


def self_test(check, verbose=True):
    """Checks of the reference itself; check(ok, message) records each. Returns nothing."""
    import tempfile
    import st_write

    # 1. routing by hand: logits [2, 1, 0, -1], top 2
    z = np.array([[2.0, 1.0, 0.0, -1.0], [-1.0, 0.0, 3.0, 0.5]])
    Z = math.exp(2) + math.e + 1 + math.exp(-1)
    idx, w = route(z, 2, False)
    check(idx.tolist() == [[0, 1], [2, 3]] and abs(w[0, 0] - math.exp(2) / Z) < 1e-15 and abs(w[0, 1] - math.e / Z) < 1e-15,
          "route top-2 without renormalisation: experts %s, weights %.6f %.6f == e^2/Z, e/Z" % (idx.tolist(), w[0, 0], w[0, 1]))
    idx, w = route(z, 2, True)
    check(abs(w[0, 0] - 1 / (1 + math.exp(-1))) < 1e-15 and abs(w[1].sum() - 1) < 1e-15,
          "route top-2 renormalised: %.9f == sigmoid(1), rows sum to 1" % w[0, 0])
    idx, w = route(z, 1, True)
    check(idx.ravel().tolist() == [0, 2] and np.all(w == 1.0), "route top-1 renormalised: weight exactly 1")
    idx, w = route(np.array([[0.5, 0.5, 0.1]]), 1, False)
    check(idx.tolist() == [[0]], "route: a tie goes to the lower expert index")
    _, wm = route(z, 2, False, mutant="softmax_topk_only")
    _, wn = route(z, 2, True)
    check(np.allclose(wm, wn, rtol=0, atol=1e-15),
          "softmax over the top-k logits == renormalised top-k probabilities (that mutant is a bug only without norm)")
    check(router_margin(z, 2) == 0.5 and router_margin(z, 4) == float("inf"),
          "router margin: smallest k-th minus (k+1)-th logit (0.5)")

    # 2. the block: numpy per-token vs dense-gating formulation vs torch (transformers-style)
    try:
        import torch
    except ImportError:
        torch = None
        print("SKIP  torch not importable: the torch cross-checks are skipped")
    rng = np.random.default_rng(7)
    worst_dense, worst_torch = 0.0, 0.0
    for E, k, norm, has_shared in ((8, 2, True, False), (4, 1, True, False), (6, 3, False, False), (6, 2, False, True),
                                   (6, 2, True, True), (5, 5, True, False), (5, 5, False, True), (16, 4, False, False)):
        H, I, T = 24, 12, 9
        x = rng.standard_normal((T, H))
        router = rng.standard_normal((E, H)) * 0.5
        experts = [(rng.standard_normal((I, H)) * 0.3, rng.standard_normal((I, H)) * 0.3, rng.standard_normal((H, I)) * 0.3)
                   for _ in range(E)]
        shared = None
        if has_shared:
            shared = (rng.standard_normal((1, H)) * 0.5, rng.standard_normal((2 * I, H)) * 0.3,
                      rng.standard_normal((2 * I, H)) * 0.3, rng.standard_normal((H, 2 * I)) * 0.3)
        a = sparse_moe(x, router, experts, k, norm, shared)
        worst_dense = max(worst_dense, float(np.abs(a - sparse_moe_dense_gating(x, router, experts, k, norm, shared)).max()))
        if torch is not None:
            worst_torch = max(worst_torch, float(np.abs(a - torch_sparse_moe(torch, x, router, experts, k, norm, shared)).max()))
        if (E, k) == (6, 2) and has_shared:
            no_sh = sparse_moe(x, router, experts, k, norm, None)
            check(np.abs(a - no_sh).max() > 0.1, "shared expert term moves the block output (%.3g)" % np.abs(a - no_sh).max())
            for mu in ("renorm_flipped", "no_shared_expert", "top_k_plus_1", "expert_gate_up_swapped", "shared_gate_no_sigmoid"):
                d = float(np.abs(sparse_moe(x, router, experts, k, norm, shared, mutant=mu) - a).max())
                check(d > 1e-3, "block mutant %s (E %d top-%d norm %s) moves the output by %.3g" % (mu, E, k, norm, d))
    check(worst_dense < 1e-12, "block: per-token numpy == dense-gating formulation (max abs diff %.3g < 1e-12; 8 configs)" % worst_dense)
    if torch is not None:
        check(worst_torch < 1e-12, "block: numpy == torch float64 transformers-style (F.softmax, topk, one_hot, index_add_) "
              "(max abs diff %.3g < 1e-12; torch %s)" % (worst_torch, torch.__version__))

    with tempfile.TemporaryDirectory() as tmp:
        # 3. layer grid
        for layers, step, only, want in ((4, 2, [], [False, True, False, True]), (3, 1, [0], [False, True, True]),
                                         (3, 1, [], [True, True, True]), (6, 3, [5], [False, False, True, False, False, False])):
            cfg = st_write.random_moe(np.random.default_rng(0), layers=layers, decoder_sparse_step=step,
                                      mlp_only_layers=only, num_experts=2, top_k=1, vocab=10)[1]
            got = [MoeConfig(cfg).is_sparse(i) for i in range(layers)]
            check(got == want, "sparse layers of %d layers, step %d, mlp_only %s: %s" % (layers, step, only, got))
        c0 = dict(cfg)
        del c0["norm_topk_prob"], c0["decoder_sparse_step"], c0["mlp_only_layers"]
        mc = MoeConfig(c0)
        check(mc.norm_topk_prob is False and mc.decoder_sparse_step == 1 and mc.mlp_only_layers == [],
              "config defaults: norm_topk_prob false, decoder_sparse_step 1, mlp_only_layers []")
        for bad, what in (({"num_experts_per_tok": 3}, "num_experts_per_tok"), ({"model_type": "qwen3"}, "model_type"),
                          ({"moe_intermediate_size": None}, "moe_intermediate_size")):
            try:
                MoeConfig(dict(cfg, num_experts=2, **bad))
                check(False, "config %s refused" % bad)
            except ValueError as ex:
                check(what in str(ex), "config %s refused: %s" % (bad, ex))

        # 4. all layers dense (mlp_only_layers) == the dense reference of the same weights
        for fam, dense in (("qwen3_moe", "qwen3"), ("qwen2_moe", "qwen2")):
            w, cfg = st_write.random_model(np.random.default_rng(3), hidden=32, inter=48, layers=2, heads=4, kv=2,
                                           vocab=40, tied=False, family=dense, head_dim=16 if dense == "qwen3" else None)
            d1, d2 = os.path.join(tmp, dense), os.path.join(tmp, fam + "_dense")
            st_write.write_model(d1, w, cfg)
            mcfg = dict(cfg, model_type=fam, architectures=[FAMILIES[fam]], num_experts=4, num_experts_per_tok=2,
                        moe_intermediate_size=8, shared_expert_intermediate_size=8, mlp_only_layers=[0, 1])
            st_write.write_model(d2, w, mcfg)
            toks = [1, 5, 39, 0, 7, 7, 2]
            diff = float(np.abs(MoeRef(d2).logits(toks) - ref.Qwen2Ref(d1).logits(toks)).max())
            check(diff == 0.0, "%s with every layer in mlp_only_layers == dense %s reference (max abs diff %.3g)" % (fam, dense, diff))

        # 5. whole models: numpy vs torch transformers-style, and causality (a prefix's logits)
        cases = [dict(family="qwen3_moe", num_experts=8, top_k=2, norm_topk_prob=True, tied=False, dtype="F32"),
                 dict(family="qwen3_moe", num_experts=4, top_k=1, norm_topk_prob=True, tied=True, dtype="BF16"),
                 dict(family="qwen3_moe", num_experts=6, top_k=3, norm_topk_prob=False, layers=3, decoder_sparse_step=2, dtype="F32"),
                 dict(family="qwen3_moe", num_experts=8, top_k=2, mlp_only_layers=[0], dtype="BF16"),
                 dict(family="qwen2_moe", num_experts=6, top_k=2, norm_topk_prob=None, dtype="F32", shards=3),
                 dict(family="qwen2_moe", num_experts=6, top_k=2, norm_topk_prob=True, tied=True, dtype="BF16")]
        worst, worst_prefix = 0.0, 0.0
        for n, case in enumerate(cases):
            case = dict(case)
            dtype, shards = case.pop("dtype"), case.pop("shards", 1)
            rng = np.random.default_rng(300 + n)
            w, cfg = st_write.random_moe(rng, hidden=32, heads=4, kv=2, head_dim=16 if case["family"] == "qwen3_moe" else None,
                                         moe_inter=16, inter=40, vocab=60, **case)
            d = os.path.join(tmp, "m%d" % n)
            st_write.write_model(d, w, cfg, dtype=dtype, shards=shards)
            toks = [int(t) for t in rng.integers(0, 60, size=17)]
            m = MoeRef(d)
            a = m.logits(toks)
            if n == 0:
                sets = [len({tuple(sorted(r)) for r in c.tolist()}) for c in m.stats["chosen"]]
                used = len(np.unique(np.concatenate(m.stats["chosen"])))
                check(min(sets) > 1 and used > cfg["num_experts_per_tok"],
                      "routing differs between tokens: %s distinct expert sets per sparse layer over %d tokens, "
                      "%d of %d experts used" % (sets, len(toks), used, cfg["num_experts"]))
            prefix = m.logits(toks[:6])
            worst_prefix = max(worst_prefix, float(np.abs(prefix - a[:6]).max()))
            if torch is not None:
                worst = max(worst, float(np.abs(a - torch_forward(torch, d, toks)).max()))
            for mu in MUTANTS:
                applies = {"no_shared_expert": case["family"] == "qwen2_moe",
                           "shared_gate_no_sigmoid": case["family"] == "qwen2_moe",
                           "softmax_topk_only": not cfg.get("norm_topk_prob", False),
                           "dense_as_sparse": bool(case.get("mlp_only_layers") or case.get("decoder_sparse_step", 1) > 1),
                           "dense_skipped": bool(case.get("mlp_only_layers") or case.get("decoder_sparse_step", 1) > 1),
                           }.get(mu, True)
                delta = float(np.abs(MoeRef(d, mutant=mu).logits(toks) - a).max())
                if applies:
                    check(delta > 1e-3, "model %d (%s E%d top-%d): mutant %s moves the logits by %.3g"
                          % (n, case["family"], cfg["num_experts"], cfg["num_experts_per_tok"], mu, delta))
                else:
                    check(delta < 1e-12, "model %d: mutant %s does not apply and changes nothing (%.3g)" % (n, mu, delta))
        check(worst_prefix < 1e-12, "causality: a 6-token prefix's logits == the first 6 rows (max abs diff %.3g)" % worst_prefix)
        if torch is not None:
            check(worst < 1e-10, "whole model: numpy == torch float64 transformers-style over %d models, T=17 "
                  "(max abs diff %.3g < 1e-10)" % (len(cases), worst))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="Hugging Face model directory")
    ap.add_argument("--tokens", help="comma-separated token ids")
    ap.add_argument("--out", help="output .npy (float64 [T, vocab])")
    ap.add_argument("--last-only", action="store_true", help="write only the last position, [1, vocab]")
    ap.add_argument("--mutant", choices=MUTANTS, help="inject one bug (for the engine test's power check)")
    ap.add_argument("--self-test", action="store_true", help="check the reference itself and exit")
    a = ap.parse_args(argv)
    if a.self_test:
        failed = []

        def check(ok, what):
            print(("PASS  " if ok else "FAIL  ") + what, flush=True)
            if not ok:
                failed.append(what)
        self_test(check)
        print("%d failed" % len(failed))
        return 1 if failed else 0
    if not (a.model and a.tokens and a.out):
        ap.error("--model, --tokens and --out are required (or --self-test)")
    toks = [int(t) for t in a.tokens.split(",") if t.strip()]
    lg = forward(a.model, toks, last_only=a.last_only, mutant=a.mutant)
    np.save(a.out, lg)
    top = int(np.argmax(lg[-1]))
    print("positions %d vocab %d last top-1 %d logit %.6f" % (lg.shape[0], lg.shape[1], top, lg[-1, top]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
