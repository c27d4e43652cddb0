"""Reference test for logitscope's decoding stages: generates score vectors (fixed ones with ties,
-inf, NaN, all-equal values, plus random ones), runs decode_driver on them and compares every
result with hf_formulas.py, a numpy statement of transformers' formulas.

usage: /usr/bin/python3 check_against_numpy.py PATH/TO/decode_driver"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_formulas as hf  # noqa: E402
import llama_formulas as llama  # noqa: E402

F32 = np.float32
INF = np.inf


def enc(v):
    v = float(v)
    if np.isnan(v):
        return "nan"
    if np.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def dec(v):
    if isinstance(v, str):
        return {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}[v]
    return v


def f32(values):
    return np.asarray(values, dtype=F32)


rng = np.random.default_rng(20240611)
FIXED = {
    "ties": f32([1, 1, 1, 1, 0.5, 0.5, 2, 2]),
    "neg_inf": f32([3, -INF, 1, 1, -INF, 0.5, 2, -1]),
    "all_equal": f32(np.zeros(8)),
    "signed": f32([-2, -1, 0, 1, 2, -0.5, 0.5, 3]),
    "peaked": f32([8, 1, 0.5, 0.25, 0, -1, -3, -6]),
}
RANDOM = {f"random{i}": f32(rng.normal(0, 3, size=int(n))) for i, n in
          enumerate([8, 16, 50, 50, 200, 1000])}
RANDOM["random_ties"] = f32(np.round(rng.normal(0, 2, size=64)))  # many exact ties
RANDOM["random_inf"] = f32(np.where(rng.random(100) < 0.3, -INF, rng.normal(0, 2, size=100)))
NANS = f32([1, np.nan, INF, -INF, 0, -2, 3, np.nan])
VECTORS = {**FIXED, **RANDOM}

cases = []
expected = []


def add(case, want):
    case["name"] = f"{case.get('stage', case['kind'])}#{len(cases)}"
    cases.append(case)
    expected.append(want)


def stage(name, params, s, want, tokens=(), prompt_len=0):
    add({"kind": "stage", "stage": name, "params": params, "scores": [enc(x) for x in s],
         "tokens": [int(t) for t in tokens], "prompt_len": prompt_len}, want)


def history(vocab, length):
    # Small alphabets make repeats and n-gram matches likely.
    alphabet = rng.choice(vocab, size=min(vocab, 5), replace=False)
    return [int(t) for t in rng.choice(alphabet, size=length)]


# --- processors (no sampling needed) ---
for vname, s in {**VECTORS, "nans": NANS}.items():
    v = len(s)
    for t in (0.5, 0.7, 1.3, 2.0):
        stage("temperature", {"t": t}, s, hf.temperature(s, t))
    toks = history(v, 12)
    for pen in (1.1, 0.8, 2.0):
        stage("repetition_penalty", {"penalty": pen}, s, hf.repetition_penalty(s, toks, pen), toks, 5)
    for pen in (0.5, -0.3, 1.5):
        stage("presence_penalty", {"penalty": pen}, s, hf.presence_penalty(s, toks[5:], pen), toks, 5)
        stage("frequency_penalty", {"penalty": pen}, s, hf.frequency_penalty(s, toks[5:], pen), toks, 5)
    stage("suppress_tokens", {"tokens": [0, v - 1, 2]}, s, hf.suppress_tokens(s, [0, v - 1, 2]))
    stage("remove_invalid_values", {}, s, hf.inf_nan_remove(s))

for vname, s in VECTORS.items():
    v = len(s)
    for n in (1, 2, 3, 4):
        for length in (1, 2, 6, 20):
            toks = history(v, length)
            stage("no_repeat_ngram_size", {"n": n}, s, hf.no_repeat_ngram(s, toks, n), toks, 0)
    toks = history(v, 10)
    pairs = [([toks[-1], 1], -2.5), ([1], 1.5), ([toks[-2], toks[-1], 3], 4.0), ([5, 6, 7], -1.0),
             ([toks[-1], 3], 0.75), (toks[-9:] + [2], 2.0), (toks + [4], 3.0), ([0], -0.25)]
    stage("sequence_bias", {"bias": pairs}, s, hf.sequence_bias(s, toks, pairs), toks, 4)
    words = [[toks[-1], 2], [3], [v - 1], [toks[-2], toks[-1], 4], [6, 6, 6]]
    eos = [v - 1]
    stage("bad_words_ids", {"words": words, "eos": eos}, s, hf.bad_words(s, toks, words, eos), toks, 4)
    for m in (0, 5, 10, 11, 30):
        stage("min_length", {"min": m, "eos": [1, 3]}, s, hf.min_length(s, toks, m, [1, 3]), toks, 4)
        stage("min_new_tokens", {"min": m, "eos": [2]}, s, hf.min_new_tokens(s, toks, 4, m, [2]), toks, 4)

# --- warpers ---
for vname, s in VECTORS.items():
    v = len(s)
    for k in (1, 2, 3, 5, 8, 20, 5000):
        for keep in (1, 3):
            stage("top_k", {"k": k, "min_keep": keep}, s, hf.top_k(s, k, keep, True))
            stage("top_k", {"k": k, "min_keep": keep, "keep_ties": False}, s, hf.top_k(s, k, keep, False))
    for p in (0.0, 0.1, 0.25, 0.5, 0.75, 0.8, 0.9, 0.95, 1.0):
        for keep in (1, 2):
            stage("top_p", {"p": p, "min_keep": keep}, s, hf.top_p(s, p, keep))
            stage("top_p", {"p": p, "min_keep": keep, "rule": "llama.cpp"}, s, hf.top_p_llama(s, p, keep))
    for p in (0.0, 0.05, 0.1, 0.5, 1.0):
        for keep in (1, 2):
            stage("min_p", {"p": p, "min_keep": keep}, s, hf.min_p(s, p, keep))
    for mass in (0.2, 0.5, 0.9, 0.99):
        for keep in (1, 2):
            stage("typical_p", {"mass": mass, "min_keep": keep}, s, hf.typical_p(s, mass, keep))
    for eps in (1e-4, 0.01, 0.1, 0.3):
        stage("epsilon_cutoff", {"epsilon": eps}, s, hf.epsilon_cutoff(s, eps))
        stage("eta_cutoff", {"eta": eps}, s, hf.eta_cutoff(s, eps))
        stage("epsilon_cutoff", {"epsilon": eps, "min_keep": 3}, s, hf.epsilon_cutoff(s, eps, 3))

    # llama.cpp's: top-n-sigma and dynamic temperature (entropy-scaled; range > t reaches 0)
    for n in (0.5, 1.0, 2.0, 3.0):
        stage("top_n_sigma", {"n": n}, s, llama.top_n_sigma(s, n))
    for t, rg, ex in ((1.0, 0.5, 1.0), (0.7, 0.3, 2.0), (1.2, 0.8, 0.5), (0.5, 0.5, 1.0),
                      (0.3, 1.0, 1.0), (1.0, 0.5, 0.0)):
        stage("temperature", {"t": t, "dynatemp_range": rg, "dynatemp_exponent": ex}, s,
              llama.dynatemp(s, t, rg, ex))
    # XTC: certain (probability 1) and by the coin of (seed, stream, step), steps 0..5
    for prob, thr, keep, seed, stream in ((1.0, 0.1, 1, 0, 0), (1.0, 0.05, 1, 7, 0),
                                          (1.0, 0.0, 1, 1, 0), (1.0, 0.2, 3, 2, 1),
                                          (1.0, 0.6, 1, 3, 0), (0.5, 0.1, 1, 11, 2),
                                          (0.5, 0.02, 2, 12, 0)):
        for step in (range(6) if prob < 1 else (0,)):
            toks = [1] * (2 + step)
            stage("xtc", {"probability": prob, "threshold": thr, "min_keep": keep, "seed": seed,
                          "stream": stream}, s,
                  llama.xtc(s, prob, thr, keep, llama.xtc_coin(seed, stream, step)), toks, 2)

# --- llama.cpp's DRY: histories with repeats, breakers over a made-up vocabulary ---
PIECES = ["a", "b", "c", "ab", "\n", "x:", ":", "\"", "*", "q", "q*", "z", "\n\n", "hello",
          "a\n", "::b", "*z", " ", "b:", "!", "\"a", "w"]
DEFAULT_BREAKERS = ["\n", ":", "\"", "*"]
BREAKER_SETS = [DEFAULT_BREAKERS, ["ab:", "q*z", "\n\n", "", "y" * 45 + "!"], ["hello world"], []]


def fake_texts(v):
    return [PIECES[i % len(PIECES)] if i < 2 * len(PIECES) else
            PIECES[int(rng.integers(len(PIECES)))] + PIECES[int(rng.integers(len(PIECES)))]
            for i in range(v)]


def toy_encode(texts):
    # Greedy longest match over the made-up vocabulary (the lowest id of equal texts); every
    # single character the breakers use is a token of its own among the first pieces, but a
    # character no token spells becomes nothing.
    by_text = {}
    for i, t in enumerate(texts):
        by_text.setdefault(t, i)
    longest = max(len(t) for t in texts)

    def encode(text):
        out, i = [], 0
        while i < len(text):
            for n in range(min(longest, len(text) - i), 0, -1):
                if text[i:i + n] in by_text:
                    out.append(by_text[text[i:i + n]])
                    i += n
                    break
            else:
                i += 1
        return out
    return encode


def dry_setup(v, breakers):
    texts = fake_texts(v)
    encode = toy_encode(texts)
    asked = {}

    def recording(text):
        asked[text] = encode(text)
        return asked[text]
    heads = llama.dry_heads(breakers, texts, recording)
    return texts, asked, heads


def repeating_history(v, length):
    # A phrase said twice or three times with noise between, ending inside a repeat.
    alphabet = [int(t) for t in rng.choice(v, size=min(v, 6), replace=False)]
    phrase = [int(t) for t in rng.choice(alphabet, size=int(rng.integers(2, 7)))]
    toks = []
    while len(toks) < length:
        toks += phrase if rng.random() < 0.5 else [int(rng.choice(alphabet))]
    return toks[:length] + phrase[:int(rng.integers(1, len(phrase) + 1))]


DRY_SETTINGS = [(0.8, 1.75, 2, -1), (1.5, 1.1, 1, -1), (0.5, 2.0, 0, -1), (1.0, 1.75, 2, 8),
                (2.0, 3.0, 3, 20), (1.0, 1.0, 2, -1), (0.8, 1.75, 2, 0), (0.0, 1.75, 2, -1),
                (1e-3, 1.0000005, 1, -1), (0.7, 1e6, 1, -1)]
for vname, s in VECTORS.items():
    v = len(s)
    for b_i, breakers in enumerate(BREAKER_SETS):
        texts, asked, heads = dry_setup(v, breakers)
        for trial in range(3):
            toks = repeating_history(v, 10 + 15 * trial) if trial else history(v, 40)
            for mult, base, allowed, last_n in DRY_SETTINGS[b_i::2] if b_i else DRY_SETTINGS:
                params = {"multiplier": mult, "base": base, "allowed_length": allowed,
                          "last_n": last_n, "breakers": breakers, "texts": texts,
                          "encodings": asked}
                stage("dry", params, s, llama.dry(s, toks, mult, base, allowed, last_n, heads),
                      toks, 3)
    # No breaker table at all (the stage built without one)
    toks = repeating_history(v, 30)
    stage("dry", {"multiplier": 0.9, "base": 1.6, "allowed_length": 2, "last_n": -1}, s,
          llama.dry(s, toks, 0.9, 1.6, 2, -1, {}), toks, 0)
# A breaker right at the end caps every repeat at 0; one earlier caps them at its distance.
texts, asked, heads = dry_setup(22, DEFAULT_BREAKERS)
for toks in ([0, 1, 2, 0, 1, 2, 0, 1], [0, 1, 6, 0, 1, 2, 0, 1], [0, 1, 2, 0, 1, 2, 0, 1, 6],
             [0, 1, 2, 4, 0, 1, 2, 0, 1], [9, 11, 0, 1, 9, 11, 0, 1, 9], [10, 11, 3, 10, 11, 3]):
    s = f32(rng.normal(0, 2, size=22))
    for allowed in (0, 1, 2):
        params = {"multiplier": 1.0, "base": 2.0, "allowed_length": allowed, "last_n": -1,
                  "breakers": DEFAULT_BREAKERS, "texts": texts, "encodings": asked}
        stage("dry", params, s, llama.dry(s, toks, 1.0, 2.0, allowed, -1, heads), toks, 0)


# --- llama.cpp's mirostat 1 and 2 over several steps: mu follows the chosen tokens ---
def mirostat_rows(v, n):
    rows = []
    for k in range(n):
        row = rng.normal(0, float(rng.choice([0.5, 2.0, 4.0])), size=v)
        if k % 3 == 1:
            row = np.round(row)  # ties
        if k % 4 == 2:
            row[rng.random(v) < 0.2] = -INF
        rows.append(f32(row))
    return rows


def mirostat_run(version, tau, eta, rows, chains=None):
    mu, kept_rows, accepted, mus = 2 * tau, [], [], []
    for k, row in enumerate(rows):
        kept = llama.mirostat_keep(row, version, mu, len(row)) if chains is None else chains(row, mu)
        live = np.flatnonzero(kept > -INF)
        if k == 3:  # a forced token outside the pool (replay --fork): mu stays
            out = np.flatnonzero(~(kept > -INF))
            token = int(out[0]) if len(out) else int(live[0])
        else:
            x = kept[live].astype(np.float64)
            p = np.exp(x - x.max())
            token = int(rng.choice(live, p=p / p.sum()))
        mu = llama.mirostat_update(kept, token, mu, tau, eta)
        kept_rows.append(kept)
        accepted.append(token)
        mus.append(mu)
    return kept_rows, accepted, mus


def steps(case, rows, want_rows, accepted, mus, tokens=(), prompt_len=0, stages=None):
    case.update({"kind": "steps", "rows": [[enc(x) for x in r] for r in rows], "accept": accepted,
                 "tokens": [int(t) for t in tokens], "prompt_len": prompt_len})
    add(case, ("steps", want_rows, mus, stages))


for v in (8, 50, 200, 1000, 151):
    for version in (1, 2):
        for tau, eta in ((5.0, 0.1), (3.0, 0.5), (1.0, 0.2), (8.0, 0.0), (0.0, 1.0)):
            rows = mirostat_rows(v, 10)
            kept, accepted, mus = mirostat_run(version, tau, eta, rows)
            steps({"stage": "mirostat", "params": {"version": version, "tau": tau, "eta": eta}},
                  rows, kept, accepted, mus)

# --- invalid parameters must be errors naming the stage or the parameter ---
XTC = {"probability": 1.0, "threshold": 0.1, "seed": 0, "stream": 0}
DYN = {"t": 1.0, "dynatemp_range": 0.5, "dynatemp_exponent": 1.0}
DRY = {"multiplier": 0.8, "base": 1.75, "allowed_length": 2, "last_n": -1}
MIRO = {"version": 2, "tau": 5.0, "eta": 0.1}
for name, params, named in [
        ("temperature", {"t": -1.0}, "temperature"), ("temperature", {"t": 0.0}, "temperature"),
        ("top_p", {"p": 1.5}, "top_p"), ("top_p", {"p": -0.1}, "top_p"), ("top_k", {"k": 0}, "top_k"),
        ("min_p", {"p": 2.0}, "min_p"), ("typical_p", {"mass": 0.0}, "typical_p"),
        ("repetition_penalty", {"penalty": 0.0}, "repetition_penalty"),
        ("epsilon_cutoff", {"epsilon": 1.0}, "epsilon_cutoff"),
        ("top_n_sigma", {"n": 0.0}, "top_n_sigma"),
        ("temperature", dict(DYN, dynatemp_range=-1.0), "dynatemp_range"),
        ("temperature", dict(DYN, dynatemp_exponent=-1.0), "dynatemp_exponent"),
        ("xtc", dict(XTC, probability=1.5), "xtc_probability"),
        ("xtc", dict(XTC, threshold=-0.1), "xtc_threshold"),
        ("dry", dict(DRY, multiplier=-1.0), "dry_multiplier"),
        ("dry", dict(DRY, base=0.5), "dry_base"),
        ("dry", dict(DRY, allowed_length=-1), "dry_allowed_length"),
        ("dry", dict(DRY, last_n=-2), "dry_penalty_last_n"),
        ("mirostat", dict(MIRO, version=3), "mirostat"),
        ("mirostat", dict(MIRO, version=0), "mirostat"),
        ("mirostat", dict(MIRO, tau=-1.0), "mirostat_tau"),
        ("mirostat", dict(MIRO, eta=-0.1), "mirostat_eta")]:
    stage(name, params, FIXED["ties"], ("error", named))
# A warper given NaN must refuse instead of sorting garbage.
stage("top_p", {"p": 0.9}, NANS, ("error", "top_p"))

# --- chains: presets, --order, and the processor-order experiment ---
PRESETS = {
    "hf": ["sequence_bias", "repetition_penalty", "presence_penalty", "frequency_penalty", "dry",
           "no_repeat_ngram_size", "bad_words_ids", "min_length", "min_new_tokens",
           "remove_invalid_values", "suppress_tokens", "temperature", "top_n_sigma", "top_k",
           "top_p", "min_p", "typical_p", "epsilon_cutoff", "eta_cutoff", "xtc"],
    # vLLM: penalties, then temperature, min-p, top-k/top-p
    "vllm": ["bad_words_ids", "min_length", "min_new_tokens", "sequence_bias", "repetition_penalty",
             "frequency_penalty", "presence_penalty", "dry", "no_repeat_ngram_size", "suppress_tokens",
             "remove_invalid_values", "temperature", "top_n_sigma", "min_p", "top_k", "top_p",
             "typical_p", "epsilon_cutoff", "eta_cutoff", "xtc"],
    # llama.cpp: penalties, dry, top-k, typical, top-p, min-p, xtc, temperature last
    "llama.cpp": ["sequence_bias", "bad_words_ids", "min_length", "min_new_tokens",
                  "suppress_tokens", "repetition_penalty", "frequency_penalty", "presence_penalty",
                  "dry", "no_repeat_ngram_size", "remove_invalid_values", "top_n_sigma", "top_k",
                  "typical_p", "top_p", "min_p", "epsilon_cutoff", "eta_cutoff", "xtc",
                  "temperature"],
}


WARPERS = {"temperature", "top_n_sigma", "top_k", "top_p", "min_p", "typical_p", "epsilon_cutoff",
           "eta_cutoff", "xtc"}
LLAMA_MIROSTAT_DROPS = {"repetition_penalty", "presence_penalty", "frequency_penalty", "dry"}


def ref_chain(s, cfg, toks, prompt_len, heads=None, mu=None):
    # mirostat (sampling): llama.cpp's chain is logit bias, plain temperature, mirostat; the
    # truncations leave in every preset, the penalties and DRY in llama.cpp's too.
    mirostat = cfg.get("mirostat", 0)
    preset = cfg.get("order_preset", "hf")
    order = list(PRESETS[preset])
    if cfg.get("order"):
        wanted = cfg["order"]
        it = iter(wanted)
        order = [next(it) if name in wanted else name for name in order]
    is_llama = preset == "llama.cpp"
    gen = toks[prompt_len:]
    # repeat_last_n >= 0 (llama.cpp's window): all three penalties count the last n tokens of
    # prompt + generated; -1: repetition over all, presence and frequency over generated.
    last_n = cfg.get("repeat_last_n", -1)
    window = (toks[len(toks) - last_n:] if last_n > 0 else []) if last_n >= 0 else None
    keep = max(1, cfg.get("min_keep", 0))
    applied = []
    for name in order:
        if mirostat and ((name in WARPERS and name != "temperature") or
                         (is_llama and name in LLAMA_MIROSTAT_DROPS)):
            continue
        if mirostat and name == "temperature":
            if cfg.get("temperature", 1.0) == 1.0:
                continue
            s = hf.temperature(s, cfg["temperature"])
        elif name == "dry" and cfg.get("dry_multiplier", 0.0) != 0 and \
                cfg.get("dry_penalty_last_n", -1) != 0:
            s = llama.dry(s, toks, cfg["dry_multiplier"], cfg.get("dry_base", 1.75),
                          cfg.get("dry_allowed_length", 2), cfg.get("dry_penalty_last_n", -1),
                          heads or {})
        elif name == "repetition_penalty" and cfg.get("repetition_penalty", 1.0) != 1.0:
            s = hf.repetition_penalty(s, toks if window is None else window,
                                      cfg["repetition_penalty"])
        elif name == "presence_penalty" and cfg.get("presence_penalty", 0.0) != 0.0:
            s = hf.presence_penalty(s, gen if window is None else window, cfg["presence_penalty"])
        elif name == "frequency_penalty" and cfg.get("frequency_penalty", 0.0) != 0.0:
            s = hf.frequency_penalty(s, gen if window is None else window,
                                     cfg["frequency_penalty"])
        elif name == "temperature" and cfg.get("dynatemp_range", 0.0) > 0:
            s = llama.dynatemp(s, cfg.get("temperature", 1.0), cfg["dynatemp_range"],
                               cfg.get("dynatemp_exponent", 1.0))
        elif name == "temperature" and cfg.get("temperature", 1.0) != 1.0:
            s = hf.temperature(s, cfg["temperature"])
        elif name == "top_n_sigma" and cfg.get("top_n_sigma", -1.0) > 0:
            s = llama.top_n_sigma(s, cfg["top_n_sigma"])
        elif name == "top_k" and cfg.get("top_k", 50) != 0:
            # llama.cpp's top_k ignores min_keep
            s = hf.top_k(s, cfg.get("top_k", 50), 1 if is_llama else keep, not is_llama)
        elif name == "top_p" and cfg.get("top_p", 1.0) < 1.0:
            s = hf.top_p_llama(s, cfg["top_p"], keep) if is_llama else \
                hf.top_p(s, cfg["top_p"], keep)
        elif name == "min_p" and cfg.get("min_p", 0.0) > 0:
            s = hf.min_p(s, cfg["min_p"], keep)
        elif name == "typical_p" and cfg.get("typical_p", 1.0) < 1.0:
            s = hf.typical_p(s, cfg["typical_p"], keep)
        elif name == "xtc" and cfg.get("xtc_probability", 0.0) > 0 and \
                cfg.get("xtc_threshold", 0.1) <= 0.5:
            s = llama.xtc(s, cfg["xtc_probability"], cfg.get("xtc_threshold", 0.1), keep,
                          llama.xtc_coin(cfg.get("seed", 0), 0, len(gen)))
        else:
            continue
        applied.append(name)
    if mirostat:
        s = llama.mirostat_keep(s, mirostat, 2 * cfg.get("mirostat_tau", 5.0) if mu is None else mu,
                                len(s))
        applied.append("mirostat")
    return s, applied


def chain(cfg, s, toks=(), prompt_len=0, dry_vocab=None):
    heads = None
    case = {"kind": "chain", "config": cfg, "scores": [enc(x) for x in s], "tokens": list(toks),
            "prompt_len": prompt_len}
    if dry_vocab:
        texts, asked, heads = dry_vocab
        case.update({"texts": texts, "encodings": asked})
    want, applied = ref_chain(s, cfg, list(toks), prompt_len, heads)
    add(case, ("chain", want, applied))
    return want


crafted = f32([3.0, 2.5, 2.0, 1.5, 1.0, 0.5, 0.0, -1.0])
experiment = {"do_sample": True, "temperature": 2.0, "top_k": 5, "top_p": 0.8}
pool_a = chain(dict(experiment), crafted)
pool_b = chain(dict(experiment, order=["top_k", "top_p", "temperature"]), crafted)
n_a = int(np.sum(pool_a > -INF))
n_b = int(np.sum(pool_b > -INF))
order_experiment = (n_a, n_b)

for preset in ("hf", "vllm", "llama.cpp"):
    for vname in ("ties", "random2", "random4", "random_ties"):
        s = VECTORS[vname]
        toks = history(len(s), 12)
        cfg = {"do_sample": True, "order_preset": preset, "repetition_penalty": 1.3,
               "presence_penalty": 0.4, "frequency_penalty": 0.2, "temperature": 0.7,
               "top_k": 3, "top_p": 0.9, "min_p": 0.05}
        chain(cfg, s, toks, 5)
        chain(dict(cfg, order=["min_p", "temperature", "top_k"]), s, toks, 5)
        # llama.cpp's top-n-sigma and dynamic temperature in each preset's place
        chain(dict(cfg, top_k=0, top_n_sigma=1.5, dynatemp_range=0.4, dynatemp_exponent=1.5),
              s, toks, 5)
        # XTC last among the truncations (before temperature in llama.cpp's)
        chain(dict(cfg, top_k=0, top_p=1.0, min_p=0.0, xtc_probability=1.0, xtc_threshold=0.05),
              s, toks, 5)
        chain(dict(cfg, top_k=0, xtc_probability=0.5, xtc_threshold=0.02, seed=9), s, toks, 5)
        # llama.cpp's penalty window (the last n of prompt + generated) and min_keep
        for n in (0, 1, 4, 9, 40):
            chain(dict(cfg, repeat_last_n=n), s, toks, 5)
        for k in (2, 3, 6):
            chain(dict(cfg, top_k=0, min_keep=k, top_p=0.2, min_p=0.6, typical_p=0.5), s, toks, 5)
            chain(dict(cfg, top_k=1, min_keep=k, xtc_probability=1.0, xtc_threshold=0.01), s,
                  toks, 5)
        # DRY with the penalties (default breakers over a made-up vocabulary), then mirostat: the
        # truncations leave, and in llama.cpp's preset the penalties and DRY too
        dv = dry_setup(len(s), DEFAULT_BREAKERS)
        rtoks = repeating_history(len(s), 20)
        chain(dict(cfg, dry_multiplier=0.8, dry_allowed_length=1), s, rtoks, 5, dv)
        chain(dict(cfg, dry_multiplier=1.2, dry_base=1.3, dry_penalty_last_n=9,
                   order=["dry", "repetition_penalty"]), s, rtoks, 5, dv)
        for version in (1, 2):
            chain(dict(cfg, mirostat=version, dynatemp_range=0.3, top_n_sigma=1.0,
                       xtc_probability=1.0), s, rtoks, 5)
            chain(dict(cfg, mirostat=version, mirostat_tau=2.0, dry_multiplier=0.8), s, rtoks, 5,
                  dv)
        # mirostat over steps inside the chain: mu from 2 tau, moved by each accepted token
        mcfg = dict(cfg, mirostat=2, mirostat_tau=3.0, mirostat_eta=0.3, dry_multiplier=0.5,
                    dry_allowed_length=1)
        texts, asked, heads = dv
        rows = mirostat_rows(len(s), 6)
        hist = list(rtoks)
        acc = []

        def in_chain(row, mu):
            return ref_chain(row, mcfg, hist, 5, heads, mu)[0]
        mu, want_rows, mus, stages_want = 2 * 3.0, [], [], ref_chain(rows[0], mcfg, hist, 5, heads)[1]
        for k, row in enumerate(rows):
            kept = in_chain(row, mu)
            live = np.flatnonzero(kept > -INF)
            x = kept[live].astype(np.float64)
            p = np.exp(x - x.max())
            token = int(rng.choice(live, p=p / p.sum()))
            mu = llama.mirostat_update(kept, token, mu, 3.0, 0.3)
            want_rows.append(kept)
            mus.append(mu)
            acc.append(token)
            hist.append(token)
        steps({"config": mcfg, "texts": texts, "encodings": asked}, rows, want_rows, acc, mus,
              rtoks, 5, stages_want)

# Settings refused as a whole (validate, build_chain), each naming its parameter
for cfg, named in [({"mirostat": 3}, "mirostat"), ({"mirostat": -1}, "mirostat"),
                   ({"do_sample": True, "mirostat": 2, "num_beams": 2}, "mirostat"),
                   ({"mirostat_tau": -1.0}, "mirostat_tau"), ({"mirostat_eta": -0.5}, "mirostat_eta"),
                   ({"dry_multiplier": -0.1}, "dry_multiplier"), ({"dry_base": 0.9}, "dry_base"),
                   ({"dry_allowed_length": -1}, "dry_allowed_length"),
                   ({"dry_penalty_last_n": -3}, "dry_penalty_last_n"),
                   # breakers without a vocabulary to resolve them against
                   ({"dry_multiplier": 0.8}, "dry_sequence_breakers")]:
    add({"kind": "chain", "config": cfg, "scores": [enc(x) for x in FIXED["ties"]], "tokens": [],
         "prompt_len": 0}, ("error", named))
# An empty breaker list needs no vocabulary
chain({"dry_multiplier": 0.8, "dry_sequence_breakers": [""]}, FIXED["ties"],
      [0, 1, 2, 0, 1, 2, 0, 1], 0)

# --- sampling rule, greedy, generator, scoring ---
for vname, s in VECTORS.items():
    draws = [0.0, 0.25, 0.5, 0.999999999] + list(rng.random(20))
    add({"kind": "sample", "scores": [enc(x) for x in s], "draws": draws},
        ("sample", [hf.sample_inverse_cdf(s, d) for d in draws], int(np.argmax(s))))

assert hf.splitmix64(0)[1] == 0xE220A8397B1DCDAF, "oracle self-check: splitmix64(0)"
for seed in (0, 1, 42, 2**64 - 1):
    a, b = hf.Xoshiro256StarStar(seed), hf.Xoshiro256StarStar(seed)
    add({"kind": "rng", "seed": seed, "n": 16},
        ("rng", [a.next() for _ in range(16)], [b.uniform() for _ in range(16)]))

for seed, index in ((0, 1), (7, 2), (2**64 - 1, 3)):
    g = hf.Xoshiro256StarStar(seed)
    for _ in range(index):
        g.jump()
    add({"kind": "rng_stream", "seed": seed, "index": index, "n": 8},
        ("rng_stream", [g.next() for _ in range(8)]))

for trial in range(5):
    vocab, prompt, cont = 60, [1, 2, 3][: trial % 3 + 1], [int(x) for x in rng.integers(0, 60, 6)]
    rows = rng.normal(0, 2.5, size=(len(prompt) + len(cont), vocab)).astype(F32)
    lps = [float(hf.log_softmax(rows[len(prompt) - 1 + i])[t]) for i, t in enumerate(cont)]
    ranks = [int(1 + np.sum(rows[len(prompt) - 1 + i] > rows[len(prompt) - 1 + i][t])) for i, t in enumerate(cont)]
    add({"kind": "score", "rows": [[enc(x) for x in r] for r in rows], "prompt": prompt,
         "continuation": cont}, ("score", lps, ranks))


# --- run the driver and compare ---
def same_scores(got, want):
    got = np.array([dec(x) for x in got], dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape {got.shape} vs {want.shape}"
    for label, g, w in (("nan", np.isnan(got), np.isnan(want)),
                        ("-inf", got == -INF, want == -INF), ("+inf", got == INF, want == INF)):
        if not np.array_equal(g, w):
            return f"{label} positions differ: got {np.nonzero(g)[0]}, want {np.nonzero(w)[0]}"
    finite = np.isfinite(want)
    if not np.allclose(got[finite], want[finite], rtol=2e-7, atol=1e-6):
        i = np.argmax(np.abs(got[finite] - want[finite]))
        return f"value mismatch: got {got[finite][i]!r}, want {want[finite][i]!r}"
    return None


def main():
    driver = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        cin, cout = os.path.join(tmp, "cases.json"), os.path.join(tmp, "results.json")
        with open(cin, "w") as f:
            json.dump({"cases": cases}, f)
        subprocess.run([driver, cin, cout], check=True)
        with open(cout) as f:
            results = json.load(f)["results"]
    assert len(results) == len(cases), (len(results), len(cases))
    failures, per_stage = [], {}
    for case, want, got in zip(cases, expected, results):
        key = case.get("stage", case["kind"])
        per_stage[key] = per_stage.get(key, 0) + 1
        problem = None
        if isinstance(want, tuple) and want[0] == "error":
            if "error" not in got:
                problem = "expected an error, got a result"
            elif want[1] not in got["error"]:
                problem = f"error does not name {want[1]}: {got['error']}"
        elif "error" in got:
            problem = "unexpected error: " + got["error"]
        elif case["kind"] == "stage":
            problem = same_scores(got["scores"], want)
        elif case["kind"] == "chain":
            problem = same_scores(got["scores"], want[1])
            if not problem and got["stages"] != want[2]:
                problem = f"stages {got['stages']} vs {want[2]}"
        elif case["kind"] == "steps":
            _, want_rows, mus, stages_want = want
            for k, (g, w) in enumerate(zip(got["steps"], want_rows)):
                problem = same_scores(g, w)
                if problem:
                    problem = f"step {k}: {problem}"
                    break
            if not problem and not np.allclose(got["mus"], mus, rtol=1e-9, atol=1e-9):
                problem = f"mu {got['mus']} vs {mus}"
            if not problem and stages_want is not None and got["stages"] != stages_want:
                problem = f"stages {got['stages']} vs {stages_want}"
        elif case["kind"] == "sample":
            if got["tokens"] != want[1] or got["greedy"] != want[2]:
                problem = f"tokens {got['tokens']} / {got['greedy']} vs {want[1]} / {want[2]}"
        elif case["kind"] == "rng":
            if got["u64"] != want[1] or got["uniform"] != want[2]:
                problem = f"rng {got['u64'][:3]}... vs {want[1][:3]}..."
        elif case["kind"] == "rng_stream":
            if got["u64"] != want[1]:
                problem = f"stream {case['index']}: {got['u64'][:2]}... vs {want[1][:2]}..."
        elif case["kind"] == "score":
            if not np.allclose(got["logprobs"], want[1], rtol=1e-9, atol=1e-9) or got["ranks"] != want[2]:
                problem = f"score {got['logprobs']} / {got['ranks']} vs {want[1]} / {want[2]}"
            elif abs(got["perplexity"] - np.exp(-np.mean(want[1]))) > 1e-9 * got["perplexity"]:
                problem = "perplexity"
        if problem:
            failures.append(f"{case['name']} ({json.dumps(case.get('params', case.get('config', {})))}): {problem}")
    print(f"{len(cases)} cases against numpy: " + ", ".join(f"{k} {v}" for k, v in sorted(per_stage.items())))
    n_a, n_b = order_experiment
    print(f"order experiment: temperature->top_k->top_p keeps {n_a} tokens, "
          f"top_k->top_p->temperature keeps {n_b}")
    if n_a == n_b:
        failures.append("order experiment: the two orders gave the same pool size")
    for f in failures[:30]:
        print("FAIL", f)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all match")
    return 0


if __name__ == "__main__":
    sys.exit(main())
