"""compare --text vs numpy: two tiny synthetic models (seeds 5 and 6, the same tokenizer) on one
text. numpy plans the windows itself, takes every window's logits from `next --all-positions
--dump-logits` of each model (a separate run per window: a fresh sequence), and recomputes every
statistic in float64: the perplexities, ln(PPL_B/PPL_A), the correlation of the per-token
log-probabilities, KL(A||B) over the full vocabulary, delta-p of the next token, same top-1, the
standard errors and every percentile (numpy's linear interpolation), overall and per window.
Cases: a ~150-token text in windows of 40 overlapping by 10, the same in windows of 64 without
overlap, a short text in one default window, and a model against itself (KL 0, same top-1 1).
Errors: a text of one token, --overlap >= --window, --text with --prompts, a missing file, and a
model B whose vocabulary is smaller (config and embedding cut, written here) each exit non-zero
naming the flag, file or both models.

usage: check_compare_text.py LOGITSCOPE TOKENIZER_DIR"""
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

from lab_util import Checker, close, run, synth

LONG_TEXT = (
    "The quick brown fox jumps over the lazy dog. In 1905, Albert Einstein published four papers "
    "that changed physics: on the photoelectric effect, Brownian motion, special relativity, and "
    "mass-energy equivalence. 北京是中国的首都，也是一座有三千多年历史的城市。\n"
    "def add(a, b):\n    return a + b\n\n"
    "The end of the story came slowly, as the rain fell over the hills and the rivers ran full "
    "toward the sea. Numbers: 3.14159, 2.71828, 1.41421. She said: \"Don't forget the keys!\" "
    "and left without another word.")
SHORT_TEXT = "Hello, world! This is a short text that fits one window."
REL = 1e-4
ABS = 1e-12  # delta-p of these random models is ~1e-6; its percentiles cross 0
PCT = [("max", 100), ("p99_9", 99.9), ("p99", 99), ("p95", 95), ("p90", 90), ("median", 50),
       ("p10", 10), ("p5", 5), ("p1", 1), ("p0_1", 0.1), ("min", 0)]
DP_PCT = PCT[:5] + [("p75", 75)] + PCT[5:6] + [("p25", 25)] + PCT[6:]


def plan(n_tokens, window, overlap):
    """Windows over positions 0..n-2: [start, end), scored from the previous window's end."""
    positions, out, start, scored = n_tokens - 1, [], 0, 0
    while True:
        end = min(start + window, positions)
        out.append((start, scored, end))
        if end == positions:
            return out
        scored, start = end, start + window - overlap


def log_softmax_rows(rows):
    x = rows.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    return x - (m + np.log(np.exp(x - m).sum(axis=1, keepdims=True)))


def mean_se(v):
    v = np.asarray(v, dtype=np.float64)
    n = len(v)
    se = float(np.sqrt(v.var() / (n - 1))) if n >= 2 else None
    return float(v.mean()), se


def stats(rows_a, rows_b, targets):
    """Every statistic of compare --text from the two models' logits rows at the scored positions."""
    la, lb = log_softmax_rows(rows_a), log_softmax_rows(rows_b)
    pa = np.exp(la)
    kld = np.maximum((pa * (la - lb)).sum(axis=1), 0.0)
    idx = np.arange(len(targets))
    lpa, lpb = la[idx, targets], lb[idx, targets]
    dp = np.exp(lpb) - np.exp(lpa)
    same = rows_a.argmax(axis=1) == rows_b.argmax(axis=1)  # numpy: the first maximum
    n = len(targets)
    s = {"tokens": n}
    nll_a, se_a = mean_se(-lpa)
    nll_b, se_b = mean_se(-lpb)
    s["ppl_a"], s["ppl_b"] = np.exp(nll_a), np.exp(nll_b)
    s["ppl_a_se"] = s["ppl_a"] * se_a if se_a is not None else None
    s["ppl_b_se"] = s["ppl_b"] * se_b if se_b is not None else None
    s["ln_ppl_ratio"], s["ln_ppl_ratio_se"] = mean_se(lpa - lpb)
    s["ppl_ratio"] = np.exp(s["ln_ppl_ratio"])
    if s["ln_ppl_ratio_se"] is not None:
        s["ppl_ratio_se"] = s["ppl_ratio"] * s["ln_ppl_ratio_se"]
    s["logprob_corr"] = float(np.corrcoef(lpa, lpb)[0, 1]) if n >= 2 and lpa.std() > 0 else None
    s["kld_mean"], s["kld_se"] = mean_se(kld)
    for name, q in PCT:
        s[f"kld_{name}"] = float(np.percentile(kld, q))
    s["dp_mean"], s["dp_se"] = mean_se(dp)
    s["dp_rms"] = float(np.sqrt((dp ** 2).mean()))
    mse_se = mean_se(dp ** 2)[1]
    if mse_se is not None:
        s["dp_rms_se"] = mse_se / (2 * s["dp_rms"]) if s["dp_rms"] > 0 else 0.0
    for name, q in DP_PCT:
        s[f"dp_{name}"] = float(np.percentile(dp, q))
    s["same_top1_count"] = int(same.sum())
    s["same_top1"] = float(same.mean())
    if n >= 2:
        s["same_top1_se"] = float(np.sqrt(s["same_top1"] * (1 - s["same_top1"]) / (n - 1)))
    return s


def main():
    exe, tok = sys.argv[1], sys.argv[2]
    check = Checker()
    worst = [0.0]
    with tempfile.TemporaryDirectory() as tmp:
        a = synth(exe, tok, os.path.join(tmp, "a"), seed=5, dtype="f32")
        b = synth(exe, tok, os.path.join(tmp, "b"), seed=6, dtype="f32")
        cache = {}

        def window_rows(model, ids):
            key = (model, tuple(ids))
            if key not in cache:
                out = os.path.join(tmp, f"rows{len(cache)}.npy")
                run(exe, "next", "--model", model, "--tokens", ",".join(map(str, ids)),
                    "--all-positions", "--dump-logits", out, "--threads", "1")
                cache[key] = np.load(out)
                os.remove(out)
            return cache[key]

        def tokenize(text):
            return json.loads(run(exe, "tokenize", "--model", a, "--text", text, "--json").stdout)["ids"]

        def compare_case(tag, text, model_b, window=None, overlap=None, default_window=1024):
            path = os.path.join(tmp, f"{tag}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            args = [exe, "compare", "--model", a, "--model-b", model_b, "--text", path, "--json",
                    "--threads", "2"]
            if window is not None:
                args += ["--window", str(window)]
            if overlap is not None:
                args += ["--overlap", str(overlap)]
            lines = [json.loads(x) for x in run(*args).stdout.splitlines()]
            got, per_window = lines[-1], lines[:-1]
            ids = np.array(tokenize(text))
            n = len(ids)
            win = window if window is not None else default_window
            ovl = overlap if overlap is not None else win // 4
            windows = plan(n, win, ovl)
            check(got["type"] == "summary" and got["text_tokens"] == n and got["tokens"] == n - 1,
                  f"{tag}: tokens {got.get('text_tokens')} / {got.get('tokens')} vs {n} / {n - 1}")
            check(got["window"] == win and got["overlap"] == ovl and got["windows"] == len(windows),
                  f"{tag}: window {got['window']} overlap {got['overlap']} windows {got['windows']}"
                  f" vs {win} {ovl} {len(windows)}")
            check(len(per_window) == len(windows), f"{tag}: {len(per_window)} window lines")
            all_a, all_b, all_t = [], [], []
            for k, ((start, scored, end), line) in enumerate(zip(windows, per_window)):
                check((line["window"], line["start"], line["scored_from"], line["end"])
                      == (k, start, scored, end), f"{tag}: window line {line}")
                ra = window_rows(a, ids[start:end])[scored - start:]
                rb = window_rows(model_b, ids[start:end])[scored - start:]
                targets = ids[scored + 1:end + 1]
                all_a.append(ra)
                all_b.append(rb)
                all_t.append(targets)
                want = stats(ra, rb, targets)
                for key in ("tokens", "ppl_a", "ppl_b", "ln_ppl_ratio", "kld_mean", "dp_rms",
                            "same_top1"):
                    compare_value(check, worst, f"{tag} window {k} {key}", line[key], want[key])
            # Every position 0..n-2 scored exactly once.
            covered = sum(end - scored for _, scored, end in windows)
            check(covered == n - 1, f"{tag}: windows cover {covered} positions of {n - 1}")
            want = stats(np.concatenate(all_a), np.concatenate(all_b), np.concatenate(all_t))
            for key, value in want.items():
                check(key in got, f"{tag}: summary lacks {key}")
                if key in got:
                    compare_value(check, worst, f"{tag} {key}", got[key], value)
            return got, n

        got, n = compare_case("long", LONG_TEXT, b, window=40, overlap=10)
        check(100 <= n <= 220, f"the long text is {n} tokens")
        check(got["windows"] >= 4, f"long: {got['windows']} windows")
        print(f"long text: {n} tokens, {got['windows']} windows of 40 (overlap 10): PPL A "
              f"{got['ppl_a']:.4g}, PPL B {got['ppl_b']:.4g}, KL mean {got['kld_mean']:.4g}, "
              f"same top-1 {got['same_top1']:.3f}")
        got, _ = compare_case("long-nooverlap", LONG_TEXT, b, window=64, overlap=0)
        got, n = compare_case("short", SHORT_TEXT, b)
        check(got["windows"] == 1, "short: one window")
        print(f"short text: {n} tokens in one default window (1024, overlap 256)")
        got, _ = compare_case("self", LONG_TEXT, a, window=40, overlap=10)
        check(got["kld_max"] == 0.0 and got["same_top1"] == 1.0 and got["dp_rms"] == 0.0 and
              got["ln_ppl_ratio"] == 0.0, f"self: KL 0, same top-1 1: {got['kld_max']} "
              f"{got['same_top1']} {got['dp_rms']} {got['ln_ppl_ratio']}")
        print(f"largest relative difference from numpy: {worst[0]:.3g}")

        long_path = os.path.join(tmp, "long.txt")
        text = run(exe, "compare", "--model", a, "--model-b", b, "--text", long_path,
                   "--window", "40", "--overlap", "10").stdout
        for label in ("PPL(A)", "PPL(B)", "ln(PPL(B)/PPL(A))", "KL(A||B)", "99.9%", "median",
                      "RMS", "same top-1"):
            check(label in text, f"readable report has {label}")

        def fails(what, args, expect, *names):
            out = run(exe, "compare", "--model", a, *args, expect=expect)
            ok = all(nm in out.stderr for nm in names)
            check(ok, f"{what}: stderr should name {names}: {out.stderr.strip()}")
            print(f"{what}: {out.stderr.strip().splitlines()[0]}")

        one = os.path.join(tmp, "one.txt")
        with open(one, "w") as f:
            f.write("Hello")
        check(len(tokenize("Hello")) == 1, "'Hello' is one token")
        fails("one-token text", ["--model-b", b, "--text", one], 1, "--text", one)
        fails("overlap >= window", ["--model-b", b, "--text", long_path, "--window", "40",
                                    "--overlap", "40"], 1, "--overlap", "--window")
        fails("default window, overlap past it", ["--model-b", b, "--text", long_path,
                                                  "--overlap", "1024"], 1, "--overlap")
        fails("--text with --prompts", ["--model-b", b, "--text", long_path, "--prompts",
                                        long_path], 2, "--text", "--prompts")
        missing = os.path.join(tmp, "missing.txt")
        fails("missing text file", ["--model-b", b, "--text", missing], 1, "--text", missing)

        # A model B with a smaller vocabulary: the config and the (tied) embedding cut to 151680
        # rows, still more than the tokenizer's 151665 ids.
        small = os.path.join(tmp, "small")
        shutil.copytree(b, small)
        cut_vocab(small, 151680)
        fails("different vocabularies", ["--model-b", small, "--text", long_path], 1,
              "vocab_size", a, small)
    return check.close("compare --text vs numpy")


def compare_value(check, worst, what, got, want):
    if want is None:
        check(got is None, f"{what}: {got} vs undefined")
        return
    if got is None:
        check(False, f"{what}: null vs {want}")
        return
    if isinstance(want, (int, np.integer)) and not isinstance(want, bool):
        check(got == want, f"{what}: {got} vs {want}")
        return
    if abs(want) > 1e-30:
        worst[0] = max(worst[0], abs(got - want) / abs(want) if abs(got - want) > ABS else 0.0)
    check(close(got, want, REL, ABS), f"{what}: {got} vs {want}")


def cut_vocab(model_dir, vocab):
    path = os.path.join(model_dir, "model.safetensors")
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out, offset = {}, 0
    blobs = []
    for name, t in header.items():
        if name == "__metadata__":
            out[name] = t
            continue
        lo, hi = t["data_offsets"]
        blob = data[lo:hi]
        if name == "model.embed_tokens.weight":
            row = len(blob) // t["shape"][0]
            blob = blob[:row * vocab]
            t = dict(t, shape=[vocab] + t["shape"][1:])
        out[name] = dict(t, data_offsets=[offset, offset + len(blob)])
        blobs.append(blob)
        offset += len(blob)
    head = json.dumps(out).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
    cfg_path = os.path.join(model_dir, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["vocab_size"] = vocab
    with open(cfg_path, "w") as f:
        json.dump(cfg, f)


if __name__ == "__main__":
    sys.exit(main())
