"""Minimal safetensors writer for the reference's self-tests (numpy only).

Not used against the engine: the engine's own `synth` writes the models it is
compared on.  Here it lets the reference be tested on models built in Python."""
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
                 eps=1e-6, theta=1e6, scale=0.3):
    """Random Qwen2 weights (float32 values) and a config dict."""
    D = hidden // heads
    w = {"model.embed_tokens.weight": rng.standard_normal((vocab, hidden)) * scale,
         "model.norm.weight": 1 + 0.1 * rng.standard_normal(hidden)}
    for i in range(layers):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * rng.standard_normal(hidden)
        for n, out in (("q", heads * D), ("k", kv * D), ("v", kv * D)):
            w[p + "self_attn.%s_proj.weight" % n] = rng.standard_normal((out, hidden)) * scale
            w[p + "self_attn.%s_proj.bias" % n] = rng.standard_normal(out) * scale
        w[p + "self_attn.o_proj.weight"] = rng.standard_normal((hidden, heads * D)) * scale
        w[p + "mlp.gate_proj.weight"] = rng.standard_normal((inter, hidden)) * scale
        w[p + "mlp.up_proj.weight"] = rng.standard_normal((inter, hidden)) * scale
        w[p + "mlp.down_proj.weight"] = rng.standard_normal((hidden, inter)) * scale
    if not tied:
        w["lm_head.weight"] = rng.standard_normal((vocab, hidden)) * scale
    w = {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
           "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
           "num_attention_heads": heads, "num_key_value_heads": kv, "vocab_size": vocab,
           "rms_norm_eps": eps, "rope_theta": theta, "tie_word_embeddings": tied}
    return w, cfg


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
