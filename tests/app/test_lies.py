#!/usr/bin/env python3
"""Nothing lies (issue 14): wrong numbers never come out with exit 0. A NaN in the weights is an
error naming the position (unless --remove-invalid-values), a safetensors header length one
byte short is refused, temperatures below the floor are refused, token-id lists are strict,
EOS ids outside the vocabulary are refused, max_length is reported as max_length, and
`replay --fork` never exceeds the recorded budget."""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

failures = []
REFERENCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference")


def run(args, timeout=120):
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout)


def check(label, ok, got):
    print(("ok   " if ok else "FAIL ") + f"{label} -- got: {str(got)[:220]}")
    if not ok:
        failures.append(label)


def expect_error(label, args, needle):
    r = run(args)
    check(label, r.returncode == 1 and needle in r.stderr, (r.returncode, r.stderr.strip()))


def poke_tensor(model, name, value, index=0):
    """Writes float32 `value` into element `index` of F32 tensor `name` of model.safetensors."""
    path = os.path.join(model, "model.safetensors")
    with open(path, "r+b") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        begin = header[name]["data_offsets"][0] + 4 * index
        assert header[name]["dtype"] == "F32"
        f.seek(8 + n + begin)
        f.write(struct.pack("<f", value))


def main():
    global BIN
    p = argparse.ArgumentParser()
    p.add_argument("--logitscope", required=True)
    p.add_argument("--tokenizer-from", required=True)
    a = p.parse_args()
    BIN = a.logitscope
    tmp = tempfile.mkdtemp(prefix="ls_lies_")
    try:
        base = os.path.join(tmp, "tiny")
        subprocess.run([BIN, "synth", "--shape", "tiny", "--dtype", "f32", "--out", base,
                        "--tokenizer-from", a.tokenizer_from], check=True, capture_output=True)
        # NaN in a norm weight: refused at load, naming the tensor.
        nan_norm = os.path.join(tmp, "nan_norm")
        shutil.copytree(base, nan_norm)
        poke_tensor(nan_norm, "model.norm.weight", float("nan"))
        expect_error("a NaN norm weight is refused at load", ["next", "--model", nan_norm,
                                                             "--tokens", "1"],
                     "'model.norm.weight' holds nan at index 0")
        # NaN in token 1's embedding row: every logit after it is NaN.
        nan = os.path.join(tmp, "nan")
        shutil.copytree(base, nan)
        poke_tensor(nan, "model.embed_tokens.weight", float("nan"), index=64)
        expect_error("next on NaN weights", ["next", "--model", nan, "--tokens", "1,2"],
                     "logits are not finite")
        expect_error("generate on NaN weights names the position",
                     ["generate", "--model", nan, "--tokens", "1,2", "--max-new-tokens", "2"],
                     "after position 1 are not finite")
        r = run(["generate", "--model", nan, "--tokens", "1,2", "--max-new-tokens", "2",
                 "--remove-invalid-values", "true", "--json"])
        check("--remove-invalid-values goes on", r.returncode == 0, (r.returncode, r.stderr[-200:]))
        # --no-validate loads the NaN norm; the logits check still stops it and points at
        # --debug-nonfinite, which names where the first non-finite value appears.
        expect_error("--no-validate loads a NaN norm; the logits check stops it",
                     ["next", "--model", nan_norm, "--tokens", "1", "--no-validate"],
                     "(--debug-nonfinite names the first layer where one appears)")
        expect_error("--debug-nonfinite: a NaN final norm",
                     ["next", "--model", nan_norm, "--tokens", "1", "--no-validate",
                      "--debug-nonfinite"],
                     "every layer's output is finite; the first non-finite value is in the final "
                     "norm (logits row 0 of this chunk, index 0)")
        expect_error("--debug-nonfinite: a NaN embedding row",
                     ["next", "--model", nan, "--tokens", "2,1", "--debug-nonfinite"],
                     "first non-finite value is in the token embedding: nan at index 0 of 64, "
                     "sequence 0 position 1 (token id 1)")
        nan_layer = os.path.join(tmp, "nan_layer")
        shutil.copytree(base, nan_layer)
        poke_tensor(nan_layer, "model.layers.1.mlp.down_proj.weight", float("inf"), index=5)
        expect_error("--debug-nonfinite: an infinite weight in layer 1's down_proj",
                     ["generate", "--model", nan_layer, "--tokens", "1,2,3", "--max-new-tokens",
                      "2", "--debug-nonfinite"],
                     "first non-finite value is in layer 1 down_proj: ")
        r = run(["next", "--model", nan_layer, "--tokens", "1,2,3", "--debug-nonfinite",
                 "--json"])
        check("--debug-nonfinite on next names layer 1 down_proj at position 0",
              r.returncode == 1 and "layer 1 down_proj" in r.stderr and "position 0" in r.stderr,
              (r.returncode, r.stderr.strip()))
        r = run(["next", "--model", base, "--tokens", "1,2,3", "--debug-nonfinite", "--json"])
        r0 = run(["next", "--model", base, "--tokens", "1,2,3", "--json"])
        check("--debug-nonfinite changes no number on a finite model",
              r.returncode == 0 and r.stdout == r0.stdout, (r.returncode, r.stderr[-200:]))
        # A NaN block scale or norm weight in a GGUF: refused at load, naming the tensor.
        sys.path.insert(0, REFERENCE_DIR)
        import gguf_ref
        for kind, tensor, value, needle in (
                ("q8_0", "blk.0.attn_q.weight", b"\x00\x7e", "non-finite block scale"),
                ("f32", "output_norm.weight", struct.pack("<f", float("nan")), "must be finite")):
            path = os.path.join(tmp, f"{kind}.gguf")
            r = run(["quantize", "--model", base, "--type", kind, "--out", path])
            check(f"quantize {kind}", r.returncode == 0, r.stderr[-200:])
            with open(path, "rb") as f:
                blob = bytearray(f.read())
            info = [t for t in gguf_ref.read_gguf(path)[2] if t["name"] == tensor][0]
            at = bytes(blob).index(info["data"])
            blob[at:at + len(value)] = value
            with open(path, "wb") as f:
                f.write(blob)
            expect_error(f"GGUF {kind} with a NaN in {tensor}",
                         ["next", "--model", path, "--tokens", "1"], needle)
            if kind == "q8_0":
                expect_error("--no-validate --debug-nonfinite: a NaN block scale of attn_q",
                             ["next", "--model", path, "--tokens", "1", "--no-validate",
                              "--debug-nonfinite"],
                             "first non-finite value is in layer 0 q projection")
        # A safetensors header length one byte short: every tensor shifted by a byte.
        short = os.path.join(tmp, "short")
        shutil.copytree(base, short)
        path = os.path.join(short, "model.safetensors")
        with open(path, "r+b") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            f.seek(0)
            f.write(struct.pack("<Q", n - 1))
        expect_error("safetensors header length one byte short",
                     ["next", "--model", short, "--tokens", "1"], "model.safetensors")
        expect_error("temperature below the floor", ["next", "--model", base, "--tokens", "1",
                                                     "--temperature", "1e-40"], ">= 0.0001")
        expect_error("generate temperature below the floor",
                     ["generate", "--model", base, "--tokens", "1", "--temperature", "1e-9"],
                     "1e-4")
        for bad in ("1,,2", "1,2,", ",1", "1 2", "1;2"):
            expect_error(f"--tokens {bad!r}", ["next", "--model", base, "--tokens", bad], "--tokens")
        r = run(["next", "--model", base, "--tokens", " 1 , 2 ", "--json"])
        check("--tokens ' 1 , 2 ' is [1, 2]",
              r.returncode == 0 and json.loads(r.stdout)["input_tokens"] == [1, 2], r.stdout[:120])
        for bad in ("-5", "999999"):
            expect_error(f"--eos-token-id {bad}", ["generate", "--model", base, "--tokens", "1",
                                                   "--eos-token-id", bad], "--eos-token-id")
        r = run(["generate", "--model", base, "--tokens", "1,2,3", "--max-length", "4", "--json"])
        result = [json.loads(l) for l in r.stdout.splitlines() if '"result"' in l]
        check("max_length is reported as max_length",
              r.returncode == 0 and result and "max_length (4" in result[0]["message"] and
              len(result[0]["tokens"]) == 1, result)
        # replay --fork at the last allowed step and past it.
        trace = os.path.join(tmp, "t.jsonl")
        with open(trace, "w") as f:
            g = run(["generate", "--model", base, "--tokens", "1,2", "--max-new-tokens", "8",
                     "--json", "--dump-logits", os.path.join(tmp, "l.npy"), "--seed", "3",
                     "--repetition-penalty", "3", "--eos-token-id", "0"])
            f.write(g.stdout)
        r = run(["replay", "--trace", trace, "--model", base, "--fork", "7=5", "--json"])
        out = json.loads(r.stdout) if r.returncode == 0 else {}
        tokens = out.get("fork", {}).get("tokens")
        check("replay --fork 7=5 keeps max_new_tokens 8", r.returncode == 0 and tokens is not None
              and len(tokens) == 8, (r.returncode, tokens, r.stderr[-200:]))
        r = run(["replay", "--trace", trace, "--model", base, "--fork", "5=5"])
        check("replay --fork spells its token count out",
              r.returncode == 0 and "8 tokens = 5 recorded + 1 forced + 2 generated; finish length "
              "(reached max_new_tokens (2)); logprob of the generated part" in r.stdout,
              (r.returncode, r.stdout[-300:]))
        check("replay's entropy column has its unit", "H nats" in r.stdout, r.stdout[:300])
        expect_error("replay --fork 8=5 is past the budget",
                     ["replay", "--trace", trace, "--model", base, "--fork", "8=5"], "no room")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{len(failures)} failures")
    for f in failures:
        print("  FAILED: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
