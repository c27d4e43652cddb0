#!/usr/bin/python3
"""logitscope's logits vs the independent numpy reference (qwen2_ref.py) for dense Qwen3
and for YaRN rope scaling (issue 15).

Run by CTest as
    test_family_ref.py --logitscope BIN --tokenizer-from DIR [--keep DIR]
Cases (each compared at every position and over the whole vocab unless said otherwise):
  (a) tiny Qwen3 models written here in Python: hidden 64, 4 heads, 2 KV heads, head_dim 32
      (!= 64 / 4), q/k norm weights far from 1, weights large enough that attention is sharp;
      F32 and BF16, tied and untied; T = 1, 5, 20;
  (b) `logitscope synth --shape qwen3-tiny` (F32 as synthesized, BF16 --untied); T = 1, 5, 20;
  (c) `logitscope synth --shape qwen3-0.6b --dtype bf16`: Qwen3-0.6B's shape checked in
      config.json, the last position only (`next` without --all-positions vs the reference's
      last row) for a 5-token prompt;
  (d) YaRN (factor 4, original_max_position_embeddings 64, max_position_embeddings 256) over
      200 positions: two Python-written Qwen2 models (F32 untied, rope_type key, theta 1e4;
      BF16 tied, legacy "type" key, theta 1e6), a Python-written Qwen3 (F32 untied), and
      `synth --shape tiny` with the rope_scaling added to its config.json; plus rope_type
      "default" == no scaling, and an unsupported rope type ("linear") refused by the engine;
  (e) the power of the comparison: on the Python-written models, the reference without YaRN
      (and with YaRN's attention factor dropped, and with every frequency divided by the
      factor), and the Qwen3 without q/k norm (and with the norm taken over all heads at once,
      and without the norm's weight) each move the logits by more than 10x the tolerance.
Tolerance: max |engine - reference| <= 1e-4 * scale, where scale = max |reference logit| over
the positions and vocab compared (at least 1); top-1 equal at every position (a reference
near-tie within 1e-6 excepted).  Every check prints its figure; exit code 1 if any failed.
"""
import json
import os
import shutil
import struct
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen2_ref as ref  # noqa: E402
import st_write  # noqa: E402
import test_forward_ref as tfr  # noqa: E402  (run / synth / engine_logits / check_model_files)

TOL_REL = 1e-4
C = tfr.C
YARN = {"factor": 4.0, "original_max_position_embeddings": 64}
YARN_MAX_POS = 256   # == factor * original: transformers' older definition (factor = max / original) agrees


def yarn_scaling(key="rope_type"):
    return st_write.yarn(YARN["factor"], YARN["original_max_position_embeddings"], key=key)


def copy_tokenizer(template_dir, d):
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if os.path.exists(os.path.join(template_dir, f)):
            shutil.copy(os.path.join(template_dir, f), d)


def py_model(d, template_dir, family, dtype, tied, seed, rope_scaling=None, theta=None, head_dim=32):
    """A model written here: sharp attention (scale 0.2), Qwen3 norm weights 1 + 0.3 N(0, 1)."""
    tcfg = json.load(open(os.path.join(template_dir, "config.json")))
    rng = np.random.default_rng(seed)
    w, shape = st_write.random_model(rng, hidden=64, inter=128, layers=2, heads=4, kv=2,
                                     vocab=tcfg["vocab_size"], tied=tied, scale=0.2, family=family,
                                     head_dim=head_dim if family == "qwen3" else None,
                                     eps=tcfg.get("rms_norm_eps", 1e-6), theta=theta or tcfg.get("rope_theta", 1e6),
                                     rope_scaling=rope_scaling,
                                     max_position_embeddings=YARN_MAX_POS if rope_scaling else None)
    cfg = {k: tcfg[k] for k in ("bos_token_id", "eos_token_id", "max_position_embeddings") if k in tcfg}
    cfg.update(shape)
    cfg["torch_dtype"] = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[dtype]
    cfg.setdefault("rope_scaling", None)
    st_write.write_model(d, w, cfg, dtype=dtype)
    copy_tokenizer(template_dir, d)
    return cfg


def compare(name, d, m, seqs, summary, all_positions=True):
    """Engine vs reference on each sequence; returns the reference scale (max |logit|) seen."""
    worst, scale_all = 0.0, 1.0
    for toks in seqs:
        r = m.logits(toks, last_only=not all_positions)
        e = tfr.engine_logits(d, toks, all_positions=all_positions)
        if e is None:
            continue
        if not C.check(e.shape == r.shape, "%s T=%d: shape %s == reference %s" % (name, len(toks), e.shape, r.shape)):
            continue
        scale = max(1.0, float(np.abs(r).max()))
        scale_all = max(scale_all, scale)
        tol = TOL_REL * scale
        diff = float(np.abs(e.astype(np.float64) - r).max())
        worst = max(worst, diff)
        C.check(diff <= tol, "%s T=%d: max abs diff %.3g <= %.3g (1e-4 x max |logit| %.2f; rel %.2g) over %d positions x %d vocab"
                % (name, len(toks), diff, tol, scale, diff / scale, r.shape[0], r.shape[1]))
        te, tr = e.argmax(axis=1), r.argmax(axis=1)
        bad = [i for i in range(r.shape[0]) if te[i] != tr[i] and r[i, tr[i]] - r[i, te[i]] > 1e-6]
        C.check(not bad, "%s T=%d: top-1 equal at every position (mismatch at %s)" % (name, len(toks), bad))
    summary.append((name, worst, scale_all))
    return scale_all


patched = tfr.patched  # a reference function replaced for one block (a mutant)


_rms_norm, _rope_parameters = ref.rms_norm, ref.rope_parameters


def _qk_norm_whole(x, w, eps):
    """Bug: q/k norm over all heads of a position at once (the 3-D [heads, T, D] calls are q/k's)."""
    if x.ndim != 3:
        return _rms_norm(x, w, eps)
    H, T, D = x.shape
    flat = x.transpose(1, 0, 2).reshape(T, H * D)
    return _rms_norm(flat, np.tile(w, H), eps).reshape(T, H, D).transpose(1, 0, 2)


def _qk_norm_noweight(x, w, eps):
    return _rms_norm(x, np.ones_like(w) if x.ndim == 3 else w, eps)


def _yarn_no_attention_factor(cfg):
    return _rope_parameters(cfg)[0], 1.0


def _yarn_all_interpolated(cfg):
    inv, af = _rope_parameters(cfg)
    return ref.default_inv_freq(cfg.head_dim, cfg.rope_theta) / cfg.rope_scaling["factor"], af


def mutant_logits(m, toks, name, rows):
    saved = (m.cfg.rope_scaling, m.cfg.qk_norm)
    try:
        if name == "no YaRN (plain RoPE)":
            m.cfg.rope_scaling = None
            return m.logits(toks, rows)
        if name == "YaRN without attention factor":
            with patched(rope_parameters=_yarn_no_attention_factor):
                return m.logits(toks, rows)
        if name == "YaRN: every frequency / factor":
            with patched(rope_parameters=_yarn_all_interpolated):
                return m.logits(toks, rows)
        if name == "no q/k norm":
            m.cfg.qk_norm = False
            return m.logits(toks, rows)
        if name == "q/k norm over all heads at once":
            with patched(rms_norm=_qk_norm_whole):
                return m.logits(toks, rows)
        if name == "q/k norm without its weight":
            with patched(rms_norm=_qk_norm_noweight):
                return m.logits(toks, rows)
    finally:
        m.cfg.rope_scaling, m.cfg.qk_norm = saved
    raise KeyError(name)


YARN_MUTANTS = ["no YaRN (plain RoPE)", "YaRN without attention factor", "YaRN: every frequency / factor"]
QWEN3_MUTANTS = ["no q/k norm", "q/k norm over all heads at once", "q/k norm without its weight"]


def tensor_shapes(path):
    """{name: (dtype, shape)} from a safetensors header."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        hdr = json.loads(f.read(n))
    return {k: (v["dtype"], tuple(v["shape"])) for k, v in hdr.items() if k != "__metadata__"}


def check_qwen3_files(d, cfg):
    tag, hd = os.path.basename(d), cfg.get("head_dim")
    C.check(cfg.get("model_type") == "qwen3" and cfg.get("architectures") == ["Qwen3ForCausalLM"],
            "%s: model_type %r, architectures %r" % (tag, cfg.get("model_type"), cfg.get("architectures")))
    C.check(hd is not None and cfg.get("attention_bias") is False,
            "%s: head_dim %r and attention_bias %r in config.json" % (tag, hd, cfg.get("attention_bias")))
    t = {}
    for f in os.listdir(d):
        if f.endswith(".safetensors"):
            t.update(tensor_shapes(os.path.join(d, f)))
    biases = [k for k in t if k.endswith(".bias")]
    C.check(not biases, "%s: no bias tensors (found %s)" % (tag, biases[:3]))
    qk = [k for k in t if k.endswith("self_attn.q_norm.weight") or k.endswith("self_attn.k_norm.weight")]
    C.check(len(qk) == 2 * cfg["num_hidden_layers"] and all(t[k][1] == (hd,) for k in qk),
            "%s: q_norm and k_norm of shape [head_dim %s] in every layer (%d tensors, shapes %s)"
            % (tag, hd, len(qk), sorted({t[k][1] for k in qk})))
    q = t.get("model.layers.0.self_attn.q_proj.weight", (None, None))[1]
    C.check(q == (cfg["num_attention_heads"] * hd, cfg["hidden_size"]),
            "%s: q_proj shape %s == [heads * head_dim, hidden]" % (tag, q))


def main():
    def more_arguments(ap):
        ap.add_argument("--skip-0.6b", dest="skip_big", action="store_true",
                        help="leave out case (c), the qwen3-0.6b shape (for quick runs by hand)")

    a, tmp = tfr.engine_test_setup("ls_family_", more_arguments)
    t0 = time.time()

    summary, models = [], {}

    # ---- (b) synth --shape qwen3-tiny
    print("---- (%.1fs) synth --shape qwen3-tiny" % (time.time() - t0))
    template = None
    for dtype, untied, seed in (("f32", False, 31), ("bf16", True, 32)):
        d = os.path.join(tmp, "synth_qwen3-tiny_%s%s" % (dtype, "_untied" if untied else ""))
        p, dt = tfr.synth(d, dtype, seed, untied, a.tokenizer_from, shape="qwen3-tiny")
        if not C.check(p.returncode == 0, "synth --shape qwen3-tiny --dtype %s%s exits 0 (%.1fs) %s"
                       % (dtype, " --untied" if untied else "", dt, p.stderr.strip()[-300:])):
            continue
        cfg = json.load(open(os.path.join(d, "config.json")))
        tfr.check_model_files(d, dtype, bool(cfg.get("tie_word_embeddings")) and not untied)
        check_qwen3_files(d, cfg)
        C.check(cfg.get("head_dim") != cfg["hidden_size"] // cfg["num_attention_heads"],
                "%s: head_dim %s != hidden %d / heads %d" % (os.path.basename(d), cfg.get("head_dim"), cfg["hidden_size"],
                                                          cfg["num_attention_heads"]))
        models[os.path.basename(d)] = d
        template = template or d
    if template is None:
        d = os.path.join(tmp, "synth_tiny_template")
        p, _ = tfr.synth(d, "f32", 1, False, a.tokenizer_from)
        if p.returncode != 0:
            print("no model could be synthesized: %s" % p.stderr.strip()[-300:])
            return 1
        print("NOTE  Python-written models take their tokenizer/config defaults from synth --shape tiny")
        template = d

    # ---- (a) Python-written Qwen3, (d) YaRN models
    py = [("py_qwen3_f32_untied", "qwen3", "F32", False, 41, None, None),
          ("py_qwen3_f32_tied", "qwen3", "F32", True, 42, None, None),
          ("py_qwen3_bf16_tied", "qwen3", "BF16", True, 43, None, None),
          ("py_qwen3_bf16_untied", "qwen3", "BF16", False, 44, None, None),
          ("py_qwen2_yarn_f32_untied", "qwen2", "F32", False, 51, yarn_scaling(), 1e4),
          ("py_qwen2_yarn_bf16_tied_legacy_type", "qwen2", "BF16", True, 52, yarn_scaling("type"), 1e6),
          ("py_qwen3_yarn_f32_untied", "qwen3", "F32", False, 53, yarn_scaling(), 1e6)]
    for name, fam, dtype, tied, seed, rs, theta in py:
        d = os.path.join(tmp, name)
        py_model(d, template, fam, dtype, tied, seed, rope_scaling=rs, theta=theta)
        models[name] = d
    # synth tiny (Qwen2) with YaRN added to its config.json
    d = os.path.join(tmp, "synth_tiny_yarn")
    p, _ = tfr.synth(d, "f32", 54, False, a.tokenizer_from)
    if C.check(p.returncode == 0, "synth --shape tiny exits 0 %s" % p.stderr.strip()[-200:]):
        cfg = json.load(open(os.path.join(d, "config.json")))
        cfg.update(rope_scaling=yarn_scaling(), max_position_embeddings=YARN_MAX_POS)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        models["synth_tiny_yarn"] = d

    refs, scales, long_seq = {}, {}, {}
    for name, d in models.items():
        m = ref.Qwen2Ref(d)
        refs[name] = m
        V = m.cfg.vocab_size
        rng = np.random.default_rng(len(name))
        yarn = m.cfg.rope_scaling is not None
        if yarn:
            long = [int(x) for x in rng.integers(0, V, size=200)]
            long[5], long[77], long[199] = V - 1, 151643, V - 2
            seqs = [long]
        else:
            long = [int(x) for x in rng.integers(0, V, size=20)]
            long[3], long[19] = V - 1, V - 2
            seqs = [[V - 1], [9707, 11, 1879, 0, V - 2], long]
        long_seq[name] = long
        print("---- (%.1fs) %s: %s, hidden %d, %d layers, %d/%d heads, head_dim %d, vocab %d, tied=%s, rope_scaling %s" % (
            time.time() - t0, name, m.cfg.model_type, m.cfg.hidden_size, m.cfg.num_hidden_layers, m.cfg.num_attention_heads,
            m.cfg.num_key_value_heads, m.cfg.head_dim, V, m.cfg.tie_word_embeddings, m.cfg.rope_scaling), flush=True)
        scales[name] = compare(name, d, m, seqs, summary)

    # ---- rope_type "default" is no scaling; an unsupported rope type is refused
    print("---- (%.1fs) rope_scaling variants" % (time.time() - t0))
    src = models["py_qwen2_yarn_f32_untied"]
    for tag, rs, ok in (("default", {"rope_type": "default"}, True), ("linear", {"rope_type": "linear", "factor": 4.0}, False)):
        d = os.path.join(tmp, "py_qwen2_rope_" + tag)
        shutil.copytree(src, d, dirs_exist_ok=True)
        cfg = json.load(open(os.path.join(d, "config.json")))
        cfg["rope_scaling"] = rs
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        if ok:
            m = ref.Qwen2Ref(d)
            C.check(m.cfg.rope_scaling is None, "reference reads rope_type default as no scaling")
            compare("py_qwen2_rope_default", d, m, [long_seq["py_qwen2_yarn_f32_untied"]], summary)
        else:
            p, _ = tfr.run(["next", "--model", d, "--tokens", "1,2,3"])
            C.check(p.returncode != 0 and "rope" in p.stderr.lower(),
                    "rope_scaling {rope_type: linear} is refused by the engine (exit %d: %s)" % (p.returncode, p.stderr.strip()[-200:]))

    # ---- (e) power of the comparison
    print("---- (%.1fs) power of the comparison: reference with one injected bug vs correct reference" % (time.time() - t0))
    for name, m in refs.items():
        mutants = (YARN_MUTANTS if m.cfg.rope_scaling else []) + (QWEN3_MUTANTS if m.cfg.qk_norm else [])
        if not mutants:
            continue
        toks = long_seq[name]
        rows = np.unique(np.concatenate([np.arange(2048), np.random.default_rng(0).integers(0, m.cfg.vocab_size, 4096),
                                         [m.cfg.vocab_size - 1]]))
        good = m.logits(toks, rows)
        tol = TOL_REL * scales[name]
        for mu in mutants:
            delta = float(np.abs(mutant_logits(m, toks, mu, rows) - good).max())
            if name.startswith("py_"):
                C.check(delta > 10 * tol, "%s T=%d: bug '%s' moves logits by %.3g > 10x tolerance %.3g"
                        % (name, len(toks), mu, delta, tol))
            else:
                print("%s  %s T=%d: bug '%s' moves logits by %.3g (tolerance %.3g; not asserted on engine-synthesized weights)"
                      % ("INFO" if delta > 10 * tol else "WEAK", name, len(toks), mu, delta, tol))
    refs.clear()

    # ---- (c) synth --shape qwen3-0.6b --dtype bf16, last position only
    print("---- (%.1fs) synth --shape qwen3-0.6b --dtype bf16%s" % (time.time() - t0, " (skipped)" if a.skip_big else ""),
          flush=True)
    d = os.path.join(tmp, "synth_qwen3-0.6b_bf16")
    p, dt = tfr.synth(d, "bf16", 7, False, a.tokenizer_from, shape="qwen3-0.6b") if not a.skip_big else (None, 0)
    if not a.skip_big and C.check(p.returncode == 0, "synth --shape qwen3-0.6b --dtype bf16 exits 0 (%.1fs) %s" % (dt, p.stderr.strip()[-300:])):
        cfg = json.load(open(os.path.join(d, "config.json")))
        want = {"model_type": "qwen3", "hidden_size": 1024, "num_hidden_layers": 28, "num_attention_heads": 16,
                "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 3072, "vocab_size": 151936,
                "tie_word_embeddings": True, "rope_theta": 1000000.0, "rms_norm_eps": 1e-6}
        bad = {k: cfg.get(k) for k, v in want.items() if cfg.get(k) != v}
        C.check(not bad, "qwen3-0.6b config.json has Qwen3-0.6B's shape (differs: %s)" % bad)
        tfr.check_model_files(d, "bf16", True)
        t1 = time.time()
        m = ref.Qwen2Ref(d)
        toks = [9707, 11, 1879, 0, m.cfg.vocab_size - 1]
        compare("synth_qwen3-0.6b_bf16 (last row)", d, m, [toks], summary, all_positions=False)
        print("      qwen3-0.6b: reference load + forward %.1fs" % (time.time() - t1))
        del m

    print("---- summary: max |engine - reference| over all compared positions x vocab; scale = max |reference logit|;"
          " passes at rel <= %g" % TOL_REL)
    for name, w, sc in summary:
        print("      %-40s abs %-9.3g scale %-7.2f rel %.3g" % (name, w, sc, w / sc))
    return C.finish(t0)


if __name__ == "__main__":
    sys.exit(main())
