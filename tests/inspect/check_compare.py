"""compare vs numpy: per position top-1 of A and B (numpy argmax of the dumped rows), agreement,
KL(A||B) in float64, A's top-1/top-2 gap and flip margin, the summary (rate, mean/max KL, margin
buckets, mean gaps); A's greedy continuation is the argmax of A's rows. A model against itself
gives 100 % and KL exactly 0; F32 vs BF16 copies of one synthetic seed give what numpy computes;
two different seeds give flips, each listed with both tokens; the directory against a Q4_0
GGUF quantized from it (`logitscope quantize`) is checked the same way; the SVG has the KL series and one
mark per flip. Also: a missing model B is reported by its path.

usage: check_compare.py LOGITSCOPE TOKENIZER_DIR"""
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

from lab_util import Checker, close, hf, run, run_json, synth

PROMPTS = ["The capital of France is", "1, 2, 3, 4,", "# comment lines are skipped",
           "你好，世界", "def fibonacci(n):"]


def oracle(a_rows, b_rows):
    out = []
    for a, b in zip(a_rows, b_rows):
        la, lb = hf.log_softmax(a), hf.log_softmax(b)
        pa = np.exp(la)
        order = np.lexsort((np.arange(len(a)), -a.astype(np.float64)))
        ta, tb = int(order[0]), int(np.argmax(b))
        out.append(dict(top_a=ta, top_b=tb, agree=ta == tb, kl=float((pa * (la - lb)).sum()),
                        margin_a=float(a[order[0]]) - float(a[order[1]]),
                        flip_margin=float(a[ta]) - float(a[tb])))
    return out


def check_run(check, out, a_rows, b_rows, tag):
    want = oracle(a_rows, b_rows)
    pos = out["positions"]
    check(len(pos) == len(want), f"{tag}: {len(pos)} positions vs {len(want)} rows")
    for p, w in zip(pos, want):
        t = f"{tag} prompt {p['prompt']} step {p['step']}"
        for key in ("top_a", "top_b", "agree"):
            check(p[key] == w[key], f"{t}: {key} {p[key]} vs {w[key]}")
        check(close(p["kl"], max(w["kl"], 0.0), 1e-5, 1e-9), f"{t}: kl {p['kl']} vs {w['kl']}")
        check(close(p["margin_a"], w["margin_a"], 1e-6, 1e-6), f"{t}: margin_a")
        check(close(p["flip_margin"], w["flip_margin"], 1e-6, 1e-6), f"{t}: flip_margin")
    s = out["summary"]
    n = len(want)
    agree = sum(w["agree"] for w in want)
    kls = np.array([max(w["kl"], 0.0) for w in want])
    check(s["positions"] == n and s["agreements"] == agree and s["flips"] == n - agree,
          f"{tag}: counts {s['positions']} {s['agreements']} {s['flips']}")
    check(close(s["agreement_rate"], agree / n, 1e-12), f"{tag}: agreement_rate")
    check(close(s["mean_kl"], kls.mean(), 1e-5, 1e-9), f"{tag}: mean_kl")
    check(close(s["max_kl"], kls.max(), 1e-5, 1e-9), f"{tag}: max_kl")
    gaps = np.array([w["margin_a"] for w in want])
    flips = np.array([not w["agree"] for w in want])
    edges = [0, 0.1, 0.5, 1, 2, np.inf]
    for bk, lo, hi in zip(s["margin_buckets"], edges[:-1], edges[1:]):
        m = (gaps >= lo) & (gaps < hi)
        check(bk["positions"] == int(m.sum()) and bk["flips"] == int((m & flips).sum()),
              f"{tag}: bucket [{lo},{hi}) {bk} vs {m.sum()}/{(m & flips).sum()}")
    if flips.any():
        check(close(s["mean_margin_flips"], gaps[flips].mean(), 1e-6, 1e-6), f"{tag}: gap at flips")
    if (~flips).any():
        check(close(s["mean_margin_agree"], gaps[~flips].mean(), 1e-6, 1e-6), f"{tag}: gap agree")
    return want


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    check = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        f32 = synth(exe, tok, os.path.join(tmp, "f32"), seed=5, dtype="f32")
        bf16 = synth(exe, tok, os.path.join(tmp, "bf16"), seed=5, dtype="bf16")
        other = synth(exe, tok, os.path.join(tmp, "other"), seed=6, dtype="f32")
        prompts = os.path.join(tmp, "prompts.txt")
        with open(prompts, "w") as f:
            f.write("\n".join(PROMPTS) + "\n\n")
        n_prompts = len(PROMPTS) - 1
        steps = 4

        def compare(b, name, svg=None):
            dump = os.path.join(tmp, name)
            args = [exe, "compare", "--model", f32, "--model-b", b, "--prompts", prompts,
                    "--steps", str(steps), "--json", "--dump-logits", dump, "--threads", "1"]
            if svg:
                args += ["--svg", svg]
            out = run_json(*args)
            return out, np.load(dump + ".a.npy"), np.load(dump + ".b.npy")

        out, a, b = compare(f32, "self")
        check(a.shape == (n_prompts * steps, 151936), f"dump shape {a.shape}")
        check(np.array_equal(a, b), "self: identical logits")
        check_run(check, out, a, b, "self")
        check(out["summary"]["agreement_rate"] == 1.0, "self: 100% agreement")
        check(all(p["kl"] == 0.0 for p in out["positions"]), "self: KL exactly 0")
        # A's greedy continuation is the argmax of A's rows, fed to both models.
        conts = out["continuations"]
        for i, c in enumerate(conts):
            check(c == [int(np.argmax(r)) for r in a[i * steps:(i + 1) * steps]],
                  f"continuation of prompt {i}")

        out, a, b = compare(bf16, "bf16")
        want = check_run(check, out, a, b, "f32-vs-bf16")
        rate = sum(w["agree"] for w in want) / len(want)
        print(f"f32 vs bf16: agreement {rate:.3f}, mean KL {out['summary']['mean_kl']:.3g}")

        svg = os.path.join(tmp, "c.svg")
        out, a, b = compare(other, "other", svg)
        want = check_run(check, out, a, b, "seed5-vs-seed6")
        check(out["summary"]["flips"] > 0, "different models flip somewhere")
        root = ET.parse(svg).getroot()
        ns = {"s": "http://www.w3.org/2000/svg"}
        series = root.findall(".//s:g[@class='series']", ns)
        check(len(series) == 1 and series[0].get("data-name") == "KL(A||B)", "svg: one KL series")
        vals = [float(c.get("data-value")) for c in series[0].findall("s:circle", ns)]
        check(len(vals) == len(want) and all(close(v, p["kl"], 1e-9, 1e-12)
                                              for v, p in zip(vals, out["positions"])),
              "svg: KL values")
        marks = [int(m.get("data-x")) for m in root.findall(".//s:line[@class='mark']", ns)]
        check(marks == [i for i, w in enumerate(want) if not w["agree"]], f"svg: flip marks {marks}")

        # Across formats: the HF directory against a Q4_0 GGUF written from it.
        gguf = os.path.join(tmp, "q4.gguf")
        run(exe, "quantize", "--model", f32, "--type", "q4_0", "--out", gguf)
        out, a, b = compare(gguf, "gguf")
        want = check_run(check, out, a, b, "f32-vs-q4_0-gguf")
        check(out["summary"]["mean_kl"] > 0, "the quantized GGUF differs a little")
        print(f"f32 vs q4_0 gguf: agreement {out['summary']['agreement_rate']:.3f}, "
              f"mean KL {out['summary']['mean_kl']:.3g}")

        text = run(exe, "compare", "--model", f32, "--model-b", other, "--prompts", prompts).stdout
        check("agreement" in text and "KL(A||B)" in text, "readable report")
        bad = run(exe, "compare", "--model", f32, "--model-b", os.path.join(tmp, "missing"),
                  "--prompts", prompts, expect=1)
        check("missing" in bad.stderr, f"missing model B named: {bad.stderr.strip()}")
    return check.close("compare vs numpy")


if __name__ == "__main__":
    sys.exit(main())
