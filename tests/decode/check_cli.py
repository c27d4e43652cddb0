"""End-to-end check of `logitscope generate` and `score` on a tiny synthetic model:
- the JSON Lines trace follows docs/trace-format.md (header, one step per token, results);
- the same seed gives the same tokens and draws with 1 and 2 threads, another seed differs;
- every step's chosen token is reproduced from its recorded draw with the documented rule over
  the stage's top list when the pool fits in it (numpy), and greedy picks the raw argmax;
- `score` (one forward pass over all positions) gives the same per-token raw logprobs as the
  generation trace (incremental decoding), within float tolerance;
- a stop string is never printed and ends generation;
- mirostat's mu follows its update rule through the trace, and bad DRY/mirostat values are
  errors naming the flag and the range.

usage: /usr/bin/python3 check_cli.py PATH/TO/logitscope   (exit 77 = skipped: no tokenizer)"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np


def run(*args):
    out = subprocess.run(list(args), capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({out.returncode}):\n{out.stderr}")
    return out.stdout


def lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def main():
    exe = sys.argv[1]
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny")
        run(exe, "synth", "--shape", "tiny", "--out", model)
        probe = subprocess.run([exe, "generate", "--model", model, "--prompt", "x",
                                "--max-new-tokens", "1"], capture_output=True, text=True)
        if "not available in this build" in probe.stderr:
            print("SKIP: this build has no tokenizer:", probe.stderr.strip())
            return 77
        base = [exe, "generate", "--model", model, "--prompt", "Once upon a time",
                "--max-new-tokens", "12", "--json", "--top", "40", "--temperature", "1.3",
                "--top-k", "40", "--top-p", "0.95", "--repetition-penalty", "1.0"]
        one = lines(run(*base, "--seed", "11", "--threads", "1"))
        two = lines(run(*base, "--seed", "11", "--threads", "2"))
        other = lines(run(*base, "--seed", "12", "--threads", "2"))

        header, steps, result = one[0], one[1:-1], one[-1]
        check(header["type"] == "header" and header["mode"] == "sample", "header type/mode")
        check(header["stages"] == ["temperature", "top_k", "top_p"], f"stages {header['stages']}")
        check(header["settings"]["top_k"] == {"value": 40, "source": "flag"}, "top_k source")
        check(header["settings"]["eos_token_id"]["source"] == "generation_config.json", "eos source")
        check(result["type"] == "result" and len(steps) == len(result["tokens"]), "step count")
        for key in ("raw", "stages", "chosen", "runner_up", "margin_prob", "entropy_before",
                    "entropy_after", "mass_removed", "draw", "sequence_logprob"):
            check(all(key in s for s in steps), f"step key {key}")
        check([s["chosen"]["id"] for s in steps] == result["tokens"], "chosen ids = tokens")

        tok = lambda run_: run_[-1]["tokens"]
        draws = lambda run_: [s["draw"] for s in run_[1:-1]]
        check(tok(one) == tok(two) and draws(one) == draws(two), "1 vs 2 threads differ")
        check(tok(one) != tok(other), "seeds 11 and 12 gave the same tokens")

        replayed = 0
        for s in steps:
            final = s["stages"][-1]
            if len(final["top"]) == final["candidates"]:  # the whole pool is listed
                ids = [t["id"] for t in final["top"]]
                order = np.argsort(ids)
                logits = np.array([t["logit"] for t in final["top"]], dtype=np.float64)[order]
                w = np.exp(logits - logits.max())
                cum = np.cumsum(w)
                pick = int(np.searchsorted(cum, s["draw"] * cum[-1], side="right"))
                check(np.array(ids)[order][pick] == s["chosen"]["id"], f"replay step {s['step']}")
                replayed += 1
        check(replayed >= 3, f"only {replayed} steps replayable")

        running = np.cumsum([s["chosen"]["raw_logprob"] for s in steps])
        check(np.allclose(running, [s["sequence_logprob"] for s in steps], atol=1e-9),
              "sequence_logprob is the running sum")

        scored = json.loads(run(exe, "score", "--model", model, "--prompt", "Once upon a time",
                                "--text-tokens", ",".join(map(str, result["tokens"])), "--json"))
        got = np.array([t["logprob"] for t in scored["tokens"]])
        want = np.array([s["chosen"]["raw_logprob"] for s in steps])
        check(np.allclose(got, want, atol=2e-3), f"score vs trace logprobs: {np.abs(got - want).max()}")

        greedy = lines(run(exe, "generate", "--model", model, "--prompt", "Hello",
                           "--max-new-tokens", "6", "--json", "--do-sample", "false"))
        for s in greedy[1:-1]:
            check(s["chosen"]["raw_rank"] == 1 and s["draw"] is None, "greedy = raw argmax")

        # A stop string taken from the middle of the sampled text must end it unprinted.
        text = result["text"]
        if len(text) >= 6:
            stop = text[3:6]
            printed = run(exe, "generate", "--model", model, "--prompt", "Once upon a time",
                          "--max-new-tokens", "12", "--temperature", "1.3", "--top-k", "40",
                          "--top-p", "0.95", "--repetition-penalty", "1.0", "--seed", "11",
                          "--stop", stop)
            check(printed == text[: text.find(stop)] + "\n",
                  f"stop string {stop!r}: printed {printed!r}")
        else:
            failures.append(f"sampled text too short for the stop test: {text!r}")

        # llama.cpp's mirostat and DRY (breakers resolved against the real vocabulary): the
        # truncations leave the chain, and mirostat's mu, shown in its stage's description,
        # starts at 2 tau and moves after each step by eta (tau - the chosen token's surprise in
        # bits in the distribution it was drawn from).
        tau, eta = 3.0, 0.2
        miro = lines(run(exe, "generate", "--model", model, "--prompt", "a: b: a: b: a: b:",
                         "--max-new-tokens", "8", "--json", "--do-sample", "true",
                         "--temperature", "0.9", "--top-k", "5", "--top-p", "0.5",
                         "--repetition-penalty", "1.0", "--mirostat", "2", "--mirostat-tau",
                         str(tau), "--mirostat-eta", str(eta), "--dry-multiplier", "0.8",
                         "--seed", "5"))
        check(miro[0]["stages"] == ["dry", "temperature", "mirostat"],
              f"mirostat chain {miro[0]['stages']}")
        mu = 2 * tau
        for s in miro[1:-1]:
            desc = s["stages"][-1]["description"]
            got_mu = float(desc.split("mu=")[1].rstrip(")"))
            check(abs(got_mu - mu) < 1e-4 * max(1.0, abs(mu)), f"mu at step {s['step']}: {desc}, want {mu}")
            mu -= eta * (-np.log2(s["chosen"]["prob"]) - tau)
        for args, named in ((["--mirostat", "3"], "--mirostat must be 0 (off), 1 or 2"),
                            (["--mirostat", "1", "--num-beams", "2"],
                             "--mirostat (1) cannot be used with beam search"),
                            (["--mirostat-tau", "-1"], "--mirostat-tau must be a finite number >= 0"),
                            (["--mirostat-eta", "nan"], "--mirostat-eta must be"),
                            (["--dry-multiplier", "-1"], "--dry-multiplier must be a finite number >= 0"),
                            (["--dry-base", "0.5"], "--dry-base must be a finite number >= 1"),
                            (["--dry-allowed-length", "-1"], "--dry-allowed-length must be >= 0"),
                            (["--dry-penalty-last-n", "-2"], "--dry-penalty-last-n must be >= -1")):
            r = subprocess.run([exe, "generate", "--model", model, "--prompt", "x",
                                "--max-new-tokens", "1", *args], capture_output=True, text=True)
            check(r.returncode != 0 and named in r.stderr, f"{args}: {r.stderr.strip()}")

    print(f"{len(steps)} traced steps, {replayed} replayed from their draws; "
          f"score vs trace max |diff| {np.abs(got - want).max():.2e}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
