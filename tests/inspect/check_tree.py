#!/usr/bin/python3
"""`logitscope tree` (issue 49 item 2) against independent computations:

  - structure and chain probabilities: for every expanded node, the raw logits after the
    prompt + its path (`next --tokens ... --dump-logits`, the model run alone) go through the
    numpy statement of transformers' chain (lab_util.chain_hf, with the repetition penalty
    over prompt + path); the node's children are that distribution's k best above the cut, in
    order, with the same probabilities (1e-6) and path sums;
  - raw path log-probabilities: every node's path_raw_logprob equals `score --tokens PROMPT
    --text-tokens PATH`'s sum bit for bit (the same logits through KV forks and batching);
  - one batched forward step per level; the node limit refused upfront naming the flags.

    check_tree.py LOGITSCOPE TOKENIZER_DIR
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab_util import Checker, chain_hf, close, hf, run, run_json, synth  # noqa: E402

PROMPT = [785, 6722, 315, 9625, 374]
K, DEPTH, MIN_P, REP, T, TOPK, TOPP = 3, 3, 0.02, 3.0, 0.9, 8, 0.95


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    c = Checker()
    with tempfile.TemporaryDirectory() as d:
        model = synth(exe, tok, os.path.join(d, "tiny"), seed=3)
        flags = ["--repetition-penalty", str(REP), "--temperature", str(T), "--top-k", str(TOPK),
                 "--top-p", str(TOPP), "--min-p", "0", "--do-sample"]
        j = run_json(exe, "tree", "--model", model, "--tokens", ",".join(map(str, PROMPT)),
                     "--k", str(K), "--depth", str(DEPTH), "--min-prob", str(MIN_P), "--json",
                     *flags)
        c(j["forward_steps"] == DEPTH, f"forward steps {j['forward_steps']} != depth {DEPTH}")
        npy = os.path.join(d, "n.npy")
        nodes = 0

        def expand(path, children, parent_lp):
            nonlocal nodes
            run(exe, "next", "--model", model, "--tokens", ",".join(map(str, PROMPT + path)),
                "--dump-logits", npy, "--json")
            raw = np.load(npy)[0]
            s = chain_hf(raw, PROMPT + path, len(PROMPT), T, TOPK, TOPP, 0.0, REP)
            lp = hf.log_softmax(s)
            order = [int(i) for i in np.argsort(-s, kind="stable") if np.isfinite(s[i])]
            want = [i for i in order[:K] if np.exp(lp[i]) >= MIN_P]
            got = [ch["id"] for ch in children]
            c(got == want, f"path {path}: children {got}, the chain's top {K} above the cut {want}")
            for ch in children:
                nodes += 1
                i = ch["id"]
                c(close(ch["logprob"], float(lp[i]), 1e-6, 1e-6),
                  f"path {path} + {i}: logprob {ch['logprob']} vs numpy {lp[i]}")
                c(close(ch["path_logprob"], parent_lp + float(lp[i]), 1e-6, 1e-6),
                  f"path {path} + {i}: path logprob {ch['path_logprob']}")
                full = path + [i]
                sc = run_json(exe, "score", "--model", model, "--tokens",
                              ",".join(map(str, PROMPT)), "--text-tokens",
                              ",".join(map(str, full)), "--json")
                total = sc["sum_logprob"]
                c(ch["path_raw_logprob"] == total,
                  f"path {full}: path_raw_logprob {ch['path_raw_logprob']!r} != score {total!r}")
                if len(full) < DEPTH:
                    expand(full, ch["children"], ch["path_logprob"])
                else:
                    c(ch["children"] == [], f"path {full}: a leaf at the last level")

        expand([], j["children"], 0.0)
        c(nodes == j["nodes"], f"{nodes} nodes walked, the tree says {j['nodes']}")
        print(f"walked {nodes} nodes, {DEPTH} levels")

        r = subprocess.run([exe, "tree", "--model", model, "--tokens", "1,2", "--k", "10",
                            "--depth", "4", "--max-nodes", "1000"], capture_output=True, text=True)
        c(r.returncode != 0 and "--max-nodes 1000" in r.stderr and "--k 10" in r.stderr,
          f"k 10 depth 4 over 1000 nodes: exit {r.returncode}: {r.stderr.strip()}")
    return c.close("check_tree")


if __name__ == "__main__":
    sys.exit(main())
