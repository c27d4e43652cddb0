#!/usr/bin/env python3
"""Writes the fixtures of the web page's TypeScript re-scorer (web/): one decoding step per case,
re-scored by web/test/oracle/rescore_oracle.py (transformers' formulas from tests/decode/hf_formulas.py,
in src/decode/'s stage orders). Fixed seed: the file is the same on every run.

  make_rescore_fixtures.py --out FILE [--check-cli LOGITSCOPE]

The file: {"about": str, "cases": [{"name", "logits": [float32 values, exact], "history": [ids],
"prompt_len": int, "settings": {temperature, top_k, top_p, min_p, repetition_penalty,
order_preset}, "draw": number|null, "expected": {"stages": [{"name", "candidates",
"mass_removed", "entropy"}], "final_logprobs": [number|null (null = removed)], "pool": int,
"entropy": number, "chosen": int}}]}.

Greedy is temperature 0, and then the draw is null (every sampled case has a draw). Each logit is
written as the shortest decimal of the float32 value taken as a double (repr of
float(np.float32(x))): parsed as a double it is exactly the float32, so Float32Array or
Math.fround give the same bits.

--check-cli LOGITSCOPE also writes each case as a one-step `generate --json` trace with its logits
as .npy and checks `logitscope replay --json` (the C++ chain) chooses the same token with the same
pool, entropy and probability."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import rescore_oracle as oracle  # noqa: E402

F32 = np.float32
SEED = 20261201
ABOUT = ("Fixtures of the page's re-scorer, made by web/test/oracle/make_rescore_fixtures.py from "
         "web/test/oracle/rescore_oracle.py. Greedy is temperature 0 (draw null; the warpers temperature, "
         "top_k, top_p, min_p do not run, the penalties do; argmax, lowest id on ties). Stages run "
         "in the preset's order (src/decode/order.cpp); inactive ones (temperature 1, top_k 0, "
         "top_p 1, min_p 0, repetition_penalty 1) are left out. llama_cpp: top_k keeps exactly k "
         "(lower id first among ties), top_p keeps until the mass reaches p; hf and vllm: top_k "
         "keeps ties, top_p removes while the ascending cumulative probability <= 1 - p. Sampling: "
         "walk ids ascending accumulating exp(score - max), take the first whose cumulative weight "
         "exceeds draw x total. mass_removed: probability under the stage's input of what it set "
         "to -inf; entropy in nats of the stage's output; probabilities in double from float32 "
         "scores.")


def settings(**kw):
    s = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
         "order_preset": "hf"}
    s.update(kw)
    return s


def f32_list(x):
    return [float(F32(v)) for v in np.asarray(x, dtype=F32)]


class Maker:
    def __init__(self):
        self.rng = np.random.default_rng(SEED)
        self.cases = []

    # --- logits ------------------------------------------------------------------------------
    def normal(self, v, scale=2.0, peaks=3, peak_gap=4.0):
        x = self.rng.normal(0.0, scale, v)
        top = self.rng.choice(v, size=peaks, replace=False)
        x[top] += peak_gap + self.rng.random(peaks) * 2.0
        return x.astype(F32)

    def with_ties(self, v, k):
        """A vector whose k-th and (k+1)-th (and (k+2)-th) largest scores are equal."""
        x = self.normal(v, scale=1.5, peaks=0)
        order = np.argsort(-x.astype(np.float64), kind="stable")
        tie = x[order[k - 1]]
        x[order[k]] = tie
        x[order[k + 1]] = tie
        return x.astype(F32)

    def history(self, logits, prompt_len, generated, repeat_top=2, repeat_negative=2):
        """prompt + generated ids that repeat some of the best tokens and some negative ones."""
        v = len(logits)
        order = np.argsort(-logits.astype(np.float64), kind="stable")
        best = [int(i) for i in order[:repeat_top]]
        negative = [int(i) for i in np.nonzero(logits < 0)[0][:50]]
        picks = list(self.rng.choice(negative, size=min(repeat_negative, len(negative)),
                                     replace=False)) if negative else []
        n = prompt_len + generated
        ids = [int(i) for i in self.rng.integers(0, v, n)]
        for j, t in enumerate(best + [int(p) for p in picks]):
            # each appears twice (a repeated history id), once in the prompt, once generated
            ids[j % max(1, prompt_len)] = t
            if generated:
                ids[prompt_len + (j % generated)] = t
        return ids

    # --- a case ------------------------------------------------------------------------------
    def add(self, name, logits, st, history=None, prompt_len=None, draw="auto", expect=None):
        logits = np.asarray(logits, dtype=F32)
        if history is None:
            prompt_len = 5
            history = self.history(logits, 5, 3)
        if prompt_len is None:
            prompt_len = len(history)
        if draw == "auto":
            draw = None if st["temperature"] == 0 else float(self.rng.random())
        r = oracle.rescore(logits, history, prompt_len, st, draw)
        if expect is not None:
            problem = expect(r, logits)
            if problem:
                raise AssertionError(f"case {name}: {problem}")
        self.cases.append({
            "name": name,
            "logits": f32_list(logits),
            "history": [int(i) for i in history],
            "prompt_len": int(prompt_len),
            "settings": dict(st),
            "draw": draw,
            "expected": {
                "stages": r["stages"],
                "final_logprobs": [None if not np.isfinite(x) else float(x)
                                   for x in r["final_logprobs"]],
                "pool": r["pool"],
                "entropy": r["entropy"],
                "chosen": r["chosen"],
            },
        })
        return r


def names(*want):
    def check(r, _logits):
        got = [s["name"] for s in r["stages"]]
        return None if got == list(want) else f"stages {got}, expected {list(want)}"
    return check


def all_of(*checks):
    def check(r, logits):
        for c in checks:
            p = c(r, logits)
            if p:
                return p
        return None
    return check


def candidates(stage, n):
    def check(r, _logits):
        got = [s["candidates"] for s in r["stages"] if s["name"] == stage]
        return None if got == [n] else f"{stage} candidates {got}, expected {n}"
    return check


def make_cases():
    m = Maker()
    # Greedy: the penalties run, the warpers do not.
    m.add("hf greedy, nothing active", m.normal(64), settings(temperature=0), expect=names())
    x = m.normal(64)
    x[[3, 4]] = x.max() + 1.0  # a tie at the maximum: the lower id wins
    m.add("hf greedy, tie at the top: lowest id", x, settings(temperature=0),
          history=[1, 2], prompt_len=2,
          expect=all_of(names(), lambda r, _: None if r["chosen"] == 3 else f"chose {r['chosen']}"))
    m.add("hf greedy with repetition_penalty 1.3 over repeated and negative ids", m.normal(300),
          settings(temperature=0, repetition_penalty=1.3), expect=names("repetition_penalty"))
    m.add("hf greedy: top_k, top_p, min_p do not run", m.normal(200),
          settings(temperature=0, top_k=5, top_p=0.5, min_p=0.2), expect=names())
    m.add("vllm greedy with repetition_penalty 2 and warpers set", m.normal(500),
          settings(temperature=0, repetition_penalty=2.0, top_k=3, order_preset="vllm"),
          expect=names("repetition_penalty"))
    m.add("llama_cpp greedy with repetition_penalty 1.1", m.normal(128),
          settings(temperature=0, repetition_penalty=1.1, top_p=0.3, order_preset="llama_cpp"),
          expect=names("repetition_penalty"))

    # Each stage alone, sampled.
    m.add("hf temperature 0.05", m.normal(256, scale=0.3), settings(temperature=0.05),
          expect=names("temperature"))
    m.add("hf temperature 2", m.normal(256), settings(temperature=2.0), expect=names("temperature"))
    m.add("hf top_k 10 alone", m.normal(400), settings(top_k=10),
          expect=all_of(names("top_k"), candidates("top_k", 10)))
    ties = m.with_ties(300, 7)
    m.add("hf top_k 7 with a tie at the 7th score: ties kept", ties, settings(top_k=7),
          expect=all_of(names("top_k"), candidates("top_k", 9)))
    m.add("vllm top_k 7 with a tie at the 7th score: ties kept", ties,
          settings(top_k=7, order_preset="vllm"), expect=candidates("top_k", 9))
    m.add("llama_cpp top_k 7 with a tie at the 7th score: exactly 7, lower ids", ties,
          settings(top_k=7, order_preset="llama_cpp"), expect=candidates("top_k", 7))
    m.add("hf top_k larger than the vocabulary", m.normal(100), settings(top_k=5000),
          expect=all_of(names("top_k"), candidates("top_k", 100)))
    m.add("hf top_p 1 is inactive", m.normal(150), settings(top_p=1.0, temperature=0.7),
          expect=names("temperature"))
    m.add("hf top_p 1e-9 keeps one token", m.normal(150), settings(top_p=1e-9),
          expect=all_of(names("top_p"), candidates("top_p", 1)))
    flat = m.normal(600, scale=0.8, peaks=8, peak_gap=2.0)
    m.add("hf top_p 0.5", flat, settings(top_p=0.5), expect=names("top_p"))
    m.add("llama_cpp top_p 0.5", flat, settings(top_p=0.5, order_preset="llama_cpp"),
          expect=names("top_p"))
    m.add("llama_cpp top_p 1e-9 keeps one token", m.normal(150),
          settings(top_p=1e-9, order_preset="llama_cpp"), expect=candidates("top_p", 1))
    m.add("hf min_p 0.1", m.normal(700, scale=1.0, peaks=6, peak_gap=3.0), settings(min_p=0.1),
          expect=names("min_p"))
    m.add("hf min_p 1 keeps the maximum", m.normal(90), settings(min_p=1.0),
          expect=candidates("min_p", 1))
    m.add("hf repetition_penalty 1.5 alone, sampled", m.normal(350),
          settings(repetition_penalty=1.5), expect=names("repetition_penalty"))
    neg = (m.normal(120) - 6.0).astype(F32)  # mostly negative: the penalty multiplies them
    m.add("hf repetition_penalty 0.8 (a boost) over negative logits", neg,
          settings(repetition_penalty=0.8), expect=names("repetition_penalty"))

    # Orders differ: temperature before min_p (hf, vllm) or last (llama_cpp).
    x = m.normal(800, scale=1.2, peaks=5, peak_gap=2.5)
    m.add("vllm temperature 1.5 then min_p 0.05", x,
          settings(temperature=1.5, min_p=0.05, order_preset="vllm"),
          expect=names("temperature", "min_p"))
    m.add("llama_cpp min_p 0.05 then temperature 1.5", x,
          settings(temperature=1.5, min_p=0.05, order_preset="llama_cpp"),
          expect=names("min_p", "temperature"))

    # Everything at once, per preset (the model's generation_config, a penalty and min_p).
    combo = settings(temperature=0.7, top_k=20, top_p=0.8, min_p=0.05, repetition_penalty=1.3)
    x = m.normal(1000, scale=1.5, peaks=10, peak_gap=3.0)
    hist = m.history(x, 6, 4, repeat_top=3)  # the same road for every preset: only the order differs
    draw = 0.6180339887498949
    m.add("hf all stages", x, combo, history=hist, prompt_len=6, draw=draw,
          expect=names("repetition_penalty", "temperature", "top_k", "top_p", "min_p"))
    m.add("vllm all stages", x, {**combo, "order_preset": "vllm"}, history=hist, prompt_len=6,
          draw=draw, expect=names("repetition_penalty", "temperature", "min_p", "top_k", "top_p"))
    m.add("llama_cpp all stages", x, {**combo, "order_preset": "llama_cpp"}, history=hist,
          prompt_len=6, draw=draw,
          expect=names("repetition_penalty", "top_k", "top_p", "min_p", "temperature"))
    m.add("hf all stages, draw 0: the lowest id of the pool", x, combo, history=hist, prompt_len=6,
          draw=0.0)
    m.add("hf all stages, draw 0.999999: the highest id of the pool", x, combo, history=hist,
          prompt_len=6, draw=0.999999)

    # A top_p cut inside a tie: hf removes the lower id of the tie first (ascending walk), llama.cpp
    # keeps the lower id (descending walk, lower id first).
    x = np.full(64, -2.0, dtype=F32)
    x[10], x[20], x[30] = 3.0, 2.0, 2.0
    p = oracle.hf.softmax(x)
    cut = float(p[10] + 0.5 * p[20])
    m.add("hf top_p cut inside a tie: the higher id stays", x, settings(top_p=cut),
          history=[1, 2, 3], prompt_len=3,
          expect=lambda r, _: None if np.isfinite(r["final"][30]) and not np.isfinite(r["final"][20])
          and r["pool"] == 2 else f"pool {r['pool']}")
    m.add("llama_cpp top_p cut inside a tie: the lower id stays", x,
          settings(top_p=cut, order_preset="llama_cpp"), history=[1, 2, 3], prompt_len=3,
          expect=lambda r, _: None if np.isfinite(r["final"][20]) and not np.isfinite(r["final"][30])
          and r["pool"] == 2 else f"pool {r['pool']}")
    m.add("hf all stages, vocabulary 2000, temperature 1.3", m.normal(2000, scale=2.0, peaks=20),
          settings(temperature=1.3, top_k=50, top_p=0.9, min_p=0.02, repetition_penalty=1.2))
    m.add("hf greedy with every warper set", x, {**combo, "temperature": 0},
          expect=names("repetition_penalty"))

    # The real vocabulary: 151936 scores.
    big = m.normal(151936, scale=2.5, peaks=30, peak_gap=6.0)
    hist = m.history(big, 12, 6, repeat_top=4, repeat_negative=3)
    m.add("hf all stages, vocabulary 151936", big,
          settings(temperature=0.7, top_k=40, top_p=0.9, min_p=0.0, repetition_penalty=1.3),
          history=hist, prompt_len=12,
          expect=names("repetition_penalty", "temperature", "top_k", "top_p"))
    return m.cases


def check_cli(binary, cases):
    """Each case as a one-step recording: logitscope replay's choice, pool, entropy and chosen
    probability equal the expected ones."""
    tmp = tempfile.mkdtemp(prefix="ls_rescore_fixtures_")
    failures = 0
    try:
        for i, case in enumerate(cases):
            st = case["settings"]
            npy = os.path.join(tmp, f"{i}.npy")
            np.save(npy, np.asarray([case["logits"]], dtype=F32))
            header = {"type": "header", "mode": "greedy" if st["temperature"] == 0 else "sample",
                      "prompt_token_ids": case["history"], "logits_file": npy, "settings": {}}
            step = {"type": "step", "sequence": 0, "step": 0,
                    "chosen": {"id": case["expected"]["chosen"]}, "draw": case["draw"]}
            trace = os.path.join(tmp, f"{i}.jsonl")
            with open(trace, "w") as f:
                f.write(json.dumps(header) + "\n" + json.dumps(step) + "\n")
            flags = ["--temperature", repr(st["temperature"]), "--top-k", str(st["top_k"]),
                     "--top-p", repr(st["top_p"]), "--min-p", repr(st["min_p"]),
                     "--repetition-penalty", repr(st["repetition_penalty"]),
                     "--order-preset", st["order_preset"].replace("llama_cpp", "llama.cpp"),
                     "--do-sample", "true", "--no-generation-config"]
            r = subprocess.run([binary, "replay", "--trace", trace, "--json", "--top", "1", *flags],
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                print(f"FAIL {case['name']}: replay exited {r.returncode}: {r.stderr.strip()[-300:]}")
                failures += 1
                continue
            s = json.loads(r.stdout)["steps"][0]
            e = case["expected"]
            lp = e["final_logprobs"][e["chosen"]]
            ok = (s["chosen"] == e["chosen"] and s["pool"] == e["pool"]
                  and oracle.close(s["entropy"], e["entropy"])
                  and oracle.close(s["chosen_prob"], float(np.exp(lp))))
            print(("ok   " if ok else "FAIL ") + f"replay = fixture: {case['name']}" +
                  ("" if ok else f" -- got {s}, expected chosen {e['chosen']} pool {e['pool']} "
                                 f"entropy {e['entropy']}"))
            failures += not ok
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(cases) - failures}/{len(cases)} cases equal logitscope replay")
    return failures


def main():
    ap = argparse.ArgumentParser(description="fixtures of the web page's re-scorer")
    ap.add_argument("--out", required=True)
    ap.add_argument("--check-cli", metavar="LOGITSCOPE",
                    help="also check every case against `logitscope replay`")
    a = ap.parse_args()
    cases = make_cases()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"about": ABOUT, "seed": SEED, "cases": cases}, f, separators=(",", ":"),
                  allow_nan=False)
    size = os.path.getsize(a.out)
    print(f"wrote {len(cases)} cases to {a.out} ({size / 1e6:.2f} MB)")
    if a.check_cli:
        return 1 if check_cli(a.check_cli, cases) else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
