#!/usr/bin/python3
"""`lens --trace FILE --step K` and quantized models, end to end (the numpy oracle of every lens
number is tests/reference/test_lens_ref.py; this checks what that one cannot):

  (a) a sampled generation (tiny model, seed 7, 12 tokens): at every step, the lens follows
      the recorded token with the recorded draw, and the chain run on the last layer's row
      (which is the step's real logits) with that draw chooses the recorded token again;
  (b) a GGUF of each kernel family `quantize` writes: the lens' last row equals `next`'s logits bit for bit,
      and its row 0 equals the lens of any other prefix ending in the same token (the
      embedding alone);
  (c) bad input: --step without --trace, --step past the recording, --trace with --prompt.

    check_lens.py LOGITSCOPE TOKENIZER_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lab_util import run, run_json, synth  # noqa: E402

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        model = synth(exe, tok, os.path.join(d, "tiny"), seed=7)
        trace = os.path.join(d, "g.jsonl")
        out = run(exe, "generate", "--model", model, "--prompt", "Once upon a time",
                  "--max-new-tokens", "12", "--seed", "7", "--temperature", "1.3", "--top-k", "0",
                  "--top-p", "1", "--json").stdout
        with open(trace, "w") as f:
            f.write(out)
        steps = [json.loads(l) for l in out.splitlines() if '"step"' in l and '"chosen"' in l]
        check(len(steps) == 12, "(a) 12 steps recorded, got %d" % len(steps))
        distinct = len({s["chosen"]["id"] for s in steps})
        print("     %d distinct tokens in the recording" % distinct)
        n_prompt = None
        for s in steps:
            k = s["step"]
            j = run_json(exe, "lens", "--model", model, "--trace", trace, "--step", str(k), "--json")
            last = j["layers"][-1]
            check(j["chosen"]["id"] == s["chosen"]["id"] and j["draw"] == s["draw"]
                  and last["sampler_choice"]["id"] == s["chosen"]["id"] and j["step"] == k,
                  "(a) step %d: lens follows token %d with draw %.6f and the last layer's chain "
                  "picks it (%d)" % (k, s["chosen"]["id"], s["draw"], last["sampler_choice"]["id"]))
            if n_prompt is None:
                n_prompt = len(j["input_tokens"])
            check(len(j["input_tokens"]) == n_prompt + k and j["position"] == n_prompt + k - 1
                  and j["input_tokens"][n_prompt:] == [t["chosen"]["id"] for t in steps[:k]],
                  "(a) step %d: the context is the prompt and the %d tokens before" % (k, k))

        tokens = "785,6722,315,9625,374"
        other = "11,22,374"
        # One type per kernel family (the float types, 32-element blocks, k-quants, iq4_nl).
        for qtype in ["f16", "bf16", "q8_0", "q5_1", "q4_k", "q6_k", "iq4_nl"]:
            gguf = os.path.join(d, "tiny-%s.gguf" % qtype)
            res = subprocess.run([exe, "quantize", "--model", model, "--type", qtype,
                                                "--out", gguf], capture_output=True, text=True)
            check(res.returncode == 0, "quantize --type %s: %s" % (qtype, res.stderr.strip()[-200:]))
            if res.returncode != 0:
                continue
            lens, nxt, lens2 = (os.path.join(d, n) for n in ("l.npy", "n.npy", "l2.npy"))
            run(exe, "lens", "--model", gguf, "--tokens", tokens, "--dump-logits", lens, "--json")
            run(exe, "next", "--model", gguf, "--tokens", tokens, "--dump-logits", nxt, "--json")
            run(exe, "lens", "--model", gguf, "--tokens", other, "--dump-logits", lens2, "--json")
            a, b, c = np.load(lens), np.load(nxt), np.load(lens2)
            check(np.array_equal(a[-1], b[0]), "(b) %s: lens row %d == next's logits bit for bit"
                  % (qtype, a.shape[0] - 1))
            check(np.array_equal(a[0], c[0]) and not np.array_equal(a[1], c[1]),
                  "(b) %s: row 0 depends on the last token only, row 1 on the context" % qtype)

        for args, flag in [(["--tokens", "1,2", "--step", "0"], "--step"),
                           (["--trace", trace, "--step", "12"], "--step 12"),
                           (["--trace", trace, "--step", "0", "--prompt", "x"], "--trace")]:
            r = subprocess.run([exe, "lens", "--model", model] + args,
                                             capture_output=True, text=True)
            check(r.returncode != 0 and flag in r.stderr,
                  "(c) lens %s: exit %d, message names %s: %s"
                  % (" ".join(args[-2:]), r.returncode, flag, r.stderr.strip()[:120]))
    print("%d failures" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
