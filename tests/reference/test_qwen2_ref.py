#!/usr/bin/python3
"""Self-tests of the numpy Qwen2 / Qwen3 reference (tests/reference/qwen2_ref.py).

Checks the reference against hand-computed values and against a second,
differently written formulation (per-token loop with a KV cache, pairwise
RoPE, scalar YaRN frequencies), and -- when torch is importable -- against
torch ops in float64 (YaRN written the way transformers writes it).
Covers Qwen2, dense Qwen3 (q/k norm per head, no bias, head_dim != hidden/heads)
and YaRN rope scaling for both.  No part of logitscope's C++ code is involved."""
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

    def test_round_bf16(self):
        # ties to even (1 + 2^-8 -> 1, 1 + 3 * 2^-8 -> 1 + 2^-6), 1 + 1.25 ulp -> 1 + 2^-7, sign, zero
        x = np.array([1.0, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -3.14159, 0.0, 1.0 + 2.0 ** -7 + 2.0 ** -9])
        np.testing.assert_array_equal(ref.round_bf16(x),
                                      [1.0, 1.0, 1.0 + 2.0 ** -6, -3.140625, 0.0, 1.0 + 2.0 ** -7])
        self.assertTrue(np.isnan(ref.round_bf16(np.array([np.nan]))[0]))

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


def base_cfg(**kw):
    d = {"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "hidden_size": 64, "intermediate_size": 96,
         "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 10,
         "rms_norm_eps": 1e-6, "rope_theta": 1e4}
    d.update(kw)
    return d


class ConfigParse(unittest.TestCase):
    def test_families(self):
        c = ref.Config(base_cfg())
        self.assertEqual((c.model_type, c.head_dim, c.qkv_bias, c.qk_norm), ("qwen2", 16, True, False))
        c = ref.Config(base_cfg(model_type="qwen3", architectures=["Qwen3ForCausalLM"], head_dim=32))
        self.assertEqual((c.model_type, c.head_dim, c.qkv_bias, c.qk_norm), ("qwen3", 32, False, True))
        # model_type absent: from architectures; Qwen3Config's head_dim default is 128
        d = base_cfg(architectures=["Qwen3ForCausalLM"])
        del d["model_type"]
        self.assertEqual((ref.Config(d).model_type, ref.Config(d).head_dim), ("qwen3", 128))
        # Qwen2 with an explicit head_dim (transformers: getattr(config, "head_dim", hidden // heads))
        self.assertEqual(ref.Config(base_cfg(head_dim=8)).head_dim, 8)

    def test_rejected(self):
        for bad, why in ((base_cfg(model_type="llama", architectures=["LlamaForCausalLM"]), "unsupported"),
                         (base_cfg(model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"]), "unsupported"),
                         (base_cfg(architectures=["Qwen3ForCausalLM"]), "do not match"),
                         (base_cfg(model_type="qwen3", architectures=["Qwen3ForCausalLM"], attention_bias=True),
                          "attention_bias"),
                         (base_cfg(use_sliding_window=True), "sliding"),
                         (base_cfg(partial_rotary_factor=0.5), "partial_rotary_factor"),
                         (base_cfg(rope_parameters={"rope_type": "yarn", "factor": 4.0}), "rope_parameters")):
            with self.assertRaisesRegex(ValueError, why):
                ref.Config(bad)

    def test_rope_scaling_keys(self):
        for none in (None, {}, {"rope_type": "default"}, {"type": "default", "factor": 2.0}):
            self.assertIsNone(ref.Config(base_cfg(rope_scaling=none)).rope_scaling, none)
        self.assertEqual(ref.Config(base_cfg(rope_scaling={"type": "yarn", "factor": 4})).rope_scaling["rope_type"], "yarn")
        self.assertEqual(ref.Config(base_cfg(rope_scaling={"rope_type": "yarn", "factor": 4.0})).rope_scaling["factor"], 4.0)
        # transformers' configs copy a legacy "type" over "rope_type": "type" wins
        self.assertIsNone(ref.Config(base_cfg(rope_scaling={"type": "default", "rope_type": "yarn", "factor": 4.0})).rope_scaling)
        for t in ("linear", "dynamic", "longrope", "llama3", "su", "mrope"):
            with self.assertRaisesRegex(ValueError, "rope_scaling type '%s' unsupported" % t):
                ref.Config(base_cfg(rope_scaling={"rope_type": t, "factor": 2.0}))
        with self.assertRaisesRegex(ValueError, "neither rope_type nor type"):
            ref.Config(base_cfg(rope_scaling={"factor": 2.0}))
        with self.assertRaisesRegex(ValueError, "numeric factor"):
            ref.Config(base_cfg(rope_scaling={"rope_type": "yarn"}))

    def test_cli_unsupported_rope_is_an_error(self):
        import subprocess
        with tempfile.TemporaryDirectory() as d:
            w, cfg = st_write.random_model(np.random.default_rng(7), rope_scaling={"rope_type": "linear", "factor": 2.0})
            st_write.write_model(d, w, cfg)
            p = subprocess.run([sys.executable, ref.__file__, "--model", d, "--tokens", "1,2", "--out",
                                os.path.join(d, "r.npy")], capture_output=True, text=True)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("rope_scaling type 'linear' unsupported", p.stderr)
            self.assertFalse(os.path.exists(os.path.join(d, "r.npy")))


class Qwen3Hand(unittest.TestCase):
    """One layer, hidden 2, 2 query heads sharing 1 KV head, head_dim 2 (!= hidden/heads = 1),
    rms_norm_eps 0, no MLP.  q_proj makes head 1 = 10 x head 0, so only a norm applied per head
    gives both heads the same attention; o_proj reads dim 0 of head 0 and dim 1 of head 1.

      tokens [0, 1]: x0 = [1, 0], x1 = [0, 1];  h = rmsnorm(x) = [sqrt2, 0], [0, sqrt2]
      q (pos 1): head0 [0, sqrt2], head1 [0, 10 sqrt2] -> q_norm (w = [1, 2]) -> [0, 2 sqrt2] both
      k: pos 0 [sqrt2, 0] -> k_norm (w = [0.5, 1]) -> [sqrt2/2, 0]; pos 1 [0, sqrt2] -> [0, sqrt2]
      RoPE, head_dim 2: inv_freq [1]; position 1 rotates (a, b) to (a cos1 - b sin1, b cos1 + a sin1)
      q1 = [-2 sqrt2 sin1, 2 sqrt2 cos1], k0 = [sqrt2/2, 0], k1 = [-sqrt2 sin1, sqrt2 cos1]
      scores / sqrt2: s0 = -sqrt2 sin1, s1 = 2 sqrt2;  p = softmax(s0, s1)
      v = h: out (pos 1, each head) = p0 [sqrt2, 0] + p1 [0, sqrt2]
      x1' = [0, 1] + [p0 sqrt2, p1 sqrt2];  logits = rmsnorm(x1') (final norm 1, lm_head = I)
      position 0: attends to itself only: x0' = [1 + sqrt2, 0] -> logits [sqrt2, 0]"""

    def model(self, d):
        w = {"model.embed_tokens.weight": np.eye(2), "lm_head.weight": np.eye(2), "model.norm.weight": np.ones(2),
             "model.layers.0.input_layernorm.weight": np.ones(2),
             "model.layers.0.post_attention_layernorm.weight": np.ones(2),
             "model.layers.0.self_attn.q_proj.weight": np.array([[1, 0], [0, 1], [10, 0], [0, 10.0]]),
             "model.layers.0.self_attn.k_proj.weight": np.eye(2),
             "model.layers.0.self_attn.v_proj.weight": np.eye(2),
             "model.layers.0.self_attn.q_norm.weight": np.array([1.0, 2.0]),
             "model.layers.0.self_attn.k_norm.weight": np.array([0.5, 1.0]),
             "model.layers.0.self_attn.o_proj.weight": np.array([[1, 0, 0, 0], [0, 0, 0, 1.0]]),
             "model.layers.0.mlp.gate_proj.weight": np.zeros((3, 2)),
             "model.layers.0.mlp.up_proj.weight": np.zeros((3, 2)),
             "model.layers.0.mlp.down_proj.weight": np.zeros((2, 3))}
        cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2,
               "intermediate_size": 3, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
               "head_dim": 2, "vocab_size": 2, "rms_norm_eps": 0.0, "rope_theta": 1e6,
               "tie_word_embeddings": False, "attention_bias": False}
        st_write.write_model(d, {k: np.asarray(v, dtype=np.float32) for k, v in w.items()}, cfg)

    def test_hand(self):
        r2, s1 = math.sqrt(2), math.sin(1.0)
        a, b = -r2 * s1, 2 * r2
        p0, p1 = math.exp(a) / (math.exp(a) + math.exp(b)), math.exp(b) / (math.exp(a) + math.exp(b))
        y = np.array([p0 * r2, 1 + p1 * r2])
        want = np.array([[r2, 0.0], y / math.sqrt(np.mean(y * y))])
        with tempfile.TemporaryDirectory() as d:
            self.model(d)
            m = ref.Qwen2Ref(d)
            np.testing.assert_allclose(m.logits([0, 1]), want, rtol=0, atol=1e-14)
            # without the q/k norm (or with one norm over all of q) the two heads differ: not the hand values
            m.cfg.qk_norm = False
            self.assertGreater(np.abs(m.logits([0, 1]) - want).max(), 1e-2)


class Yarn(unittest.TestCase):
    QWEN3_YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}

    def test_hand_small(self):
        # dim 8, base 1e4, original 64, factor 4: correction dims -0.497 (beta_fast 32) and 1.008
        # (beta_slow 1) -> floor/ceil -> [0, 2]; ramp over 4 pairs [0, .5, 1, 1]; extrapolation
        # factor [1, .5, 0, 0]; unscaled rates [1, .1, .01, .001]:
        #   inv_freq = [1, .5*.1/4 + .5*.1, .01/4, .001/4]; attention factor 0.1 ln 4 + 1
        inv, af = ref.yarn_parameters(8, 1e4, st_write.yarn(4.0, 64), 32768)
        np.testing.assert_allclose(inv, [1.0, 0.0625, 0.0025, 0.00025], rtol=1e-14)
        self.assertAlmostEqual(af, 1 + 0.1 * math.log(4), places=15)
        self.assertAlmostEqual(af, 1.1386294361119890, places=15)
        # without original_max_position_embeddings in rope_scaling: config's max_position_embeddings
        inv2, _ = ref.yarn_parameters(8, 1e4, {"rope_type": "yarn", "factor": 4.0}, 64)
        np.testing.assert_array_equal(inv, inv2)

    def test_hand_qwen3_config(self):
        # Qwen3's documented YaRN (factor 4, original 32768), head_dim 128, base 1e6: correction
        # dims 23.60 and 39.65 -> [23, 40]: pairs 0..23 unscaled, 40..63 divided by 4, between
        # mixed with weight (i - 23) / 17 on the divided rate
        inv, af = ref.yarn_parameters(128, 1e6, self.QWEN3_YARN, 40960)
        i = np.arange(64)
        plain = 1e6 ** (-2.0 * i / 128)
        r = np.clip((i - 23) / 17.0, 0, 1)
        np.testing.assert_allclose(inv, plain * (1 - r) + plain / 4 * r, rtol=1e-14)
        np.testing.assert_array_equal(inv[:24], plain[:24])
        np.testing.assert_allclose(inv[40:], plain[40:] / 4, rtol=1e-15)
        self.assertAlmostEqual(af, 1.1386294361119890, places=15)

    def test_options(self):
        base = st_write.yarn(40.0, 4096)
        # both mscale and mscale_all_dim (DeepSeek style): ratio of the two get_mscale terms
        _, af = ref.yarn_parameters(64, 1e4, dict(base, mscale=1.0, mscale_all_dim=0.707), 4096)
        self.assertAlmostEqual(af, (0.1 * math.log(40) + 1) / (0.1 * 0.707 * math.log(40) + 1), places=14)
        # only one of them: ignored, get_mscale(factor) (transformers' `if mscale and mscale_all_dim`)
        _, af = ref.yarn_parameters(64, 1e4, dict(base, mscale=0.5), 4096)
        self.assertAlmostEqual(af, 0.1 * math.log(40) + 1, places=14)
        # an explicit attention_factor wins
        self.assertEqual(ref.yarn_parameters(64, 1e4, dict(base, attention_factor=0.75, mscale=1, mscale_all_dim=1), 4096)[1], 0.75)
        # factor < 1: get_mscale -> 1
        self.assertEqual(ref.yarn_parameters(64, 1e4, st_write.yarn(0.5, 64), 64)[1], 1.0)
        # low == high (both clamp to 0 with original 4): max += 0.001 -> ramp [0, 1, 1, 1]
        inv, _ = ref.yarn_parameters(8, 1e4, st_write.yarn(4.0, 4), 4)
        np.testing.assert_allclose(inv, [1.0, 0.1 / 4, 0.01 / 4, 0.001 / 4], rtol=1e-14)
        # truncate false: the correction range stays fractional: dims 8 * ln(64 / (2 pi r)) / (2 ln 1e4)
        inv, _ = ref.yarn_parameters(8, 1e4, dict(st_write.yarn(4.0, 64), truncate=False), 64)
        lo, hi = 0.0, 8 * math.log(64 / (2 * math.pi)) / (2 * math.log(1e4))
        r = np.clip((np.arange(4) - lo) / (hi - lo), 0, 1)
        np.testing.assert_allclose(inv, (1e4 ** (-np.arange(4) / 4)) * (1 - r + r / 4), rtol=1e-14)
        # beta_fast / beta_slow; 0 means the default (transformers' `or 32`)
        a = ref.yarn_parameters(32, 1e4, dict(base, beta_fast=8, beta_slow=0.5), 4096)[0]
        b = ref.yarn_parameters(32, 1e4, base, 4096)[0]
        self.assertGreater(np.abs(a - b).max(), 1e-4)
        np.testing.assert_array_equal(ref.yarn_parameters(32, 1e4, dict(base, beta_fast=0, beta_slow=0), 4096)[0], b)

    def test_vs_scalar_formulation(self):
        for D, base, rs, mp in ((8, 1e4, st_write.yarn(4.0, 64), 256), (128, 1e6, self.QWEN3_YARN, 40960),
                                (32, 1e4, dict(st_write.yarn(8.0, 8), beta_fast=16, beta_slow=2), 64),
                                (64, 5e5, dict(st_write.yarn(3.0, 100), truncate=False, mscale=2, mscale_all_dim=1), 300),
                                (16, 1e6, {"type": "yarn", "factor": 2.5}, 1000), (8, 1e4, st_write.yarn(4.0, 4), 4)):
            inv, af = ref.yarn_parameters(D, base, rs, mp)
            inv2, af2 = yarn_scalar(D, base, rs, mp)
            np.testing.assert_allclose(inv, inv2, rtol=1e-14, err_msg=str(rs))
            self.assertAlmostEqual(af, af2, places=14)

    def test_vs_torch_transformers_style(self):
        torch = import_torch(self)
        worst32 = 0.0
        for D, base, rs, mp in ((8, 1e4, st_write.yarn(4.0, 64), 256), (128, 1e6, self.QWEN3_YARN, 40960),
                                (32, 1e4, dict(st_write.yarn(8.0, 8), beta_fast=16, beta_slow=2), 64),
                                (64, 5e5, dict(st_write.yarn(3.0, 100), truncate=False, mscale=2, mscale_all_dim=1), 300),
                                (16, 1e6, {"type": "yarn", "factor": 2.5}, 1000), (8, 1e4, st_write.yarn(4.0, 4), 4),
                                (128, 1e6, st_write.yarn(4.0, 64), 256)):
            cfg = {"rope_theta": base, "head_dim": D, "hidden_size": 4 * D, "num_attention_heads": 4,
                   "rope_scaling": rs, "max_position_embeddings": mp}
            inv, af = ref.yarn_parameters(D, base, rs, mp)
            t64, taf = torch_yarn(torch, cfg, torch.float64)
            np.testing.assert_allclose(inv, t64.numpy(), rtol=1e-14, err_msg=str(rs))
            self.assertAlmostEqual(af, taf, places=14)
            t32, _ = torch_yarn(torch, cfg, torch.float32)  # what transformers itself computes
            worst32 = max(worst32, float(np.max(np.abs(t32.numpy().astype(np.float64) / inv - 1))))
        self.assertLess(worst32, 1e-6)
        print("\n[torch %s] YaRN inv_freq: float64 reference vs transformers-style float32: max rel diff %.2g"
              % (torch.__version__, worst32))

    def test_factor_one_is_no_scaling(self):
        # transformers at factor 1: get_mscale(1) = 1 and interpolation == extrapolation, so
        # inv_freq = a (1 - e) + a e = a up to rounding: the same rope as no scaling.  (In the
        # 4.49-4.54 definition the factor would be max_position_embeddings / original when the
        # latter is given; original == max_position_embeddings here, so it is 1 there too.)
        for D, base in ((8, 1e4), (128, 1e6), (32, 1e6)):
            inv, af = ref.yarn_parameters(D, base, st_write.yarn(1.0, 64), 64)
            self.assertEqual(af, 1.0)
            np.testing.assert_allclose(inv, ref.default_inv_freq(D, base), rtol=1e-15, atol=0)
        with tempfile.TemporaryDirectory() as d:
            rng = np.random.default_rng(31)
            w, cfg = st_write.random_qwen3(rng, vocab=60, rope_scaling=st_write.yarn(1.0, 64), max_position_embeddings=64)
            st_write.write_model(d, w, cfg)
            m = ref.Qwen2Ref(d)
            toks = [int(t) for t in rng.integers(0, 60, size=50)]
            a = m.logits(toks)
            m.cfg.rope_scaling = None
            np.testing.assert_allclose(a, m.logits(toks), rtol=0, atol=1e-12)

    def test_cos_sin_scaled(self):
        inv, af = ref.yarn_parameters(8, 1e4, st_write.yarn(4.0, 64), 256)
        cos, sin = ref.rope_cos_sin(np.array([0, 3, 150]), 8, 1e4, inv, af)
        for r, p in enumerate((0, 3, 150)):
            for i, f in enumerate([1.0, 0.0625, 0.0025, 0.00025]):
                for j in (i, i + 4):
                    self.assertAlmostEqual(cos[r, j], af * math.cos(p * f), places=13)
                    self.assertAlmostEqual(sin[r, j], af * math.sin(p * f), places=13)


def yarn_scalar(D, base, rs, max_pos):
    """Second formulation of YaRN's frequencies, one scalar at a time: frequency i mixes the
    unscaled angle rate base^(-2i/D) (weight 1 - r_i) and the rate divided by the factor
    (weight r_i), r_i rising linearly from 0 to 1 between the dimensions at which the
    original context holds beta_fast and beta_slow full turns."""
    factor = float(rs["factor"])
    orig = rs.get("original_max_position_embeddings") or max_pos
    fast, slow = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1
    # the dimension pair index d with wavelength 2 pi base^(2d/D) making `turns` turns in orig positions
    dim_at = [D / 2 * math.log(orig / (2 * math.pi * turns)) / math.log(base) for turns in (fast, slow)]
    if rs.get("truncate", True):
        dim_at = [math.floor(dim_at[0]), math.ceil(dim_at[1])]
    lo, hi = max(dim_at[0], 0), min(dim_at[1], D - 1)
    width = (hi - lo) or 0.001
    freqs = []
    for i in range(D // 2):
        r = min(1.0, max(0.0, (i - lo) / width))
        f = 1.0 / base ** (2.0 * i / D)
        freqs.append(f * (1 - r) + (f / factor) * r)
    if rs.get("attention_factor") is not None:
        af = rs["attention_factor"]
    else:
        def m(s, k):
            return 1.0 + 0.1 * k * math.log(s) if s > 1 else 1.0
        ms, ma = rs.get("mscale"), rs.get("mscale_all_dim")
        af = m(factor, ms) / m(factor, ma) if ms and ma else m(factor, 1.0)
    return freqs, af


def loop_forward(w, cfg, tokens):
    """A second formulation: one token at a time with a KV cache, pairwise RoPE,
    explicit loops over heads and past positions.  float64.  Qwen2 (q/k/v bias) or
    Qwen3 (per-head q/k RMSNorm, no bias, cfg head_dim); plain RoPE or YaRN."""
    H, KV = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hid, eps, theta = cfg["hidden_size"], cfg["rms_norm_eps"], cfg["rope_theta"]
    qwen3 = cfg.get("model_type") == "qwen3"
    D = cfg.get("head_dim") or hid // H
    half = D // 2
    rs = cfg.get("rope_scaling")
    if rs and (rs.get("type") or rs.get("rope_type")) == "yarn":
        freqs, af = yarn_scalar(D, theta, rs, cfg.get("max_position_embeddings", 32768))
    else:
        freqs, af = [1.0 / theta ** (2 * i / D) for i in range(half)], 1.0
    W = {k: v.astype(np.float64) for k, v in w.items()}
    head = W["model.embed_tokens.weight"] if cfg["tie_word_embeddings"] else W["lm_head.weight"]

    def norm(x, g):
        return g * x / math.sqrt(sum(float(t) * float(t) for t in x) / len(x) + eps)

    def rot(x, pos):
        y = x.copy()
        for i in range(half):
            ang = pos * freqs[i]
            c, s = af * math.cos(ang), af * math.sin(ang)
            y[i] = x[i] * c - x[i + half] * s
            y[i + half] = x[i + half] * c + x[i] * s
        return y

    def proj(p, n, h):
        y = W[p + "self_attn.%s_proj.weight" % n].dot(h)
        return y if qwen3 else y + W[p + "self_attn.%s_proj.bias" % n]

    def qk(p, n, vec, j, pos):
        x = vec[j * D:(j + 1) * D]
        if qwen3:
            x = norm(x, W[p + "self_attn.%s_norm.weight" % n])
        return rot(x, pos)

    caches = [([], []) for _ in range(cfg["num_hidden_layers"])]
    out = []
    for pos, tok in enumerate(tokens):
        x = W["model.embed_tokens.weight"][tok].copy()
        for L in range(cfg["num_hidden_layers"]):
            p = "model.layers.%d." % L
            h = norm(x, W[p + "input_layernorm.weight"])
            q, k, v = proj(p, "q", h), proj(p, "k", h), proj(p, "v", h)
            kc, vc = caches[L]
            kc.append(np.concatenate([qk(p, "k", k, j, pos) for j in range(KV)]))
            vc.append(v)
            att = np.zeros(H * D)
            for hh in range(H):
                j = hh * KV // H
                qh = qk(p, "q", q, hh, pos)
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


def as_stored(w, dtype):
    """The float32 values a model written with `dtype` holds (decoded independently of the reference)."""
    if dtype == "BF16":
        return {k: (st_write.to_bf16_bits(v).astype(np.uint32) << 16).view(np.float32) for k, v in w.items()}
    if dtype == "F16":
        return {k: v.astype(np.float16).astype(np.float32) for k, v in w.items()}
    return w


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

    def check_loop(self, tied, heads, kv, dtype="F32", toks=(3, 0, 49, 7, 7, 21, 1), **kw):
        rng = np.random.default_rng(10 + heads + kv + tied)
        w, cfg = st_write.random_model(rng, hidden=16, heads=heads, kv=kv, tied=tied, theta=1e4, **kw)
        st_write.write_model(self.d, w, cfg, dtype=dtype)
        w = as_stored(w, dtype)  # the loop formulation sees the rounded values, decoded on its own
        toks = list(toks)
        a = ref.forward(self.d, toks)
        b = loop_forward(w, cfg, toks)
        self.assertEqual(a.shape, (len(toks), cfg["vocab_size"]))
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-11)
        return a

    LONG = (3, 0, 49, 7, 7, 21, 1, 30, 12, 12, 40, 2, 9, 33, 18, 44, 5, 27, 8, 49, 0, 16, 16, 38)

    def test_vs_loop_qwen3_tied_gqa(self):
        self.check_loop(True, 4, 2, family="qwen3", head_dim=8)     # q dim 32 != hidden 16

    def test_vs_loop_qwen3_untied_mha_small_head(self):
        self.check_loop(False, 2, 2, family="qwen3", head_dim=4)    # q dim 8 < hidden 16

    def test_vs_loop_qwen3_mqa_bf16(self):
        self.check_loop(False, 4, 1, "BF16", family="qwen3", head_dim=12)

    def test_vs_loop_qwen2_explicit_head_dim(self):
        self.check_loop(True, 4, 2, family="qwen2", head_dim=6)

    def test_vs_loop_qwen2_yarn(self):
        a = self.check_loop(False, 4, 2, toks=self.LONG, rope_scaling=st_write.yarn(4.0, 8), max_position_embeddings=32)
        m = ref.Qwen2Ref(self.d)
        m.cfg.rope_scaling = None
        self.assertGreater(np.abs(m.logits(list(self.LONG)) - a).max(), 1e-2)  # the scaling matters here

    def test_vs_loop_qwen3_yarn_legacy_type_bf16(self):
        a = self.check_loop(True, 4, 2, "BF16", toks=self.LONG, family="qwen3", head_dim=8,
                            rope_scaling=st_write.yarn(4.0, 8, key="type"), max_position_embeddings=32)
        m = ref.Qwen2Ref(self.d)
        m.cfg.rope_scaling = None
        self.assertGreater(np.abs(m.logits(list(self.LONG)) - a).max(), 1e-2)

    def test_vs_loop_qwen3_yarn_options(self):
        self.check_loop(False, 4, 2, toks=self.LONG, family="qwen3", head_dim=16,
                        rope_scaling=st_write.yarn(6.0, 6, beta_fast=8, beta_slow=0.5, truncate=False,
                                                   mscale=1.0, mscale_all_dim=0.5), max_position_embeddings=36)

    def test_qwen3_shapes(self):
        rng = np.random.default_rng(41)
        w, cfg = st_write.random_qwen3(rng, hidden=64, heads=4, kv=2, head_dim=32, vocab=70, tied=False)
        self.assertEqual(w["model.layers.0.self_attn.q_proj.weight"].shape, (128, 64))
        self.assertEqual(w["model.layers.0.self_attn.k_proj.weight"].shape, (64, 64))
        self.assertEqual(w["model.layers.0.self_attn.o_proj.weight"].shape, (64, 128))
        self.assertEqual(w["model.layers.0.self_attn.q_norm.weight"].shape, (32,))
        self.assertFalse(any(k.endswith(".bias") for k in w))
        self.assertEqual((cfg["head_dim"], cfg["model_type"], cfg["attention_bias"]), (32, "qwen3", False))
        st_write.write_model(self.d, w, cfg)
        m = ref.Qwen2Ref(self.d)
        self.assertEqual((m.cfg.head_dim, m.cfg.hidden_size // m.cfg.num_attention_heads), (32, 16))
        self.assertEqual(m.logits([1, 2, 3]).shape, (3, 70))
        # a k_norm of the wrong length (hidden/heads instead of head_dim) is refused
        w["model.layers.1.self_attn.k_norm.weight"] = np.ones(16, dtype=np.float32)
        st_write.write_model(self.d, w, cfg)
        with self.assertRaisesRegex(ValueError, "k_norm.weight shape"):
            ref.Qwen2Ref(self.d)
        del w["model.layers.1.self_attn.k_norm.weight"]
        st_write.write_model(self.d, w, cfg)
        with self.assertRaisesRegex(ValueError, "k_norm.weight missing"):
            ref.Qwen2Ref(self.d)

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
        subprocess.run([sys.executable, ref.__file__, "--model", self.d, "--tokens", "1,2,3",
                        "--out", out, "--last-only"], check=True, capture_output=True)
        self.assertEqual(np.load(out).shape, (1, cfg["vocab_size"]))
        np.testing.assert_allclose(np.load(out), ref.forward(self.d, [1, 2, 3])[-1:], rtol=0, atol=1e-13)


class Lens(unittest.TestCase):
    """Qwen2Ref.lens_logits (the logit lens): row l = final norm + head of the residual stream
    after l layers at one position."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def model(self, family="qwen2", tied=False, dtype="F32", layers=3, **kw):
        rng = np.random.default_rng(77 + layers + tied)
        w, cfg = st_write.random_model(rng, hidden=16, layers=layers, vocab=60, tied=tied, family=family,
                                       head_dim=8 if family == "qwen3" else None, theta=1e4, **kw)
        st_write.write_model(self.d, w, cfg, dtype=dtype)
        return w, cfg

    TOKS = [3, 0, 59, 7, 7, 21, 1, 30]

    def test_last_row_is_logits(self):
        for family, tied, dtype, bf16 in (("qwen2", False, "F32", False), ("qwen3", True, "F32", False),
                                          ("qwen2", True, "BF16", True)):
            self.model(family, tied, dtype)
            m = ref.Qwen2Ref(self.d, bf16_activations=bf16)
            L = m.cfg.num_hidden_layers
            full = m.logits(self.TOKS)
            lens = m.lens_logits(self.TOKS)
            self.assertEqual(lens.shape, (L + 1, 60))
            self.assertEqual(lens.dtype, np.float64)
            np.testing.assert_allclose(lens[L], full[-1], rtol=0, atol=1e-12)
            for p in (0, 3, len(self.TOKS) - 1, -2):
                np.testing.assert_allclose(m.lens_logits(self.TOKS, p)[L], full[p], rtol=0, atol=1e-12)
            # position p only sees tokens[:p+1]: what follows it changes nothing
            np.testing.assert_allclose(m.lens_logits(self.TOKS, 2), m.lens_logits(self.TOKS[:3] + [5, 5], 2),
                                       rtol=0, atol=1e-12)
            with self.assertRaises(ValueError):
                m.lens_logits(self.TOKS, len(self.TOKS))

    def test_row0_is_embedding_through_norm_and_head(self):
        for tied in (False, True):
            w, cfg = self.model(tied=tied)
            m = ref.Qwen2Ref(self.d)
            E = w["model.embed_tokens.weight"].astype(np.float64)
            head = E if tied else w["lm_head.weight"].astype(np.float64)
            nw = w["model.norm.weight"].astype(np.float64)
            for p in (0, 4, len(self.TOKS) - 1):
                e = E[self.TOKS[p]]
                want = head @ (e / np.sqrt(np.mean(e * e) + cfg["rms_norm_eps"]) * nw)
                np.testing.assert_allclose(m.lens_logits(self.TOKS, p)[0], want, rtol=0, atol=1e-12)

    def test_middle_rows_are_truncated_models(self):
        # row l == the logits of the same weights with only the first l layers (config edited)
        for family in ("qwen2", "qwen3"):
            self.model(family, layers=4)
            m = ref.Qwen2Ref(self.d)
            lens = m.lens_logits(self.TOKS, 5)
            rows = []
            for l in range(0, 5):
                m.cfg.num_hidden_layers = l
                rows.append(m.logits(self.TOKS)[5])
            m.cfg.num_hidden_layers = 4
            np.testing.assert_allclose(lens, np.array(rows), rtol=0, atol=1e-12)
            # and the rows do differ from layer to layer (the check above has power)
            self.assertGreater(np.abs(np.diff(lens, axis=0)).max(axis=1).min(), 1e-2)

    def test_residual_stream(self):
        self.model("qwen3", layers=2)
        m = ref.Qwen2Ref(self.d)
        r = m.residual_stream(self.TOKS)
        self.assertEqual(r.shape, (3, len(self.TOKS), 16))
        np.testing.assert_array_equal(r[0], m.w["model.embed_tokens.weight"][self.TOKS])
        np.testing.assert_allclose(m.final_norm(r[2]), m.hidden(self.TOKS), rtol=0, atol=1e-13)


def torch_yarn(torch, cfg, dtype):
    """YaRN's inv_freq and attention factor written the way transformers'
    _compute_yarn_parameters writes them (torch ops; dtype float32 is what transformers runs,
    float64 is used for the tight comparisons)."""
    base = cfg["rope_theta"]
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    dim = int(head_dim * 1.0)
    rs = cfg["rope_scaling"]
    factor = rs["factor"]
    attention_factor = rs.get("attention_factor")
    mscale = rs.get("mscale")
    mscale_all_dim = rs.get("mscale_all_dim")
    original_max_position_embeddings = (rs.get("original_max_position_embeddings")
                                        or cfg.get("max_position_embeddings", 32768))

    def get_mscale(scale, mscale=1):
        if scale <= 1:
            return 1.0
        return 0.1 * mscale * math.log(scale) + 1.0

    if attention_factor is None:
        if mscale and mscale_all_dim:
            attention_factor = float(get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = get_mscale(factor)
    beta_fast = rs.get("beta_fast") or 32
    beta_slow = rs.get("beta_slow") or 1

    def find_correction_dim(num_rotations, dim, base, max_position_embeddings):
        return (dim * math.log(max_position_embeddings / (num_rotations * 2 * math.pi))) / (2 * math.log(base))

    def find_correction_range(low_rot, high_rot, dim, base, max_position_embeddings, truncate):
        low = find_correction_dim(low_rot, dim, base, max_position_embeddings)
        high = find_correction_dim(high_rot, dim, base, max_position_embeddings)
        if truncate:
            low = math.floor(low)
            high = math.ceil(high)
        return max(low, 0), min(high, dim - 1)

    def linear_ramp_factor(min, max, dim):  # noqa: A002 (transformers' names)
        if min == max:
            max += 0.001
        linear_func = (torch.arange(dim, dtype=dtype) - min) / (max - min)
        return torch.clamp(linear_func, 0, 1)

    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=dtype) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    truncate = rs.get("truncate", True)
    low, high = find_correction_range(beta_fast, beta_slow, dim, base, original_max_position_embeddings, truncate)
    inv_freq_extrapolation_factor = 1 - linear_ramp_factor(low, high, dim // 2).to(dtype=dtype)
    inv_freq = (inv_freq_interpolation * (1 - inv_freq_extrapolation_factor)
                + inv_freq_extrapolation * inv_freq_extrapolation_factor)
    return inv_freq, attention_factor


def torch_forward(torch, model_dir, tokens):
    """Third formulation with torch ops (float64), own safetensors decode via torch.frombuffer,
    RoPE as complex multiplication of (x_i, x_{i+d/2}) pairs by attention_factor * e^(i angle),
    GQA by repeat_interleave, Qwen3's q/k norm on the [T, heads, head_dim] view."""
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
    qwen3 = cfg.get("model_type") == "qwen3"
    D, eps, T = cfg.get("head_dim") or hid // H, cfg["rms_norm_eps"], len(tokens)

    def norm(x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g

    half = D // 2
    rs = cfg.get("rope_scaling")
    if rs:
        inv, af = torch_yarn(torch, cfg, torch.float64)
    else:
        inv, af = 1.0 / (cfg["rope_theta"] ** (torch.arange(0, D, 2, dtype=torch.float64) / D)), 1.0
    rot = torch.polar(torch.full((T, half), float(af), dtype=torch.float64),
                      torch.outer(torch.arange(T, dtype=torch.float64), inv))

    def rope(x):  # x [T, heads, D]
        z = torch.complex(x[..., :half], x[..., half:]) * rot[:, None, :]
        return torch.cat([z.real, z.imag], dim=-1)

    x = F.embedding(torch.tensor(tokens), W["model.embed_tokens.weight"])
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for L in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % L
        h = norm(x, W[p + "input_layernorm.weight"])
        q = F.linear(h, W[p + "self_attn.q_proj.weight"], W.get(p + "self_attn.q_proj.bias")).view(T, H, D)
        k = F.linear(h, W[p + "self_attn.k_proj.weight"], W.get(p + "self_attn.k_proj.bias")).view(T, KV, D)
        v = F.linear(h, W[p + "self_attn.v_proj.weight"], W.get(p + "self_attn.v_proj.bias")).view(T, KV, D)
        if qwen3:
            q, k = norm(q, W[p + "self_attn.q_norm.weight"]), norm(k, W[p + "self_attn.k_norm.weight"])
        q, k = rope(q), rope(k)
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


def import_torch(case):
    try:
        import torch
    except ImportError:
        case.skipTest("torch not importable (apt-get install python3-torch to enable)")
    return torch


class Torch(unittest.TestCase):
    def test_vs_torch(self):
        torch = import_torch(self)
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

    def test_vs_torch_qwen3_and_yarn(self):
        torch = import_torch(self)
        worst = 0.0
        cases = [("qwen3", "F32", True, 4, 2, 32, None),
                 ("qwen3", "BF16", False, 8, 2, 8, None),
                 ("qwen3", "F32", False, 4, 1, 24, st_write.yarn(4.0, 16)),
                 ("qwen3", "BF16", True, 4, 2, 32, st_write.yarn(8.0, 8, key="type", beta_fast=16, beta_slow=2)),
                 ("qwen2", "F32", False, 4, 2, None, st_write.yarn(4.0, 16)),
                 ("qwen2", "BF16", True, 2, 2, None, st_write.yarn(2.0, 12, attention_factor=0.9, truncate=False))]
        with tempfile.TemporaryDirectory() as d:
            for i, (fam, dtype, tied, heads, kv, hd, rs) in enumerate(cases):
                rng = np.random.default_rng(200 + i)
                mp = None if rs is None else int(rs["factor"] * rs["original_max_position_embeddings"])
                w, cfg = st_write.random_model(rng, hidden=64, inter=96, layers=3, heads=heads, kv=kv, vocab=300,
                                               tied=tied, family=fam, head_dim=hd, rope_scaling=rs,
                                               max_position_embeddings=mp, theta=1e4, scale=0.25)
                md = os.path.join(d, str(i))
                st_write.write_model(md, w, cfg, dtype=dtype)
                toks = [int(t) for t in rng.integers(0, 300, size=40)]
                a = ref.forward(md, toks)
                b = torch_forward(torch, md, toks)
                diff = float(np.abs(a - b).max())
                worst = max(worst, diff)
                self.assertLess(diff, 1e-10, "case %d %s" % (i, cases[i]))
        print("\n[torch %s] Qwen3 / YaRN: max abs diff numpy reference vs torch float64: %.3g"
              % (torch.__version__, worst))


if __name__ == "__main__":
    unittest.main(verbosity=2)
