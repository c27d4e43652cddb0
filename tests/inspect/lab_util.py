"""Shared pieces of the inspection-lab tests: running the logitscope binary, making tiny
synthetic models, and the numpy oracle for a decoding chain. The warper formulas come from
tests/decode/hf_formulas.py (numpy re-statements of transformers, checked there against the
C++ on 1,854 cases); everything reported by sweep/compare/seeds/eval/replay is recomputed here
from the logits the command dumped, never read back from the command's own numbers."""
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "decode"))
import hf_formulas as hf  # noqa: E402

F32 = np.float32


def run(*args, expect=0):
    out = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if out.returncode != expect:
        raise SystemExit(f"{' '.join(map(str, args))} exited {out.returncode}, expected {expect}:\n"
                         f"{out.stderr}\n{out.stdout[-2000:]}")
    return out


def run_json(*args):
    return json.loads(run(*args).stdout)


def synth(exe, tokenizer_dir, out, seed=1, dtype="f32"):
    args = [exe, "synth", "--shape", "tiny", "--dtype", dtype, "--seed", str(seed), "--out", out]
    if tokenizer_dir:
        args += ["--tokenizer-from", tokenizer_dir]
    run(*args)
    return out


def chain_hf(raw, history, prompt_len, temperature, top_k, top_p, min_p, rep_penalty=1.0):
    """transformers' order: repetition_penalty, temperature, top_k (ties kept), top_p, min_p.
    Temperature 0 = greedy: processors only, then the argmax alone."""
    s = np.asarray(raw, dtype=F32)
    if rep_penalty != 1.0:
        s = hf.repetition_penalty(s, np.asarray(history), rep_penalty)
    if temperature == 0:
        keep = np.full_like(s, -np.inf)
        best = int(np.argmax(s))
        keep[best] = s[best]
        return keep
    if temperature != 1.0:
        s = hf.temperature(s, temperature)
    if top_k > 0:
        s = hf.top_k(s, top_k)
    if top_p < 1.0:
        s = hf.top_p(s, top_p)
    if min_p > 0:
        s = hf.min_p(s, min_p)
    return s


def entropy(scores):
    p = hf.softmax(scores)
    lp = hf.log_softmax(scores)
    m = p > 0
    return float(-(p[m] * lp[m]).sum())


class Checker:
    def __init__(self):
        self.failures = []
        self.checked = 0

    def __call__(self, ok, what):
        self.checked += 1
        if not ok:
            self.failures.append(what)

    def close(self, name):
        if self.failures:
            print(f"{name}: {len(self.failures)} of {self.checked} checks failed:")
            for f in self.failures[:40]:
                print("  " + f)
            return 1
        print(f"{name}: {self.checked} checks passed")
        return 0


def close(a, b, rel=1e-5, abs_=1e-7):
    return abs(a - b) <= abs_ + rel * abs(b)
