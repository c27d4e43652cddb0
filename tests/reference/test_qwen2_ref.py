#!/usr/bin/python3
"""Self-tests of the numpy Qwen2 reference (tests/reference/qwen2_ref.py).

Checks the reference against hand-computed values and against a second,
differently written formulation (per-token loop with a KV cache, pairwise
RoPE), and -- when torch is importable -- against torch ops in float64.
No part of logitscope's C++ code is involved."""
import json
import math
import os
import struct
import sys
import tempfile
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import qwen2_ref as ref  # noqa: E402
import st_write  # noqa: E402


class Safetensors(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_bf16_bits(self):
        # 0x3F80 = 1.0, 0xC000 = -2.0, 0x3FC0 = 1.5, 0x4049 = 3.140625, 0x0000 = 0, 0x7F80 = inf
        bits = np.array([0x3F80, 0xC000, 0x3FC0, 0x4049, 0x0000, 0x7F80], dtype="<u2")
        p = os.path.join(self.d, "a.safetensors")
        st_write.write(p, {}, raw={"t": ("BF16", [2, 3], bits.tobytes())})
        t = ref.read_safetensors(p)["t"]
        self.assertEqual(t.shape, (2, 3))
        self.assertEqual(t.dtype, np.float64)
        np.testing.assert_array_equal(t.ravel(), [1.0, -2.0, 1.5, 3.140625, 0.0, np.inf])

    def test_f16_f32_and_metadata(self):
        p = os.path.join(self.d, "b.safetensors")
        h = np.array([0x3C00, 0xC000, 0x3555], dtype="<u2")  # 1, -2, 0.333251953125
        f = np.array([0.1, -7.25], dtype="<f4")
        st_write.write(p, {}, metadata={"format": "pt"},
                       raw={"h": ("F16", [3], h.tobytes()), "f": ("F32", [2, 1], f.tobytes())})
        w = ref.read_safetensors(p)
        self.assertNotIn("__metadata__", w)
        np.testing.assert_array_equal(w["h"], [1.0, -2.0, 0.333251953125])
        np.testing.assert_array_equal(w["f"].ravel(), [np.float32(0.1), -7.25])

    def test_bf16_writer_rounding(self):
        # 1 + 2^-8 is exactly halfway between bf16 1.0 and 1.0078125 -> ties to even (1.0)
        # 1 + 3*2^-8 halfway between 1.0078125 and 1.015625 -> even is 1.015625
        bits = st_write.to_bf16_bits(np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, 1 + 2 ** -8 + 2 ** -20]))
        np.testing.assert_array_equal(bits, [0x3F80, 0x3F82, 0x3F81])

    def test_bad_offsets_rejected(self):
        p = os.path.join(self.d, "c.safetensors")
        hdr = json.dumps({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 12]}}).encode()
        with open(p, "wb") as fh:
            fh.write(struct.pack("<Q", len(hdr)) + hdr + b"\0" * 12)
        with self.assertRaises(ref.SafetensorsError):
            ref.read_safetensors(p)

    def test_sharded_equals_single(self):
        rng = np.random.default_rng(1)
        w, cfg = st_write.random_model(rng, tied=False)
        a, b = os.path.join(self.d, "one"), os.path.join(self.d, "three")
        st_write.write_model(a, w, cfg)
        st_write.write_model(b, w, cfg, shards=3)
        self.assertEqual(len([n for n in os.listdir(b) if n.endswith(".safetensors")]), 3)
        wa, wb = ref.load_weights(a), ref.load_weights(b)
        self.assertEqual(sorted(wa), sorted(wb))
        for k in wa:
            np.testing.assert_array_equal(wa[k], wb[k])
        np.testing.assert_array_equal(ref.forward(a, [3, 1, 4]), ref.forward(b, [3, 1, 4]))


class Blocks(unittest.TestCase):
    def test_rms_norm_hand(self):
        x = np.array([1.0, 2.0, 3.0, 4.0])
        w = np.array([1.0, 1.0, 2.0, 0.5])
        # mean(x^2) = 30/4 = 7.5
        r = 1 / math.sqrt(7.5 + 1e-6)
        np.testing.assert_allclose(ref.rms_norm(x, w, 1e-6), [r, 2 * r, 6 * r, 2 * r], rtol=1e-15)
        # eps matters: x = 0.001 everywhere, eps = 1e-6 -> 0.001/sqrt(2e-6)
        y = ref.rms_norm(np.full(8, 1e-3), np.ones(8), 1e-6)
        np.testing.assert_allclose(y, np.full(8, 1e-3 / math.sqrt(2e-6)), rtol=1e-14)

    def test_rope_hand(self):
        # head_dim 4, theta 100: inv_freq = [100^0, 100^(-2/4)] = [1, 0.1]
        x = np.array([1.0, 2.0, 3.0, 4.0])
        for p in (0, 1, 5, 1000):
            cos, sin = ref.rope_cos_sin(np.array([p]), 4, 100.0)
            got = ref.apply_rope(x[None, None, :], cos, sin)[0, 0]
            a, b = p * 1.0, p * 0.1
            want = [1 * math.cos(a) - 3 * math.sin(a), 2 * math.cos(b) - 4 * math.sin(b),
                    3 * math.cos(a) + 1 * math.sin(a), 4 * math.cos(b) + 2 * math.sin(b)]
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)

    def test_rope_inv_freq_theta(self):
        cos, sin = ref.rope_cos_sin(np.array([1]), 8, 1e6)
        ang = np.arctan2(sin[0], cos[0])
        want = [1.0, 1e6 ** (-2 / 8), 1e6 ** (-4 / 8), 1e6 ** (-6 / 8)]
        np.testing.assert_allclose(ang[:4], want, rtol=1e-12)
        np.testing.assert_allclose(ang[4:], want, rtol=1e-12)

    def test_rope_relative(self):
        rng = np.random.default_rng(0)
        q, k = rng.standard_normal(16), rng.standard_normal(16)

        def dot(m, n):
            c, s = ref.rope_cos_sin(np.array([m, n]), 16, 1e4)
            qr = ref.apply_rope(q[None, None], c[:1], s[:1])[0, 0]
            kr = ref.apply_rope(k[None, None], c[1:], s[1:])[0, 0]
            return qr @ kr
        self.assertAlmostEqual(dot(7, 3), dot(104, 100), places=10)
        self.assertNotAlmostEqual(dot(7, 3), dot(7, 4), places=3)

    def test_attention_position0_is_value(self):
        rng = np.random.default_rng(2)
        H, KV, T, D = 4, 2, 5, 8
        q = rng.standard_normal((H, T, D))
        k = rng.standard_normal((KV, T, D))
        v = rng.standard_normal((KV, T, D))
        out = ref.attention(q, k, v)
        for h in range(H):
            np.testing.assert_allclose(out[h, 0], v[h // 2, 0], rtol=1e-14)  # heads 0,1 -> kv 0; 2,3 -> kv 1

    def test_attention_hand_two_positions(self):
        # one head, D = 4: position 1 attends to positions 0 and 1 with scale 1/2
        q = np.array([[[0, 0, 0, 0], [1.0, 0, 0, 1.0]]])
        k = np.array([[[2.0, 0, 0, 0], [0, 0, 0, -2.0]]])
        v = np.array([[[1.0, 0, 0, 0], [0, 1.0, 0, 0]]])
        s0, s1 = 2.0 / 2, -2.0 / 2
        p0 = math.exp(s0) / (math.exp(s0) + math.exp(s1))
        out = ref.attention(q, k, v)
        np.testing.assert_allclose(out[0, 1], [p0, 1 - p0, 0, 0], rtol=1e-14)

    def test_attention_causal(self):
        rng = np.random.default_rng(3)
        q, k, v = rng.standard_normal((2, 6, 4)), rng.standard_normal((1, 6, 4)), rng.standard_normal((1, 6, 4))
        a = ref.attention(q, k, v)
        k2, v2 = k.copy(), v.copy()
        k2[:, 4:] += 10
        v2[:, 4:] -= 3
        b = ref.attention(q, k2, v2)
        np.testing.assert_array_equal(a[:, :4], b[:, :4])
        self.assertGreater(np.abs(a[:, 4:] - b[:, 4:]).max(), 0.1)

    def test_silu(self):
        np.testing.assert_allclose(ref.silu(np.array([0.0, 1.0, -2.0])),
                                   [0.0, 1 / (1 + math.exp(-1)), -2 / (1 + math.exp(2))], rtol=1e-15)


def loop_forward(w, cfg, tokens):
    """A second formulation: one token at a time with a KV cache, pairwise RoPE,
    explicit loops over heads and past positions.  float64."""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hid, eps, theta = cfg["hidden_size"], cfg["rms_norm_eps"], cfg["rope_theta"]
    D = hid // H
    half = D // 2
    W = {k: v.astype(np.float64) for k, v in w.items()}
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]

    def norm(x, g):
        return g * x / math.sqrt(sum(float(t) * float(t) for t in x) / len(x) + eps)

    def rot(x, pos):
        y = x.copy()
        for i in range(half):
            ang = pos / theta ** (2 * i / D)
            c, s = math.cos(ang), math.sin(ang)
            y[i] = x[i] * c - x[i + half] * s
            y[i + half] = x[i + half] * c + x[i] * s
        return y

    caches = [([], []) for _ in range(cfg["num_hidden_layers"])]
    out = []
    for pos, tok in enumerate(tokens):
        x = W["model.embed_tokens.weight"][tok].copy()
        for L in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % L
            h = norm(x, W[p + "input_layernorm.weight"])
            q = W[p + "self_attn.q_proj.weight"].dot(h) + W[p + "self_attn.q_proj.bias"]
            k = W[p + "self_attn.k_proj.weight"].dot(h) + W[p + "self_attn.k_proj.bias"]
            v = W[p + "self_attn.v_proj.weight"].dot(h) + W[p + "self_attn.v_proj.bias"]
            kc, vc = caches[L]
            kc.append(np.concatenate([rot(k[j * D:(j + 1) * D], pos) for j in range(KV)]))
            vc.append(v)
            att = np.zeros(H * D)
            for hh in range(H):
                j = hh * KV // H
                qh = rot(q[hh * D:(hh + 1) * D], pos)
                sc = [float(qh.dot(kk[j * D:(j + 1) * D])) / math.sqrt(D) for kk in kc]
                m = max(sc)
                e = [math.exp(s - m) for s in sc]
                z = sum(e)
                for t, vv in enumerate(vc):
                    att[hh * D:(hh + 1) * D] += e[t] / z * vv[j * D:(j + 1) * D]
            x = x + W[p + "self_attn.o_proj.weight"].dot(att)
            h = norm(x, W[p + "post_attention_layernorm.weight"])
            g = W[p + "mlp.gate_proj.weight"].dot(h)
            u = W[p + "mlp.up_proj.weight"].dot(h)
            act = np.array([gi / (1 + math.exp(-gi)) for gi in g]) * u
            x = x + W[p + "mlp.down_proj.weight"].dot(act)
        out.append(head.dot(norm(x, W["model.norm.weight"])))
    return np.array(out)


class Model(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def test_identity_layers_hand(self):
        # All projections and biases zero: each layer adds 0, so
        # logits = rmsnorm(embed[t]) * norm_w @ lm_head^T, independent of context.
        rng = np.random.default_rng(4)
        w, cfg = st_write.random_model(rng, tied=False)
        for k in w:
            if "_proj" in k:
                w[k] = np.zeros_like(w[k])
        st_write.write_model(self.d, w, cfg)
        toks = [5, 17, 5, 49]
        got = ref.forward(self.d, toks)
        E = w["model.embed_tokens.weight"].astype(np.float64)
        for i, t in enumerate(toks):
            e = E[t]
            n = e / np.sqrt(np.mean(e * e) + cfg["rms_norm_eps"]) * w["model.norm.weight"]
            np.testing.assert_allclose(got[i], w["lm_head.weight"].astype(np.float64) @ n, rtol=1e-12, atol=1e-12)

    def check_loop(self, tied, heads, kv, dtype="F32"):
        rng = np.random.default_rng(10 + heads + kv + tied)
        w, cfg = st_write.random_model(rng, hidden=16, heads=heads, kv=kv, tied=tied, theta=1e4)
        st_write.write_model(self.d, w, cfg, dtype=dtype)
        if dtype == "BF16":  # the loop formulation sees the bf16-rounded values, decoded on its own
            w = {k: (st_write.to_bf16_bits(v).astype(np.uint32) << 16).view(np.float32) for k, v in w.items()}
        elif dtype == "F16":
            w = {k: v.astype(np.float16).astype(np.float32) for k, v in w.items()}
        toks = [3, 0, 49, 7, 7, 21, 1]
        a = ref.forward(self.d, toks)
        b = loop_forward(w, cfg, toks)
        self.assertEqual(a.shape, (len(toks), cfg["vocab_size"]))
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)
        return a

    def test_vs_loop_tied_gqa(self):
        self.check_loop(True, 4, 2)

    def test_vs_loop_untied_mha(self):
        self.check_loop(False, 2, 2)

    def test_vs_loop_mqa(self):
        self.check_loop(False, 4, 1)

    def test_vs_loop_bf16(self):
        self.check_loop(True, 4, 2, "BF16")

    def test_vs_loop_f16(self):
        self.check_loop(False, 4, 2, "F16")

    def test_prefix_consistency(self):
        rng = np.random.default_rng(5)
        w, cfg = st_write.random_model(rng)
        st_write.write_model(self.d, w, cfg)
        m = ref.Qwen2Ref(self.d)
        full = m.logits([9, 8, 7, 6, 5])
        np.testing.assert_allclose(m.logits([9, 8, 7])[-1], full[2], rtol=0, atol=1e-12)
        self.assertGreater(np.abs(m.logits([9, 8, 1])[-1] - full[2]).max(), 1e-3)

    def test_cli(self):
        import subprocess
        rng = np.random.default_rng(6)
        w, cfg = st_write.random_model(rng)
        st_write.write_model(self.d, w, cfg)
        out = os.path.join(self.d, "r.npy")
        subprocess.run([sys.executable, ref.__file__, "--model", self.d, "--tokens", "1,2,3",
                        "--out", out], check=True, capture_output=True)
        np.testing.assert_array_equal(np.load(out), ref.forward(self.d, [1, 2, 3]))


def torch_forward(torch, model_dir, tokens):
    """Third formulation with torch ops (float64), own safetensors decode via torch.frombuffer,
    RoPE as complex multiplication of (x_i, x_{i+d/2}) pairs, GQA by repeat_interleave."""
    import torch.nn.functional as F
    with open(os.path.join(model_dir, "config.json")) as fh:
        cfg = json.load(fh)
    with open(os.path.join(model_dir, "model.safetensors"), "rb") as fh:
        blob = fh.read()
    n = struct.unpack("<Q", blob[:8])[0]
    hdr = json.loads(blob[8:8 + n])
    tdt = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16}
    W = {}
    for k, info in hdr.items():
        if k == "__metadata__":
            continue
        a, b = info["data_offsets"]
        buf = bytearray(blob[8 + n + a:8 + n + b])
        W[k] = torch.frombuffer(buf, dtype=tdt[info["dtype"]]).reshape(info["shape"]).to(torch.float64)
    H, KV, hid = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    D, eps, T = hid // H, cfg["rms_norm_eps"], len(tokens)

    def norm(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g

    half = D // 2
    inv = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
    rot = torch.polar(torch.ones(T, half, dtype=torch.float64),
                      torch.outer(torch.arange(T, dtype=torch.float64), inv))

    def rope(x):  # x [T, heads, D]
        z = torch.complex(x[..., :half], x[..., half:]) * rot[:, None, :]
        return torch.cat([z.real, z.imag], dim=-1)

    x = F.embedding(torch.tensor(tokens), W["model.embed_tokens.weight"])
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        h = norm(x, W[p + "input_layernorm.weight"])
        q = rope(F.linear(h, W[p + "self_attn.q_proj.weight"], W[p + "self_attn.q_proj.bias"]).view(T, H, D))
        k = rope(F.linear(h, W[p + "self_attn.k_proj.weight"], W[p + "self_attn.k_proj.bias"]).view(T, KV, D))
        v = F.linear(h, W[p + "self_attn.v_proj.weight"], W[p + "self_attn.v_proj.bias"]).view(T, KV, D)
        k = k.repeat_interleave(H // KV, dim=1)
        v = v.repeat_interleave(H // KV, dim=1)
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(D) + mask
        a = torch.einsum("hts,shd->thd", torch.softmax(s, dim=-1), v).reshape(T, H * D)
        x = x + F.linear(a, W[p + "self_attn.o_proj.weight"])
        h = norm(x, W[p + "post_attention_layernorm.weight"])
        x = x + F.linear(F.silu(F.linear(h, W[p + "mlp.gate_proj.weight"])) * F.linear(h, W[p + "mlp.up_proj.weight"]),
                         W[p + "mlp.down_proj.weight"])
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]
    return F.linear(norm(x, W["model.norm.weight"]), head).numpy()


class Torch(unittest.TestCase):
    def test_vs_torch(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch not importable (apt-get install python3-torch to enable)")
        worst = 0.0
        with tempfile.TemporaryDirectory() as d:
            for i, (dtype, tied, heads, kv) in enumerate([("F32", True, 4, 2), ("F32", False, 8, 2),
                                                           ("BF16", True, 4, 2), ("BF16", False, 4, 1),
                                                           ("F16", True, 2, 2)]):
                rng = np.random.default_rng(100 + i)
                w, cfg = st_write.random_model(rng, hidden=64, inter=96, layers=3, heads=heads, kv=kv,
                                               vocab=300, tied=tied)
                md = os.path.join(d, str(i))
                st_write.write_model(md, w, cfg, dtype=dtype)
                toks = list(rng.integers(0, 300, size=24))
                a = ref.forward(md, toks)
                b = torch_forward(torch, md, [int(t) for t in toks])
                diff = float(np.abs(a - b).max())
                worst = max(worst, diff)
                self.assertLess(diff, 1e-10, "%s tied=%s" % (dtype, tied))
        print("\n[torch %s] max abs diff numpy reference vs torch float64: %.3g" % (torch.__version__, worst))


if __name__ == "__main__":
    unittest.main(verbosity=2)
