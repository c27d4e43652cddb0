"""`generate --grammar / --json-schema / --json-object` end to end on the tiny random model with
the real Qwen tokenizer: every text that ends on EOS is a sentence of the grammar (checked by
Python: membership in a finite set, json.loads and the jsonschema validator), the trace's chain
opens with the grammar stage, and bad files or flags fail with a message naming them.

usage: /usr/bin/python3 check_cli_grammar.py PATH/TO/logitscope TOKENIZER_DIR"""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

SCHEMA = {"type": "object", "properties": {
    "n": {"type": "integer", "minimum": -5, "maximum": 120},
    "ok": {"type": "boolean"},
    "pick": {"enum": ["red", "green", None]}},
    "required": ["n", "ok", "pick"], "additionalProperties": False}


def main():
    exe, tokenizer = sys.argv[1], sys.argv[2]
    failures = []

    def check(ok, what, got=None):
        print(("ok   " if ok else "FAIL ") + what + ("" if got is None else f" -- got: {got!r}"[:400]))
        if not ok:
            failures.append(what)

    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny")
        subprocess.run([exe, "synth", "--shape", "tiny", "--out", model, "--tokenizer-from",
                        tokenizer], check=True, capture_output=True)

        def generate(*flags, seed=0):
            return subprocess.run([exe, "generate", "--model", model, "--prompt", "Answer:",
                                   "--do-sample", "--seed", str(seed), "--repetition-penalty", "3",
                                   "--temperature", "1.5", "--top-k", "0", "--top-p", "1",
                                   "--json", *flags], capture_output=True, text=True)

        def result(r):
            rows = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
            return rows[0] if rows else {}, rows[-1] if rows else {}

        paths = {}
        for name, text in {"yn.gbnf": 'root ::= ("yes" | "no" | "maybe") "."\n',
                           "bad.gbnf": 'root ::= "a"\nitem ::= [a-\n',
                           "schema.json": json.dumps(SCHEMA),
                           "bad_schema.json": json.dumps({"type": "object", "propertyNames": {}}),
                           "broken.json": "{not json"}.items():
            paths[name] = os.path.join(tmp, name)
            with open(paths[name], "w") as f:
                f.write(text)

        texts = set()
        for seed in range(6):
            r = generate("--grammar", paths["yn.gbnf"], "--max-new-tokens", "8", seed=seed)
            header, last = result(r)
            texts.add(last.get("text"))
            check(r.returncode == 0 and last.get("finish_reason") == "eos" and
                  last.get("text") in ("yes.", "no.", "maybe."),
                  f"--grammar seed {seed}: a sentence of the grammar, ended by EOS", last.get("text"))
            check(str(header.get("chain", "")).startswith("grammar(grammar file"),
                  f"--grammar seed {seed}: the trace's chain opens with the grammar stage",
                  header.get("chain"))
        check(len(texts) > 1, "--grammar: the seeds choose different sentences", texts)

        # Replay rebuilds the grammar from the trace (its GBNF text is in the header's settings):
        # the same choices at every step.
        trace, npy = os.path.join(tmp, "yn.jsonl"), os.path.join(tmp, "yn.npy")
        r = generate("--grammar", paths["yn.gbnf"], "--max-new-tokens", "8", "--dump-logits", npy,
                     seed=2)
        with open(trace, "w") as f:
            f.write(r.stdout)
        header, _ = result(r)
        gbnf = header.get("settings", {}).get("grammar", {}).get("gbnf", "")
        check("root ::=" in gbnf, "the trace header holds the grammar's GBNF text", gbnf[:200])
        # The grammar stage's best_kept_rank: where the best allowed token stood in the raw
        # ranking (the stage runs first, so its input is the raw logits).
        steps = [json.loads(x) for x in r.stdout.splitlines() if '"type":"step"' in x]
        ranks_ok, seen = bool(steps), []
        for st in steps:
            g = next(x for x in st["stages"] if x["name"] == "grammar")
            raw_ids = [t["id"] for t in st["raw"]["top"]]
            rank, best = g["best_kept_rank"], g["top"][0]["id"]
            seen.append(rank)
            if rank < 1 or (rank == 1) != (best == raw_ids[0]):
                ranks_ok = False
            if rank <= len(raw_ids) and raw_ids[rank - 1] != best:
                ranks_ok = False
            if rank > len(raw_ids) and best in raw_ids:
                ranks_ok = False
        check(ranks_ok and max(seen, default=0) > 1,
              "best_kept_rank of the grammar stage: the raw rank of the best allowed token", seen)
        rp = subprocess.run([exe, "replay", "--trace", trace, "--json"], capture_output=True,
                            text=True)
        summary = json.loads(rp.stdout.splitlines()[-1]) if rp.returncode == 0 else {}
        check(summary.get("changed") == 0 and summary.get("chain", "").startswith("grammar("),
              "replay of a constrained generation: the grammar rebuilt, no step changed",
              {k: summary.get(k) for k in ("changed", "chain")} if summary else rp.stderr)

        for seed in range(4):
            r = generate("--json-schema", paths["schema.json"], "--max-new-tokens", "120", seed=seed)
            _, last = result(r)
            try:
                jsonschema.validate(json.loads(last.get("text", "")), SCHEMA)
                ok = r.returncode == 0 and last.get("finish_reason") == "eos"
            except (ValueError, jsonschema.ValidationError):
                ok = False
            check(ok, f"--json-schema seed {seed}: JSON the schema validates", last.get("text"))

        r = generate("--grammar", paths["bad.gbnf"])
        check(r.returncode != 0 and f"{paths['bad.gbnf']}:2:" in r.stderr,
              "a bad grammar file: non-zero exit, the file and line named", r.stderr)
        r = generate("--grammar", os.path.join(tmp, "missing.gbnf"))
        check(r.returncode != 0 and "missing.gbnf" in r.stderr, "a missing grammar file is named",
              r.stderr)
        r = generate("--json-schema", paths["bad_schema.json"])
        check(r.returncode != 0 and "propertyNames" in r.stderr,
              "an unsupported schema keyword is named, not dropped", r.stderr)
        r = generate("--json-schema", paths["broken.json"])
        check(r.returncode != 0 and "broken.json" in r.stderr and "not JSON" in r.stderr,
              "a schema file that is not JSON is named", r.stderr)
        r = generate("--grammar", paths["yn.gbnf"], "--json-object")
        check(r.returncode != 0 and "--json-object" in r.stderr and "--grammar" in r.stderr,
              "--grammar with --json-object: a usage error naming both", r.stderr)

        # A thinking template (Qwen3's): under --chat the constraint starts after </think>, so
        # the reply opens with "<think>" (the token 151667, or its text in pieces: the grammar
        # allows any spelling); --no-think closes the block in the prompt, and the constraint
        # applies from the first token.
        q3 = os.path.join(tmp, "qwen3")
        subprocess.run([exe, "synth", "--shape", "qwen3-tiny", "--out", q3, "--tokenizer-from",
                        tokenizer], check=True, capture_output=True)
        for extra, thinking in ([], True), (["--no-think"], False):
            r = subprocess.run([exe, "generate", "--model", q3, "--prompt", "Hi", "--chat",
                                "--json-object", "--max-new-tokens", "3", "--json", *extra],
                               capture_output=True, text=True)
            rows = [json.loads(x) for x in r.stdout.splitlines() if x.strip()]
            steps = [x for x in rows if "chosen" in x]
            value = rows[0].get("settings", {}).get("grammar", {}).get("value", "") if rows else ""
            text = rows[-1].get("text", "") if rows else ""
            if thinking:
                ok = value.endswith("after </think>") and (
                    text.startswith("<think>") or (text and "<think>".startswith(text)))
            else:
                ok = "after" not in value and not text.startswith("<")
            check(r.returncode == 0 and ok,
                  f"generate --chat --json-object {' '.join(extra)} on Qwen3: "
                  f"{'opens <think> first' if thinking else 'JSON from the first token'}",
                  (value, text, r.stderr[-200:]))

    print(f"{len(failures)} failures")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
