#!/usr/bin/env python3
"""Independent GGUF reader (numpy only, written from the GGUF specification) and a checker of a
GGUF written by `logitscope quantize` against the Hugging Face directory it came from.

    gguf_ref.py --gguf FILE --model DIR --type f32|f16|bf16|q8_0|q6_k|q5_k|q5_0|q5_1|q4_k|q4_0|q4_1|
                                               iq4_nl|q3_k|q2_k

checks the header, every metadata key llama.cpp's converter writes for Qwen2 (values from
config.json, tokenizer.json and tokenizer_config.json), the tensor names (llama.cpp's, spelled
out here independently of the engine's table), shapes, types and data: float types bit-exact
against numpy's own conversion of the safetensors values, the block types (Q8_0, Q6_K, Q5_K,
Q5_0, Q5_1, Q4_K, Q4_0, Q4_1, IQ4_NL, Q3_K, Q2_K) dequantized here and within their quantization error of the
source. Exit status 0 when everything matches."""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from qwen2_ref import load_weights  # noqa: E402
from st_write import to_bf16_bits  # noqa: E402

# Metadata value types and GGML tensor types, from the specification.
SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1",
           10: "<u8", 11: "<i8", 12: "<f8"}
STRING, ARRAY = 8, 9
GGML = {0: ("F32", 1, 4), 1: ("F16", 1, 2), 30: ("BF16", 1, 2), 8: ("Q8_0", 32, 34),
        2: ("Q4_0", 32, 18), 12: ("Q4_K", 256, 144), 14: ("Q6_K", 256, 210),
        3: ("Q4_1", 32, 20), 6: ("Q5_0", 32, 22), 7: ("Q5_1", 32, 24), 20: ("IQ4_NL", 32, 18),
        13: ("Q5_K", 256, 176), 11: ("Q3_K", 256, 110), 10: ("Q2_K", 256, 84)}
IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                 dtype=np.float32)


class Reader:
    def __init__(self, blob):
        self.b, self.p = blob, 0

    def take(self, n):
        if self.p + n > len(self.b):
            raise ValueError("truncated at %d" % self.p)
        out = self.b[self.p:self.p + n]
        self.p += n
        return out

    def scalar(self, t):
        dt = np.dtype(SCALARS[t])
        v = np.frombuffer(self.take(dt.itemsize), dtype=dt)[0]
        return bool(v) if t == 7 else v.item()

    def string(self):
        (n,) = struct.unpack("<Q", self.take(8))
        return self.take(n).decode("utf-8")

    def value(self, t):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            (et,) = struct.unpack("<I", self.take(4))
            (n,) = struct.unpack("<Q", self.take(8))
            if et in SCALARS and et != 7:
                dt = np.dtype(SCALARS[et])
                return ("array", et, np.frombuffer(self.take(n * dt.itemsize), dtype=dt).tolist())
            return ("array", et, [self.value(et) for _ in range(n)])
        return self.scalar(t)


def read_gguf(path):
    """-> (version, {key: (type, value)}, [tensor dicts], alignment) ; data as raw bytes."""
    with open(path, "rb") as f:
        blob = f.read()
    r = Reader(blob)
    assert r.take(4) == b"GGUF", "bad magic"
    version, n_tensors, n_kv = struct.unpack("<IQQ", r.take(20))
    kv = {}
    for _ in range(n_kv):
        key = r.string()
        (t,) = struct.unpack("<I", r.take(4))
        kv[key] = (t, r.value(t))
    align = kv.get("general.alignment", (4, 32))[1]
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        (nd,) = struct.unpack("<I", r.take(4))
        ne = list(struct.unpack("<%dQ" % nd, r.take(8 * nd)))
        t, off = struct.unpack("<IQ", r.take(12))
        infos.append({"name": name, "ne": ne, "type": t, "offset": off})
    data_start = (r.p + align - 1) // align * align
    for ti in infos:
        kind, block, bb = GGML[ti["type"]]
        n = int(np.prod(ti["ne"]))
        assert ti["ne"][0] % block == 0
        nbytes = n // block * bb
        start = data_start + ti["offset"]
        assert ti["offset"] % align == 0, ti["name"]
        assert start + nbytes <= len(blob), ti["name"] + " past end of file"
        ti["kind"], ti["data"] = kind, blob[start:start + nbytes]
        ti["shape"] = list(reversed(ti["ne"]))
    return version, kv, infos, align


def f16(raw):
    return np.frombuffer(raw, dtype="<f2").astype(np.float32)


def dequant(kind, raw, n):
    """Block formats -> float32 (flat), from the format descriptions."""
    if kind == "Q8_0":
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 34)
        d = f16(b[:, :2].tobytes())
        q = b[:, 2:].view(np.int8).astype(np.float32)
        return (d[:, None] * q).reshape(-1), np.repeat(np.abs(d), 32)
    if kind == "Q4_0":
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 18)
        d = f16(b[:, :2].tobytes())
        qs = b[:, 2:]
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.float32) - 8  # j, j + 16
        return (d[:, None] * q).reshape(-1), np.repeat(np.abs(d), 32)
    if kind in ("Q4_1", "Q5_0", "Q5_1", "IQ4_NL"):
        # f16 d, (Q4_1, Q5_1) f16 m, (Q5_*) 32 fifth bits, 16 nibble bytes: byte j holds
        # elements j and j + 16; bit e of the little-endian qh is bit 4 of element e.
        size = {"Q4_1": 20, "Q5_0": 22, "Q5_1": 24, "IQ4_NL": 18}[kind]
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size)
        d = f16(b[:, :2].tobytes())
        at = 4 if kind in ("Q4_1", "Q5_1") else 2
        if kind.startswith("Q5"):
            qh = b[:, at:at + 4].copy().view("<u4")[:, 0].astype(np.int64)
            hi = ((qh[:, None] >> np.arange(32)) & 1) << 4
            at += 4
        else:
            hi = 0
        qs = b[:, at:at + 16]
        q = np.concatenate([qs & 0xF, qs >> 4], axis=1).astype(np.int64) | hi
        if kind == "IQ4_NL":  # levels from the table; the widest gap is 24 (89 .. 113)
            return (d[:, None] * IQ4NL[q]).reshape(-1), np.repeat(np.abs(d) * 12, 32)
        if kind == "Q5_0":
            return (d[:, None] * (q - 16)).reshape(-1), np.repeat(np.abs(d), 32)
        m = f16(b[:, 2:4].tobytes())  # x = d q + m; the f16 minimum adds its own rounding
        return ((d[:, None] * q) + m[:, None]).reshape(-1), np.repeat(np.abs(d) + np.abs(m) / 512, 32)
    if kind in ("Q2_K", "Q3_K"):
        # 16 sub-blocks of 16; element e = 128h + 32j + l: 2 bits at 2j of qs byte 32h + l.
        # Q2_K: scales[16] (4-bit scale | 4-bit min << 4), qs[64], f16 d, dmin; d sc q - dmin m.
        # Q3_K: hmask[32] (bit e // 32 of byte e % 32 set: +4), qs[64], 12 bytes of 6-bit scales
        # (low 4 bits two to a byte, high 2 bits in bytes 8..11), f16 d; d (sc - 32) (q - 4).
        size = 84 if kind == "Q2_K" else 110
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, size).astype(np.int64)
        e = np.arange(256)
        qs = b[:, 16:80] if kind == "Q2_K" else b[:, 32:96]
        q = (qs[:, 32 * (e // 128) + e % 32] >> (2 * ((e // 32) % 4))) & 3
        if kind == "Q2_K":
            d, dmin = f16(b[:, 80:82].astype(np.uint8).tobytes()), f16(b[:, 82:84].astype(np.uint8).tobytes())
            sc, mn = (b[:, :16] & 0xF)[:, e // 16], (b[:, :16] >> 4)[:, e // 16]
            ds = d[:, None] * sc
            out = ds * q - (dmin[:, None] * mn)
            return out.reshape(-1).astype(np.float32), (np.abs(ds) + np.abs(dmin)[:, None] / 2).reshape(-1)
        q = q + 4 * ((b[:, e % 32] >> (e // 32)) & 1) - 4
        s = b[:, 96:108]
        j = np.arange(16)
        lo = np.where(j < 8, s[:, j % 8] & 0xF, s[:, j % 8] >> 4)
        sc = (lo | (((s[:, 8 + j % 4] >> (2 * (j // 4))) & 3) << 4)) - 32
        d = f16(b[:, 108:110].astype(np.uint8).tobytes())
        ds = d[:, None] * sc[:, e // 16]
        return (ds * q).reshape(-1).astype(np.float32), np.abs(ds).reshape(-1)
    if kind == "Q5_K":  # Q4_K's scales and nibbles at 4 and 48, a fifth bit (qh[32] at 16)
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 176)
        d, dmin = f16(b[:, 0:2].tobytes()), f16(b[:, 2:4].tobytes())
        sc, qh, qs = b[:, 4:16].astype(np.int32), b[:, 16:48].astype(np.int32), b[:, 48:]
        out = np.zeros((len(b), 256), dtype=np.float32)
        err = np.zeros((len(b), 256), dtype=np.float32)
        for j in range(8):  # sub-block j: nibble half j % 2 of bytes 32 (j // 2).., bit j of qh
            if j < 4:
                scale, mn = sc[:, j] & 63, sc[:, j + 4] & 63
            else:
                scale = (sc[:, j + 4] & 0xF) | ((sc[:, j - 4] >> 6) << 4)
                mn = (sc[:, j + 4] >> 4) | ((sc[:, j] >> 6) << 4)
            nib = (qs[:, 32 * (j // 2):32 * (j // 2) + 32] >> (4 * (j % 2))) & 0xF
            q = nib | (((qh >> j) & 1) << 4)
            ds = d * scale
            out[:, 32 * j:32 * j + 32] = ds[:, None] * q - (dmin * mn)[:, None]
            err[:, 32 * j:32 * j + 32] = np.abs(ds)[:, None]
        return out.reshape(-1), err.reshape(-1)
    if kind == "Q4_K":
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 144)
        d, dmin = f16(b[:, 0:2].tobytes()), f16(b[:, 2:4].tobytes())
        sc, qs = b[:, 4:16].astype(np.int32), b[:, 16:]
        scale, mn = np.zeros((len(b), 8)), np.zeros((len(b), 8))
        for j in range(8):  # 6-bit scale and min of sub-block j
            if j < 4:
                scale[:, j], mn[:, j] = sc[:, j] & 63, sc[:, j + 4] & 63
            else:
                scale[:, j] = (sc[:, j + 4] & 0xF) | ((sc[:, j - 4] >> 6) << 4)
                mn[:, j] = (sc[:, j + 4] >> 4) | ((sc[:, j] >> 6) << 4)
        out = np.zeros((len(b), 256), dtype=np.float32)
        err = np.zeros((len(b), 256), dtype=np.float32)
        for g in range(4):
            grp = qs[:, 32 * g:32 * g + 32]
            for half, nib in ((0, grp & 0xF), (1, grp >> 4)):
                j = 2 * g + half
                ds = d * scale[:, j]
                out[:, 32 * j:32 * j + 32] = ds[:, None] * nib - (dmin * mn[:, j])[:, None]
                err[:, 32 * j:32 * j + 32] = np.abs(ds)[:, None]
        return out.reshape(-1), err.reshape(-1)
    if kind == "Q6_K":
        b = np.frombuffer(raw, dtype=np.uint8).reshape(-1, 210)
        ql, qh = b[:, :128].astype(np.int32), b[:, 128:192].astype(np.int32)
        sc = b[:, 192:208].view(np.int8).astype(np.float32)
        d = f16(b[:, 208:210].tobytes())
        out = np.zeros((len(b), 256), dtype=np.float32)
        err = np.zeros((len(b), 256), dtype=np.float32)
        for h in range(2):  # two halves of 128: ql 64 bytes, qh 32 bytes, 8 scales each
            L, H, S = ql[:, 64 * h:64 * h + 64], qh[:, 32 * h:32 * h + 32], sc[:, 8 * h:8 * h + 8]
            parts = [(L[:, :32] & 0xF) | ((H & 3) << 4), (L[:, 32:] & 0xF) | (((H >> 2) & 3) << 4),
                     (L[:, :32] >> 4) | (((H >> 4) & 3) << 4), (L[:, 32:] >> 4) | (((H >> 6) & 3) << 4)]
            for k, q in enumerate(parts):  # 32 values; scale index per 16 elements: 2k, 2k + 1
                s16 = np.repeat(S[:, 2 * k:2 * k + 2], 16, axis=1)
                base = 128 * h + 32 * k
                out[:, base:base + 32] = d[:, None] * s16 * (q - 32)
                err[:, base:base + 32] = np.abs(d[:, None] * s16)
        return out.reshape(-1), err.reshape(-1)
    raise ValueError(kind)


HF_TO_GGUF = {
    "model.embed_tokens.weight": "token_embd.weight",
    "model.norm.weight": "output_norm.weight",
    "lm_head.weight": "output.weight",
}
LAYER = {
    "input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "ffn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight", "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.weight": "attn_k.weight", "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.weight": "attn_v.weight", "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.o_proj.weight": "attn_output.weight", "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight", "mlp.down_proj.weight": "ffn_down.weight",
}
FILE_TYPE = {"f32": 0, "f16": 1, "q4_0": 2, "q8_0": 7, "q4_k": 14, "q6_k": 18, "bf16": 32,
             "q4_1": 3, "q5_0": 8, "q5_1": 9, "iq4_nl": 25, "q5_k": 16, "q3_k": 11, "q2_k": 10,
             "q3_k_m": 12, "q4_k_m": 15, "q5_k_m": 17}
# llama-quantize's substitute when rows are not whole 256-blocks (then F16 if not whole 32-blocks).
FALLBACK = {"Q4_K": "Q5_0", "Q6_K": "Q8_0", "Q5_K": "Q5_1", "Q3_K": "IQ4_NL", "Q2_K": "IQ4_NL"}
# llama-quantize's mixes (q2_k is its Q2_K file type, a mix too) and their default K-quant.
MIX = {"q2_k": "Q2_K", "q3_k_m": "Q3_K", "q4_k_m": "Q4_K", "q5_k_m": "Q5_K"}


def mix_choice(type_name, name, cols, cfg):
    """The type llama-quantize picks for matrix `name` in a mix, for a dense model without an
    importance matrix (before the fallback for rows that are not whole blocks)."""
    base = MIX[type_name]
    n = cfg["num_hidden_layers"]
    gqa = cfg["num_attention_heads"] // cfg["num_key_value_heads"]
    if name == "output.weight" or (name == "token_embd.weight" and cfg["tie_word_embeddings"]):
        return "Q6_K" if cols % 256 == 0 else "Q8_0"
    parts = name.split(".")
    if parts[0] != "blk":
        return base
    i, what = int(parts[1]), parts[2]
    more = i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2
    if what == "attn_v":
        return {"q2_k": "Q4_K" if gqa >= 4 else "Q3_K", "q3_k_m": "Q5_K" if i < 2 else "Q4_K"}.get(
            type_name, "Q6_K" if more else base)
    if what == "ffn_down":
        return {"q2_k": "Q3_K", "q3_k_m": "Q5_K" if i < n // 16 else "Q4_K"}.get(
            type_name, "Q6_K" if more else base)
    if what == "attn_output":
        return {"q2_k": "Q3_K", "q3_k_m": "Q4_K"}.get(type_name, base)
    return base


KIND_BLOCK = {"Q8_0": 32, "Q4_0": 32, "Q4_1": 32, "Q5_0": 32, "Q5_1": 32, "IQ4_NL": 32,
              "Q2_K": 256, "Q3_K": 256, "Q4_K": 256, "Q5_K": 256, "Q6_K": 256, "F16": 1,
              "BF16": 1, "F32": 1}


def gguf_name(hf):
    if hf in HF_TO_GGUF:
        return HF_TO_GGUF[hf]
    parts = hf.split(".")
    assert parts[:2] == ["model", "layers"], hf
    return "blk.%s.%s" % (parts[2], LAYER[".".join(parts[3:])])


def check_tokenizer(kv, model_dir, cfg, val, expect):
    """tokenizer.ggml.* and tokenizer.chat_template against tokenizer.json / tokenizer_config.json."""
    U32 = 4
    tok = json.load(open(os.path.join(model_dir, "tokenizer.json"), encoding="utf-8"))
    tcfg = json.load(open(os.path.join(model_dir, "tokenizer_config.json"), encoding="utf-8"))
    V = cfg["vocab_size"]
    want_tokens = ["[PAD%d]" % i for i in range(V)]
    want_types = [5] * V
    for t, i in tok["model"]["vocab"].items():
        want_tokens[i], want_types[i] = t, 1
    for a in tok["added_tokens"]:
        want_tokens[a["id"]], want_types[a["id"]] = a["content"], 3 if a["special"] else 4
    expect(val("tokenizer.ggml.model", STRING) == "gpt2", "tokenizer.ggml.model")
    expect(val("tokenizer.ggml.pre", STRING) == "qwen2", "tokenizer.ggml.pre")
    tokens = val("tokenizer.ggml.tokens", ARRAY)
    expect(tokens is not None and tokens[1] == STRING and tokens[2] == want_tokens, "tokens")
    types = val("tokenizer.ggml.token_type", ARRAY)
    expect(types is not None and types[1] == 5 and types[2] == want_types, "token_type")
    merges = val("tokenizer.ggml.merges", ARRAY)
    want_merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    expect(merges is not None and merges[2] == want_merges, "merges")
    ids = {t: i for i, t in enumerate(want_tokens)}
    expect(val("tokenizer.ggml.eos_token_id", U32) == ids[tcfg["eos_token"]], "eos_token_id")
    expect(val("tokenizer.ggml.padding_token_id", U32) == ids[tcfg["pad_token"]], "padding_token_id")
    expect(val("tokenizer.ggml.bos_token_id", U32) == cfg["bos_token_id"], "bos_token_id")
    expect(val("tokenizer.ggml.add_bos_token", 7) is False, "add_bos_token")
    expect(val("tokenizer.chat_template", STRING) == tcfg["chat_template"], "chat_template")


def check(gguf, model_dir, type_name):
    errors = []

    def expect(cond, what):
        if not cond:
            errors.append(what)

    version, kv, tensors, align = read_gguf(gguf)
    cfg = json.load(open(os.path.join(model_dir, "config.json")))
    expect(version == 3, "version %d" % version)
    expect(align == 32, "alignment %d" % align)

    def val(key, typ=None):
        if key not in kv:
            errors.append("missing key " + key)
            return None
        t, v = kv[key]
        if typ is not None and t != typ:
            errors.append("%s has type %d, expected %d" % (key, t, typ))
        return v

    U32, F32 = 4, 6
    expect(val("general.architecture", STRING) == "qwen2", "general.architecture")
    expect(val("general.file_type", U32) == FILE_TYPE[type_name], "general.file_type")
    expect(val("general.quantization_version", U32) == 2, "general.quantization_version")
    for key, hf in (("block_count", "num_hidden_layers"), ("context_length", "max_position_embeddings"),
                    ("embedding_length", "hidden_size"), ("feed_forward_length", "intermediate_size"),
                    ("attention.head_count", "num_attention_heads"),
                    ("attention.head_count_kv", "num_key_value_heads")):
        expect(val("qwen2." + key, U32) == cfg[hf], "qwen2." + key)
    expect(val("qwen2.rope.freq_base", F32) == float(np.float32(cfg["rope_theta"])), "freq_base")
    expect(val("qwen2.attention.layer_norm_rms_epsilon", F32) == float(np.float32(cfg["rms_norm_eps"])),
           "layer_norm_rms_epsilon")

    # Tokenizer, as llama.cpp's converter writes it for Qwen2 (none when the directory has none).
    if not os.path.exists(os.path.join(model_dir, "tokenizer.json")):
        expect(not any(k.startswith("tokenizer.") for k in kv), "tokenizer keys without a tokenizer")
    else:
        check_tokenizer(kv, model_dir, cfg, val, expect)

    # Tensors.
    src = load_weights(model_dir)  # float64 arrays of the exact source values
    want_names = {gguf_name(n): n for n in src if n != "lm_head.weight" or not cfg["tie_word_embeddings"]}
    got = {t["name"]: t for t in tensors}
    expect(set(got) == set(want_names), "tensor names differ: %s" % sorted(set(got) ^ set(want_names)))
    worst = {}
    for name, hf in sorted(want_names.items()):
        t = got.get(name)
        if t is None:
            continue
        x = src[hf].astype(np.float32)  # the source values (exact: F32/BF16/F16 fit in float32)
        expect(t["shape"] == list(x.shape), "%s shape %s vs %s" % (name, t["shape"], list(x.shape)))
        kind = t["kind"]
        if x.ndim == 1:
            expect(kind == "F32", "%s is %s, expected F32" % (name, kind))
        else:
            want = mix_choice(type_name, name, x.shape[1], cfg) if type_name in MIX else type_name.upper()
            if x.shape[1] % KIND_BLOCK[want]:
                want = FALLBACK.get(want, "F16") if x.shape[1] % 32 == 0 else "F16"
            expect(kind == want, "%s is %s, expected %s" % (name, kind, want))
        flat = x.reshape(-1)
        if kind == "F32":
            expect(t["data"] == flat.astype("<f4").tobytes(), name + " F32 data")
        elif kind == "F16":
            expect(t["data"] == flat.astype("<f2").tobytes(), name + " F16 data")
        elif kind == "BF16":
            expect(t["data"] == to_bf16_bits(flat).astype("<u2").tobytes(), name + " BF16 data")
        else:
            deq, step = dequant(kind, t["data"], flat.size)
            # Round to nearest: within half a step, plus the f16 rounding of the scales.
            bound = {"Q8_0": 0.6, "Q4_0": 1.1, "Q4_K": 1.1, "Q6_K": 1.1, "Q5_0": 1.1, "Q5_1": 0.6,
                     "Q4_1": 0.6, "IQ4_NL": 1.3, "Q5_K": 1.1, "Q3_K": 1.6, "Q2_K": 1.6}[kind] * step
            bound = bound + 1e-6 * np.abs(flat).max()
            if kind == "IQ4_NL":  # a least-squares scale may leave the block's extremes past the
                # table's ends (113 and -127 times d): their distance to the end is allowed too
                bound = bound + np.maximum(0, np.abs(flat) - 113 * step / 12)
            if kind in ("Q4_K", "Q5_K"):  # mins are quantized too: allow their step as well
                bound = bound + np.abs(flat).max() / 63 * 0.6
            if kind in ("Q3_K", "Q2_K"):  # a least-squares scale may clip a sub-block's extremes
                bound = bound + np.abs(flat).max() / 4
            err = np.abs(deq - flat)
            worst[kind] = max(worst.get(kind, 0.0), float((err / np.maximum(bound, 1e-30)).max()))
            expect(bool((err <= bound).all()), "%s %s: error %.3g above bound" % (name, kind, err.max()))
            rel = np.linalg.norm(deq - flat) / np.linalg.norm(flat)
            limit = {"Q8_0": 0.01, "Q4_0": 0.2, "Q4_K": 0.15, "Q6_K": 0.05, "Q5_0": 0.1,
                     "Q5_1": 0.06, "Q4_1": 0.12, "IQ4_NL": 0.15, "Q5_K": 0.08, "Q3_K": 0.3,
                     "Q2_K": 0.5}[kind]
            expect(rel < limit, "%s relative error %.3g" % (name, rel))
    print("gguf_ref: %s: %d tensors, %d keys checked%s" % (
        gguf, len(tensors), len(kv), "".join(", %s error/bound %.2f" % kv_ for kv_ in worst.items())))
    return errors


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--type", required=True, choices=sorted(FILE_TYPE))
    a = ap.parse_args(argv)
    errors = check(a.gguf, a.model, a.type)
    for e in errors:
        print("FAIL", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
