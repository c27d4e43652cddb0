#!/usr/bin/env python3
"""End-to-end CLI checks: every kind of bad input is a one-line error that names the flag, file
or field, with exit status 1 (never a crash: a signal or status 4); a flag that does not parse
is a usage error, status 2, naming the flag; --help and --version exit 0; bench --json is
complete."""
import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run(args, **kw):
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=120, **kw)


def ok(label, cond, got):
    print(("ok   " if cond else "FAIL ") + f"{label} -- got: {str(got)[:200]}")
    if not cond:
        failures.append(([label], "", 0, str(got)))


def expect_error(args, needle):
    r = run(args)
    ok = r.returncode == 1 and needle in r.stderr and "logitscope: error:" in r.stderr
    print(("ok   " if ok else "FAIL ") + " ".join(args[:3]) + f" ... -> {r.returncode}: {r.stderr.strip()[:160]}")
    if not ok:
        failures.append((args, needle, r.returncode, r.stderr))


def expect_usage_error(args, needle):
    """A flag that does not parse: status 2 and the flag named (README: Exit status)."""
    r = run(args)
    ok = r.returncode == 2 and needle in r.stderr
    print(("ok   " if ok else "FAIL ") + " ".join(args[:3]) + f" ... -> {r.returncode}: {r.stderr.strip()[:160]}")
    if not ok:
        failures.append((args, needle, r.returncode, r.stderr))


def check_exit_contract():
    expect_usage_error(["next", "--tokens", "1", "--model", "m", "--no-such-flag"], "--no-such-flag")
    expect_usage_error(["next", "--top", "abc", "--tokens", "1"], "--top")
    expect_usage_error(["serve", "--port", "70000"], "--port")
    expect_usage_error(["generate", "--tokens", "1", "--model", "m", "--top-k", "abc"],
                       "--top-k: expected an integer, got 'abc'")
    expect_usage_error(["generate", "--tokens", "1", "--model", "m", "--do_sample", "maybe"],
                       "expected true or false, got 'maybe'")
    # Issue 47: a word was "not in range" like a number too large.
    expect_usage_error(["generate", "--tokens", "1", "--model", "m", "--threads", "abc"],
                       "--threads: expected an integer in [0, 1024], got 'abc'")
    expect_usage_error(["generate", "--tokens", "1", "--model", "m", "--threads", "2000"],
                       "--threads: expected an integer in [0, 1024], got '2000'")
    expect_usage_error(["replay", "--trace", "t.jsonl", "--threads", "1.5"],
                       "--threads: expected an integer in [0, 1024], got '1.5'")
    expect_usage_error(["frobnicate"], "unknown command 'frobnicate'")
    expect_usage_error([], "subcommand")
    for args in (["--help"], ["next", "--help"], ["--version"]):
        r = run(args)
        ok = r.returncode == 0 and r.stdout.strip() != ""
        print(("ok   " if ok else "FAIL ") + " ".join(args) + f" -> {r.returncode}")
        if not ok:
            failures.append((args, "exit 0 with output", r.returncode, r.stderr))
    r = run(["--help"])
    if "Exit status: 0 success; 1 bad input" not in r.stdout:
        failures.append((["--help"], "the exit-status contract in --help", r.returncode, r.stdout[-300:]))
        print("FAIL --help states the exit-status contract")
    else:
        print("ok   --help states the exit-status contract")


def check_polish(model, tmp):
    """Issue 16: GenerationConfig names as aliases, the closest flag suggested, a GGUF alone
    serves tokenize and template, no seed printed for greedy runs, chat's /trace toggles and
    /set stop keeps one copy."""
    r = run(["generate", "--model", model, "--tokens", "1", "--max_new_tokens", "2",
             "--do_sample", "false"])
    ok("--max_new_tokens and --do_sample are accepted", r.returncode == 0 and "2 tokens" in r.stderr
       and "greedy" in r.stderr, r.stderr.strip())
    ok("a greedy run prints no seed", "seed" not in r.stderr, r.stderr.strip())
    r = run(["generate", "--model", model, "--tokens", "1", "--tempreature", "0.5"])
    ok("an unknown flag gets the closest name, in one message", r.returncode == 2 and
       "did you mean --temperature?" in r.stderr and "not expected" not in r.stderr,
       r.stderr.strip())
    r = run(["next", "--model", tmp, "--tokens", "1"])
    ok("--model DIR without config.json: says it is not a model directory",
       r.returncode == 1 and "not a model directory" in r.stderr and "config.json" in r.stderr,
       r.stderr.strip())
    gguf = os.path.join(tmp, "polish.gguf")
    r = run(["quantize", "--model", model, "--type", "q8_0", "--out", gguf])
    a = run(["tokenize", "--model", gguf, "--text", "Hello, 世界", "--json"])
    b = run(["tokenize", "--model", model, "--text", "Hello, 世界", "--json"])
    same = a.returncode == 0 and b.returncode == 0 and \
        json.loads(a.stdout)["tokens"] == json.loads(b.stdout)["tokens"]
    ok("tokenize takes a GGUF (same tokens as the directory)", same, (a.returncode, a.stderr.strip()))
    msgs = os.path.join(ROOT, "examples", "messages.json")
    a = run(["template", "--model", gguf, "--messages", msgs])
    b = run(["template", "--model", model, "--messages", msgs])
    ok("template takes a GGUF (same prompt as the directory)", a.returncode == 0 and a.stdout == b.stdout
       and "get_weather" in a.stdout, (a.returncode, a.stderr.strip()))
    r = run(["generate", "--model", model, "--tokens", "1", "--max-new-tokens", "3", "--trace", "2",
             "--top", "3", "--seed", "1"])
    raw_rows = [line for line in r.stdout.splitlines() if line.strip().startswith("raw logits")]
    ok("--trace 2 shows the first 2 of 3 steps", r.returncode == 0 and
       r.stdout.count("── step ") == 2 and "── step 1 " in r.stdout, r.stdout[-300:])
    ok("--top 3 shows 3 candidates per stage", len(raw_rows) == 2 and
       all(row.count("%") == 3 for row in raw_rows), raw_rows[:1])
    r = run(["generate", "--model", model, "--tokens", "1", "--max-new-tokens", "3", "--trace",
             "--seed", "1"])
    ok("bare --trace shows every step", r.returncode == 0 and r.stdout.count("── step ") == 3,
       r.stdout[-300:])
    r = run(["generate", "--model", model, "--tokens", "1", "--trace", "x"])
    ok("--trace x is refused naming the flag", r.returncode == 1 and "--trace takes" in r.stderr,
       r.stderr.strip())
    r = run(["generate", "--help"])
    ok("--help shows each generation flag's type and default", r.returncode == 0 and
       "--top-p,--top_p FLOAT" in r.stdout and
       "(default: generation_config.json, else 1.0)" in r.stdout and
       "--max-new-tokens,--max_new_tokens INT" in r.stdout and "else 256)" in r.stdout and
       "--do-sample,--do_sample BOOL" in r.stdout, r.stdout[:300])
    r = run(["score", "--model", model, "--prompt", "The capital of France is", "--text", " Paris"])
    j = json.loads(run(["score", "--model", model, "--prompt", "The capital of France is", "--text",
                        " Paris", "--json"]).stdout)
    t0 = j["tokens"][0]
    ok("score labels the logit gap and the units", r.returncode == 0 and
       "(logit gap +" in r.stdout and "nats per token" in r.stdout and
       (t0["rank"] == 1 or f"{t0['top']['logit'] - t0['logit']:+.3f}" in r.stdout), r.stdout[-400:])
    # A continuation longer than score's 256-token chunks scores as one feed of every position
    # would (the logits do not depend on chunking): compared with next --all-positions.
    ids = list(range(100, 700))
    j = json.loads(run(["score", "--model", model, "--tokens", "1,2", "--text-tokens",
                        ",".join(map(str, ids)), "--json"]).stdout)
    npy = os.path.join(tmp, "all.npy")
    run(["next", "--model", model, "--tokens", ",".join(map(str, [1, 2] + ids[:-1])),
         "--all-positions", "--dump-logits", npy])
    import numpy as np
    rows = np.load(npy).astype(np.float64)[1:]
    lse = np.log(np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1)) + rows.max(axis=1)
    want = rows[np.arange(len(ids)), ids] - lse
    got = np.array([t["logprob"] for t in j["tokens"]])
    ok("score of 600 tokens (3 chunks) equals one all-positions pass", len(got) == len(ids) and
       np.abs(got - want).max() < 1e-9, float(np.abs(got - want).max()) if len(got) == len(ids) else len(got))
    golden = os.path.join(ROOT, "examples", "golden.jsonl")
    r = run(["eval", "--model", model, "--golden", golden])
    ok("eval's header names the mode and the fixed seed", r.returncode == 3 and
       "· sample · seed 0 (fixed, for repeatability) ·" in r.stdout.splitlines()[0] and
       "tokens generated in" in r.stdout, r.stdout[:200])
    r = run(["eval", "--model", model, "--golden", golden, "--do-sample", "false", "--json"])
    j = json.loads(r.stdout) if r.stdout.strip() else {}
    ok("eval --json: greedy, no seed, token count and speed", j.get("mode") == "greedy" and
       "seed" not in j and j.get("generated_tokens", 0) == sum(len(c["tokens"]) for c in j["cases"])
       and j.get("tokens_per_s", 0) > 0, str(j)[:200])
    r = run(["eval", "--model", model, "--golden", golden, "--seed", "5", "--json"])
    j = json.loads(r.stdout) if r.stdout.strip() else {}
    ok("eval --json --seed 5 reports it", j.get("mode") == "sample" and j.get("seed") == 5, str(j)[:200])
    r = run(["seeds", "--model", model, "--tokens", "1", "--do-sample", "false"])
    ok("seeds --do-sample false is refused, saying why", r.returncode == 1 and
       "greedy decoding draws nothing" in r.stderr, r.stderr.strip())
    r = run(["chat", "--model", model, "--max-new-tokens", "1"],
            input="/trace\n/trace\n/set stop x\n/set stop x\n/show\n/quit\n")
    ok("chat: /trace toggles on and off", "(trace on, top 5)" in r.stdout and "(trace off)" in r.stdout,
       r.stdout[-300:])
    ok("chat: /set stop twice keeps one stop string", r.stdout.count('["x"]') >= 2 and
       '["x","x"]' not in r.stdout and '["x", "x"]' not in r.stdout, r.stdout[-300:])
    r = run(["chat", "--model", model, "--max-new-tokens", "1"],
            input="/set stop x\n/add stop y\n/set stop z\n/add top_k 3\n/add stop \\n\n/quit\n")
    ok("chat: /add appends to a list, /set replaces it", '(stop_strings = ["x","y"])' in r.stdout
       and '(stop_strings = ["z"])' in r.stdout and '(stop_strings = ["z","\\n"])' in r.stdout,
       r.stdout[-400:])
    ok("chat: /add on a single value says to use /set", "top_k is one value: use /set" in r.stdout +
       r.stderr, (r.stdout + r.stderr)[-300:])


def run_with_tty_stderr(args, env_extra):
    """Runs the command with stderr on a pseudo-terminal and stdout on a pipe; returns
    (exit status, stdout, what the terminal received)."""
    import pty
    import select
    master, slave = pty.openpty()
    p = subprocess.Popen([BIN] + args, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                         env=dict(os.environ, **env_extra))
    os.close(slave)
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            p.kill()
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    out = p.stdout.read()
    p.wait(timeout=60)
    os.close(master)
    return p.returncode, out.decode("utf-8", "replace"), seen.decode("utf-8", "replace")


def check_progress(model):
    """Issue 16: a progress line on stderr when it is a terminal (tokens done, tok/s, ETA),
    erased at the end; nothing of it when stderr is a pipe."""
    args = ["generate", "--model", model, "--tokens", "1", "--max-new-tokens", "6", "--seed", "1",
            "--json"]
    code, out, tty = run_with_tty_stderr(args, {"LS_PROGRESS_DELAY_MS": "0"})
    ok("generate --json: a progress line on a terminal stderr", code == 0 and
       "generate  1/6 tokens · " in tty and "tok/s · ETA " in tty and "6/6 tokens" in tty and
       "\x1b[K" in tty, repr(tty[-300:]))
    ok("the progress line never reaches stdout", "tokens ·" not in out and out.count("\n") >= 7,
       out[-200:])
    r = run(args, env=dict(os.environ, LS_PROGRESS_DELAY_MS="0"))
    ok("no progress line when stderr is a pipe", r.returncode == 0 and "tok/s · ETA" not in r.stderr,
       r.stderr[-200:])
    code, _, tty = run_with_tty_stderr(["eval", "--model", model, "--golden",
                                        os.path.join(ROOT, "examples", "golden.jsonl")],
                                       {"LS_PROGRESS_DELAY_MS": "0"})
    ok("eval: a progress line", code == 3 and "eval  1/" in tty and "tok/s" in tty, repr(tty[-200:]))
    out_dir = os.path.join(os.path.dirname(model), "progress_synth")
    code, _, tty = run_with_tty_stderr(["synth", "--shape", "tiny", "--no-tokenizer", "--out",
                                        out_dir], {"LS_PROGRESS_DELAY_MS": "0"})
    ok("synth: a progress line in tensors", code == 0 and "synth  1/" in tty and " tensors · " in tty,
       repr(tty[-200:]))
    code, _, tty = run_with_tty_stderr(["quantize", "--model", model, "--type", "q8_0", "--out",
                                        out_dir + ".gguf"], {"LS_PROGRESS_DELAY_MS": "0"})
    ok("quantize: a progress line in tensors", code == 0 and "quantize  1/" in tty and
       " tensors · " in tty, repr(tty[-200:]))
    for label, args in (
            ("compare", ["compare", "--model", model, "--model-b", out_dir + ".gguf", "--prompts",
                         os.path.join(ROOT, "examples", "prompts.txt"), "--steps", "3"]),
            ("sweep", ["sweep", "--model", model, "--prompt", "Hi", "--temperature", "0.5,1",
                       "--steps", "3"])):
        code, _, tty = run_with_tty_stderr(args, {"LS_PROGRESS_DELAY_MS": "0"})
        ok(f"{label}: a progress line in steps", code == 0 and f"{label}  1/3 steps" in tty and
           f"{label}  3/3 steps" in tty, repr(tty[-200:]))
    code, _, tty = run_with_tty_stderr(["bench", "--model", model, "--gen-tokens", "4",
                                        "--prompt-tokens", "8"], {"LS_PROGRESS_DELAY_MS": "0"})
    ok("bench: a progress line while decoding", code == 0 and "bench decode  4/4 tokens" in tty,
       repr(tty[-200:]))
    code, _, tty = run_with_tty_stderr(["generate", "--model", model, "--tokens", "1",
                                        "--max-new-tokens", "3", "--json"], {})
    ok("a quick run shows no progress line (2 s delay)", code == 0 and "tok/s · ETA" not in tty,
       repr(tty[-200:]))


def check_batch_seed(model, tmp):
    """Issue 47: generate --prompts prints the seeds it used, as a single generate does."""
    prompts = os.path.join(tmp, "seed_prompts.txt")
    with open(prompts, "w") as f:
        f.write("Hello\nThe sky is\n")
    base = ["generate", "--model", model, "--prompts", prompts, "--max-new-tokens", "2",
            "--do-sample", "true"]
    r = run(base + ["--seed", "7"])
    finish = [line for line in r.stdout.splitlines() if line.startswith("[finish ")]
    ok("generate --prompts --seed 7: each result and the summary name seed 7",
       r.returncode == 0 and len(finish) == 2 and all(line.endswith(" · seed 7]") for line in finish)
       and "prompts generated together" in r.stderr and " · seed 7 · " in r.stderr,
       (finish, r.stderr.strip()[-200:]))
    r = run(base)
    finish = [line for line in r.stdout.splitlines() if line.startswith("[finish ")]
    seeds = [line.rsplit(" · seed ", 1)[-1].rstrip("]") for line in finish]
    ok("generate --prompts without --seed: each result names the seed it drew",
       r.returncode == 0 and len(finish) == 2 and all(" · seed " in line for line in finish)
       and all(x.isdigit() for x in seeds) and " · a seed per prompt" in r.stderr, (finish, r.stderr.strip()[-200:]))
    # Run alone with the seed it printed, a prompt gives the same text (the seed is the one used).
    if len(seeds) == 2 and seeds[1].isdigit():
        text = r.stdout.split("── prompt 1 ", 1)[-1].split("\n", 1)[-1].split("\n[finish ", 1)[0]
        alone = run(["generate", "--model", model, "--prompt", "The sky is", "--max-new-tokens",
                     "2", "--do-sample", "true", "--seed", seeds[1]])
        ok("the printed seed reproduces that prompt's text alone", alone.returncode == 0
           and alone.stdout.strip() == text.strip(), (alone.stdout, text))
    r = run(base[:-2] + ["--do-sample", "false"])
    ok("greedy generate --prompts prints no seed", r.returncode == 0 and "seed" not in r.stderr
       and "seed" not in r.stdout, r.stderr.strip()[-200:])


def check_completion():
    """Issue 16: `completion bash` completes commands and each command's flags (driven through
    bash itself), and --help-all prints every command's help."""
    script = run(["completion", "bash"]).stdout

    def complete(*words):
        words_text = " ".join(f"'{w}'" for w in ("logitscope",) + words)
        r = subprocess.run(["bash", "-c", script + f"\nCOMP_WORDS=({words_text}); "
                            f"COMP_CWORD={len(words)}; _logitscope; echo \"${{COMPREPLY[*]}}\""],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.split()
    ok("completion: a command", complete("gen") == ["generate"], complete("gen"))
    got = complete("generate", "--top")
    ok("completion: a command's flags", {"--top", "--top-k", "--top_k", "--top-p", "--top_p"} <=
       set(got) and "--model-b" not in got, got)
    ok("completion: a file name position gives no words (bash completes files)",
       complete("next", "--model", "") == [], complete("next", "--model", ""))
    r = run(["completion", "zsh"])
    ok("completion zsh is refused naming bash", r.returncode == 1 and "only bash" in r.stderr,
       r.stderr.strip())
    r = run(["--help-all"])
    names = ["synth", "next", "generate", "score", "chat", "serve", "replay", "eval", "completion"]
    ok("--help-all prints every command's help", r.returncode == 0 and
       all(f"──── logitscope {n} ────" in r.stdout for n in names) and "--top-p" in r.stdout,
       r.stdout[:200])


def check_bench_cpu(model):
    """bench names the CPU and the kernel features it detected; /proc/cpuinfo is the oracle."""
    r = run(["bench", "--model", model, "--gen-tokens", "2", "--prompt-tokens", "4", "--json"])
    j = json.loads(r.stdout)
    info = open("/proc/cpuinfo", encoding="utf-8").read()
    name = next((l.split(":", 1)[1].strip() for l in info.splitlines() if l.startswith("model name")),
                "unknown CPU")
    flags = set(next((l.split(":", 1)[1].split() for l in info.splitlines()
                      if l.startswith("flags")), []))
    linux = {"avx2": "avx2", "fma": "fma", "f16c": "f16c", "avx512f": "avx512f",
             "avx512bw": "avx512bw", "avx512vl": "avx512vl", "avx512vnni": "avx512_vnni",
             "avx512bf16": "avx512_bf16", "avx512fp16": "avx512_fp16", "amx-tile": "amx_tile",
             "amx-int8": "amx_int8", "amx-bf16": "amx_bf16"}
    want = [ours for ours, theirs in linux.items() if theirs in flags]
    ok("bench --json names the CPU as /proc/cpuinfo does", j.get("cpu") == name, j.get("cpu"))
    ok("bench --json lists the CPU's features as /proc/cpuinfo does", j.get("cpu_features") == want,
       (j.get("cpu_features"), want))
    ok("bench --json: the prompt in one chunk when shorter than the default 64, no bf16 activations",
       j.get("chunk_tokens") == 4 and j.get("bf16_activations") is False, j)
    r = run(["bench", "--model", model, "--gen-tokens", "1", "--prompt-tokens", "100", "--json",
             "--chunk-tokens", "30", "--bf16-activations"])
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    ok("bench --chunk-tokens 30 --bf16-activations is reported", j.get("chunk_tokens") == 30 and
       j.get("bf16_activations") is True and j.get("bf16_kernel") in ("avx512bf16", "avx2", "scalar"),
       (r.returncode, r.stderr[-300:], j))
    r = run(["bench", "--model", model, "--chunk-tokens", "0"])
    ok("bench --chunk-tokens 0 is refused, naming the flag", r.returncode != 0 and
       "--chunk-tokens" in r.stderr, (r.returncode, r.stderr[-300:]))
    r = run(["bench", "--model", model, "--gen-tokens", "2", "--prompt-tokens", "4"])
    ok("bench's text names the CPU", f"cpu              {name} (" in r.stdout, r.stdout[:300])


def check_huge_pages(model, tmp):
    """--huge-pages moves the matrices, not the numbers: next prints the same distribution with
    and without it, on the float model and on a K-quant GGUF (neither interleaved). The help
    states each command's default, and nothing contradicts it (issue 47: serve showed {false})."""
    for command, default in (("serve", "on"), ("chat", "on"), ("bench", "on"), ("next", "off"),
                             ("generate", "off")):
        r = run([command, "--help"])
        lines = [line for line in r.stdout.splitlines() if "huge-pages" in line]
        ok(f"{command} --help: --huge-pages states its default ({default}), no {{false}}/{{true}}",
           r.returncode == 0 and len(lines) == 2 and f"Default here: {default} " in r.stdout
           and not any("{" in line for line in lines), lines)
    gguf = os.path.join(tmp, "huge.gguf")
    r = run(["quantize", "--model", model, "--type", "q6_k", "--out", gguf])
    ok("quantize q6_k for the huge-pages check", r.returncode == 0, r.stderr[-300:])
    for m in (model, gguf):
        outs = [run(["next", "--model", m, "--prompt", "The capital of France is", "--top", "8",
                     flag]) for flag in ("--huge-pages", "--no-huge-pages")]
        ok(f"next --huge-pages prints what --no-huge-pages does ({os.path.basename(m)})",
           all(o.returncode == 0 for o in outs) and outs[0].stdout == outs[1].stdout,
           [(o.returncode, o.stdout[-200:], o.stderr[-200:]) for o in outs])


def check_number_overflow(model, tmp):
    """A JSON number past double's range is bad input naming the file, not an internal error."""
    import shutil
    for name, field in (("config.json", "rms_norm_eps"), ("generation_config.json", "temperature")):
        bad = os.path.join(tmp, "overflow_" + name.split(".")[0])
        shutil.copytree(model, bad)
        path = os.path.join(bad, name)
        with open(path) as f:
            j = json.load(f)
        j[field] = "OVERFLOW"
        with open(path, "w") as f:
            f.write(json.dumps(j).replace('"OVERFLOW"', "1e999"))
        args = ["next", "--model", bad, "--tokens", "1,2"] if name == "config.json" else \
            ["generate", "--model", bad, "--tokens", "1,2", "--max-new-tokens", "1"]
        expect_error(args, path + ": invalid JSON")


def main():
    global BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    BIN = a.logitscope
    tmp = tempfile.mkdtemp(prefix="ls_cli_")
    # Gone however the test ends (each run writes hundreds of MiB of models).
    atexit.register(shutil.rmtree, tmp, True)
    model = os.path.join(tmp, "tiny")
    r = run(["synth", "--shape", "tiny", "--dtype", "bf16", "--seed", "3", "--out", model,
             "--tokenizer-from", a.tokenizer_from])
    assert r.returncode == 0, r.stderr

    check_exit_contract()
    check_number_overflow(model, tmp)
    check_polish(model, tmp)
    check_progress(model)
    check_completion()
    check_bench_cpu(model)
    check_huge_pages(model, tmp)
    check_batch_seed(model, tmp)
    expect_error(["next", "--model", os.path.join(tmp, "nope"), "--tokens", "1"], "nope': no such file or folder")
    expect_error(["next", "--model", model, "--tokens", "1,x"], "--tokens must be a comma-separated list")
    expect_error(["next", "--model", model, "--tokens", "1,999999"], "token id 999999 is out of range")
    expect_error(["next", "--model", model, "--tokens", "1", "--temperature", "0"], "--temperature must be a finite number >= 0.0001")
    expect_error(["next", "--model", model, "--tokens", "1", "--temperature", "nan"], "--temperature")
    expect_error(["next", "--model", model, "--tokens", "1", "--all-positions"], "--all-positions needs --dump-logits")
    expect_error(["next", "--model", model], "give the input with --tokens")
    expect_error(["next", "--model", model, "--tokens", "1", "--chat"], "--chat applies to --prompt")
    expect_error(["next", "--model", model, "--tokens", "1", "--dump-logits", "/nonexistent/dir/x.npy"],
                 "/nonexistent/dir/x.npy: the folder /nonexistent/dir does not exist")
    expect_error(["synth", "--shape", "huge", "--out", os.path.join(tmp, "h")], "--shape 'huge' is unknown")
    expect_error(["synth", "--dtype", "int8", "--out", os.path.join(tmp, "h")], "--dtype must be f32, bf16 or f16")
    expect_error(["bench", "--model", model, "--gen-tokens", "0"], "--gen-tokens")

    # A broken config.json and a truncated weights file, through the CLI.
    broken = os.path.join(tmp, "broken")
    os.makedirs(broken)
    for f in ("config.json", "model.safetensors"):
        with open(os.path.join(model, f), "rb") as src, open(os.path.join(broken, f), "wb") as dst:
            data = src.read()
            dst.write(data if f == "config.json" else data[: len(data) // 2])
    expect_error(["next", "--model", broken, "--tokens", "1"], "model.safetensors: tensor '")
    cfg = json.load(open(os.path.join(model, "config.json")))
    del cfg["rms_norm_eps"]
    json.dump(cfg, open(os.path.join(broken, "config.json"), "w"))
    expect_error(["next", "--model", broken, "--tokens", "1"], "config.json: missing required field 'rms_norm_eps'")

    expect_error(["next", "--model", model, "--tokens", "1", "--kv-type", "q8_0"], "--kv-type")

    # --kv-type f16/bf16: the KV cache memory bench reports is half of F32's, from config.json
    # alone: 2 x layers x kv_dim x positions, in whole blocks of 16 positions (8 + 2 tokens: one).
    cfg0 = json.load(open(os.path.join(model, "config.json")))
    kv_dim = cfg0["num_key_value_heads"] * cfg0["hidden_size"] // cfg0["num_attention_heads"]
    for kv_type, size in (("f32", 4), ("f16", 2), ("bf16", 2)):
        r = run(["bench", "--model", model, "--prompt-tokens", "8", "--gen-tokens", "2", "--threads", "1",
                 "--kv-type", kv_type, "--json"])
        assert r.returncode == 0, r.stderr
        j = json.loads(r.stdout)
        want_mib = 2 * cfg0["num_hidden_layers"] * kv_dim * 16 * size / 2**20
        if j["kv_type"] != kv_type.upper() or abs(j["kv_cache_mib"] - want_mib) > 1e-9:
            failures.append(("bench --kv-type", kv_type, j["kv_type"], j["kv_cache_mib"], want_mib))

    # LS_DECODE_PREFETCH: the decode kernels' prefetch distance, reported by bench; a value that is
    # not a multiple of 64 in [64, 65536] is an error at load naming the variable (exit 1, no crash).
    r = run(["bench", "--model", model, "--prompt-tokens", "4", "--gen-tokens", "1", "--threads", "2", "--json"],
            env=dict(os.environ, LS_DECODE_PREFETCH="12288"))
    ok("LS_DECODE_PREFETCH=12288 is used", r.returncode == 0 and json.loads(r.stdout)["decode_prefetch_bytes"] == 12288,
       (r.returncode, r.stdout[-200:], r.stderr[-200:]))
    for bad in ("100", "0", "131072", "8k", ""):
        r = run(["bench", "--model", model, "--prompt-tokens", "4", "--gen-tokens", "1", "--threads", "2"],
                env=dict(os.environ, LS_DECODE_PREFETCH=bad))
        ok(f"LS_DECODE_PREFETCH={bad!r} refused", r.returncode == 1 and "LS_DECODE_PREFETCH" in r.stderr
           and "multiple of 64" in r.stderr and "terminate" not in r.stderr, (r.returncode, r.stderr[-300:]))

    # LS_DECODE_PREFETCH_LEVEL: where those prefetches put the lines (l1 or l2), reported by bench;
    # anything else is an error at load naming the variable.
    for level in ("l1", "l2"):
        r = run(["bench", "--model", model, "--prompt-tokens", "4", "--gen-tokens", "1", "--threads", "2", "--json"],
                env=dict(os.environ, LS_DECODE_PREFETCH_LEVEL=level))
        ok(f"LS_DECODE_PREFETCH_LEVEL={level} is used",
           r.returncode == 0 and json.loads(r.stdout)["decode_prefetch_level"] == level,
           (r.returncode, r.stdout[-200:], r.stderr[-200:]))
    r = run(["bench", "--model", model, "--prompt-tokens", "4", "--gen-tokens", "1", "--threads", "2"],
            env=dict(os.environ, LS_DECODE_PREFETCH_LEVEL="l3"))
    ok("LS_DECODE_PREFETCH_LEVEL='l3' refused", r.returncode == 1 and "LS_DECODE_PREFETCH_LEVEL" in r.stderr
       and "expected l1 or l2" in r.stderr and "terminate" not in r.stderr, (r.returncode, r.stderr[-300:]))

    # bench --json has every figure, each a positive number.
    r = run(["bench", "--model", model, "--prompt-tokens", "8", "--gen-tokens", "4", "--threads", "1", "--json"])
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    for k in ("prefill_tokens_per_s", "decode_tokens_per_s", "weight_bytes_per_token", "read_bandwidth_gb_per_s",
              "decode_roofline_tokens_per_s", "decode_fraction_of_roofline", "peak_rss_mib",
              "read_bandwidth_min_gb_per_s", "decode_fraction_of_best_bandwidth"):
        if not (isinstance(j.get(k), (int, float)) and j[k] > 0):
            failures.append(("bench", k, j.get(k)))
    # The weights are read before decode and after each stretch of 8 tokens (4 tokens: one); the
    # roofline beside each stretch is at most the best reading's.
    if j["bandwidth_readings"] != 2 or j["read_bandwidth_min_gb_per_s"] > j["read_bandwidth_gb_per_s"]:
        failures.append(("bench readings", j["bandwidth_readings"], j["read_bandwidth_min_gb_per_s"]))
    # Stretches faster than the bandwidth read beside them are counted (one stretch of 4 tokens).
    if j.get("stretches_above_roofline") not in (0, 1):
        failures.append(("bench stretches_above_roofline", j.get("stretches_above_roofline")))
    best_roofline = j["read_bandwidth_gb_per_s"] * 1e9 / j["weight_bytes_per_token"]
    if j["decode_roofline_tokens_per_s"] > best_roofline * (1 + 1e-9):
        failures.append(("bench roofline above the best reading", j["decode_roofline_tokens_per_s"], best_roofline))
    # Bytes per token of the tiny tied model: every layer matrix + the full embedding (as lm_head)
    # + one embedding row, from config.json alone.
    c = json.load(open(os.path.join(model, "config.json")))
    h, ff, L, V = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    hd = h // c["num_attention_heads"]
    kv = c["num_key_value_heads"] * hd
    per_layer = h * h + 2 * kv * h + h * h + 3 * ff * h
    want = 2 * (L * per_layer + V * h + h)
    if j["weight_bytes_per_token"] != want:
        failures.append(("bench weight_bytes_per_token", j["weight_bytes_per_token"], want))
    print("bench:", {k: j[k] for k in ("decode_tokens_per_s", "read_bandwidth_gb_per_s", "weight_bytes_per_token")})

    # --depth: decode starts from that many tokens of context (default 0, a new sequence, as
    # llama-bench's tg). A step at position p reads K and V of p + 1 positions of every layer:
    # the mean over 4 steps from depth d is d + 2.5 positions (F32, from config.json alone).
    kv_position = 2 * L * kv * 4
    for depth, args in ((0, []), (8, ["--depth", "8"]), (20, ["--depth", "20"])):
        r = run(["bench", "--model", model, "--prompt-tokens", "8", "--gen-tokens", "4", "--threads", "1",
                 "--json"] + args)
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        want_kv = (depth + 2.5) * kv_position
        if j.get("depth") != depth or abs(j.get("kv_bytes_per_token", -1) - want_kv) > 1e-6:
            failures.append(("bench --depth", depth, r.returncode, r.stderr[-200:], j.get("depth"),
                             j.get("kv_bytes_per_token"), want_kv))
        # The KV memory held counts the prompt's blocks, kept for reuse by decode's sequence:
        # whole blocks of 16 positions for max(8 + the warm-up's, depth + 4).
        want_mib = kv_position * 16 * (1 if depth + 4 <= 16 else 2) / 2**20
        if abs(j.get("kv_cache_mib", -1) - want_mib) > 1e-9:
            failures.append(("bench --depth kv_cache_mib", depth, j.get("kv_cache_mib"), want_mib))
    r = run(["bench", "--model", model, "--prompt-tokens", "8", "--gen-tokens", "4", "--depth", "12",
             "--threads", "1"])
    ok("bench --depth 12: the text names the context", r.returncode == 0 and
       "decode           4 tokens from 12 tokens of context" in r.stdout, r.stdout[-600:])
    expect_error(["bench", "--model", model, "--depth", "-1"], "--depth: expected 0 or more tokens, got -1")
    expect_error(["bench", "--model", model, "--depth", str(c["max_position_embeddings"])],
                 "--depth + --gen-tokens: expected at most")

    if failures:
        print(f"{len(failures)} failure(s):")
        for f in failures:
            print("  ", f)
        sys.exit(1)
    print("all CLI checks passed")


if __name__ == "__main__":
    main()
