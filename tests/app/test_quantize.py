#!/usr/bin/env python3
"""`logitscope quantize` end to end: a synthetic model written as GGUF (f32, bf16, f16, and the
block types when the build has them) is checked by the independent numpy GGUF reader
(tests/reference/gguf_ref.py) against the safetensors source; `logitscope next` on the F32 and
BF16 GGUFs gives exactly (max abs diff 0) the logits of the Hugging Face directory, for token
ids and for a chat prompt (tokenizer and chat template from the GGUF's metadata); bad input
exits 1 with a message naming the file or flag."""
import argparse
import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import gguf_ref  # noqa: E402
from st_write import random_model, write_model  # noqa: E402

failures = []


def run(args):
    return subprocess.run([BIN] + args, capture_output=True, text=True, timeout=300)


def ok(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + (": " + detail if detail and not cond else ""))
    if not cond:
        failures.append(what)


def expect_error(args, needle):
    r = run(args)
    good = r.returncode == 1 and needle in r.stderr and "logitscope: error:" in r.stderr
    ok(good, "error " + " ".join(args[:5]), "exit %d, stderr %r" % (r.returncode, r.stderr[:300]))


def logits(model, tmp, tag, extra):
    out = os.path.join(tmp, tag + ".npy")
    r = run(["next", "--model", model, "--dump-logits", out, "--json", "--threads", "1"] + extra)
    if r.returncode != 0:
        ok(False, "next on " + model, r.stderr[:300])
        return None, None
    return np.load(out), r.stdout


def main():
    global BIN
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    BIN = a.logitscope
    tmp = tempfile.mkdtemp(prefix="ls_quantize_")
    # Gone however the test ends (each run writes hundreds of MiB of models).
    atexit.register(shutil.rmtree, tmp, True)
    models = {}
    for dt in ("f32", "bf16"):
        models[dt] = os.path.join(tmp, "tiny-" + dt)
        r = run(["synth", "--shape", "tiny", "--dtype", dt, "--seed", "1", "--out", models[dt],
                 "--tokenizer-from", a.tokenizer_from])
        assert r.returncode == 0, r.stderr

    help_text = run(["quantize", "--help"]).stdout
    block_types = ["q8_0", "q4_0", "q4_k"]
    conversions = [("f32", "f32"), ("bf16", "bf16"), ("f32", "f16"), ("f32", "bf16")]
    conversions += [("bf16", t) for t in block_types]
    for src, t in conversions:
        out = os.path.join(tmp, "%s-as-%s.gguf" % (src, t))
        r = run(["quantize", "--model", models[src], "--type", t, "--out", out])
        if t in block_types and "not available in this build" in r.stderr:
            print("skip %s: quantization kernels not in this build" % t)
            continue
        ok(r.returncode == 0 and "wrote " + out in r.stdout, "quantize %s -> %s" % (src, t), r.stderr)
        if r.returncode != 0:
            continue
        if t in ("q8_0", "q4_0", "q4_k"):  # tiny rows of 176 are not whole 32-blocks
            ok("written as F16" in r.stdout, "quantize %s lists its fallbacks" % t, r.stdout)
        errors = gguf_ref.check(out, models[src], t)
        for e in errors:
            print("   ", e)
        ok(not errors, "gguf_ref %s -> %s" % (src, t))

    # Same logits from the GGUF as from the directory, for token ids and a chat prompt.
    for src in ("f32", "bf16"):
        gguf = os.path.join(tmp, "%s-as-%s.gguf" % (src, src))
        for tag, extra in (("ids", ["--tokens", "9707,11,1879,0,151643", "--all-positions"]),
                           ("chat", ["--prompt", "Hello <think> 世界", "--chat", "--system", "Be brief."])):
            want, want_out = logits(models[src], tmp, "%s-dir-%s" % (src, tag), extra)
            got, got_out = logits(gguf, tmp, "%s-gguf-%s" % (src, tag), extra)
            if want is None or got is None:
                continue
            diff = float(np.abs(want - got).max()) if want.shape == got.shape else float("inf")
            ok(diff == 0.0, "next %s %s: GGUF logits == directory logits" % (src, tag),
               "max abs diff %g, shapes %s %s" % (diff, want.shape, got.shape))
            if tag == "chat":  # the same rendered prompt and tokens (tokenizer + template)
                import json
                jw, jg = json.loads(want_out), json.loads(got_out)
                ok(jw["input_tokens"] == jg["input_tokens"] and jw["prompt"] == jg["prompt"],
                   "next %s chat: same prompt and tokens from the GGUF metadata" % src)

    # Rows of 256 and 512 (whole K-quant blocks), two shards, untied, no tokenizer: every block
    # type really used, checked by the numpy dequantizers; quantized GGUFs run when the build's
    # matmul supports them, with logits close to the BF16 directory's.
    wide = os.path.join(tmp, "wide")
    w, cfg = random_model(np.random.default_rng(5), hidden=256, inter=512, layers=2, heads=4, kv=2,
                          vocab=384, tied=False, scale=0.05)
    cfg["max_position_embeddings"] = 128
    write_model(wide, w, cfg, dtype="BF16", shards=2)
    want, _ = logits(wide, tmp, "wide-dir", ["--tokens", "1,2,3,4,5"])
    for t in ("bf16", "q8_0", "q4_0", "q4_k", "q6_k", "q5_0", "q5_1", "q4_1", "iq4_nl", "q5_k",
              "q3_k", "q2_k", "q5_k_m", "q4_k_m", "q3_k_m"):
        out = os.path.join(tmp, "wide-%s.gguf" % t)
        r = run(["quantize", "--model", wide, "--type", t, "--out", out])
        if r.returncode != 0 and "not available in this build" in r.stderr:
            print("skip wide %s: quantization kernels not in this build" % t)
            continue
        ok(r.returncode == 0 and "written as" not in r.stdout and "no tokenizer.json" in r.stdout,
           "quantize wide -> %s (no fallbacks, no tokenizer)" % t, r.stdout + r.stderr)
        if r.returncode != 0:
            continue
        errors = gguf_ref.check(out, wide, t)
        for e in errors:
            print("   ", e)
        ok(not errors, "gguf_ref wide -> %s" % t)
        got_path = os.path.join(tmp, "wide-%s.npy" % t)
        r = run(["next", "--model", out, "--tokens", "1,2,3,4,5", "--dump-logits", got_path])
        if r.returncode != 0:
            ok("unsupported" in r.stderr.lower() or "not supported" in r.stderr.lower(),
               "next wide %s: fails only for lack of a kernel" % t, r.stderr[:300])
            continue
        got = np.load(got_path)
        if t == "bf16":
            ok(float(np.abs(got - want).max()) == 0.0, "next wide bf16: logits == directory")
        else:
            corr = float(np.corrcoef(got.ravel(), want.ravel())[0, 1])
            ok(corr > {"q8_0": 0.999, "q6_k": 0.995, "q5_0": 0.98, "q5_1": 0.98, "q5_k": 0.98,
                       "q3_k": 0.85, "q2_k": 0.5, "q5_k_m": 0.98, "q3_k_m": 0.85}.get(t, 0.9),
               "next wide %s: logits correlate with BF16 (r = %.5f)" % (t, corr))

    # Rows of 288 (whole 32-blocks, not 256-blocks), as the 0.5B's 896: Q4_K falls back to Q5_0
    # for those matrices, as llama-quantize does, and the mixed file runs.
    narrow = os.path.join(tmp, "narrow")
    w, cfg = random_model(np.random.default_rng(6), hidden=288, inter=512, layers=2, heads=4, kv=2,
                          vocab=384, tied=True, scale=0.05)
    cfg["max_position_embeddings"] = 128
    write_model(narrow, w, cfg, dtype="BF16", shards=1)
    want, _ = logits(narrow, tmp, "narrow-dir", ["--tokens", "1,2,3,4,5"])
    out = os.path.join(tmp, "narrow-q4_k.gguf")
    r = run(["quantize", "--model", narrow, "--type", "q4_k", "--out", out])
    ok(r.returncode == 0 and "written as Q5_0" in r.stdout and "written as Q8_0" not in r.stdout,
       "quantize narrow -> q4_k: rows of 288 written as Q5_0", r.stdout + r.stderr)
    if r.returncode == 0:
        errors = gguf_ref.check(out, narrow, "q4_k")
        for e in errors:
            print("   ", e)
        ok(not errors, "gguf_ref narrow -> q4_k (Q4_K + Q5_0)")
        got_path = os.path.join(tmp, "narrow-q4_k.npy")
        r = run(["next", "--model", out, "--tokens", "1,2,3,4,5", "--dump-logits", got_path])
        ok(r.returncode == 0, "next narrow q4_k", r.stderr[:300])
        if r.returncode == 0 and want is not None:
            corr = float(np.corrcoef(np.load(got_path).ravel(), want.ravel())[0, 1])
            ok(corr > 0.9, "next narrow q4_k: logits correlate with BF16 (r = %.5f)" % corr)
    # The mixes (q2_k is llama-quantize's Q2_K, a mix): their per-matrix choices checked by gguf_ref.
    for t, sub in (("q5_k", "Q5_1"), ("q6_k", "Q8_0"), ("q3_k", "IQ4_NL"), ("q2_k", "IQ4_NL"),
                   ("q5_k_m", "Q5_1"), ("q4_k_m", "Q5_0"), ("q3_k_m", "IQ4_NL")):
        out = os.path.join(tmp, "narrow-%s.gguf" % t)
        r = run(["quantize", "--model", narrow, "--type", t, "--out", out])
        ok(r.returncode == 0 and "written as " + sub in r.stdout,
           "quantize narrow -> %s: rows of 288 written as %s" % (t, sub), r.stdout + r.stderr)
        if r.returncode == 0:
            errors = gguf_ref.check(out, narrow, t)
            for e in errors:
                print("   ", e)
            ok(not errors, "gguf_ref narrow -> %s" % t)
            r = run(["next", "--model", out, "--tokens", "1,2,3,4,5"])
            ok(r.returncode == 0, "next narrow %s" % t, r.stderr[:300])

    # Bad input.
    q = os.path.join(tmp, "q.gguf")
    expect_error(["quantize", "--model", os.path.join(tmp, "nope"), "--type", "f32", "--out", q],
                 "nope': no such file or folder")
    expect_error(["quantize", "--model", models["f32"], "--type", "iq2_xxs", "--out", q],
                 "--type 'iq2_xxs' is not supported")
    expect_error(["quantize", "--model", models["f32"], "--type", "f32", "--out",
                  "/nonexistent/dir/x.gguf"], "/nonexistent/dir/x.gguf")
    garbage = os.path.join(tmp, "garbage.gguf")
    with open(garbage, "wb") as f:
        f.write(b"this is not a gguf file at all")
    expect_error(["next", "--model", garbage, "--tokens", "1"], "garbage.gguf: not a GGUF file")
    expect_error(["next", "--model", os.path.join(tmp, "missing.gguf"), "--tokens", "1"],
                 "missing.gguf': no such file or folder")
    good = os.path.join(tmp, "f32-as-f32.gguf")
    if os.path.exists(good):
        with open(good, "rb") as f:
            data = f.read()
        cut = os.path.join(tmp, "cut.gguf")
        with open(cut, "wb") as f:
            f.write(data[: len(data) - 1000])
        expect_error(["next", "--model", cut, "--tokens", "1"], "runs past the end of the file")
    ok("q8_0" in help_text and "--out" in help_text and "q4_k_m" in help_text,
       "quantize --help lists the types and the mixes")

    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
