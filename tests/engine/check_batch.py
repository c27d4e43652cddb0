"""`generate --prompts` and `next --prompts` run every prompt of a file together (one ragged
forward pass per step, no padding). Each prompt's result must be identical, to the last bit, to
that prompt run alone: 8 prompts of 1 to ~70 tokens (plain lines, a JSON "prompt" line and a
"messages" line), greedy, seeded sampling with 2 return sequences, and beam search; every step
line and every result is compared as JSON (floats as their shortest round-trip strings).

usage: /usr/bin/python3 check_batch.py PATH/TO/logitscope TOKENIZER_DIR   (77 = skipped)"""
import json
import os
import subprocess
import sys
import tempfile

PROMPTS = [
    "Hi",
    "The capital of France is",
    "{\"prompt\": \"fn main() { println!(\\\"hello\\\"); }\"}",
    "Once upon a time, in a small village at the edge of a forest, there lived an old "
    "clockmaker who had never once left the valley where he was born, and every morning he",
    "你好，世界",
    "{\"messages\": [{\"role\": \"system\", \"content\": \"Be brief.\"}, "
    "{\"role\": \"user\", \"content\": \"What is 2 + 2?\"}]}",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z 0 1 2 3 4 5 6 7 8 9",
    "<|im_start|>user hello<|im_end|>",
]

CASES = {
    "greedy": ["--do-sample", "false"],
    "sample_n2": ["--do-sample", "--seed", "5", "--temperature", "1.1", "--top-k", "40",
                  "--num-return-sequences", "2"],
    "beams": ["--num-beams", "3", "--num-return-sequences", "2", "--do-sample", "false"],
}


def run(*args, cwd):
    out = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {out.returncode}:\n{out.stderr}")
    return out.stdout


def lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def strip(obj, *keys):
    out = {k: v for k, v in obj.items() if k not in keys + ("seconds",)}
    if out.get("seed_source") == "random":  # greedy and beams draw a seed they never use
        out.pop("seed")
    return out


def main():
    exe, tok = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    if not os.path.exists(os.path.join(tok, "tokenizer.json")):
        print(f"SKIP: no tokenizer.json in {tok}")
        return 77
    failures = []
    with tempfile.TemporaryDirectory() as work:
        run(exe, "synth", "--shape", "tiny", "--seed", "4", "--out", "m", "--tokenizer-from", tok,
            cwd=work)
        with open(os.path.join(work, "prompts.txt"), "w", encoding="utf-8") as f:
            f.write("# eight prompts of different lengths\n\n" + "\n".join(PROMPTS) + "\n")
        for name, flags in CASES.items():
            common = ["generate", "--model", "m", "--max-new-tokens", "7", "--json", "--top",
                      "4", *flags]
            batch = lines(run(exe, *common, "--prompts", "prompts.txt", cwd=work))
            headers = [o for o in batch if o["type"] == "header"]
            if len(headers) != len(PROMPTS):
                failures.append(f"{name}: {len(headers)} headers for {len(PROMPTS)} prompts")
                continue
            lengths = sorted(len(h["prompt_token_ids"]) for h in headers)
            before = len(failures)
            for h in headers:
                i = h["prompt_index"]
                ids = ",".join(map(str, h["prompt_token_ids"]))
                alone = lines(run(exe, *common, "--tokens", ids, cwd=work))
                mine = [strip(o, "prompt_index", "prompt") for o in batch
                        if o.get("prompt_index") == i]
                ref = [strip(o, "prompt") for o in alone]
                key = lambda o: (o["type"] != "header", o["type"] == "result",
                                 o.get("sequence", 0), o.get("step", 0))
                mine.sort(key=key)
                ref.sort(key=key)
                if json.dumps(mine, sort_keys=True) != json.dumps(ref, sort_keys=True):
                    diff = next((k for k in range(min(len(mine), len(ref)))
                                 if json.dumps(mine[k], sort_keys=True)
                                 != json.dumps(ref[k], sort_keys=True)), None)
                    failures.append(f"{name} prompt {i}: batched run differs from alone at line "
                                    f"{diff} ({len(mine)} vs {len(ref)} lines)")
            if len(failures) == before:
                print(f"ok {name}: {len(PROMPTS)} prompts of {lengths} tokens, batched == alone")
        batch = lines(run(exe, "next", "--model", "m", "--prompts", "prompts.txt", "--top", "20",
                          "--json", cwd=work))
        before = len(failures)
        for b in batch:
            ids = ",".join(map(str, b["input_tokens"]))
            alone = lines(run(exe, "next", "--model", "m", "--tokens", ids, "--top", "20",
                              "--json", cwd=work))[0]
            if strip(b, "prompt_index", "prompt") != strip(alone, "prompt"):
                failures.append(f"next prompt {b['prompt_index']}: batched != alone")
        if len(failures) == before and len(batch) == len(PROMPTS):
            print(f"ok next: {len(batch)} prompts, batched == alone")
        # Bad files are errors naming the flag, the file and the line.
        with open(os.path.join(work, "bad.txt"), "w", encoding="utf-8") as f:
            f.write("fine\n{\"prompt\": 3}\n")
        bad = subprocess.run([exe, "next", "--model", "m", "--prompts", "bad.txt"], cwd=work,
                             capture_output=True, text=True)
        if bad.returncode == 0 or "--prompts bad.txt line 2" not in bad.stderr:
            failures.append(f"bad --prompts line: exit {bad.returncode}, {bad.stderr.strip()}")
    if failures:
        print("\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
