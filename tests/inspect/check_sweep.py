"""sweep vs numpy: every cell's pool, entropy, mass kept (raw and at T) and top candidates with
their final probabilities, recomputed from the logits sweep dumped, with the repetition penalty
of the model's generation_config.json over prompt + greedy history; the greedy continuation is
the raw argmax of each dumped row; the --svg file parses as XML with one bar series per setting
holding the first step's top probabilities. Also: bad list values name the flag.

usage: check_sweep.py LOGITSCOPE TOKENIZER_DIR"""
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

from lab_util import Checker, chain_hf, close, entropy, hf, run, run_json, synth


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    check = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        model = synth(exe, tok, os.path.join(tmp, "tiny"), seed=3)
        rep = json.load(open(os.path.join(model, "generation_config.json")))["repetition_penalty"]
        npy, svg = os.path.join(tmp, "l.npy"), os.path.join(tmp, "s.svg")
        temps, ks, ps, mps = [0, 0.5, 1.0, 1.7], [0, 5], [0.6, 1.0], [0.0, 0.05]
        out = run_json(exe, "sweep", "--model", model, "--prompt", "The quick brown fox",
                       "--temperature", ",".join(map(str, temps)), "--top-k",
                       ",".join(map(str, ks)), "--top-p", ",".join(map(str, ps)), "--min-p",
                       ",".join(map(str, mps)), "--steps", "3", "--top", "6", "--json",
                       "--dump-logits", npy, "--svg", svg, "--threads", "1")
        rows = np.load(npy)
        prompt = out["prompt_token_ids"]
        check(rows.shape == (3, 151936), f"dump shape {rows.shape}")
        check(len(out["steps"]) == 3, "3 steps")
        combos = [(t, k, p, m) for t in temps for k in ks for p in ps for m in mps]
        greedy = [int(np.argmax(r)) for r in rows]
        check(out["greedy_continuation"] == greedy, "greedy continuation = numpy argmax")
        for step, st in enumerate(out["steps"]):
            raw = rows[step]
            history = prompt + greedy[:step]
            check(len(st["cells"]) == len(combos), "one cell per combination")
            lse = np.log(np.exp(raw.astype(np.float64) - raw.max()).sum()) + raw.max()
            for cell, (t, k, p, m) in zip(st["cells"], combos):
                tag = f"step {step} T={t} k={k} p={p} min_p={m}"
                check((cell["temperature"], cell["top_k"], cell["top_p"], cell["min_p"]) ==
                      (t, k, p, m), f"{tag}: setting order")
                final = chain_hf(raw, history, len(prompt), t, k, p, m, rep)
                kept = np.isfinite(final)
                check(cell["pool"] == int(kept.sum()), f"{tag}: pool {cell['pool']} vs {kept.sum()}")
                check(close(cell["entropy"], entropy(final), 1e-6, 1e-9),
                      f"{tag}: entropy {cell['entropy']} vs {entropy(final)}")
                raw_p = np.exp(raw.astype(np.float64) - lse)
                check(close(cell["mass_kept"], raw_p[kept].sum(), 1e-6, 1e-9),
                      f"{tag}: mass_kept {cell['mass_kept']} vs {raw_p[kept].sum()}")
                tp = 1.0 if t == 0 else hf.softmax(raw.astype(np.float64) / t)[kept].sum()
                check(close(cell["mass_kept_t"], tp, 1e-5, 1e-8),
                      f"{tag}: mass_kept_t {cell['mass_kept_t']} vs {tp}")
                fp = hf.softmax(final)
                order = np.lexsort((np.arange(len(final)), -np.where(kept, final, -np.inf)))
                want = [int(i) for i in order[:min(6, int(kept.sum()))]]
                check([c["id"] for c in cell["top"]] == want,
                      f"{tag}: top ids {[c['id'] for c in cell['top']]} vs {want}")
                for c in cell["top"]:
                    check(close(c["prob"], fp[c["id"]], 1e-6, 1e-9), f"{tag}: prob of {c['id']}")
                    check(close(c["raw_prob"], raw_p[c["id"]], 1e-6, 1e-9), f"{tag}: raw_prob")
                    check(c["logit"] == float(raw[c["id"]]), f"{tag}: logit of {c['id']}")
        # Pools shrink as the settings tighten: a sanity check the oracle cannot make by itself.
        pools = {tuple(c[x] for x in ("temperature", "top_k", "top_p", "min_p")): c["pool"]
                 for c in out["steps"][0]["cells"]}
        check(pools[(1.0, 5, 0.6, 0.0)] <= pools[(1.0, 5, 1.0, 0.0)] <= 5, "top_p shrinks pool")
        check(pools[(0, 0, 1.0, 0.0)] == 1, "temperature 0 keeps one token")

        root = ET.parse(svg).getroot()
        ns = {"s": "http://www.w3.org/2000/svg"}
        series = root.findall(".//s:g[@class='series']", ns)
        check(len(series) == len(combos), f"svg: {len(series)} series for {len(combos)} settings")
        for g, cell in zip(series, out["steps"][0]["cells"]):
            vals = [float(r.get("data-value")) for r in g.findall("s:rect[@class='point']", ns)]
            check(len(vals) == len(cell["top"]) and
                  all(close(v, c["prob"], 1e-9) for v, c in zip(vals, cell["top"])),
                  f"svg bars of {g.get('data-name')}")

        text = run(exe, "sweep", "--model", model, "--prompt", "Hi", "--temperature", "0.5,1",
                   "--top-k", "3").stdout
        check("top candidates" in text and "kept@T" in text, "readable table")
        bad = run(exe, "sweep", "--model", model, "--prompt", "Hi", "--temperature", "0.5,x",
                  expect=2)  # a value that does not parse: a usage error
        check("--temperature" in bad.stderr, f"bad list names the flag: {bad.stderr}")
        bad = run(exe, "sweep", "--model", model, "--prompt", "Hi", "--top-p", "1.5", expect=1)
        check("--top-p" in bad.stderr, f"out-of-range value names the flag: {bad.stderr}")
    return check.close("sweep vs numpy")


if __name__ == "__main__":
    sys.exit(main())
