#!/usr/bin/python3
"""`logitscope attribute` (leave-one-out prompt attribution) vs `logitscope score` and the
independent numpy reference (qwen2_ref.py).

Run by CTest as
    test_attribute_ref.py --logitscope BIN --tokenizer-from DIR [--keep DIR]
For a prompt of n tokens and a target token t (--target, else the argmax of the logits after the
prompt), base_logprob = log_softmax(logits after the prompt)[t], and for every position i the
variant prompt (token i removed, or replaced by --replace-with) gives
logprob_i = log_softmax(logits after the variant)[t] and delta_i = base_logprob - logprob_i.
Models: `synth --shape tiny` (Qwen2, F32) and a Python-written sharp Qwen3 (F32 untied). Checks:
  * target == the argmax of `next --dump-logits` (exact) and of the reference (near-ties excepted);
  * base_logprob and, for positions 0, 1, the middle and the last, each variant's logprob ==
    `score --tokens <variant> --text-tokens <target> --json`'s logprob bit for bit;
  * every variant's logprob within 1e-4 (absolute) of the reference (Qwen2Ref.logits last row,
    log_softmax in float64), likewise base_logprob;
  * delta == base_logprob - logprob exactly; positions 0..n-1 in order, ids echo the prompt;
  * modes remove, replace (--replace-with), an explicit --target;
  * errors: a 1-token prompt in remove mode, a prompt longer than --max-prompt (given, and the
    default 256; the message names --max-prompt), --target / --replace-with outside the vocab;
    a prompt of exactly --max-prompt tokens and a 1-token prompt in replace mode are accepted;
  * power: a reference that removes token i+1, reads the logits one position early, or replaces
    by id 0 instead of removing moves the variants' logprobs by > 10x the tolerance.
Every check prints its figure; exit 1 if any failed.
"""
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import qwen2_ref as ref  # noqa: E402
import test_forward_ref as tfr  # noqa: E402  (run / synth / engine_logits / Checks)
import test_family_ref as tfam  # noqa: E402  (py_model)

TOL = 1e-4          # logprobs: absolute
C = tfr.C


def log_softmax64(z):
    z = np.asarray(z, dtype=np.float64)
    m = z.max()
    return z - (m + math.log(np.exp(z - m).sum()))


def variant(prompt, i, replace_with):
    return prompt[:i] + prompt[i + 1:] if replace_with is None else prompt[:i] + [replace_with] + prompt[i + 1:]


REF_CACHE = {}


def ref_last(m, toks):
    """(log_softmax float64 of the last position, max |logit|) from the reference."""
    key = (id(m), tuple(toks))
    if key not in REF_CACHE:
        z = m.logits(list(toks), last_only=True)[0]
        REF_CACHE[key] = (log_softmax64(z), float(np.abs(z).max()), z)
    return REF_CACHE[key]


def attribute(d, prompt, extra=()):
    args = ["attribute", "--model", d, "--tokens", ",".join(map(str, prompt)), "--json"] + list(extra)
    p, dt = tfr.run(args)
    if not C.check(p.returncode == 0, "attribute T=%d %s exits 0 (%.2fs)%s" % (
            len(prompt), " ".join(extra), dt, "" if p.returncode == 0 else ": exit %d %s" % (p.returncode, p.stderr.strip()[-400:]))):
        return None
    try:
        return json.loads(p.stdout)
    except ValueError as ex:
        C.check(False, "attribute --json prints one JSON object (%s): %r" % (ex, p.stdout[:300]))
        return None


def score_logprob(d, toks, target):
    p, _ = tfr.run(["score", "--model", d, "--tokens", ",".join(map(str, toks)), "--text-tokens", str(target), "--json"])
    if p.returncode != 0:
        C.check(False, "score --tokens %s --text-tokens %d exits 0: %s" % (toks, target, p.stderr.strip()[-300:]))
        return None
    return json.loads(p.stdout)["tokens"][0]["logprob"]


def check_case(name, d, m, prompt, target=None, replace_with=None, score_positions=None):
    tag = "%s n=%d %s%s" % (name, len(prompt), "replace-with %d" % replace_with if replace_with is not None else "remove",
                            " --target %d" % target if target is not None else "")
    extra = []
    if target is not None:
        extra += ["--target", str(target)]
    if replace_with is not None:
        extra += ["--replace-with", str(replace_with)]
    j = attribute(d, prompt, extra)
    if j is None:
        return
    n = len(prompt)
    C.check(j.get("input_tokens") == prompt and isinstance(j.get("model"), str),
            "%s: input_tokens echo the prompt, model %r" % (tag, j.get("model")))
    C.check(j.get("mode") == ("remove" if replace_with is None else "replace"), "%s: mode %r" % (tag, j.get("mode")))
    rep = j.get("replacement")
    C.check((rep is None) if replace_with is None else (isinstance(rep, dict) and rep.get("id") == replace_with
                                                       and isinstance(rep.get("token"), str)),
            "%s: replacement %r" % (tag, rep))
    # target
    lsm_base, scale_base, z_base = ref_last(m, prompt)
    tgt = (j.get("target") or {}).get("id")
    if target is not None:
        C.check(tgt == target, "%s: target %s == --target %d" % (tag, tgt, target))
    else:
        e = tfr.engine_logits(d, prompt, all_positions=False)
        if e is not None:
            C.check(tgt == int(np.argmax(e[0])), "%s: target %s == argmax %d of `next --dump-logits`" % (tag, tgt, int(np.argmax(e[0]))))
        rt = int(np.argmax(z_base))
        C.check(tgt == rt or (isinstance(tgt, int) and z_base[rt] - z_base[tgt] <= 2 * TOL * max(1, scale_base)),
                "%s: target %s == the reference argmax %d (gap %.3g)" % (
                    tag, tgt, rt, z_base[rt] - z_base[tgt] if isinstance(tgt, int) else float("nan")))
    if not isinstance(tgt, int):
        return
    C.check(isinstance((j.get("target") or {}).get("token"), str), "%s: target token text %r" % (tag, j.get("target")))
    base = j.get("base_logprob")
    tol_b = TOL
    C.check(isinstance(base, float) and abs(base - lsm_base[tgt]) <= tol_b,
            "%s: base_logprob %r vs reference %.9g (diff %.3g <= %.3g)" % (
                tag, base, lsm_base[tgt], abs(base - lsm_base[tgt]) if isinstance(base, float) else float("nan"), tol_b))
    sb = score_logprob(d, prompt, tgt)
    C.check(sb is not None and base == sb, "%s: base_logprob %r == score's logprob %r bit for bit" % (tag, base, sb))
    # attributions
    rows = j.get("attributions") or []
    C.check([r.get("position") for r in rows] == list(range(n)) and [r.get("id") for r in rows] == prompt
            and all(isinstance(r.get("token"), str) for r in rows),
            "%s: %d attributions, positions 0..%d in order, ids and token texts echo the prompt" % (tag, len(rows), n - 1))
    if len(rows) != n:
        return
    worst, bad = 0.0, []
    deltas_exact = True
    for i, row in enumerate(rows):
        v = variant(prompt, i, replace_with)
        lsm, _, _ = ref_last(m, v)
        lp = row.get("logprob")
        if not isinstance(lp, float):
            bad.append("position %d: logprob %r" % (i, lp))
            continue
        diff = abs(lp - lsm[tgt])
        worst = max(worst, diff)
        if diff > TOL:
            bad.append("position %d: logprob %.9g vs reference %.9g (diff %.3g)" % (i, lp, lsm[tgt], diff))
        if row.get("delta") != base - lp:
            deltas_exact = False
            bad.append("position %d: delta %r != base_logprob - logprob %r" % (i, row.get("delta"), base - lp))
    C.check(not bad, "%s: every variant's logprob within %g of the reference (worst abs %.3g); "
            "deltas == base_logprob - logprob exactly: %s%s" % (
                tag, TOL, worst, deltas_exact, "" if not bad else "\n        " + "\n        ".join(bad[:10])))
    spread = max(abs(r["delta"]) for r in rows if isinstance(r.get("delta"), float))
    print("      %s: deltas %s (largest |delta| %.3g)" % (tag, " ".join("%.3g" % r["delta"] for r in rows), spread))
    # bit for bit against score
    pos = sorted({0, 1, n // 2, n - 1} if score_positions is None else set(score_positions))
    same = []
    for i in pos:
        s = score_logprob(d, variant(prompt, i, replace_with), tgt)
        same.append((i, rows[i]["logprob"], s))
    C.check(all(a == b for _, a, b in same), "%s: variant logprob == `score --tokens <variant> --text-tokens %d` bit for bit "
            "at positions %s%s" % (tag, tgt, pos, "" if all(a == b for _, a, b in same) else ": " + "; ".join(
                "%d: %r vs %r" % x for x in same if x[1] != x[2])))
    return tgt


def power(name, m, prompt, tgt, replace_with=None):
    """How far plausibly-wrong attributions are from the right ones on the reference itself."""
    right = np.array([ref_last(m, variant(prompt, i, replace_with))[0][tgt] for i in range(len(prompt))])
    tol = TOL
    muts = {}
    muts["removes token i+1 (off by one)"] = [ref_last(m, variant(prompt, i + 1, replace_with))[0][tgt]
                                              if i + 1 < len(prompt) else right[i] for i in range(len(prompt))]
    muts["logits one position early"] = [log_softmax64(m.logits(variant(prompt, i, replace_with))[-2])[tgt]
                                         if len(variant(prompt, i, replace_with)) > 1 else right[i]
                                         for i in range(len(prompt))]
    if replace_with is None:
        muts["replaces by id 0 instead of removing"] = [ref_last(m, variant(prompt, i, 0))[0][tgt] for i in range(len(prompt))]
    for mu, vals in muts.items():
        delta = float(np.abs(np.array(vals) - right).max())
        C.check(delta > 10 * tol, "%s: mutant '%s' moves a variant logprob by %.3g > 10x tolerance %.3g"
                % (name, mu, delta, tol))


def main():
    a, tmp = tfr.engine_test_setup("ls_attr_")
    t0 = time.time()

    p, _ = tfr.run(["attribute", "--help"])
    if not C.check(p.returncode == 0, "logitscope attribute --help exits 0 (%s)" % p.stderr.strip()[-200:]):
        return 1
    models = []
    d = os.path.join(tmp, "synth_tiny_f32")
    p, dt = tfr.synth(d, "f32", 71, False, a.tokenizer_from)
    if not C.check(p.returncode == 0, "synth --shape tiny --dtype f32 (%.1fs) %s" % (dt, p.stderr.strip()[-300:])):
        return 1
    models.append(("synth_tiny_f32", d))
    d2 = os.path.join(tmp, "py_qwen3_f32_untied")
    tfam.py_model(d2, d, "qwen3", "F32", False, 72)
    models.append(("py_qwen3_f32_untied", d2))

    for name, d in models:
        m = ref.Qwen2Ref(d)
        V = m.cfg.vocab_size
        print("---- (%.1fs) %s: %s, %d layers, vocab %d" % (time.time() - t0, name, m.cfg.model_type,
                                                           m.cfg.num_hidden_layers, V), flush=True)
        rng = np.random.default_rng(len(name))
        prompt = [int(x) for x in rng.integers(0, V, size=10)]
        prompt[2], prompt[9] = V - 1, 151643
        tgt = check_case(name, d, m, prompt)
        if tgt is not None:
            power(name, m, prompt, tgt)
        # an explicit target (the reference's rank-5 token), replace mode, both
        z = ref_last(m, prompt)[2]
        t5 = int(np.argsort(-z, kind="stable")[4])
        check_case(name, d, m, prompt, target=t5, score_positions=[0, 5, 9])
        check_case(name, d, m, prompt, replace_with=V - 1, score_positions=[0, 4, 9])
        t2 = check_case(name, d, m, prompt[:6], target=t5, replace_with=0, score_positions=[0, 5])
        if t2 is not None and name.startswith("py_"):
            power(name + " replace-with 0", m, prompt[:6], t2, replace_with=0)
        check_case(name, d, m, prompt[:2])   # the shortest prompt remove mode accepts

    print("---- (%.1fs) errors" % (time.time() - t0), flush=True)
    name, d = models[0]
    V = ref.Config.load(d).vocab_size
    base = ["attribute", "--model", d, "--json"]
    for args, flag, what in (
            (["--tokens", "9707"], None, "a 1-token prompt in remove mode"),
            (["--tokens", "1,2,3,4,5,6", "--max-prompt", "5"], "--max-prompt", "6 tokens with --max-prompt 5"),
            (["--tokens", ",".join(["9707"] * 257)], "--max-prompt", "257 tokens (default --max-prompt 256)"),
            (["--tokens", "1,2,3", "--target", str(V)], "--target", "--target %d == vocab_size" % V),
            (["--tokens", "1,2,3", "--target", "-1"], "--target", "--target -1"),
            (["--tokens", "1,2,3", "--replace-with", str(V)], "--replace-with", "--replace-with %d == vocab_size" % V)):
        p, _ = tfr.run(base + args)
        C.check(p.returncode != 0 and p.stderr.strip() != "" and (flag is None or flag in p.stderr),
                "attribute with %s exits non-zero%s (exit %d: %s)" % (
                    what, "" if flag is None else " naming " + flag, p.returncode, p.stderr.strip()[-200:]))
    for args, what in ((["--tokens", "1,2,3,4,5", "--max-prompt", "5"], "5 tokens with --max-prompt 5"),
                       (["--tokens", "9707", "--replace-with", "11"], "a 1-token prompt in replace mode")):
        p, _ = tfr.run(base + args)
        C.check(p.returncode == 0, "attribute with %s is accepted (exit %d %s)" % (what, p.returncode, p.stderr.strip()[-200:]))

    return C.finish(t0)


if __name__ == "__main__":
    sys.exit(main())
