"""eval vs numpy: a golden set built from greedy continuations whose every token numpy checks
(each is the argmax of its row in `next --dump-logits --all-positions`); exact / contains / top1
cases that must pass and ones that must fail; the match rate; exit status 0 at or above
--min-rate and 3 below it; the raw top-1 per step equals numpy's argmax; bad golden lines are
refused naming the file, line and field.

usage: check_eval.py LOGITSCOPE TOKENIZER_DIR"""
import json
import os
import sys
import tempfile

import numpy as np

from lab_util import Checker, run, synth

FLAGS = ["--do-sample", "false", "--repetition-penalty", "1.0", "--max-new-tokens", "5",
         "--threads", "1"]


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    check = Checker()
    with tempfile.TemporaryDirectory() as tmp:
        model = synth(exe, tok, os.path.join(tmp, "tiny"), seed=4)
        greedy = {}
        for prompt in ("The sky is", "Numbers: 1 2 3"):
            g = [json.loads(x) for x in run(exe, "generate", "--model", model, "--prompt", prompt,
                                             "--json", *FLAGS).stdout.splitlines()]
            ids, toks, text = g[0]["prompt_token_ids"], g[-1]["tokens"], g[-1]["text"]
            npy = os.path.join(tmp, "g.npy")
            run(exe, "next", "--model", model, "--tokens", ",".join(map(str, ids + toks)),
                "--dump-logits", npy, "--all-positions", "--threads", "1")
            rows = np.load(npy)[len(ids) - 1:]
            argmax = [int(np.argmax(r)) for r in rows]
            check(argmax[:len(toks)] == toks, f"greedy tokens of '{prompt}' are numpy argmaxes")
            greedy[prompt] = (text, argmax)
        (t1, a1), (t2, a2) = greedy["The sky is"], greedy["Numbers: 1 2 3"]
        cases = [
            {"id": "exact-ok", "prompt": "The sky is", "exact": t1},
            {"id": "exact-bad", "prompt": "The sky is", "exact": t1 + "!"},
            {"id": "contains-ok", "prompt": "Numbers: 1 2 3", "contains": t2[1:4]},
            {"id": "top1-ok", "prompt": "Numbers: 1 2 3", "top1": a2[2], "step": 2},
            {"id": "top1-bad", "prompt": "The sky is", "top1": a1[0] + 1},
        ]
        golden = os.path.join(tmp, "golden.jsonl")
        with open(golden, "w") as f:
            f.write("\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n")
        out = run(exe, "eval", "--model", model, "--golden", golden, "--json", "--min-rate", "0.6",
                  *FLAGS)
        j = json.loads(out.stdout)
        check([c["pass"] for c in j["cases"]] == [True, False, True, True, False],
              f"pass flags {[c['pass'] for c in j['cases']]}")
        check(j["passed"] == 3 and j["total"] == 5 and j["match_rate"] == 0.6 and j["ok"],
              "match rate 3/5")
        for c, prompt in zip(j["cases"], [x["prompt"] for x in cases]):
            want = greedy[prompt][1]
            check(c["raw_top1"] == want[:len(c["raw_top1"])], f"{c['id']}: raw top-1 = argmax")
        check(len(j["cases"][3]["raw_top1"]) == 3, "top1 case generates only up to its step")
        run(exe, "eval", "--model", model, "--golden", golden, "--min-rate", "0.61", *FLAGS,
            expect=3)
        text = run(exe, "eval", "--model", model, "--golden", golden, "--min-rate", "0.5",
                   *FLAGS).stdout
        check("PASS" in text and "FAIL" in text and "match rate 3/5" in text, "readable table")
        for line, field in (('{"prompt": "x"}', "exactly one"), ('{"exact": "x"}', "prompt"),
                            ('{"prompt": "x", "top1": -1}', "top1"), ("not json", "JSON")):
            with open(golden, "w") as f:
                f.write('{"prompt": "a", "exact": "b"}\n' + line + "\n")
            bad = run(exe, "eval", "--model", model, "--golden", golden, expect=1)
            check("line 2" in bad.stderr and field in bad.stderr, f"bad golden: {bad.stderr.strip()}")
    return check.close("eval vs numpy")


if __name__ == "__main__":
    sys.exit(main())
