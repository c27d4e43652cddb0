"""seeds vs independent checks: each run's tokens equal `generate --seed S` with the same flags;
each distinct output's sequence logprob equals the sum numpy computes from `next --dump-logits
--all-positions` over prompt + output; distinct outputs, counts, order, first divergence,
mean/population-sd of logprob and length, and the loop flags (a Python restatement of the rule)
are recomputed from the runs. Two settings: a hot one (diverse) and a cold one (repeats/loops).

usage: check_seeds.py LOGITSCOPE TOKENIZER_DIR"""
import json
import os
import sys
import tempfile

import numpy as np

from lab_util import Checker, close, hf, run, run_json, synth


def has_loop(tokens, max_n, repeats):
    for start in range(len(tokens)):
        for n in range(1, max_n + 1):
            block = tokens[start:start + n]
            if len(block) < n:
                continue
            r = 1
            while tokens[start + r * n:start + (r + 1) * n] == block:
                r += 1
            if r >= repeats:
                return True
    return False


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    check = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        model = synth(exe, tok, os.path.join(tmp, "tiny"), seed=9)
        prompt = "Once upon a time"
        for name, flags, base_seed, n in (
                ("hot", ["--temperature", "1.4", "--top-k", "0", "--top-p", "1.0",
                         "--max-new-tokens", "6"], 100, 10),
                ("cold", ["--temperature", "0.6", "--top-k", "3", "--max-new-tokens", "14",
                          "--repetition-penalty", "1.0"], 7, 8)):
            out = run_json(exe, "seeds", "--model", model, "--prompt", prompt, "--n", str(n),
                           "--json", "--threads", "1", "--seed", str(base_seed), *flags)
            runs = out["runs"]
            check(len(runs) == n, f"{name}: {len(runs)} runs")
            check([r["seed"] for r in runs] == list(range(base_seed, base_seed + n)),
                  f"{name}: seeds")
            for r in runs[:2]:
                g = run(exe, "generate", "--model", model, "--prompt", prompt, "--json",
                        "--threads", "1", "--do-sample", *flags, "--seed", str(r["seed"]))
                res = [json.loads(line) for line in g.stdout.splitlines()][-1]
                check(res["tokens"] == r["tokens"], f"{name}: seed {r['seed']} = generate")
            ids = out["prompt_token_ids"]
            seen = {}
            for r in runs:
                key = tuple(r["tokens"])
                if key in seen:
                    check(r["logprob"] == seen[key], f"{name}: same output, same logprob")
                    continue
                seen[key] = r["logprob"]
                npy = os.path.join(tmp, f"{name}{len(seen)}.npy")
                run(exe, "next", "--model", model, "--tokens", ",".join(map(str, ids + r["tokens"])),
                    "--dump-logits", npy, "--all-positions", "--threads", "1")
                rows = np.load(npy)
                lp = sum(float(hf.log_softmax(rows[len(ids) - 1 + j])[t])
                         for j, t in enumerate(r["tokens"]))
                check(close(r["logprob"], lp, 1e-5, 1e-5), f"{name}: logprob {r['logprob']} vs {lp}")
            # Distinct outputs: most frequent first, ties by first occurrence.
            order = []
            for r in runs:
                if tuple(r["tokens"]) not in order:
                    order.append(tuple(r["tokens"]))
            counts = {k: sum(tuple(r["tokens"]) == k for r in runs) for k in order}
            want = sorted(order, key=lambda k: -counts[k])
            check([tuple(d["tokens"]) for d in out["distinct"]] == want, f"{name}: distinct order")
            check([d["count"] for d in out["distinct"]] == [counts[k] for k in want],
                  f"{name}: counts")
            if len(want) == 1:
                check(out["first_divergence"] is None, f"{name}: no divergence")
            else:
                k = 0
                while all(len(r["tokens"]) > k and r["tokens"][k] == runs[0]["tokens"][k]
                          for r in runs):
                    k += 1
                check(out["first_divergence"] == k, f"{name}: divergence {out['first_divergence']} vs {k}")
            lps = np.array([r["logprob"] for r in runs])
            lens = np.array([len(r["tokens"]) for r in runs], dtype=float)
            check(close(out["logprob"]["mean"], lps.mean(), 1e-9, 1e-9), f"{name}: mean logprob")
            check(close(out["logprob"]["std"], lps.std(), 1e-6, 1e-9), f"{name}: sd logprob")
            check(close(out["length"]["mean"], lens.mean(), 1e-12), f"{name}: mean length")
            check(close(out["length"]["std"], lens.std(), 1e-9, 1e-12), f"{name}: sd length")
            rule = out["loop_rule"]
            loops = [has_loop(r["tokens"], rule["max_ngram"], rule["min_repeats"]) for r in runs]
            check([r["loop"] is not None for r in runs] == loops, f"{name}: loop flags")
            check(out["loops"] == sum(loops) and close(out["loop_rate"], sum(loops) / n, 1e-12),
                  f"{name}: loop rate")
            print(f"{name}: {len(want)} distinct of {n}, divergence {out['first_divergence']}, "
                  f"loops {sum(loops)}")
        text = run(exe, "seeds", "--model", model, "--prompt", prompt, "--n", "3",
                   "--max-new-tokens", "4").stdout
        check("distinct output" in text and "repetition loops" in text and "rule:" in text,
              "readable report states the loop rule")
        bad = run(exe, "seeds", "--model", model, "--prompt", prompt, "--n", "0", expect=1)
        check("--n" in bad.stderr, f"--n 0 refused: {bad.stderr.strip()}")
    return check.close("seeds vs numpy")


if __name__ == "__main__":
    sys.exit(main())
