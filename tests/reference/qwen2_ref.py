#!/usr/bin/python3
"""Independent numpy reference of the Qwen2 forward pass (float64 internally).

Written from the Qwen2 architecture definition (Hugging Face transformers'
Qwen2ForCausalLM), not from logitscope's C++ code.  It loads a Hugging Face
model directory (config.json + model.safetensors, or shards listed in
model.safetensors.index.json), parses safetensors itself, and returns the
logits of every position for a token sequence.

    qwen2_ref.py --model DIR --tokens 1,2,3 --out ref.npy [--last-only]

The .npy written is float64 with shape [T, vocab_size] (or [1, vocab_size]
with --last-only).
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np

# ---------------------------------------------------------------- safetensors

_DTYPES = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8}


class SafetensorsError(Exception):
    pass


def _decode(dtype, raw):
    """Raw little-endian bytes of one tensor -> float64 array (flat)."""
    if dtype == "F32":
        return np.frombuffer(raw, dtype="<f4").astype(np.float64)
    if dtype == "F64":
        return np.frombuffer(raw, dtype="<f8").astype(np.float64)
    if dtype == "F16":
        return np.frombuffer(raw, dtype="<f2").astype(np.float64)
    if dtype == "BF16":
        # bfloat16 is the top half of an IEEE float32: shift into the high 16 bits.
        u16 = np.frombuffer(raw, dtype="<u2").astype(np.uint32)
        return (u16 << np.uint32(16)).view("<f4").astype(np.float64)
    raise SafetensorsError("unsupported dtype %r" % dtype)


def read_safetensors(path):
    """Return {name: float64 ndarray} for every tensor in one .safetensors file."""
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise SafetensorsError("%s: shorter than the 8-byte header length" % path)
    (hlen,) = struct.unpack("<Q", blob[:8])
    if 8 + hlen > len(blob):
        raise SafetensorsError("%s: header length %d exceeds file size" % (path, hlen))
    header = json.loads(blob[8:8 + hlen].decode("utf-8"))
    data = memoryview(blob)[8 + hlen:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = info["dtype"]
        shape = [int(s) for s in info["shape"]]
        begin, end = (int(v) for v in info["data_offsets"])
        if dtype not in _DTYPES:
            raise SafetensorsError("%s: tensor %s has unsupported dtype %s" % (path, name, dtype))
        n = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= begin <= end <= len(data)) or end - begin != n * _DTYPES[dtype]:
            raise SafetensorsError("%s: tensor %s has bad data_offsets %r for shape %r %s"
                                   % (path, name, (begin, end), shape, dtype))
        out[name] = _decode(dtype, data[begin:end]).reshape(shape)
    return out


def tensor_dtypes(path):
    """{name: dtype string} from a safetensors header (for tests/reporting)."""
    with open(path, "rb") as f:
        (hlen,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(hlen).decode("utf-8"))
    return {k: v["dtype"] for k, v in header.items() if k != "__metadata__"}


def load_weights(model_dir):
    index = os.path.join(model_dir, "model.safetensors.index.json")
    single = os.path.join(model_dir, "model.safetensors")
    if os.path.exists(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        weights = {}
        for shard in sorted(set(weight_map.values())):
            weights.update(read_safetensors(os.path.join(model_dir, shard)))
        missing = [k for k in weight_map if k not in weights]
        if missing:
            raise SafetensorsError("index lists tensors not found in shards: %s" % missing[:5])
        return weights
    if os.path.exists(single):
        return read_safetensors(single)
    raise SafetensorsError("%s: no model.safetensors or model.safetensors.index.json" % model_dir)


# ---------------------------------------------------------------- config

class Config:
    def __init__(self, d):
        self.hidden_size = int(d["hidden_size"])
        self.intermediate_size = int(d["intermediate_size"])
        self.num_hidden_layers = int(d["num_hidden_layers"])
        self.num_attention_heads = int(d["num_attention_heads"])
        self.num_key_value_heads = int(d.get("num_key_value_heads", self.num_attention_heads))
        self.vocab_size = int(d["vocab_size"])
        self.rms_norm_eps = float(d["rms_norm_eps"])
        self.rope_theta = float(d.get("rope_theta", 10000.0))
        self.tie_word_embeddings = bool(d.get("tie_word_embeddings", False))
        self.head_dim = int(d.get("head_dim") or self.hidden_size // self.num_attention_heads)
        if d.get("hidden_act", "silu") != "silu":
            raise ValueError("hidden_act %r unsupported" % d["hidden_act"])
        if d.get("rope_scaling"):
            raise ValueError("rope_scaling %r unsupported by the reference" % d["rope_scaling"])
        if self.num_attention_heads % self.num_key_value_heads:
            raise ValueError("num_attention_heads not a multiple of num_key_value_heads")

    @staticmethod
    def load(model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            return Config(json.load(f))


# ---------------------------------------------------------------- building blocks

def rms_norm(x, w, eps):
    """x * 1/sqrt(mean(x^2) + eps) * w over the last axis."""
    ms = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(ms + eps) * w


def linear(x, w, b=None):
    """x [T, in] times a torch-layout weight [out, in] (+ bias [out])."""
    y = x @ w.T
    if b is not None:
        y = y + b
    return y


def silu(x):
    return x / (1.0 + np.exp(-x))


def rope_cos_sin(positions, head_dim, theta):
    """cos, sin of shape [T, head_dim]: angle pos*inv_freq[i] repeated over both halves."""
    half = head_dim // 2
    inv_freq = theta ** (-(2.0 * np.arange(half, dtype=np.float64)) / head_dim)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    return np.cos(ang), np.sin(ang)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x, cos, sin):
    """x [heads, T, head_dim]; cos/sin [T, head_dim]."""
    return x * cos[None] + rotate_half(x) * sin[None]


def softmax(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)


def attention(q, k, v):
    """Causal grouped-query attention.

    q [H, T, D], k/v [KV, T, D] -> [H, T, D].  Query head h uses kv head
    h // (H // KV)."""
    H, T, D = q.shape
    KV = k.shape[0]
    group = H // KV
    mask = np.triu(np.ones((T, T), dtype=bool), k=1)  # True above the diagonal = future
    out = np.empty_like(q)
    scale = 1.0 / math.sqrt(D)
    for h in range(H):
        kv = h // group
        s = (q[h] @ k[kv].T) * scale
        s = np.where(mask, -np.inf, s)
        out[h] = softmax(s, axis=-1) @ v[kv]
    return out


# ---------------------------------------------------------------- model

class Qwen2Ref:
    def __init__(self, model_dir):
        self.cfg = Config.load(model_dir)
        self.w = load_weights(model_dir)
        c = self.cfg
        emb = self.w["model.embed_tokens.weight"]
        if emb.shape != (c.vocab_size, c.hidden_size):
            raise ValueError("embed_tokens shape %r != (%d, %d)" % (emb.shape, c.vocab_size, c.hidden_size))
        if c.tie_word_embeddings:
            self.lm_head = emb
        else:
            self.lm_head = self.w["lm_head.weight"]

    def layer(self, i, x, cos, sin):
        c = self.cfg
        p = "model.layers.%d." % i
        w = self.w
        T = x.shape[0]
        h = rms_norm(x, w[p + "input_layernorm.weight"], c.rms_norm_eps)
        q = linear(h, w[p + "self_attn.q_proj.weight"], w[p + "self_attn.q_proj.bias"])
        k = linear(h, w[p + "self_attn.k_proj.weight"], w[p + "self_attn.k_proj.bias"])
        v = linear(h, w[p + "self_attn.v_proj.weight"], w[p + "self_attn.v_proj.bias"])
        D = c.head_dim
        q = q.reshape(T, c.num_attention_heads, D).transpose(1, 0, 2)
        k = k.reshape(T, c.num_key_value_heads, D).transpose(1, 0, 2)
        v = v.reshape(T, c.num_key_value_heads, D).transpose(1, 0, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        a = attention(q, k, v).transpose(1, 0, 2).reshape(T, c.num_attention_heads * D)
        x = x + linear(a, w[p + "self_attn.o_proj.weight"])
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
        g = linear(h, w[p + "mlp.gate_proj.weight"])
        u = linear(h, w[p + "mlp.up_proj.weight"])
        x = x + linear(silu(g) * u, w[p + "mlp.down_proj.weight"])
        return x

    def hidden(self, tokens):
        c = self.cfg
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.ndim != 1 or len(tokens) == 0:
            raise ValueError("need a non-empty 1-D token sequence")
        if tokens.min() < 0 or tokens.max() >= c.vocab_size:
            raise ValueError("token id out of range [0, %d)" % c.vocab_size)
        x = self.w["model.embed_tokens.weight"][tokens]
        cos, sin = rope_cos_sin(np.arange(len(tokens)), c.head_dim, c.rope_theta)
        for i in range(c.num_hidden_layers):
            x = self.layer(i, x, cos, sin)
        return rms_norm(x, self.w["model.norm.weight"], c.rms_norm_eps)

    def logits(self, tokens, rows=None):
        """float64 logits [T, vocab_size] for every position (only vocab ids `rows` if given)."""
        head = self.lm_head if rows is None else self.lm_head[rows]
        # einsum (no BLAS) is exact float64 too and faster than a reference-BLAS gemm here
        return np.einsum("td,vd->tv", self.hidden(tokens), head, optimize=False)


def forward(model_dir, tokens):
    return Qwen2Ref(model_dir).logits(tokens)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face model directory")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", required=True, help="output .npy (float64 [T, vocab])")
    ap.add_argument("--last-only", action="store_true", help="write only the last position, [1, vocab]")
    a = ap.parse_args(argv)
    toks = [int(t) for t in a.tokens.split(",") if t.strip()]
    lg = forward(a.model, toks)
    if a.last_only:
        lg = lg[-1:]
    np.save(a.out, lg)
    top = int(np.argmax(lg[-1]))
    print("positions %d vocab %d last top-1 %d logit %.6f" % (lg.shape[0], lg.shape[1], top, lg[-1, top]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
