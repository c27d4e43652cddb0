"""numpy re-statements of Hugging Face transformers' logits processors and warpers (and of the
llama.cpp / OpenAI variants logitscope offers), written from the formulas as transformers states
them, vectorised the way transformers computes them. Inputs are float32 score vectors; the
arithmetic is float64 (as logitscope documents) and results are cast back to float32.

Ties: torch.sort on a small row is stable, so ascending sorts put the lower id first and
descending sorts put the lower id first too (np.lexsort with the id as the secondary key)."""
import numpy as np

F32 = np.float32
NEG_INF = -np.inf


def softmax(s):
    s = np.asarray(s, dtype=np.float64)
    m = np.max(s)
    if m == NEG_INF:
        return np.zeros_like(s)
    e = np.exp(s - m)
    return e / e.sum()


def log_softmax(s):
    s = np.asarray(s, dtype=np.float64)
    m = np.max(s)
    return s - (m + np.log(np.exp(s - m).sum()))


def desc_order(s):
    """Indices by score descending, lower id first among ties."""
    s = np.asarray(s, dtype=np.float64)
    return np.lexsort((np.arange(len(s)), -s))


def temperature(s, t):
    return (s.astype(np.float64) / t).astype(F32)


def repetition_penalty(s, input_ids, penalty):
    out = s.copy()
    ids = np.asarray(input_ids, dtype=np.int64)
    score = s[ids].astype(np.float64)  # gather (duplicates gather the same value)
    score = np.where(score < 0, score * penalty, score / penalty)
    out[ids] = score.astype(F32)  # scatter
    return out


def presence_penalty(s, generated, penalty):
    out = s.astype(np.float64)
    seen = np.zeros(len(s), dtype=bool)
    seen[np.asarray(generated, dtype=np.int64)] = True
    out = out - penalty * seen
    return out.astype(F32)


def frequency_penalty(s, generated, penalty):
    counts = np.bincount(np.asarray(generated, dtype=np.int64), minlength=len(s))
    return (s.astype(np.float64) - penalty * counts).astype(F32)


def no_repeat_ngram(s, input_ids, n):
    """transformers' _get_ngrams / _get_generated_ngrams / _calc_banned_ngram_tokens."""
    out = s.copy()
    cur_len = len(input_ids)
    if cur_len + 1 < n:
        return out
    generated_ngrams = {}
    gen_tokens = list(input_ids)
    for ngram in zip(*[gen_tokens[i:] for i in range(n)]):
        prev = tuple(ngram[:-1])
        generated_ngrams.setdefault(prev, []).append(ngram[-1])
    start_idx = cur_len + 1 - n
    ngram_idx = tuple(gen_tokens[start_idx:cur_len])
    banned = generated_ngrams.get(ngram_idx, [])
    out[banned] = NEG_INF
    return out


def sequence_bias(s, input_ids, bias_pairs):
    """SequenceBiasLogitsProcessor: a bias tensor from length-1 entries plus matching prefixes."""
    vocab = len(s)
    length_1 = np.zeros(vocab, dtype=np.float64)
    for seq, b in bias_pairs:
        if len(seq) == 1:
            length_1[seq[-1]] = b
    bias = np.zeros(vocab, dtype=np.float64) + length_1
    ids = list(input_ids)
    for seq, b in bias_pairs:
        if len(seq) == 1:
            continue
        if len(seq) > len(ids):
            continue
        prefix_length = len(seq) - 1
        matching = ids[-prefix_length:] == list(seq[:-1])
        bias[seq[-1]] += b if matching else 0.0
    with np.errstate(invalid="ignore"):
        return (s.astype(np.float64) + bias).astype(F32)


def bad_words(s, input_ids, words, eos):
    words = [w for w in words if not (len(w) == 1 and w[0] in eos)]
    return sequence_bias(s, input_ids, [(w, NEG_INF) for w in words])


def min_length(s, input_ids, min_len, eos):
    out = s.copy()
    if len(input_ids) < min_len:
        out[list(eos)] = NEG_INF
    return out


def min_new_tokens(s, input_ids, prompt_len, min_new, eos):
    out = s.copy()
    if len(input_ids) - prompt_len < min_new:
        out[list(eos)] = NEG_INF
    return out


def suppress_tokens(s, tokens):
    out = s.copy()
    out[list(tokens)] = NEG_INF
    return out


def inf_nan_remove(s):
    out = np.where(s != s, F32(0.0), s)
    out = np.where(s == np.inf, np.finfo(F32).max, out)
    out = np.where(s == -np.inf, np.finfo(F32).min, out)
    return out.astype(F32)


def top_k(s, k, min_keep=1, keep_ties=True):
    k = min(max(k, min_keep), len(s))
    out = s.copy()
    if keep_ties:
        kth = np.sort(s)[::-1][k - 1]  # torch.topk(scores, k)[0][..., -1]
        out[s < kth] = NEG_INF
    else:
        keep = desc_order(s)[:k]
        mask = np.ones(len(s), dtype=bool)
        mask[keep] = False
        out[mask] = NEG_INF
    return out


def top_p(s, p, min_keep=1):
    """TopPLogitsWarper: ascending sort, remove while cumulative probability <= 1 - top_p."""
    order = np.argsort(s, kind="stable")
    sorted_logits = s[order]
    cum = np.cumsum(softmax(sorted_logits))
    remove_sorted = cum <= (1 - p)
    remove_sorted[-min_keep:] = False
    remove = np.zeros(len(s), dtype=bool)
    remove[order] = remove_sorted
    out = s.copy()
    out[remove] = NEG_INF
    return out


def top_p_llama(s, p, min_keep=1):
    """llama.cpp's top-p: descending sort, keep up to the first token where the mass is >= p."""
    order = desc_order(s)
    probs = softmax(s)[order]
    cum = 0.0
    last = len(s)
    for i, q in enumerate(probs):
        if q == 0 and s[order[i]] == NEG_INF:
            break
        cum += q
        if cum >= p and i + 1 >= min_keep:
            last = i + 1
            break
    out = s.copy()
    out[order[last:]] = NEG_INF
    return out


def min_p(s, p, min_keep=1):
    probs = softmax(s)
    scaled = p * probs.max()
    remove = probs < scaled
    order = desc_order(s)
    remove_sorted = remove[order]
    remove_sorted[:min_keep] = False
    remove = np.zeros(len(s), dtype=bool)
    remove[order] = remove_sorted
    out = s.copy()
    out[remove] = NEG_INF
    return out


def typical_p(s, mass, min_keep=1):
    with np.errstate(invalid="ignore", divide="ignore"):
        normalized = log_softmax(s)
        p = np.exp(normalized)
        ent = -np.nansum(normalized * p)
        shifted = np.abs((-normalized) - ent)
    order = np.argsort(shifted, kind="stable")
    sorted_scores = shifted[order]
    sorted_logits = s[order]
    cum = np.cumsum(softmax(sorted_logits))
    last_ind = min(int((cum < mass).sum()), len(s) - 1)
    remove_sorted = sorted_scores > sorted_scores[last_ind]
    remove_sorted[:min_keep] = False
    remove = np.zeros(len(s), dtype=bool)
    remove[order] = remove_sorted
    out = s.copy()
    out[remove] = NEG_INF
    return out


def epsilon_cutoff(s, eps, min_keep=1):
    probs = softmax(s)
    remove = probs < eps
    k = min(min_keep, len(s))
    kth = np.sort(s)[::-1][k - 1]
    remove = remove & (s < kth)
    out = s.copy()
    out[remove] = NEG_INF
    return out


def eta_cutoff(s, eta, min_keep=1):
    probs = softmax(s)
    with np.errstate(invalid="ignore", divide="ignore"):
        logp = log_softmax(s)
        entropy = -np.sum(np.where(probs > 0, probs * logp, 0.0))
    threshold = min(eta, np.sqrt(eta) * np.exp(-entropy))
    remove = probs < threshold
    k = min(min_keep, len(s))
    kth = np.sort(s)[::-1][k - 1]
    remove = remove & (s < kth)
    out = s.copy()
    out[remove] = NEG_INF
    return out


def sample_inverse_cdf(s, draw):
    """logitscope's documented sampling rule: weights exp(s - max) in id order, first index whose
    cumulative weight exceeds draw * total."""
    s = np.asarray(s, dtype=np.float64)
    w = np.exp(s - s.max())
    cum = np.cumsum(w)
    idx = int(np.searchsorted(cum, draw * cum[-1], side="right"))
    return min(idx, int(np.nonzero(w > 0)[0][-1]))


# --- the generator: splitmix64 seeding + xoshiro256** (Blackman & Vigna) ---
MASK = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


class Xoshiro256StarStar:
    def __init__(self, seed):
        st = seed & MASK
        self.s = []
        for _ in range(4):
            st, v = splitmix64(st)
            self.s.append(v)

    @staticmethod
    def _rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & MASK

    def next(self):
        s = self.s
        result = (self._rotl((s[1] * 5) & MASK, 7) * 9) & MASK
        t = (s[1] << 17) & MASK
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = self._rotl(s[3], 45)
        return result

    def uniform(self):
        return (self.next() >> 11) * 2.0**-53

    # The state update is linear over GF(2): a 256 x 256 bit matrix M. Stream i of a seed (the
    # engine's per-sequence generators) is the state after i * 2^128 steps, i.e. M^(2^128)
    # applied i times; computed here by squaring M 128 times, without the jump polynomial.
    @staticmethod
    def _pack(s):
        return s[0] | (s[1] << 64) | (s[2] << 128) | (s[3] << 192)

    @staticmethod
    def _unpack(v):
        return [(v >> (64 * i)) & MASK for i in range(4)]

    @classmethod
    def _step_matrix(cls):
        cols = []
        for bit in range(256):
            g = cls.__new__(cls)
            g.s = cls._unpack(1 << bit)
            g.next()
            cols.append(cls._pack(g.s))
        return cols

    @staticmethod
    def _apply(cols, v):
        out, i = 0, 0
        while v:
            if v & 1:
                out ^= cols[i]
            v >>= 1
            i += 1
        return out

    _JUMP = None

    @classmethod
    def jump_matrix(cls):
        if cls._JUMP is None:
            m = cls._step_matrix()
            for _ in range(128):
                m = [cls._apply(m, c) for c in m]  # M <- M * M
            cls._JUMP = m
        return cls._JUMP

    def jump(self):
        self.s = self._unpack(self._apply(self.jump_matrix(), self._pack(self.s)))
