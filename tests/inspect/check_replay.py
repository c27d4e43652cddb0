"""replay and generate --dump-logits/--svg vs numpy. A sampled generation is recorded with its
per-step logits; numpy checks the dumped rows are the model's (each recorded raw top-1 and raw
probability); replay with the recorded settings changes nothing; replay under new flags
(sampling with the recorded draws, and greedy) is recomputed by numpy: new choice, pool,
entropy, the recorded token's new probability and the top list; --fork STEP=TOKEN keeps the
prefix, forces the token and continues greedily (numpy argmax of an all-positions pass); the
generate SVG holds entropy and chosen-probability series equal to numpy's values.

usage: check_replay.py LOGITSCOPE TOKENIZER_DIR"""
import json
import os
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

from lab_util import Checker, chain_hf, close, entropy, hf, run, synth


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    check = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        model = synth(exe, tok, os.path.join(tmp, "tiny"), seed=8)
        npy, svg, trace = (os.path.join(tmp, x) for x in ("l.npy", "g.svg", "t.jsonl"))
        g = run(exe, "generate", "--model", model, "--prompt", "Tell me a story", "--json",
                "--trace", "4", "--do-sample", "--temperature", "1.3", "--top-k", "50",
                "--top-p", "0.95", "--seed", "3", "--max-new-tokens", "8", "--dump-logits", npy,
                "--svg", svg, "--threads", "1").stdout
        with open(trace, "w") as f:
            f.write(g)
        lines = [json.loads(x) for x in g.splitlines()]
        header, steps, result = lines[0], lines[1:-1], lines[-1]
        rows = np.load(npy)
        prompt, toks = header["prompt_token_ids"], result["tokens"]
        rep = header["settings"]["repetition_penalty"]["value"]
        check(header["logits_file"] == os.path.abspath(npy), "header names the logits file")
        check(rows.shape == (len(toks), 151936), f"dump shape {rows.shape} for {len(toks)} tokens")
        for k, s in enumerate(steps):
            p = hf.softmax(rows[k])
            check(s["raw"]["top"][0]["id"] == int(np.argmax(rows[k])), f"step {k}: raw top-1")
            check(close(s["chosen"]["raw_prob"], p[s["chosen"]["id"]], 1e-6, 1e-9),
                  f"step {k}: raw prob of the chosen token")

        # The generate --svg chart: raw/final entropy and chosen probabilities per step.
        root = ET.parse(svg).getroot()
        ns = {"s": "http://www.w3.org/2000/svg"}
        series = {g_.get("data-name"): [float(c.get("data-value"))
                                        for c in g_.findall("s:circle", ns)]
                  for g_ in root.findall(".//s:g[@class='series']", ns)}
        check(set(series) == {"entropy raw (nats)", "entropy final (nats)", "chosen prob (final)",
                              "chosen prob (raw)"}, f"svg series {sorted(series)}")
        h_raw = [entropy(r) for r in rows]
        check(all(close(a, b, 1e-6, 1e-9) for a, b in zip(series["entropy raw (nats)"], h_raw))
              and len(series["entropy raw (nats)"]) == len(toks), "svg raw entropy = numpy")
        p_raw = [hf.softmax(r)[t] for r, t in zip(rows, toks)]
        check(all(close(a, b, 1e-6, 1e-9) for a, b in zip(series["chosen prob (raw)"], p_raw)),
              "svg raw chosen prob = numpy")

        def replay(*flags):
            return json.loads(run(exe, "replay", "--trace", trace, "--json", "--top", "5",
                                  *flags).stdout)

        same = replay()
        check(same["changed"] == 0 and [s["chosen"] for s in same["steps"]] == toks,
              "replay with the recorded settings reproduces every token")

        for name, flags, t, k, p, sample in (
                ("sample", ["--temperature", "0.5", "--top-k", "5", "--top-p", "0.9"], 0.5, 5, 0.9,
                 True),
                ("greedy", ["--do-sample", "false"], 0, 0, 1.0, False)):
            out = replay(*flags)
            changed = 0
            for k_, (st, rec) in enumerate(zip(out["steps"], steps)):
                hist = prompt + toks[:k_]
                if sample:
                    final = chain_hf(rows[k_], hist, len(prompt), t, k, p, 0.0, rep)
                    want = hf.sample_inverse_cdf(final, rec["draw"])
                    check(st["draw"] == rec["draw"], f"{name} step {k_}: recorded draw reused")
                else:
                    final = hf.repetition_penalty(rows[k_], np.asarray(hist), rep) \
                        if rep != 1.0 else rows[k_]
                    want = int(np.argmax(final))
                tag = f"{name} step {k_}"
                check(st["chosen"] == want, f"{tag}: chosen {st['chosen']} vs {want}")
                check(st["changed"] == (want != toks[k_]), f"{tag}: changed flag")
                changed += want != toks[k_]
                kept = np.isfinite(final)
                check(st["pool"] == int(kept.sum()), f"{tag}: pool {st['pool']} vs {kept.sum()}")
                check(close(st["entropy"], entropy(final), 1e-6, 1e-9), f"{tag}: entropy")
                fp = hf.softmax(final)
                check(close(st["recorded_prob"], fp[toks[k_]], 1e-6, 1e-9), f"{tag}: recorded prob")
                order = np.lexsort((np.arange(len(final)), -final.astype(np.float64)))
                check([c["id"] for c in st["top"]] == [int(i) for i in order[:5]][:len(st["top"])],
                      f"{tag}: top ids")
            check(out["changed"] == changed, f"{name}: changed count")
            print(f"replay {name}: {changed} of {len(toks)} steps change")

        # Fork at step 2 with a token the run did not choose, then greedy with no penalty.
        forced = int(np.argsort(rows[2])[-2]) if int(np.argmax(rows[2])) == toks[2] \
            else int(np.argmax(rows[2]))
        out = replay("--fork", f"2={forced}", "--do-sample", "false", "--repetition-penalty",
                     "1.0", "--threads", "1")
        fk = out["fork"]["tokens"]
        check(fk[:2] == toks[:2] and fk[2] == forced, f"fork prefix {fk[:3]}")
        check(len(fk) == len(toks), f"fork length {len(fk)} (same budget as the recording)")
        fnpy = os.path.join(tmp, "f.npy")
        run(exe, "next", "--model", model, "--tokens", ",".join(map(str, prompt + fk)),
            "--dump-logits", fnpy, "--all-positions", "--threads", "1")
        frows = np.load(fnpy)[len(prompt) - 1:]
        check(fk[3:] == [int(np.argmax(frows[i])) for i in range(3, len(fk))],
              "fork continuation is numpy's greedy")
        # --boundaries: replay itself with the setting just inside each reported end keeps the
        # step's token, and just past it chooses the reported token (steps 0-2).
        bounds = replay("--boundaries")
        flags = {"temperature": "--temperature", "top_k": "--top-k", "top_p": "--top-p",
                 "min_p": "--min-p", "repetition_penalty": "--repetition-penalty"}
        ends = 0
        for st in bounds["steps"][:3]:
            k, b = st["step"], st["boundaries"]
            check(not b["greedy"] and len(b["settings"]) == 5, f"step {k}: five settings")
            for name, e in b["settings"].items():
                check(e["applies"] and e["lo"] <= e["value"] <= e["hi"],
                      f"step {k} {name}: {e['lo']} <= {e['value']} <= {e['hi']}")
                for end, edge, token, sign in ((e["hi"], e["max"], e["above"], 1),
                                               (e["lo"], e["min"], e["below"], -1)):
                    if end == edge:
                        continue
                    ends += 1
                    past = end + sign if name == "top_k" else end * (1 + sign * 1e-9)
                    inside = replay(flags[name], repr(int(end) if name == "top_k" else end))
                    outside = replay(flags[name], repr(int(past) if name == "top_k" else past))
                    check(inside["steps"][k]["chosen"] == toks[k],
                          f"step {k} {name} = {end}: keeps token {toks[k]}")
                    check(outside["steps"][k]["chosen"] == token != toks[k],
                          f"step {k} {name} = {past}: chooses {outside['steps'][k]['chosen']}, "
                          f"reported {token}")
        check(ends >= 6, f"{ends} finite ends checked")
        text = run(exe, "replay", "--trace", trace, "--temperature", "0.2").stdout
        check("would have chosen differently" in text, "readable replay")
        text = run(exe, "replay", "--trace", trace, "--boundaries").stdout
        check("decision boundaries" in text, "readable boundaries")
        bad = run(exe, "replay", "--trace", os.path.join(tmp, "missing.jsonl"), expect=1)
        check("missing.jsonl" in bad.stderr, f"missing trace named: {bad.stderr.strip()}")
    return check.close("replay vs numpy")


if __name__ == "__main__":
    sys.exit(main())
