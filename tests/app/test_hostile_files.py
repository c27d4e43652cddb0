#!/usr/bin/env python3
"""Hostile files (issue 14): an input that is a device (/dev/zero through a symlink), a FIFO, a
directory, a symlink loop or larger than the documented limit is refused at once with exit
status 1 and a message naming the file; nothing blocks or grows without end. Each run has a
20-second timeout, so a hang fails the test instead of stalling it."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def check(label, args, needles, timeout=20):
    try:
        r = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"FAIL {label}: still running after {timeout} s")
        failures.append(label)
        return
    ok = r.returncode == 1 and all(n in r.stderr for n in needles)
    print(("ok   " if ok else "FAIL ") + f"{label} -> {r.returncode}: {r.stderr.strip()[:200]}")
    if not ok:
        failures.append(label)


def model_copy(src, tmp, name):
    dst = os.path.join(tmp, name)
    shutil.copytree(src, dst)
    return dst


def replace_with(path, kind, tmp):
    os.remove(path)
    if kind == "zero":
        os.symlink("/dev/zero", path)
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        other = path + ".loop"
        os.symlink(other, path)
        os.symlink(path, other)
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "huge":
        with open(path, "wb") as f:
            f.truncate(65 << 20)  # sparse: 65 MiB of zeros, past the 64 MiB limit


def check_outputs(base, tmp, fifo):
    """Outputs replace only regular files: a device, FIFO or directory target is refused before
    anything is written; a symlink is written through (its file replaced, the link kept)."""
    for target, needle in (("/dev/full", "not a regular file"), ("/dev/null", "not a regular file"),
                           (fifo, "not a regular file"), (tmp, "is a directory")):
        check(f"quantize --out {target}", ["quantize", "--model", base, "--type", "f32", "--out",
                                           target], [target, needle])
        check(f"generate --dump-logits {target}",
              ["generate", "--model", base, "--tokens", "1", "--max-new-tokens", "1", "--json",
               "--dump-logits", target], [target, needle])
    check("synth --out an existing file", ["synth", "--shape", "tiny", "--out",
                                           os.path.join(base, "config.json")],
          ["exists and is not a folder"])
    real = os.path.join(tmp, "real.gguf")
    with open(real, "w") as f:
        f.write("old")
    link = os.path.join(tmp, "link.gguf")
    os.symlink(real, link)
    r = subprocess.run([BIN, "quantize", "--model", base, "--type", "f32", "--out", link],
                       capture_output=True, text=True, timeout=120)
    with open(real, "rb") as f:
        magic = f.read(4)
    ok = r.returncode == 0 and os.path.islink(link) and magic == b"GGUF" and \
        not os.path.exists(real + ".partial")
    print(("ok   " if ok else "FAIL ") + f"quantize --out a symlink writes through -> {r.returncode}, "
          f"link kept {os.path.islink(link)}, target magic {magic!r}")
    if not ok:
        failures.append("quantize --out symlink")


def main():
    global BIN
    p = argparse.ArgumentParser()
    p.add_argument("--logitscope", required=True)
    p.add_argument("--tokenizer-from", required=True)
    a = p.parse_args()
    BIN = a.logitscope
    tmp = tempfile.mkdtemp(prefix="ls_hostile_")
    try:
        base = os.path.join(tmp, "tiny")
        subprocess.run([BIN, "synth", "--shape", "tiny", "--dtype", "bf16", "--out", base,
                        "--tokenizer-from", a.tokenizer_from], check=True, capture_output=True)
        # Model files.
        for fname, cmd in (("config.json", ["next", "--tokens", "1"]),
                           ("generation_config.json", ["next", "--tokens", "1"]),
                           ("tokenizer.json", ["tokenize", "--text", "hi"]),
                           ("tokenizer_config.json", ["template", "--messages", "-"]),
                           ("model.safetensors", ["next", "--tokens", "1"])):
            for kind, needle in (("zero", "not a regular file"), ("fifo", "not a regular file"),
                                 ("loop", "symbolic links"), ("dir", "directory")):
                if fname == "model.safetensors" and kind == "dir":
                    continue
                m = model_copy(base, tmp, f"{fname}-{kind}")
                replace_with(os.path.join(m, fname), kind, tmp)
                check(f"{fname} as {kind}", cmd + ["--model", m], [fname, needle])
        m = model_copy(base, tmp, "huge-config")
        replace_with(os.path.join(m, "config.json"), "huge", tmp)
        check("config.json of 65 MiB", ["next", "--tokens", "1", "--model", m],
              ["config.json", "limit of 64 MiB"])
        # Input files named by flags.
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        for label, args, flag in (
                ("template --messages", ["template", "--model", base, "--messages"], "--messages"),
                ("generate --prompts", ["generate", "--model", base, "--prompts"], "--prompts"),
                ("next --prompts", ["next", "--model", base, "--prompts"], "--prompts"),
                ("compare --prompts", ["compare", "--model", base, "--model-b", base, "--prompts"],
                 "--prompts"),
                ("eval --golden", ["eval", "--model", base, "--golden"], "--golden"),
                ("replay --trace", ["replay", "--trace"], "--trace"),
                ("tokenize --jsonl", ["tokenize", "--model", base, "--jsonl"], "--jsonl")):
            for target in ("/dev/zero", fifo, tmp):
                needle = "directory" if target == tmp else "not a regular file"
                check(f"{label} {target}", args + [target], [flag, target, needle])
        check_outputs(base, tmp, fifo)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{len(failures)} failures")
    for f in failures:
        print("  FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
