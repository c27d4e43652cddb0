"""Minimal safetensors / model writer (numpy only) for the reference's self-tests and the
engine tests' Python-written models: random Qwen2 (with or without rope_scaling) and dense
Qwen3 weights + config.json, F32 / F16 / BF16, tied or untied, single file or sharded."""
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
