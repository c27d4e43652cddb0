#!/usr/bin/python3
"""Independent numpy reference of the Qwen2 / Qwen3 (dense) forward pass (float64 internally).

Written from the architecture definitions in Hugging Face transformers
(Qwen2ForCausalLM, Qwen3ForCausalLM, and modeling_rope_utils for YaRN rope
scaling), not from logitscope's C++ code.  It loads a Hugging Face model
directory (config.json + model.safetensors, or shards listed in
model.safetensors.index.json), parses safetensors itself, and returns the
logits of every position for a token sequence.

Families (config.json "model_type", else "architectures"):
  qwen2  q/k/v projections with bias, head_dim = hidden_size / num_attention_heads
         (or config "head_dim" when present, as transformers' getattr does)
  qwen3  no q/k/v/o bias (attention_bias false), head_dim from config "head_dim"
         (Qwen3Config's default 128 when absent), and q_norm / k_norm: an RMSNorm
         over head_dim (weight [head_dim], eps rms_norm_eps) applied to every head of
         q and k after the projection and the reshape into heads, before RoPE
         (transformers' modeling_qwen3.Qwen3Attention as of 4.51, written from memory of
         that definition; attention scale head_dim^-0.5, o_proj heads*head_dim -> hidden).
rope_scaling: null / {} / rope_type "default" = plain RoPE; rope_type (or legacy
"type") "yarn" = YaRN (see yarn_parameters); any other type is an error.

    qwen2_ref.py --model DIR --tokens 1,2,3 --out ref.npy [--last-only]

The .npy written is float64 with shape [T, vocab_size] (or [1, vocab_size]
with --last-only).

Qwen2Ref.lens_logits(tokens, position) is the logit lens: [n_layers + 1, vocab], row l the
residual stream after l layers (0: the embedding) through the final norm and the LM head
(residual_stream(tokens) gives the residuals themselves).
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

FAMILIES = {"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def parse_rope_scaling(rs):
    """config.json "rope_scaling" -> None (plain RoPE) or a dict with rope_type "yarn".

    transformers' Qwen2Config/Qwen3Config copy a legacy "type" key over "rope_type"
    ("BC: if there is a 'type' field, move it to 'rope_type'"), so "type" wins when both
    are present; the rotary embedding then reads rope_type ("default" = no scaling)."""
    if rs is None or rs == {}:
        return None
    if not isinstance(rs, dict):
        raise ValueError("rope_scaling %r is not an object" % (rs,))
    rope_type = rs["type"] if "type" in rs else rs.get("rope_type")
    if rope_type is None:
        raise ValueError("rope_scaling %r has neither rope_type nor type" % (rs,))
    if rope_type == "default":
        return None
    if rope_type != "yarn":
        raise ValueError("rope_scaling type %r unsupported by the reference (supported: default, yarn)" % rope_type)
    if not isinstance(rs.get("factor"), (int, float)) or isinstance(rs.get("factor"), bool):
        raise ValueError("rope_scaling yarn needs a numeric factor: %r" % (rs,))
    out = dict(rs)
    out["rope_type"] = "yarn"
    return out


def family_of(d, families, reference="the reference"):
    """config.json's model_type (or, without one, its architectures[0]) checked against
    `families` (model_type -> architecture class name); the two must agree when both are given."""
    mt = d.get("model_type")
    archs = d.get("architectures") or []
    if mt is None:
        mt = {v: k for k, v in families.items()}.get(archs[0] if archs else None)
    if mt not in families:
        raise ValueError("model_type %r / architectures %r unsupported by %s (%s)"
                         % (d.get("model_type"), archs, reference, ", ".join(families)))
    if archs and archs[0] != families[mt]:
        raise ValueError("architectures %r do not match model_type %r" % (archs, mt))
    return mt


class Config:
    def __init__(self, d):
        mt = family_of(d, FAMILIES)
        self.model_type = mt
        self.hidden_size = int(d["hidden_size"])
        self.intermediate_size = int(d["intermediate_size"])
        self.num_hidden_layers = int(d["num_hidden_layers"])
        self.num_attention_heads = int(d["num_attention_heads"])
        self.num_key_value_heads = int(d.get("num_key_value_heads", self.num_attention_heads))
        self.vocab_size = int(d["vocab_size"])
        self.rms_norm_eps = float(d["rms_norm_eps"])
        self.rope_theta = float(d.get("rope_theta", 10000.0))
        self.tie_word_embeddings = bool(d.get("tie_word_embeddings", False))
        # Qwen2Config and Qwen3Config both default max_position_embeddings to 32768
        self.max_position_embeddings = int(d.get("max_position_embeddings", 32768))
        if mt == "qwen3":
            # Qwen3Config(head_dim=128) is the default when config.json has none (an assumption
            # about an unusual file: every published Qwen3 config.json states head_dim).
            self.head_dim = int(d.get("head_dim") or 128)
            if d.get("attention_bias", False):
                raise ValueError("qwen3 attention_bias true unsupported by the reference")
            self.qkv_bias = False
            self.qk_norm = True
        else:
            self.head_dim = int(d.get("head_dim") or self.hidden_size // self.num_attention_heads)
            self.qkv_bias = True      # Qwen2Attention: q/k/v_proj bias=True, o_proj bias=False
            self.qk_norm = False
        if self.head_dim % 2:
            raise ValueError("head_dim %d is odd" % self.head_dim)
        if d.get("hidden_act", "silu") != "silu":
            raise ValueError("hidden_act %r unsupported" % d["hidden_act"])
        if d.get("use_sliding_window"):
            raise ValueError("use_sliding_window true unsupported by the reference")
        if float(d.get("partial_rotary_factor", 1.0)) != 1.0:
            raise ValueError("partial_rotary_factor %r unsupported by the reference" % d["partial_rotary_factor"])
        if d.get("rope_parameters") is not None:
            raise ValueError("rope_parameters (transformers v5 layout) unsupported by the reference; use rope_scaling")
        self.rope_scaling = parse_rope_scaling(d.get("rope_scaling"))
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


def round_bf16(x):
    """x as float32, then rounded to the nearest bfloat16 (ties to even; NaN kept a NaN), back in
    float64: what a bf16 matmul input holds (torch's x.to(torch.bfloat16))."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    nan = np.isnan(x)
    out = r.astype(np.uint32).view(np.float32).astype(np.float64)
    out[nan] = np.nan
    return out


# When True, every matrix product of a BF16 weight takes its input rounded to bfloat16, as
# `logitscope --bf16-activations` (and llama.cpp / torch bf16 compute) do. Set per model by
# Qwen2Ref(bf16_activations=True) for models whose weights are BF16.
BF16_ACTIVATIONS = False


def linear(x, w, b=None):
    """x [T, in] times a torch-layout weight [out, in] (+ bias [out])."""
    if BF16_ACTIVATIONS:
        x = round_bf16(x)
    y = x @ w.T
    if b is not None:
        y = y + b
    return y


def silu(x):
    return x / (1.0 + np.exp(-x))


def default_inv_freq(head_dim, theta):
    """inv_freq[i] = theta^(-2i/head_dim), i < head_dim/2 (transformers' default rope)."""
    return theta ** (-(2.0 * np.arange(head_dim // 2, dtype=np.float64)) / head_dim)


def get_mscale(scale, mscale=1.0):
    """YaRN attention-temperature term: 0.1 * mscale * ln(scale) + 1, or 1 when scale <= 1."""
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def yarn_parameters(head_dim, base, rs, max_position_embeddings):
    """(inv_freq [head_dim/2] float64, attention_factor) of YaRN.

    Follows transformers' modeling_rope_utils._compute_yarn_parameters as it reads in the
    versions that have the `truncate` option (checked against that function's text in a recent
    transformers source, the one with `int | None` annotations; that this is ~4.55 and later is
    from memory, not verified), computed here in float64 where transformers uses float32:
      dim = head_dim (partial_rotary_factor 1: others are rejected by Config)
      factor = rope_scaling["factor"]
      original_max_position_embeddings = rope_scaling's, else config's max_position_embeddings
      attention_factor = rope_scaling["attention_factor"] if given, else
          get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim) if both are truthy, else
          get_mscale(factor) = 0.1 ln(factor) + 1 (1 when factor <= 1)
      beta_fast = rope_scaling.get("beta_fast") or 32, beta_slow = ... or 1
      find_correction_dim(r) = dim * ln(orig_max / (r * 2 pi)) / (2 ln base)
      low, high = correction dims of beta_fast, beta_slow; floor / ceil if truncate (default
          true); then max(low, 0), min(high, dim - 1)
      ramp[i] = clamp((i - low) / (high - low), 0, 1), i < dim/2 (high += 0.001 if low == high)
      extrapolation_factor = 1 - ramp
      inv_freq = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor
          with extrapolation = base^(-2i/dim), interpolation = extrapolation / factor.
    Unsure point: earlier versions (about 4.49-4.54, the Qwen3 release 4.51 among them; a port
    of that text was checked, the version range is from memory) instead replaced `factor` by
    max_position_embeddings / original_max_position_embeddings whenever rope_scaling has
    original_max_position_embeddings; the two agree when max_position_embeddings ==
    factor * original_max_position_embeddings (the models the tests write)."""
    dim = head_dim
    factor = float(rs["factor"])
    orig = rs.get("original_max_position_embeddings") or max_position_embeddings
    attention_factor = rs.get("attention_factor")
    mscale, mscale_all_dim = rs.get("mscale"), rs.get("mscale_all_dim")
    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim)
        else:
            attention_factor = get_mscale(factor)
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def correction_dim(rotations):
        return dim * math.log(orig / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if rs.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - low) / (high - low), 0.0, 1.0)
    extrap_factor = 1.0 - ramp
    extrapolation = default_inv_freq(dim, base)
    interpolation = extrapolation / factor
    inv_freq = interpolation * (1.0 - extrap_factor) + extrapolation * extrap_factor
    return inv_freq, float(attention_factor)


def rope_parameters(cfg):
    """(inv_freq, attention_factor) for a Config (read at forward time, so tests may edit cfg)."""
    if cfg.rope_scaling is None:
        return default_inv_freq(cfg.head_dim, cfg.rope_theta), 1.0
    return yarn_parameters(cfg.head_dim, cfg.rope_theta, cfg.rope_scaling, cfg.max_position_embeddings)


def rope_cos_sin(positions, head_dim, theta, inv_freq=None, attention_factor=1.0):
    """cos, sin of shape [T, head_dim]: angle pos*inv_freq[i] repeated over both halves,
    times attention_factor (transformers multiplies both cos and sin by it)."""
    if inv_freq is None:
        inv_freq = default_inv_freq(head_dim, theta)
    ang = np.asarray(positions, dtype=np.float64)[:, None] * np.asarray(inv_freq, dtype=np.float64)[None, :]
    ang = np.concatenate([ang, ang], axis=-1)
    return np.cos(ang) * attention_factor, np.sin(ang) * attention_factor


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
    bf16_activations = False  # (also for instances made without __init__, as the tests' mutants)

    def __init__(self, model_dir, bf16_activations=False):
        self.bf16_activations = bf16_activations
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
        H, KV, D, hid = c.num_attention_heads, c.num_key_value_heads, c.head_dim, c.hidden_size
        want = {"self_attn.q_proj.weight": (H * D, hid), "self_attn.k_proj.weight": (KV * D, hid),
                "self_attn.v_proj.weight": (KV * D, hid), "self_attn.o_proj.weight": (hid, H * D)}
        if c.qk_norm:
            want.update({"self_attn.q_norm.weight": (D,), "self_attn.k_norm.weight": (D,)})
        for i in range(c.num_hidden_layers):
            for n, shape in want.items():
                name = "model.layers.%d.%s" % (i, n)
                if name not in self.w:
                    raise ValueError("%s: tensor %s missing" % (model_dir, name))
                if self.w[name].shape != shape:
                    raise ValueError("%s shape %r != %r" % (name, self.w[name].shape, shape))

    def layer(self, i, x, cos, sin):
        c = self.cfg
        p = "model.layers.%d." % i
        w = self.w
        T = x.shape[0]
        h = rms_norm(x, w[p + "input_layernorm.weight"], c.rms_norm_eps)

        def bias(n):
            return w[p + "self_attn.%s_proj.bias" % n] if c.qkv_bias else None
        q = linear(h, w[p + "self_attn.q_proj.weight"], bias("q"))
        k = linear(h, w[p + "self_attn.k_proj.weight"], bias("k"))
        v = linear(h, w[p + "self_attn.v_proj.weight"], bias("v"))
        D = c.head_dim
        q = q.reshape(T, c.num_attention_heads, D).transpose(1, 0, 2)
        k = k.reshape(T, c.num_key_value_heads, D).transpose(1, 0, 2)
        v = v.reshape(T, c.num_key_value_heads, D).transpose(1, 0, 2)
        if c.qk_norm:  # Qwen3: RMSNorm over head_dim of every head, before RoPE
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], c.rms_norm_eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], c.rms_norm_eps)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        a = attention(q, k, v).transpose(1, 0, 2).reshape(T, c.num_attention_heads * D)
        x = x + linear(a, w[p + "self_attn.o_proj.weight"])
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], c.rms_norm_eps)
        g = linear(h, w[p + "mlp.gate_proj.weight"])
        u = linear(h, w[p + "mlp.up_proj.weight"])
        x = x + linear(silu(g) * u, w[p + "mlp.down_proj.weight"])
        return x

    def _bf16_mode(self, fn, *args):
        """fn(*args) with the module's BF16_ACTIVATIONS set to this model's setting."""
        global BF16_ACTIVATIONS
        saved, BF16_ACTIVATIONS = BF16_ACTIVATIONS, self.bf16_activations
        try:
            return fn(*args)
        finally:
            BF16_ACTIVATIONS = saved

    def hidden(self, tokens):
        return self._bf16_mode(self._hidden, tokens)

    def residual_stream(self, tokens):
        """float64 [n_layers + 1, T, hidden]: row l is the residual stream after l decoder layers
        (row 0 the token embeddings, row n_layers the input of the final norm)."""
        return np.stack(self._bf16_mode(self._residuals, tokens))

    def _residuals(self, tokens):
        """[x_0, ..., x_L]: the residual stream [T, hidden] before the first layer and after each."""
        c = self.cfg
        tokens = np.asarray(tokens, dtype=np.int64)
        if tokens.ndim != 1 or len(tokens) == 0:
            raise ValueError("need a non-empty 1-D token sequence")
        if tokens.min() < 0 or tokens.max() >= c.vocab_size:
            raise ValueError("token id out of range [0, %d)" % c.vocab_size)
        x = self.w["model.embed_tokens.weight"][tokens]
        inv_freq, attention_factor = rope_parameters(c)
        cos, sin = rope_cos_sin(np.arange(len(tokens)), c.head_dim, c.rope_theta, inv_freq, attention_factor)
        out = [x]
        for i in range(c.num_hidden_layers):
            x = self.layer(i, x, cos, sin)
            out.append(x)
        return out

    def final_norm(self, x):
        return rms_norm(x, self.w["model.norm.weight"], self.cfg.rms_norm_eps)

    def _hidden(self, tokens):
        return self.final_norm(self._residuals(tokens)[-1])

    def head(self, hid, rows=None):
        """Final-normed hidden states [N, hidden] -> logits [N, vocab] (only vocab ids `rows` if given)."""
        head = self.lm_head if rows is None else self.lm_head[rows]
        if self.bf16_activations:
            hid = round_bf16(hid)
        # einsum (no BLAS) is exact float64 too and faster than a reference-BLAS gemm here
        return np.einsum("td,vd->tv", hid, head, optimize=False)

    def lens_logits(self, tokens, position=None):
        """The logit lens: float64 [n_layers + 1, vocab]. Row l is the residual stream at input
        `position` (0-based; default the last; negative counts from the end) after l decoder
        layers (l = 0: the token embedding), put through the final RMSNorm (model.norm.weight)
        and the LM head. Unlike transformers' output_hidden_states, whose last entry already
        has the final norm applied, every row here is the pre-norm residual, so row n_layers is
        the model's own logits at that position (== logits(tokens)[position])."""
        T = len(tokens)
        p = T - 1 if position is None else int(position)
        if p < 0:
            p += T
        if not 0 <= p < T:
            raise ValueError("position %s outside [0, %d)" % (position, T))
        res = self._bf16_mode(self._residuals, list(tokens)[:p + 1])  # causal: later tokens cannot matter
        return self.head(self.final_norm(np.stack([x[p] for x in res])))

    def logits(self, tokens, rows=None, last_only=False):
        """float64 logits [T, vocab_size] for every position (only vocab ids `rows` if given;
        only the last position, [1, vocab], if last_only)."""
        hid = self.hidden(tokens)
        if last_only:
            hid = hid[-1:]
        return self.head(hid, rows)


QwenRef = Qwen2Ref  # the same class serves both families (cfg.model_type)


def forward(model_dir, tokens, last_only=False):
    return Qwen2Ref(model_dir).logits(tokens, last_only=last_only)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="Hugging Face model directory")
    ap.add_argument("--tokens", required=True, help="comma-separated token ids")
    ap.add_argument("--out", required=True, help="output .npy (float64 [T, vocab])")
    ap.add_argument("--last-only", action="store_true", help="write only the last position, [1, vocab]")
    a = ap.parse_args(argv)
    toks = [int(t) for t in a.tokens.split(",") if t.strip()]
    lg = forward(a.model, toks, last_only=a.last_only)
    np.save(a.out, lg)
    top = int(np.argmax(lg[-1]))
    print("positions %d vocab %d last top-1 %d logit %.6f" % (lg.shape[0], lg.shape[1], top, lg[-1, top]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
