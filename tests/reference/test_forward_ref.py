#!/usr/bin/python3
"""logitscope's logits vs the independent numpy Qwen2 reference (qwen2_ref.py).

Run by CTest as
    test_forward_ref.py --logitscope BIN --tokenizer-from DIR
It
  * writes tiny models with `logitscope synth` (F32/BF16/F16, tied and untied) and two more
    models written here in Python (larger weights so attention is sharp and every part of the
    layer moves the logits; one of them sharded with model.safetensors.index.json);
  * runs `logitscope next --dump-logits X.npy --all-positions` on token sequences of length 1,
    5 and 20 (with ids near the vocab end) and compares every position and the whole vocab with
    the reference: max abs diff <= 1e-4, top-1 equal;
  * checks --threads 1 vs --threads 2 give byte-identical .npy files;
  * runs the BF16 models again with --bf16-activations against the reference with bf16-rounded
    inputs to every BF16 matrix product (same tolerance), checks that they are then far from
    the float32-activation reference (the flag takes effect) and that an F32 model ignores it;
  * checks `next --json` (top rows' logit/prob/logprob, entropy nats/bits, min/max logit) at
    temperature 1 and 0.7 against numpy computed from the reference logits;
  * measures the power of the comparison: for each "plausible engine bug" (RoPE off, GPT-J
    RoPE layout, wrong GQA head mapping, no causal mask, wrong scale, no qkv bias, wrong
    rope_theta, ...) applied to the reference, the logits move by more than the tolerance.
Every check prints its measured figure; the exit code is 1 if any check failed.
"""
import argparse
import atexit
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen2_ref as ref  # noqa: E402
import st_write  # noqa: E402

TOL = 1e-4          # max abs logit diff, every dtype (weights upcast exactly on the reference side)
JSON_RTOL = 1e-5    # relative tolerance for the printed --json numbers


class Checks:
    def __init__(self):
        self.failed = []
        self.n = 0

    def check(self, ok, what):
        self.n += 1
        print(("PASS  " if ok else "FAIL  ") + what, flush=True)
        if not ok:
            self.failed.append(what)
        return ok

    def finish(self, t0, extra=""):
        """The closing summary every reference test prints; returns the exit status."""
        print("%d checks, %d failed, %.1fs wall%s" % (self.n, len(self.failed), time.time() - t0, extra))
        for f in self.failed:
            print("FAILED: " + f.split("\n")[0])
        return 1 if self.failed else 0


C = Checks()
BIN = None


def run(args, timeout=120, env=None):
    t = time.time()
    try:
        p = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout,
                           env=None if env is None else {**os.environ, **env})
    except (OSError, subprocess.TimeoutExpired) as ex:
        p = subprocess.CompletedProcess([BIN] + args, 127, "", "could not run: %s" % ex)
    return p, time.time() - t


def engine_logits(model, tokens, extra=(), all_positions=True, out=None, env=None):
    out = out or os.path.join(model, "engine_%d.npy" % os.getpid())
    args = ["next", "--model", model, "--tokens", ",".join(map(str, tokens)), "--dump-logits", out]
    if all_positions:
        args.append("--all-positions")
    p, _ = run(args + list(extra), env=env)
    if p.returncode != 0:
        C.check(False, "logitscope %s exited %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()[-500:]))
        return None
    a = np.load(out)
    if not C.check(a.dtype == np.dtype("<f4"), "dump dtype is float32 (got %s)" % a.dtype):
        return None
    return a


# ------------------------------------------------------------------ mutants of the reference

@contextlib.contextmanager
def patched(**kw):
    old = {k: getattr(ref, k) for k in kw}
    for k, v in kw.items():
        setattr(ref, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(ref, k, v)


def _rope_gptj(x, cos, sin):
    half = x.shape[-1] // 2
    c, s = cos[None, :, :half], sin[None, :, :half]
    ev, od = x[..., 0::2], x[..., 1::2]
    y = np.empty_like(x)
    y[..., 0::2] = ev * c - od * s
    y[..., 1::2] = od * c + ev * s
    return y


_attention = ref.attention


def _att_modulo(q, k, v):  # query head h uses kv head h % KV instead of h // group
    rep = q.shape[0] // k.shape[0]
    return _attention(q, np.tile(k, (rep, 1, 1)), np.tile(v, (rep, 1, 1)))


def _att_nomask(q, k, v):
    H, T, D = q.shape
    group = H // k.shape[0]
    out = np.empty_like(q)
    for h in range(H):
        s = q[h] @ k[h // group].T / math.sqrt(D)
        out[h] = ref.softmax(s) @ v[h // group]
    return out


def _att_scale_d(q, k, v):  # 1/head_dim instead of 1/sqrt(head_dim)
    return _attention(q / math.sqrt(q.shape[-1]), k, v)


def mutant_logits(model_dir, tokens, name, m_ok, rows):
    """Logits (vocab ids `rows` only) of the reference with one plausible bug injected."""
    def fresh(edit_cfg=None, edit_w=None):
        m = ref.Qwen2Ref.__new__(ref.Qwen2Ref)
        m.cfg = ref.Config.load(model_dir)
        m.w = dict(m_ok.w)
        m.lm_head = m_ok.lm_head
        if edit_cfg:
            edit_cfg(m.cfg)
        if edit_w:
            edit_w(m)
        return m

    if name == "no RoPE":
        with patched(apply_rope=lambda x, c, s: x):
            return m_ok.logits(tokens, rows)
    if name == "GPT-J (interleaved) RoPE":
        with patched(apply_rope=_rope_gptj):
            return m_ok.logits(tokens, rows)
    if name == "GQA head h -> kv h % n_kv":
        with patched(attention=_att_modulo):
            return m_ok.logits(tokens, rows)
    if name == "no causal mask":
        with patched(attention=_att_nomask):
            return m_ok.logits(tokens, rows)
    if name == "scale 1/head_dim":
        with patched(attention=_att_scale_d):
            return m_ok.logits(tokens, rows)
    if name == "no q/k/v bias":
        def nobias(m):
            for k in list(m.w):
                if k.endswith("_proj.bias"):
                    m.w[k] = np.zeros_like(m.w[k])
        return fresh(edit_w=nobias).logits(tokens, rows)
    if name == "rope_theta 1e4":
        return fresh(edit_cfg=lambda c: setattr(c, "rope_theta", 1e4)).logits(tokens, rows)
    if name == "rms_norm_eps 1e-5":
        return fresh(edit_cfg=lambda c: setattr(c, "rms_norm_eps", 1e-5)).logits(tokens, rows)
    if name == "tied head on untied model":
        return fresh(edit_w=lambda m: setattr(m, "lm_head", m.w["model.embed_tokens.weight"])).logits(tokens, rows)
    raise KeyError(name)


MUTANTS = ["no RoPE", "GPT-J (interleaved) RoPE", "GQA head h -> kv h % n_kv", "no causal mask",
           "scale 1/head_dim", "no q/k/v bias", "rope_theta 1e4",
           "rms_norm_eps 1e-5", "tied head on untied model"]


# ------------------------------------------------------------------ the test

def synth(out, dtype, seed, untied, tok_dir, shape="tiny"):
    args = ["synth", "--shape", shape, "--dtype", dtype, "--seed", str(seed), "--out", out]
    if untied:
        args.append("--untied")
    if tok_dir:
        args += ["--tokenizer-from", tok_dir]
    return run(args)


def check_model_files(d, dtype, tied):
    cfg = json.load(open(os.path.join(d, "config.json")))
    files = [f for f in os.listdir(d) if f.endswith(".safetensors")]
    dts = {}
    for f in files:
        dts.update(ref.tensor_dtypes(os.path.join(d, f)))
    got = sorted(set(dts.values()))
    C.check(got == [dtype.upper()], "%s: every tensor stored as %s (found %s)" % (os.path.basename(d), dtype.upper(), got))
    C.check(bool(cfg.get("tie_word_embeddings")) == tied and (("lm_head.weight" in dts) != tied),
            "%s: tie_word_embeddings=%s and lm_head.weight %s" % (
                os.path.basename(d), cfg.get("tie_word_embeddings"), "absent" if tied else "present"))
    return cfg


def sharp_model(d, template_dir, dtype, tied, shards, seed):
    """A model written here (not by the engine): weights large enough that attention is sharp
    and RoPE, GQA, mask, bias all move the logits well beyond the tolerance."""
    cfg = json.load(open(os.path.join(template_dir, "config.json")))
    rng = np.random.default_rng(seed)
    w, shape = st_write.random_model(rng, hidden=64, inter=128, layers=2, heads=4, kv=2,
                                     vocab=cfg["vocab_size"], tied=tied, scale=0.2,
                                     eps=cfg["rms_norm_eps"], theta=cfg["rope_theta"])
    cfg.update(shape)
    cfg["torch_dtype"] = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[dtype]
    st_write.write_model(d, w, cfg, dtype=dtype, shards=shards)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if os.path.exists(os.path.join(template_dir, f)):
            shutil.copy(os.path.join(template_dir, f), d)
    return cfg


LAST = {}


def last_logits(m, toks):
    """Reference logits of the last position (cached: the lm_head product is the slow part)."""
    key = (id(m), tuple(toks))
    if key not in LAST:
        LAST[key] = m.logits(toks)[-1]
    return LAST[key]


def compare(name, d, m, seqs, summary, last_only=True, extra=()):
    worst = 0.0
    for toks in seqs:
        r = m.logits(toks)
        LAST[(id(m), tuple(toks))] = r[-1].copy()
        e = engine_logits(d, toks, extra)
        if e is None:
            continue
        if not C.check(e.shape == r.shape, "%s T=%d: shape %s == reference %s" % (name, len(toks), e.shape, r.shape)):
            continue
        diff = float(np.abs(e.astype(np.float64) - r).max())
        worst = max(worst, diff)
        C.check(diff <= TOL, "%s T=%d: max abs diff %.3g <= %g over %d positions x %d vocab (logit range %.2f..%.2f)"
                % (name, len(toks), diff, TOL, r.shape[0], r.shape[1], r.min(), r.max()))
        te, tr = e.argmax(axis=1), r.argmax(axis=1)
        bad = [i for i in range(len(toks)) if te[i] != tr[i] and r[i, tr[i]] - r[i, te[i]] > 1e-6]
        C.check(not bad, "%s T=%d: top-1 equal at every position (mismatch at %s)" % (name, len(toks), bad))
    # last position only: [1, vocab], same numbers as the last row of --all-positions
    toks = seqs[-1]
    e1 = engine_logits(d, toks, extra, all_positions=False) if last_only else None
    if e1 is not None:
        r = last_logits(m, toks)[None, :]
        C.check(e1.shape == r.shape and float(np.abs(e1 - r).max()) <= TOL,
                "%s: without --all-positions shape %s == [1, %d], max abs diff %.3g"
                % (name, e1.shape, r.shape[1], float(np.abs(e1 - r).max()) if e1.shape == r.shape else float("nan")))
    summary.append((name, worst))
    return worst


def compare_bf16_activations(name, d, m_exact, m_bf16, seqs):
    """--bf16-activations against the reference that rounds every BF16 matrix product's input
    to bf16. Rounding is discontinuous: where an activation lies within float32 noise of a bf16
    rounding boundary, engine (float32 sums) and reference (float64) can round it to neighbouring
    bf16 values, and that position and the later ones move by up to ~1e-2. Such flips are rare,
    so: most positions within TOL, every position within a loose bound, and every position far
    (> 10x TOL) from the float32-activation reference, which shows the mode took effect."""
    close_rows, rows, worst, nearest_exact = 0, 0, 0.0, float("inf")
    for toks in seqs:
        e = engine_logits(d, toks, ["--bf16-activations"])
        if e is None:
            return
        e = e.astype(np.float64)
        per_pos = np.abs(e - m_bf16.logits(toks)).max(axis=1)
        close_rows += int((per_pos <= TOL).sum())
        rows += len(per_pos)
        worst = max(worst, float(per_pos.max()))
        nearest_exact = min(nearest_exact, float(np.abs(e - m_exact.logits(toks)).max(axis=1).min()))
    C.check(close_rows >= 0.8 * rows, "%s --bf16-activations: %d of %d positions within %g of the "
            "bf16-input reference (>= 80%%; the rest are rounding flips)" % (name, close_rows, rows, TOL))
    C.check(worst <= 0.05, "%s --bf16-activations: every position within %.3g <= 0.05 of it" % (name, worst))
    C.check(nearest_exact > 10 * TOL, "%s --bf16-activations: every position at least %.3g from the "
            "float32-activation reference (> 10x tolerance: the mode is on)" % (name, nearest_exact))


def check_threads(d, toks):
    a, b = os.path.join(d, "t1.npy"), os.path.join(d, "t2.npy")
    e1 = engine_logits(d, toks, ["--threads", "1"], out=a)
    e2 = engine_logits(d, toks, ["--threads", "2"], out=b)
    if e1 is None or e2 is None:
        return
    same = open(a, "rb").read() == open(b, "rb").read()
    C.check(same, "%s: --threads 1 and --threads 2 .npy files byte-identical (T=%d, max diff %.3g)"
            % (os.path.basename(d), len(toks), float(np.abs(e1 - e2).max())))


def expected_next(z, temperature):
    """Numbers `next` should print for last-position logits z (float64)."""
    zt = z / temperature
    mx = zt.max()
    lse = mx + math.log(np.exp(zt - mx).sum())
    logp = zt - lse
    p = np.exp(logp)
    ent = float(-(p * logp).sum())
    return {"min_logit": float(z.min()), "max_logit": float(z.max()), "entropy_nats": ent,
            "entropy_bits": ent / math.log(2), "logp": logp, "p": p}


def close(a, b, rtol, atol):
    return abs(a - b) <= rtol * abs(b) + atol


def check_json(d, m, toks, top=5):
    r = last_logits(m, toks)
    e = engine_logits(d, toks, all_positions=False)
    if e is None:
        return
    e = e[0].astype(np.float64)
    dl = min(float(np.abs(e - r).max()), TOL)  # the logits check itself is done in compare()
    for temp in (1.0, 0.7):
        p, _ = run(["next", "--model", d, "--tokens", ",".join(map(str, toks)), "--top", str(top),
                    "--temperature", repr(temp), "--json"])
        if not C.check(p.returncode == 0, "next --json --temperature %g exits 0 (%s)" % (temp, p.stderr.strip()[-300:])):
            continue
        try:
            j = json.loads(p.stdout)
        except ValueError as ex:
            C.check(False, "next --json prints one JSON object (%s): %r" % (ex, p.stdout[:300]))
            continue
        ref_x = expected_next(r, temp)     # from the reference logits
        eng_x = expected_next(e, temp)     # from the engine's own dumped float32 logits
        # against the reference: the logits themselves may differ by dl <= TOL, so allow for that
        # (a logprob moves by at most 2*dl/T, an entropy by ~2*dl/T as well)
        slack = 2 * dl / temp
        tag = "%s T=%d temp=%g" % (os.path.basename(d), len(toks), temp)
        C.check(j.get("n_input_tokens") == len(toks), "%s: n_input_tokens %s == %d" % (tag, j.get("n_input_tokens"), len(toks)))
        if "input_tokens" in j:
            C.check(j["input_tokens"] == list(toks), "%s: input_tokens echo the --tokens" % tag)
        C.check(list(j.get("logits_shape", [])) == [1, m.cfg.vocab_size] or list(j.get("logits_shape", [])) == [m.cfg.vocab_size],
                "%s: logits_shape %s" % (tag, j.get("logits_shape")))
        jt = j.get("temperature")
        C.check(jt is not None and close(float(jt), temp, 1e-12, 0), "%s: temperature %s" % (tag, jt))
        for key in ("min_logit", "max_logit", "entropy_nats", "entropy_bits"):
            v = j.get(key)
            if not C.check(isinstance(v, (int, float)), "%s: %s present (%r)" % (tag, key, v)):
                continue
            C.check(close(v, eng_x[key], JSON_RTOL, 1e-7),
                    "%s: %s %.9g vs numpy on engine logits %.9g (rel %.2g)" % (
                        tag, key, v, eng_x[key], abs(v - eng_x[key]) / max(abs(eng_x[key]), 1e-30)))
            s = dl if "logit" in key else slack * (1 if key == "entropy_nats" else 1 / math.log(2))
            C.check(close(v, ref_x[key], JSON_RTOL, s),
                    "%s: %s %.9g vs numpy on reference logits %.9g (diff %.2g, allowed %.2g)" % (
                        tag, key, v, ref_x[key], abs(v - ref_x[key]), JSON_RTOL * abs(ref_x[key]) + s))
        rows = j.get("top", [])
        if not C.check(len(rows) == top, "%s: %d top rows (got %d)" % (tag, top, len(rows))):
            continue
        order = np.argsort(-r, kind="stable")
        ranks = [row.get("rank") for row in rows]
        C.check(ranks in (list(range(1, top + 1)), list(range(top))), "%s: ranks %s" % (tag, ranks))
        ids = [row.get("id") for row in rows]
        C.check(ids == [int(i) for i in np.argsort(-e, kind="stable")[:top]],
                "%s: top ids %s in descending engine-logit order" % (tag, ids))
        C.check(ids == [int(i) for i in order[:top]] or
                all(r[order[k]] - r[ids[k]] <= 2 * dl for k in range(top)),
                "%s: top ids == reference top ids %s" % (tag, [int(i) for i in order[:top]]))
        worst = {"logit": 0.0, "prob": 0.0, "logprob": 0.0}
        ok = {"logit": True, "prob": True, "logprob": True}
        for row in rows:
            i = row["id"]
            for key, ev, rv, s in (("logit", e[i], r[i], dl), ("prob", eng_x["p"][i], ref_x["p"][i], slack * ref_x["p"][i]),
                                   ("logprob", eng_x["logp"][i], ref_x["logp"][i], slack)):
                v = row.get(key)
                if not isinstance(v, (int, float)):
                    ok[key] = False
                    continue
                worst[key] = max(worst[key], abs(v - ev) / max(abs(ev), 1e-30))
                ok[key] &= close(v, ev, JSON_RTOL, 1e-9) and close(v, rv, JSON_RTOL, s)
        for key in ("logit", "prob", "logprob"):
            C.check(ok[key], "%s: top rows' %s match numpy (engine logits: max rel %.2g; reference within %.2g abs)"
                    % (tag, key, worst[key], dl if key == "logit" else slack))


def engine_test_setup(prefix, add_arguments=None):
    """The engine tests' command line (--logitscope BIN, --tokenizer-from DIR, --keep DIR, and
    what add_arguments(parser) adds) and their work folder: --keep's, kept, else a temporary one
    removed at exit. Sets BIN; returns (args, folder)."""
    global BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", default=None)
    ap.add_argument("--keep", default=None, help="write the models here and keep them")
    if add_arguments:
        add_arguments(ap)
    a = ap.parse_args()
    BIN = a.logitscope
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
        return a, a.keep
    tmp = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, tmp, True)
    return a, tmp


def main():
    def more_arguments(ap):
        ap.add_argument("--also-shape", default=None, metavar="SHAPE",
                        help="also compare a bf16 model of this synth shape (e.g. qwen2.5-0.5b; slow, not run by CTest)")

    a, tmp = engine_test_setup("ls_ref_", more_arguments)
    t0 = time.time()

    variants = [("f32", True, 11), ("f32", False, 12), ("bf16", True, 13), ("bf16", False, 14), ("f16", False, 15)]
    models = []
    for dtype, tied, seed in variants:
        d = os.path.join(tmp, "synth_%s_%s" % (dtype, "tied" if tied else "untied"))
        p, dt = synth(d, dtype, seed, not tied, a.tokenizer_from)
        if p.returncode != 0:
            if dtype == "f16":
                print("NOTE  synth --dtype f16 not supported (exit %d: %s); F16 covered by the Python-written model below"
                      % (p.returncode, p.stderr.strip()[-200:]))
                continue
            C.check(False, "synth --dtype %s%s exited %d: %s" % (dtype, "" if tied else " --untied", p.returncode, p.stderr.strip()[-500:]))
            continue
        print("      synth %s in %.1fs" % (os.path.basename(d), dt))
        check_model_files(d, dtype, tied)
        models.append((os.path.basename(d), d))
    if not models:
        print("no model could be synthesized")
        return 1
    template = models[0][1]
    for name, dtype, tied, shards, seed in (("py_sharp_f32_untied_2shards", "F32", False, 2, 21),
                                            ("py_sharp_bf16_tied", "BF16", True, 1, 22),
                                            ("py_sharp_f16_untied", "F16", False, 1, 23)):
        d = os.path.join(tmp, name)
        sharp_model(d, template, dtype, tied, shards, seed)
        models.append((name, d))

    summary = []
    seqs_by_model = {}
    for name, d in models:
        m = ref.Qwen2Ref(d)
        V = m.cfg.vocab_size
        rng = np.random.default_rng(len(name))
        long = [int(x) for x in rng.integers(0, V, size=20)]
        long[3], long[7], long[12], long[19] = V - 1, 151643, 151645, V - 2
        seqs = [[V - 1], [9707, 11, 1879, 0, V - 2], long]
        seqs_by_model[name] = (m, seqs)
        print("---- (%.1fs) %s: hidden %d, %d layers, %d/%d heads, vocab %d, tied=%s" % (
            time.time() - t0, name, m.cfg.hidden_size, m.cfg.num_hidden_layers, m.cfg.num_attention_heads,
            m.cfg.num_key_value_heads, V, m.cfg.tie_word_embeddings))
        compare(name, d, m, seqs, summary, last_only=name.startswith("synth"))

    print("---- (%.1fs) --bf16-activations: BF16 models against the reference whose BF16 matrix "
          "products take bf16-rounded inputs" % (time.time() - t0))
    for name, d in models:
        m, seqs = seqs_by_model[name]
        if "bf16" not in name:
            if name == models[0][0]:  # a float32 model: the flag changes nothing at all
                a1 = engine_logits(d, seqs[-1], ["--bf16-activations"])
                a0 = engine_logits(d, seqs[-1])
                if a0 is not None and a1 is not None:
                    C.check(np.array_equal(a0, a1), "%s (F32): --bf16-activations changes no logit" % name)
            continue
        compare_bf16_activations(name, d, m, ref.Qwen2Ref(d, bf16_activations=True), seqs)
        a1 = engine_logits(d, seqs[-1], ["--bf16-activations", "--threads", "1"])
        a2 = engine_logits(d, seqs[-1], ["--bf16-activations", "--threads", "2"])
        if a1 is not None and a2 is not None:
            C.check(np.array_equal(a1, a2), "%s --bf16-activations: --threads 1 and 2 identical" % name)
        for path in ("avx2", "scalar"):  # every BF16 x BF16 path gives the same bits
            a3 = engine_logits(d, seqs[-1], ["--bf16-activations", "--threads", "1"],
                               env={"LS_BF16_SIMD": path})
            if a1 is not None and a3 is not None:
                C.check(np.array_equal(a1, a3), "%s --bf16-activations: LS_BF16_SIMD=%s gives the "
                        "same logits bit for bit" % (name, path))

    if a.also_shape:
        d = os.path.join(tmp, "synth_bf16_" + a.also_shape)
        p, dt = synth(d, "bf16", 7, False, a.tokenizer_from, shape=a.also_shape)
        if C.check(p.returncode == 0, "synth --shape %s --dtype bf16 (%.1fs) %s" % (a.also_shape, dt, p.stderr.strip()[-300:])):
            m = ref.Qwen2Ref(d)
            print("---- (%.1fs) %s: hidden %d, %d layers, %d/%d heads, vocab %d" % (
                time.time() - t0, os.path.basename(d), m.cfg.hidden_size, m.cfg.num_hidden_layers,
                m.cfg.num_attention_heads, m.cfg.num_key_value_heads, m.cfg.vocab_size))
            compare(os.path.basename(d), d, m, [[9707, 11, 1879, 0, m.cfg.vocab_size - 1]], summary, last_only=False)
            del m

    print("---- out-of-range token id (%.1fs)" % (time.time() - t0))
    name, d = models[0]
    V = seqs_by_model[name][0].cfg.vocab_size
    p, _ = run(["next", "--model", d, "--tokens", "1,%d" % V])
    C.check(p.returncode != 0 and str(V) in p.stderr,
            "next --tokens 1,%d (== vocab_size) is an error naming the id (exit %d: %s)" % (V, p.returncode, p.stderr.strip()[-200:]))

    print("---- threads (%.1fs)" % (time.time() - t0))
    for name, d in models[:1] + models[-3:-2]:
        check_threads(d, seqs_by_model[name][1][-1])

    print("---- next --json (%.1fs)" % (time.time() - t0))
    for name, d in (models[0], models[-3]):
        m, seqs = seqs_by_model[name]
        check_json(d, m, seqs[-1])

    print("---- power of the comparison: reference with one injected bug vs correct reference, T=20 (%.1fs)" % (time.time() - t0))
    for name, d in models:
        if not (name.startswith("py_sharp_f32") or name == models[0][0] or name == "synth_f32_untied"):
            continue
        m, seqs = seqs_by_model[name]
        # a vocab subset gives a lower bound of the max abs change: enough to show it exceeds the tolerance
        rows = np.unique(np.concatenate([np.arange(2048), np.random.default_rng(0).integers(0, m.cfg.vocab_size, 4096),
                                         [m.cfg.vocab_size - 1]]))
        good = m.logits(seqs[-1], rows)
        for mu in MUTANTS:
            if mu == "tied head on untied model" and m.cfg.tie_word_embeddings:
                continue
            delta = float(np.abs(mutant_logits(d, seqs[-1], mu, m, rows) - good).max())
            if name.startswith("py_sharp"):
                if mu == "rms_norm_eps 1e-5":   # a 1e-5 eps shift is below float32 resolution of O(1) activations
                    print("INFO  %s: bug '%s' moves logits by %.3g (not asserted)" % (name, mu, delta))
                else:
                    C.check(delta > 10 * TOL, "%s: bug '%s' moves logits by %.3g > 10x tolerance" % (name, mu, delta))
            else:
                print("%s  %s: bug '%s' moves logits by %.3g%s" % (
                    "INFO" if delta > 10 * TOL else "WEAK", name, mu, delta,
                    "" if delta > 10 * TOL else " (would be hidden at tolerance %g on this model)" % TOL))

    print("---- summary: max abs diff engine vs reference, all positions x whole vocab")
    for name, w in summary:
        print("      %-32s %.3g" % (name, w))
    ru = __import__("resource")
    cpu = sum(getattr(ru.getrusage(w), f) for w in (ru.RUSAGE_SELF, ru.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
    return C.finish(t0, ", %.1fs cpu (this script + logitscope runs)" % cpu)


if __name__ == "__main__":
    sys.exit(main())
