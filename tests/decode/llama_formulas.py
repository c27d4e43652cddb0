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
    draws its own from a seeded std::mt19937."""
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
