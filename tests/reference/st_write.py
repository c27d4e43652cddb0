"""Minimal safetensors / model writer (numpy only) for the reference's self-tests and the
engine tests' Python-written models: random Qwen2 (with or without rope_scaling) and dense
Qwen3 weights, and mixture-of-experts Qwen2-MoE / Qwen3-MoE ones (random_moe), + config.json,
F32 / F16 / BF16, tied or untied, single file or sharded."""
import json
import struct

import numpy as np


def to_bf16_bits(a):
    """float array -> uint16 bfloat16 bits (round to nearest even)."""
    u = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def encode(arr, dtype):
    if dtype == "F32":
        return np.asarray(arr, dtype="<f4").tobytes()
    if dtype == "F16":
        return np.asarray(arr, dtype="<f2").tobytes()
    if dtype == "BF16":
        return to_bf16_bits(arr).astype("<u2").tobytes()
    raise ValueError(dtype)


def write(path, tensors, dtype="F32", metadata=None, raw=None):
    """tensors: {name: ndarray}; raw: optional {name: (dtype, shape, bytes)} written verbatim."""
    header, chunks, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    items = [(k, dtype, list(np.shape(v)), encode(v, dtype)) for k, v in tensors.items()]
    for k, (dt, shape, b) in (raw or {}).items():
        items.append((k, dt, list(shape), b))
    for name, dt, shape, b in items:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        chunks.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in chunks:
            f.write(b)


def random_model(rng, hidden=16, inter=24, layers=2, heads=4, kv=2, vocab=50, tied=True,
                 eps=1e-6, theta=1e6, scale=0.3, family="qwen2", head_dim=None, rope_scaling=None,
                 max_position_embeddings=None):
    """Random weights (float32 values) and a config dict of a Qwen2 (family "qwen2": q/k/v bias,
    head_dim hidden/heads unless given) or a dense Qwen3 (family "qwen3": no bias, q_norm/k_norm
    [head_dim], explicit "head_dim" in the config, which may differ from hidden/heads).
    rope_scaling (e.g. {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64})
    and max_position_embeddings go into the config when given."""
    if family not in ("qwen2", "qwen3"):
        raise ValueError(family)
    D = head_dim or hidden // heads
    w = {"model.embed_tokens.weight": rng.standard_normal((vocab, hidden)) * scale,
         "model.norm.weight": 1 + 0.1 * rng.standard_normal(hidden)}
    for i in range(layers):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        for n, out in (("q", heads * D), ("k", kv * D), ("v", kv * D)):
            w[p + "self_attn.%s_proj.weight" % n] = rng.standard_normal((out, hidden)) * scale
            if family == "qwen2":
                w[p + "self_attn.%s_proj.bias" % n] = rng.standard_normal(out) * scale
        if family == "qwen3":
            w[p + "self_attn.q_norm.weight"] = 1 + 0.3 * rng.standard_normal(D)
            w[p + "self_attn.k_norm.weight"] = 1 + 0.3 * rng.standard_normal(D)
        w[p + "self_attn.o_proj.weight"] = rng.standard_normal((hidden, heads * D)) * scale
        w[p + "mlp.gate_proj.weight"] = rng.standard_normal((inter, hidden)) * scale
        w[p + "mlp.up_proj.weight"] = rng.standard_normal((inter, hidden)) * scale
        w[p + "mlp.down_proj.weight"] = rng.standard_normal((hidden, inter)) * scale
    if not tied:
        w["lm_head.weight"] = rng.standard_normal((vocab, hidden)) * scale
    w = {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}
    arch = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[family]
    cfg = {"architectures": [arch], "model_type": family, "hidden_act": "silu",
           "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
           "rms_norm_eps": eps, "rope_theta": theta, "tie_word_embeddings": tied}
    if family == "qwen3":
        cfg.update(head_dim=D, attention_bias=False)
    elif head_dim is not None:
        cfg["head_dim"] = D
    if rope_scaling is not None:
        cfg["rope_scaling"] = dict(rope_scaling)
    if max_position_embeddings is not None:
        cfg["max_position_embeddings"] = max_position_embeddings
    return w, cfg


def random_qwen3(rng, hidden=64, inter=128, layers=2, heads=4, kv=2, head_dim=32, vocab=50, tied=True,
                 eps=1e-6, theta=1e6, scale=0.3, rope_scaling=None, max_position_embeddings=None):
    """A random dense Qwen3 (default head_dim 32 != hidden 64 / 4 heads)."""
    return random_model(rng, hidden=hidden, inter=inter, layers=layers, heads=heads, kv=kv, vocab=vocab,
                        tied=tied, eps=eps, theta=theta, scale=scale, family="qwen3", head_dim=head_dim,
                        rope_scaling=rope_scaling, max_position_embeddings=max_position_embeddings)


def yarn(factor=4.0, original=64, key="rope_type", **extra):
    """A YaRN rope_scaling dict; key "type" writes the legacy spelling."""
    d = {key: "yarn", "factor": float(factor), "original_max_position_embeddings": int(original)}
    d.update(extra)
    return d


def write_model(d, w, cfg, dtype="F32", shards=1):
    import os
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    if shards == 1:
        write(os.path.join(d, "model.safetensors"), w, dtype, metadata={"format": "pt"})
        return
    names = sorted(w)
    weight_map = {}
    for s in range(shards):
        fn = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = {n: w[n] for n in names[s::shards]}
        write(os.path.join(d, fn), part, dtype, metadata={"format": "pt"})
        weight_map.update({n: fn for n in part})
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)


MOE_ARCH = {"qwen2_moe": "Qwen2MoeForCausalLM", "qwen3_moe": "Qwen3MoeForCausalLM"}


def random_moe(rng, family="qwen3_moe", hidden=64, layers=2, heads=4, kv=2, head_dim=None, num_experts=8,
               top_k=2, moe_inter=32, shared_inter=None, norm_topk_prob=True, decoder_sparse_step=1,
               mlp_only_layers=(), inter=96, vocab=50, tied=False, eps=1e-6, theta=1e6, scale=0.2,
               router_scale=0.3, shared_gate_scale=0.3, shared_expert=True):
    """Random weights (float32 values) and a config dict of a mixture-of-experts Qwen in the Hugging
    Face layout: family "qwen3_moe" (Qwen3MoeForCausalLM: Qwen3 attention, no bias, q_norm/k_norm,
    explicit head_dim, default 32) or "qwen2_moe" (Qwen2MoeForCausalLM: q/k/v bias, head_dim
    hidden/heads unless given, a shared expert of size shared_inter, default 2 x moe_inter).
    Layer l is sparse iff l not in mlp_only_layers and (l + 1) % decoder_sparse_step == 0; a
    sparse layer holds mlp.gate.weight [num_experts, hidden] (entries router_scale x N(0, 1): with
    the normed input's entries ~1, router logits ~ N(0, 64 router_scale^2), peaked but not one-hot
    at 0.3), mlp.experts.{e}.{gate,up}_proj.weight [moe_inter, hidden] and down_proj [hidden,
    moe_inter]; qwen2_moe also mlp.shared_expert.{gate,up,down}_proj.weight and
    mlp.shared_expert_gate.weight [1, hidden] (unless shared_expert=False: a broken file for the
    tests). A dense layer holds mlp.{gate,up,down}_proj.weight of size `inter`.
    norm_topk_prob None leaves the key out of the config (the HF config classes default it to false)."""
    if family not in MOE_ARCH:
        raise ValueError(family)
    qwen3 = family == "qwen3_moe"
    D = head_dim or (32 if qwen3 else hidden // heads)
    if shared_inter is None:
        shared_inter = 2 * moe_inter
    mlp_only_layers = [int(i) for i in mlp_only_layers]

    def sparse(i):
        return i not in mlp_only_layers and num_experts > 0 and (i + 1) % decoder_sparse_step == 0

    def mat(rows, cols, s=scale):
        return rng.standard_normal((rows, cols)) * s

    w = {"model.embed_tokens.weight": rng.standard_normal((vocab, hidden)) * scale,
         "model.norm.weight": 1 + 0.1 * rng.standard_normal(hidden)}
    for i in range(layers):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        for n, out in (("q", heads * D), ("k", kv * D), ("v", kv * D)):
            w[p + "self_attn.%s_proj.weight" % n] = mat(out, hidden)
            if not qwen3:
                w[p + "self_attn.%s_proj.bias" % n] = rng.standard_normal(out) * scale
        if qwen3:
            w[p + "self_attn.q_norm.weight"] = 1 + 0.3 * rng.standard_normal(D)
            w[p + "self_attn.k_norm.weight"] = 1 + 0.3 * rng.standard_normal(D)
        w[p + "self_attn.o_proj.weight"] = mat(hidden, heads * D)
        if sparse(i):
            w[p + "mlp.gate.weight"] = mat(num_experts, hidden, router_scale)
            for e in range(num_experts):
                q = p + "mlp.experts.%d." % e
                w[q + "gate_proj.weight"] = mat(moe_inter, hidden)
                w[q + "up_proj.weight"] = mat(moe_inter, hidden)
                w[q + "down_proj.weight"] = mat(hidden, moe_inter)
            if not qwen3 and shared_expert:
                w[p + "mlp.shared_expert.gate_proj.weight"] = mat(shared_inter, hidden)
                w[p + "mlp.shared_expert.up_proj.weight"] = mat(shared_inter, hidden)
                w[p + "mlp.shared_expert.down_proj.weight"] = mat(hidden, shared_inter)
                w[p + "mlp.shared_expert_gate.weight"] = mat(1, hidden, shared_gate_scale)
        else:
            w[p + "mlp.gate_proj.weight"] = mat(inter, hidden)
            w[p + "mlp.up_proj.weight"] = mat(inter, hidden)
            w[p + "mlp.down_proj.weight"] = mat(hidden, inter)
    if not tied:
        w["lm_head.weight"] = rng.standard_normal((vocab, hidden)) * scale
    w = {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}
    cfg = {"architectures": [MOE_ARCH[family]], "model_type": family, "hidden_act": "silu",
           "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
           "rms_norm_eps": eps, "rope_theta": theta, "tie_word_embeddings": tied,
           "num_experts": num_experts, "num_experts_per_tok": top_k, "moe_intermediate_size": moe_inter,
           "decoder_sparse_step": decoder_sparse_step, "mlp_only_layers": mlp_only_layers,
           "use_sliding_window": False, "rope_scaling": None}
    if norm_topk_prob is not None:
        cfg["norm_topk_prob"] = bool(norm_topk_prob)
    if qwen3:
        cfg.update(head_dim=D, attention_bias=False)
    else:
        cfg["shared_expert_intermediate_size"] = shared_inter
        if head_dim is not None:
            cfg["head_dim"] = D
    return w, cfg
