"""numpy re-statements of llama.cpp samplers logitscope offers beyond transformers' set, written
from llama.cpp's documentation (tools/server README, the samplers' papers) and a reading of
llama-sampling.cpp, not copied. Inputs are float32 score vectors with -inf for tokens earlier
stages removed (llama.cpp drops those from its candidate array instead: the same thing);
arithmetic in float64, results cast back to float32.

  top_n_sigma(s, n): keep scores >= max - n * std, mean and population std over the candidates.
  dynatemp(s, t, range, exponent): T' = max(0, t - range) + (t + range - max(0, t - range)) *
    (H / log(count)) ** exponent, H the entropy of the candidates' softmax; scores / T' (T' = 0:
    only the best candidate, the lowest id among equals).
  xtc(s, probability, threshold, min_keep, coin): when coin <= probability and threshold <= 0.5,
    the candidates with softmax probability >= threshold, if two or more and min_keep would
    remain, all lose but the last of them by (score desc, id asc). xtc_coin(seed, stream, step)
    restates logitscope's counter-based coin (splitmix64, see src/decode/xtc.h); llama.cpp
    draws its own from a seeded std::mt19937.
  dry_heads(breakers, texts, encode): breaker strings -> {head token: set of tail tuples}: each
    breaker cut to 40 bytes; a token whose text contains it heads an empty tail; a token whose
    text ends with a proper prefix of it (the text from some byte on is one) heads the encoding
    of the breaker's remaining bytes, cut to 20 tokens.
  dry(s, history, multiplier, base, allowed, last_n, heads): over the last last_n tokens (-1:
    all): the cap is the distance back to where the most recent breaker (head + tail) ends; for
    every earlier position, the longest run ending there that equals the run ending at the end
    (capped); the token after it scores multiplier * base^(run - allowed) less when run >=
    allowed, the longest run per token, tokens heading an empty tail exempt; the exponent
    capped at int(88.7228391 / ln base).
  mirostat_keep(s, version, mu, vocab): v2 keeps the best candidates with -log2 p <= mu (at
    least one); v1 fits s = sum t_i b_i / sum t_i^2 (t_i = ln((i+2)/(i+1)), b_i = ln(p_i/p_i+1))
    over the 100 best, e = s - 1, k = (e 2^mu / (1 - vocab^-e))^(1/s), keeps the int(k) (>= 1)
    best; ties by lower id. mirostat_update(kept, token, mu, tau, eta): mu - eta (-log2 p - tau),
    p the token's softmax probability in the kept scores (unchanged when it was removed)."""
import math
import numpy as np

from hf_formulas import splitmix64

F32 = np.float32
NEG_INF = -np.inf


def top_n_sigma(s, n):
    s = np.asarray(s, dtype=F32)
    live = s > NEG_INF
    if live.sum() <= 1:
        return s.copy()
    x = s[live].astype(np.float64)
    cut = x.max() - n * np.sqrt(np.mean((x - x.mean()) ** 2))
    out = s.copy()
    out[s.astype(np.float64) < cut] = NEG_INF
    return out


def xtc_coin(seed, stream, step):
    x = seed ^ int.from_bytes(b"xtc-coin", "big")
    x = splitmix64(x)[1] ^ stream
    x = splitmix64(x)[1] ^ step
    return (splitmix64(x)[1] >> 11) * 2.0 ** -53


def xtc(s, probability, threshold, min_keep, coin):
    s = np.asarray(s, dtype=F32)
    out = s.copy()
    if probability <= 0 or threshold > 0.5 or coin > probability:
        return out
    live = np.flatnonzero(s > NEG_INF)
    x = s[live].astype(np.float64)
    p = np.exp(x - x.max())
    p /= p.sum()
    above = [int(i) for i, q in zip(live, p) if q >= threshold]
    if len(above) < 2 or len(live) - (len(above) - 1) < min_keep:
        return out
    above.sort(key=lambda i: (-float(s[i]), i))
    out[above[:-1]] = NEG_INF
    return out


def dynatemp_value(s, t, rng, exponent):
    s = np.asarray(s, dtype=F32)
    x = s[s > NEG_INF].astype(np.float64)
    if len(x) <= 1:
        return t
    p = np.exp(x - x.max())
    p /= p.sum()
    nz = p[p > 0]
    h = -(nz * np.log(nz)).sum()
    norm = min(max(h / np.log(len(x)), 0.0), 1.0)
    lo, hi = max(0.0, t - rng), t + rng
    return lo + (hi - lo) * norm ** exponent


def dynatemp(s, t, rng, exponent):
    s = np.asarray(s, dtype=F32)
    if (s > NEG_INF).sum() <= 1:
        return s.copy()
    tt = dynatemp_value(s, t, rng, exponent)
    if tt > 0:
        return (s.astype(np.float64) / tt).astype(F32)
    out = np.full_like(s, NEG_INF)
    best = int(np.lexsort((np.arange(len(s)), -s.astype(np.float64)))[0])
    out[best] = s[best]
    return out


MAX_BREAKER_BYTES = 40
MAX_TAIL_TOKENS = 20


def dry_heads(breakers, texts, encode):
    heads = {}
    for b in breakers:
        b = b.encode()[:MAX_BREAKER_BYTES]
        if not b:
            continue
        for tok, text in enumerate(texts):
            w = text.encode()
            if b in w:
                heads.setdefault(tok, set()).add(())
                continue
            for j in range(len(w)):
                rest = w[j:]
                if b.startswith(rest):  # shorter than b: b itself is not in w
                    tail = tuple(encode(b[len(rest):].decode())[:MAX_TAIL_TOKENS])
                    heads.setdefault(tok, set()).add(tail)
    return heads


def dry(s, history, multiplier, base, allowed, last_n, heads):
    s = np.asarray(s, dtype=F32)
    if multiplier == 0 or last_n == 0:
        return s.copy()
    w = list(history) if last_n < 0 else list(history)[max(0, len(history) - last_n):]
    n = len(w)
    if n <= allowed:
        return s.copy()
    cap = n
    for i in range(n):  # the token i places from the end heads a breaker?
        tails = heads.get(w[n - 1 - i], ())
        fits = [len(t) for t in tails if len(t) <= i and tuple(w[n - i:n - i + len(t)]) == t]
        if fits:
            cap = i - max(fits)
            break
    if cap < allowed:
        return s.copy()
    longest = {}
    for e in range(n - 1):  # runs ending at position e equal to the run ending at n - 1
        run = 0
        while run <= e and w[e - run] == w[n - 1 - run]:
            run += 1
        run = min(run, cap)
        if run >= allowed:
            longest[w[e + 1]] = max(longest.get(w[e + 1], 0), run)
    top = int(88.7228391 / math.log(base)) if base > 1.000001 else 0
    out = s.astype(np.float64)
    for tok, run in longest.items():
        if () in heads.get(tok, ()):
            continue
        ex = run - allowed
        if top > 0:
            ex = min(ex, top)
        out[tok] -= multiplier * base ** ex
    return out.astype(F32)


def mirostat_keep(s, version, mu, vocab):
    s = np.asarray(s, dtype=F32)
    live = [int(i) for i in np.flatnonzero(s > NEG_INF)]
    if len(live) <= 1:
        return s.copy()
    live.sort(key=lambda i: (-float(s[i]), i))
    x = s[live].astype(np.float64)
    p = np.exp(x - x.max())
    p /= p.sum()
    if version == 2:
        keep = 1
        while keep < len(p) and -math.log2(p[keep]) <= mu:
            keep += 1
    else:
        i = np.arange(min(99, len(p) - 1))
        t = np.log((i + 2.0) / (i + 1.0))
        with np.errstate(all="ignore"):  # float64 all through: inf and nan, never an exception
            b = np.log(p[i] / p[i + 1])
            zipf = np.float64((t * b).sum()) / np.float64((t * t).sum())
            e = zipf - 1
            k = np.power(e * np.power(2.0, mu) / (1 - np.power(np.float64(vocab), -e)), 1 / zipf)
        # k beyond int's range or nan: 1, as x86-64's float-to-int conversion gives INT_MIN
        keep = max(int(k), 1) if -2.0 ** 31 <= k < 2.0 ** 31 else 1
        keep = min(keep, len(p))
    out = np.full_like(s, NEG_INF)
    out[live[:keep]] = s[live[:keep]]
    return out


def mirostat_update(kept, token, mu, tau, eta):
    kept = np.asarray(kept, dtype=F32)
    if not kept[token] > NEG_INF:
        return mu
    x = kept[kept > NEG_INF].astype(np.float64)
    logp = float(kept[token]) - (x.max() + math.log(np.exp(x - x.max()).sum()))
    return mu - eta * (-logp / math.log(2) - tau)
