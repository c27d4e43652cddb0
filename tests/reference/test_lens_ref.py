#!/usr/bin/python3
"""`logitscope lens` (the logit lens) vs the independent numpy reference (qwen2_ref.py).

Run by CTest as
    test_lens_ref.py --logitscope BIN --tokenizer-from DIR [--keep DIR]
The lens of position P: for l = 0..L the residual stream at input position P after l decoder
layers (l = 0: the token embedding) through the final RMSNorm and the LM head
(Qwen2Ref.lens_logits). Models: `synth --shape tiny` (Qwen2, F32, 6 layers via --layers),
`synth --shape qwen3-tiny --untied` (F32), a Python-written sharp Qwen2 (F32 untied) and a
Python-written Qwen3 with YaRN (F32, 120 positions). For several token sequences and positions:
  * --dump-logits [L+1, V] float32 vs the reference rows: max abs diff <= 1e-4 x max(1, max |ref row|),
    every layer, whole vocab;
  * row L of --dump-logits == `next --tokens tokens[:P+1] --dump-logits` bit for bit;
  * --json: top ids (best first) / logprobs, entropy, rank_of, logprob_of recomputed from the
    reference rows (log_softmax in float64, logprobs and entropy within 1e-4 absolute; ids equal except where the reference gap is within
    the measured engine-reference difference); the same numbers from the engine's own dumped rows
    (tight);
  * the decoding chain through every layer: greedy (--do-sample false) and two sampling chains
    with --draw (temperature + top-k; temperature + top-p + min-p), re-implemented here (the
    stages from tests/decode/hf_formulas.py, the inverse-CDF draw from docs/trace-format.md:
    weights exp(s - max) in ascending id order, the first whose running total exceeds
    draw x total): sampler_choice at every layer, chosen_prob, chosen, runner_up,
    first_chosen_layer, settled_layer, runner_up_lost_at. Against the engine's own rows exactly;
    against the reference rows wherever the reference is not within the measured difference of a
    decision boundary (those layers are counted and printed);
  * --layers subset / --track / --token / --prompt; errors (--position past the end, --layers
    index > L, empty prompt, --track id outside the vocab) exit non-zero naming the flag;
  * power: lens mutants of the reference (no final norm, residual after layer l+1, norm
    without its weight, norm applied twice on the last row as with HF's normed last hidden
    state, position P-1) each move some row by > 10x the tolerance.
Every check prints its figure; exit 1 if any failed.
"""
import json
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "decode"))
import qwen2_ref as ref  # noqa: E402
import test_forward_ref as tfr  # noqa: E402  (run / synth / Checks)
import test_family_ref as tfam  # noqa: E402  (py_model / yarn_scaling)
import hf_formulas as hf  # noqa: E402  (the decoding stages as transformers states them)

TOL_REL = 1e-4      # lens logits: max abs diff <= 1e-4 x max(1, max |reference row|)
LP_TOL = 1e-4       # logprobs, entropy (nats): absolute
C = tfr.C
NO_GENCFG = ["--no-generation-config"]


# ------------------------------------------------------------------ numpy side

def log_softmax64(z):
    z = np.asarray(z, dtype=np.float64)
    m = z.max()
    return z - (m + math.log(np.exp(z - m).sum()))


def rank_of(z, i):
    """1-based rank of id i in z (descending; a lower id first among equal scores)."""
    return int((z > z[i]).sum() + ((z == z[i]) & (np.arange(len(z)) < i)).sum()) + 1


def desc_ids(z, n):
    """The n best ids, by score descending, a lower id first among equal scores (hf.desc_order's
    order, without sorting the whole vocabulary)."""
    z = np.asarray(z, dtype=np.float64)
    if n >= len(z):
        return [int(i) for i in hf.desc_order(z)]
    kth = np.partition(z, len(z) - n)[len(z) - n]
    cand = np.nonzero(z >= kth)[0]
    return [int(i) for i in cand[np.lexsort((cand, -z[cand]))][:n]]


class Chain:
    """A decoding chain as flags and its numpy re-statement. greedy: no stage at all (transformers
    applies warpers only when sampling; no processor is active with --no-generation-config)."""

    def __init__(self, name, greedy=True, temperature=1.0, top_k=None, top_p=None, min_p=None, draw=None,
                 repetition_penalty=None, gencfg=False):
        """top_k None: no flag, transformers' default 50 applies; 0: --top-k 0 (off). gencfg: the
        settings come from the model's generation_config.json (only --do-sample false / --draw
        are passed), repetition_penalty among them (over the input up to the position)."""
        self.name, self.greedy, self.t = name, greedy, temperature
        self.top_k_flag = top_k
        self.top_k = 50 if top_k is None else (top_k or None)
        self.top_p, self.min_p, self.draw = top_p, min_p, draw
        self.rep, self.gencfg = repetition_penalty, gencfg
        self.seed = None

    @staticmethod
    def seeded(name, seed, **kw):
        """A sampling chain given --seed and no --draw: the draw is the seed's first uniform
        (splitmix64-seeded xoshiro256**, (next >> 11) * 2^-53: hf_formulas' statement of logitscope's Rng)."""
        c = Chain(name, greedy=False, draw=hf.Xoshiro256StarStar(seed).uniform(), **kw)
        c.seed = seed
        return c

    @staticmethod
    def from_generation_config(model_dir, greedy, draw=None):
        g = json.load(open(os.path.join(model_dir, "generation_config.json")))
        rep = g.get("repetition_penalty")
        rep = None if rep in (None, 1.0) else float(rep)
        name = "generation_config.json%s: %s" % (" --do-sample false" if greedy else " --draw %g" % draw, ", ".join(
            "%s %s" % (k, g[k]) for k in ("repetition_penalty", "do_sample", "temperature", "top_k", "top_p", "min_p")
            if k in g))
        if greedy or not g.get("do_sample"):
            return Chain(name, True, repetition_penalty=rep, gencfg=True)
        t = float(g.get("temperature", 1.0))
        tk = g.get("top_k", 50)
        tp = g.get("top_p")
        mp = g.get("min_p")
        return Chain(name, False, temperature=t, top_k=tk, top_p=None if tp in (None, 1.0) else float(tp),
                     min_p=None if not mp else float(mp), draw=draw, repetition_penalty=rep, gencfg=True)

    def flags(self):
        if self.gencfg:
            return ["--do-sample", "false"] if self.greedy else ["--draw", repr(self.draw)]
        if self.greedy:
            return NO_GENCFG + ["--do-sample", "false"]
        f = NO_GENCFG + ["--do-sample", "true", "--temperature", repr(self.t)]
        f += ["--draw", repr(self.draw)] if self.seed is None else ["--seed", str(self.seed)]
        if self.top_k_flag is not None:
            f += ["--top-k", str(self.top_k_flag)]
        if self.top_p is not None:
            f += ["--top-p", repr(self.top_p)]
        if self.min_p is not None:
            f += ["--min-p", repr(self.min_p)]
        return f

    def analyze(self, z32, d=0.0, history=()):
        """The chain and the draw on one raw float32 row z32, and whether the outcome is decided
        for every row within d (max abs per logit) of it.

        Returns a Outcome: final (float32 processed scores), choice, robust, and prob_bounds(i):
        the range of token i's final probability over all such rows. Bounds: a processed score
        moves by at most dd = d/T (+ float32 rounding), so a ratio of two weights by e^(2 dd);
        a token's membership of a truncation stage is "unsure" when its margin to the stage's cut
        is within what such a move (and the mass of tokens that could swap order with it, or
        whose earlier membership is unsure) can change; the draw's position is then bounded by
        putting every unsure token in or out and every weight at either end of its range."""
        z32 = np.asarray(z32, dtype=np.float32)
        if self.rep is not None:   # a processor: in greedy mode too; |change| of a score scales by <= penalty
            z32 = hf.repetition_penalty(z32, list(history), self.rep)
            d = d * self.rep
        if self.greedy:
            final = z32.copy()
            o = desc_ids(final, 2)
            dd = d + 2 * float(np.abs(final).max()) * 2.0 ** -24 if d > 0 else 0.0   # + float32 rounding
            return Outcome(final, int(o[0]), float(final[o[0]]) - float(final[o[1]]) > 2 * dd,
                           z=final, dd=dd, sure=np.ones(len(final), bool), possible=np.ones(len(final), bool))
        s0 = hf.temperature(z32, self.t)
        # d > 0: a reference row; float(z / T) may round the other way too. d == 0: the engine's
        # own row, whose processed scores are these exactly (only exp() may differ in an ulp).
        dd = d / self.t + 4 * float(np.abs(s0).max()) * 2.0 ** -24 if d > 0 else 1e-12
        x = s0.astype(np.float64)
        s = s0
        kept = np.ones(len(s), bool)        # nominal membership after each stage
        unsure = np.zeros(len(s), bool)
        if self.top_k is not None:
            s = hf.top_k(s, self.top_k, 1, True)
            kept = np.isfinite(s)
            if d > 0 and self.top_k < len(x):   # (on the engine's own row the cut is exact)
                srt = np.sort(x)[::-1]
                kth, nxt = srt[self.top_k - 1], srt[self.top_k]
                unsure |= (kept & (x - nxt <= 2 * dd)) | (~kept & (kth - x <= 2 * dd))
        if self.top_p is not None:
            # ascending cumulative mass of the distribution after top-k, at each kept token
            q = hf.softmax(s)
            order = np.argsort(x[kept], kind="stable")
            xs = x[kept][order]
            cum = np.cumsum(q[kept][order])
            cum_at = np.empty(kept.sum())
            cum_at[order] = cum
            # mass of tokens whose order relative to this one may swap (scores within 2 dd)
            lo_i = np.searchsorted(xs, x[kept] - 2 * dd, side="left")
            hi_i = np.searchsorted(xs, x[kept] + 2 * dd, side="right")
            c0 = np.concatenate([[0.0], cum])
            swap = c0[hi_i] - c0[lo_i] - q[kept]
            m_unsure = float(q[unsure & kept].sum())
            slackp = 3 * dd + swap + m_unsure
            u = np.zeros(len(s), bool)
            u[np.nonzero(kept)[0]] = np.abs(cum_at - (1 - self.top_p)) <= slackp
            s = hf.top_p(s, self.top_p, 1)
            kept = np.isfinite(s)
            unsure |= u
        if self.min_p is not None:
            q = hf.softmax(s)
            with np.errstate(divide="ignore"):
                lq = np.log(q)
            u = kept & (np.abs(lq - math.log(self.min_p * q.max())) <= 2 * dd + 1e-12)
            s = hf.min_p(s, self.min_p, 1)
            kept = np.isfinite(s)
            unsure |= u
        sure = kept & ~unsure
        possible = kept | unsure
        tok, _ = inverse_cdf(s, self.draw)
        out = Outcome(s, tok, False, z=s0, dd=dd, sure=sure, possible=possible)
        if sure[tok]:
            f_lo_tok = out.fraction(tok, low=True)          # least possible cumulative share up to tok
            f_hi_prev = out.fraction(tok - 1, low=False) if tok > 0 else 0.0
            out.robust = f_lo_tok > self.draw and f_hi_prev < self.draw
        return out


class Outcome:
    def __init__(self, final, choice, robust, z, dd, sure, possible):
        self.final, self.choice, self.robust = final, choice, robust
        x = np.asarray(z, dtype=np.float64)
        self.w = np.exp(x - x.max())        # nominal weights, removed tokens included
        self.dd, self.sure, self.possible = dd, sure, possible

    def fraction(self, k, low):
        """Bound of (sum of kept weights of ids <= k) / (sum of all kept weights)."""
        lo_f, hi_f = math.exp(-self.dd), math.exp(self.dd)
        ids = np.arange(len(self.w))
        before = ids <= k
        if low:
            a = (self.w * (self.sure & before)).sum() * lo_f
            b = (self.w * (self.possible & ~before)).sum() * hi_f
        else:
            a = (self.w * (self.possible & before)).sum() * hi_f
            b = (self.w * (self.sure & ~before)).sum() * lo_f
        return a / (a + b) if a + b > 0 else 0.0

    def probs(self):
        return hf.softmax(self.final)

    def prob_bounds(self, i):
        if not self.possible[i]:
            return 0.0, 0.0
        lo_f, hi_f = math.exp(-self.dd), math.exp(self.dd)
        others_hi = (self.w * self.possible).sum() - self.w[i] * self.possible[i]
        others_lo = (self.w * self.sure).sum() - self.w[i] * self.sure[i]
        lo = 0.0 if not self.sure[i] else self.w[i] * lo_f / (self.w[i] * lo_f + others_hi * hi_f)
        hi = self.w[i] * hi_f / (self.w[i] * hi_f + others_lo * lo_f)
        return lo, hi


def inverse_cdf(s, draw):
    """docs/trace-format.md's replay rule, written here: walk ids in ascending order summing
    exp(score - max) (float64; a removed token adds 0) and take the first whose running total
    exceeds draw x total."""
    s = np.asarray(s, dtype=np.float64)
    w = np.where(np.isfinite(s), np.exp(s - s[np.isfinite(s)].max()), 0.0)
    cum = np.cumsum(w)
    total = cum[-1]
    above = np.nonzero(cum > draw * total)[0]
    tok = int(above[0]) if len(above) else int(np.nonzero(w > 0)[0][-1])
    return tok, None


def derived(choices, chosen, final_scores, raw_rows):
    """first_chosen_layer, settled_layer, runner_up, runner_up_lost_at from per-layer choices
    (0..L), the final layer's processed scores and the raw lens rows."""
    L = len(choices) - 1
    first = next((l for l in range(L + 1) if choices[l] == chosen), None)
    settled = None
    for l in range(L, -1, -1):
        if choices[l] != chosen:
            break
        settled = l
    s = np.asarray(final_scores, dtype=np.float64).copy()
    s[chosen] = -np.inf
    ru = None
    if np.isfinite(s).any():
        ru = desc_ids(s, 1)[0]
    lost = None
    if ru is not None:
        for l in range(L + 1):
            z = raw_rows[l]
            if z[ru] > z[chosen] or (z[ru] == z[chosen] and ru < chosen):
                lost = l
    return {"first_chosen_layer": first, "settled_layer": settled, "runner_up": ru, "runner_up_lost_at": lost}


# ------------------------------------------------------------------ engine side

def lens(model, toks=None, prompt=None, extra=(), dump=True, chat=False):
    args = ["lens", "--model", model, "--json"]
    args += ["--tokens", ",".join(map(str, toks))] if toks is not None else ["--prompt", prompt]
    if chat:
        args.append("--chat")
    out = None
    if dump:
        out = os.path.join(model, "lens_%d.npy" % os.getpid())
        if os.path.exists(out):
            os.remove(out)
        args += ["--dump-logits", out]
    p, dt = tfr.run(args + list(extra))
    if not C.check(p.returncode == 0, "logitscope %s exits 0 (%.2fs)%s" % (
            " ".join(args[3:] + list(extra)), dt, "" if p.returncode == 0 else ": exit %d %s" % (p.returncode, p.stderr.strip()[-400:]))):
        return None, None
    try:
        j = json.loads(p.stdout)
    except ValueError as ex:
        C.check(False, "lens --json prints one JSON object (%s): %r" % (ex, p.stdout[:300]))
        return None, None
    a = None
    if dump:
        if not C.check(os.path.exists(out), "--dump-logits wrote %s" % out):
            return j, None
        a = np.load(out)
        C.check(j.get("logits_file") == out, "logits_file %r == the --dump-logits path" % j.get("logits_file"))
    return j, a


# ------------------------------------------------------------------ the checks

STATS = {"worst_rel": 0.0, "amb_layers": 0, "ref_layers": 0, "tie_allowances": 0}


def check_dump(tag, e, r):
    """e: engine [L+1, V] float32; r: reference [L+1, V] float64. Returns per-row |e - r| max."""
    if not C.check(e.dtype == np.dtype("<f4") and e.shape == r.shape,
                   "%s: dump float32 %s == reference shape %s" % (tag, e.shape, r.shape)):
        return None
    d = np.abs(e.astype(np.float64) - r).max(axis=1)
    scale = np.maximum(1.0, np.abs(r).max(axis=1))
    rel = d / scale
    STATS["worst_rel"] = max(STATS["worst_rel"], float(rel.max()))
    C.check(bool((rel <= TOL_REL).all()), "%s: every layer's lens row within 1e-4 x max(1, max|ref|): "
            "worst layer %d abs %.3g rel %.3g (per layer rel %s)" % (
                tag, int(rel.argmax()), float(d[rel.argmax()]), float(rel.max()), " ".join("%.1e" % x for x in rel)))
    return d


def check_lens_json(tag, j, e, r, d, chain, P, toks, tracks=(), layers=None, top=5, token=None):
    """Every field of one lens --json answer against numpy on the engine's dumped rows e (tight)
    and on the reference rows r (within tolerances from the measured difference d per row)."""
    V = r.shape[1]
    L = r.shape[0] - 1
    tag = "%s [%s]" % (tag, chain.name)
    C.check(j.get("input_tokens") == list(toks) and j.get("position") == P and j.get("n_layers") == L
            and j.get("vocab_size") == V, "%s: input_tokens, position %s == %d, n_layers %s == %d, vocab_size %s" % (
                tag, j.get("position"), P, j.get("n_layers"), L, j.get("vocab_size")))
    C.check(isinstance(j.get("chain"), str) and j["chain"] != "", "%s: chain %r" % (tag, j.get("chain")))
    C.check((j.get("draw") is None) if chain.greedy else (j.get("draw") == chain.draw),
            "%s: draw %r (%s)" % (tag, j.get("draw"), "null when greedy" if chain.greedy else
                                   "the --draw" if chain.seed is None else "the first draw of --seed %d: %r" % (chain.seed, chain.draw)))
    e64 = e.astype(np.float64)
    r32 = r.astype(np.float32)
    # per layer: the chain on the engine's rows (decided unless a row sits exactly on a boundary)
    # and on the reference rows (decided unless within the measured difference d of a boundary)
    hist = list(toks)[:P + 1]      # the input the position has seen (for repetition_penalty)
    oe = [chain.analyze(e[l], 0.0, hist) for l in range(L + 1)]
    orf = [chain.analyze(r32[l], float(d[l]), hist) for l in range(L + 1)]
    ch_e = [o.choice for o in oe]
    ch_r = [o.choice for o in orf]
    amb = [not o.robust for o in orf]
    C.check(all(o.robust for o in oe), "%s: every engine row's choice is decided (not on a boundary) %s" % (
        tag, [l for l in range(L + 1) if not oe[l].robust]))
    bad = [l for l in range(L + 1) if not amb[l] and ch_r[l] != ch_e[l]]
    C.check(not bad, "%s: the chain picks the same token from the engine's and the reference's rows at every "
            "layer where the reference decides it (differs at %s; %d undecided layer(s): %s)" % (
                tag, bad, sum(amb), [l for l in range(L + 1) if amb[l]]))
    STATS["amb_layers"] += sum(amb)
    STATS["ref_layers"] += L + 1
    slack_L = 2 * float(d[L]) / chain.t + 1e-6

    # chosen / runner_up / derived layers
    chosen = token if token is not None else ch_e[L]
    fin_e = oe[L].final
    de = derived(ch_e, chosen, fin_e, e)
    jc = (j.get("chosen") or {}).get("id")
    C.check(jc == chosen, "%s: chosen %s == %s (%s)" % (tag, jc, chosen, "--token" if token is not None else
                                                       "the chain + draw on the final layer"))
    if token is None and not amb[L]:
        C.check(jc == ch_r[L], "%s: chosen %s == the chain on the reference's final row %d" % (tag, jc, ch_r[L]))
    jr = j.get("runner_up")
    jr_id = jr.get("id") if isinstance(jr, dict) else None
    C.check(jr_id == de["runner_up"], "%s: runner_up %s == best other token of the final layer's processed scores %s"
            "%s" % (tag, jr_id, de["runner_up"], " (the engine names chosen itself)" if jr_id == chosen else ""))
    for key in ("first_chosen_layer", "settled_layer", "runner_up_lost_at"):
        C.check(j.get(key) == de[key], "%s: %s %s == %s from numpy on the engine rows" % (tag, key, j.get(key), de[key]))
    # the same from the reference rows, when no layer is ambiguous there
    fin_r = orf[L].final
    if not any(amb):
        rd = derived(ch_r, chosen if token is not None else ch_r[L], fin_r, r)
        C.check(all(j.get(k) == rd[k] for k in ("first_chosen_layer", "settled_layer")),
                "%s: first_chosen_layer %s, settled_layer %s == %s, %s from the reference rows" % (
                    tag, j.get("first_chosen_layer"), j.get("settled_layer"), rd["first_chosen_layer"], rd["settled_layer"]))
        # runner_up / lost_at depend on near-ties between two scores: only where the reference is clear
        if rd["runner_up"] is not None:
            s = fin_r.astype(np.float64).copy()
            s[chosen] = -np.inf
            o = desc_ids(s, 2)
            clear_ru = (not np.isfinite(s[o[1]]) or s[o[0]] - s[o[1]] > slack_L) and orf[L].sure[o[0]]
            if clear_ru:
                C.check(jr_id == rd["runner_up"], "%s: runner_up %s == %s from the reference" % (tag, jr_id, rd["runner_up"]))
                gaps = np.abs(r[:, rd["runner_up"]] - r[:, chosen])
                if (gaps > 2 * d + 1e-6).all():
                    C.check(j.get("runner_up_lost_at") == rd["runner_up_lost_at"],
                            "%s: runner_up_lost_at %s == %s from the reference" % (
                                tag, j.get("runner_up_lost_at"), rd["runner_up_lost_at"]))

    # per-layer entries
    want_layers = list(range(L + 1)) if layers is None else list(layers)
    rows = j.get("layers") or []
    if not C.check([x.get("layer") for x in rows] == want_layers, "%s: layers %s == %s" % (
            tag, [x.get("layer") for x in rows][:12], want_layers[:12])):
        return
    ids_named = sorted({chosen} | ({de["runner_up"]} if de["runner_up"] is not None else set()) | set(tracks))
    worst = {"top_lp_ref": 0.0, "top_lp_eng": 0.0, "entropy_ref": 0.0, "lp_of_ref": 0.0, "prob_ref": 0.0, "prob_eng": 0.0}
    problems = []
    for x in rows:
        l = x["layer"]
        lr, le = log_softmax64(r[l]), log_softmax64(e64[l])
        tol = LP_TOL
        # top K
        top_rows = x.get("top") or []
        ids = [t.get("id") for t in top_rows]
        if ids != desc_ids(e[l], top):
            problems.append("layer %d: top ids %s != the engine row's %s" % (l, ids, desc_ids(e[l], top)))
        rorder = desc_ids(r[l], top)
        for k in range(min(len(ids), top)):
            if ids[k] != rorder[k]:
                gap = r[l][rorder[k]] - r[l][ids[k]]
                if gap > 2 * d[l] + 1e-6:
                    problems.append("layer %d: top[%d] id %s vs reference %d (reference gap %.3g)" % (l, k, ids[k], rorder[k], gap))
                else:
                    STATS["tie_allowances"] += 1
        if len(ids) != top:
            problems.append("layer %d: %d top rows, want %d" % (l, len(ids), top))
        for t in top_rows:
            i = t["id"]
            worst["top_lp_ref"] = max(worst["top_lp_ref"], abs(t["logprob"] - lr[i]))
            worst["top_lp_eng"] = max(worst["top_lp_eng"], abs(t["logprob"] - le[i]))
            if abs(t["logprob"] - lr[i]) > tol or abs(t["logprob"] - le[i]) > 1e-6:
                problems.append("layer %d: top id %d logprob %.9g vs reference %.9g / engine row %.9g" % (
                    l, i, t["logprob"], lr[i], le[i]))
            if not isinstance(t.get("token"), str):
                problems.append("layer %d: top id %d has no token text" % (l, i))
        # entropy of the raw lens distribution
        pr = np.exp(lr)
        ent_r = float(-(pr * lr).sum())
        ent_e = float(-(np.exp(le) * le).sum())
        ent = x.get("entropy")
        if not isinstance(ent, (int, float)) or abs(ent - ent_r) > tol or abs(ent - ent_e) > 1e-6:
            problems.append("layer %d: entropy %r vs reference %.9g / engine row %.9g" % (l, ent, ent_r, ent_e))
        else:
            worst["entropy_ref"] = max(worst["entropy_ref"], abs(ent - ent_r))
        # rank_of / logprob_of
        ro, lo = x.get("rank_of") or {}, x.get("logprob_of") or {}
        if sorted(int(k) for k in ro) != ids_named or sorted(int(k) for k in lo) != ids_named:
            problems.append("layer %d: rank_of keys %s / logprob_of keys %s, want %s" % (l, sorted(ro), sorted(lo), ids_named))
        for i in ids_named:
            rk, lp = ro.get(str(i)), lo.get(str(i))
            if rk != rank_of(e[l], i):
                problems.append("layer %d: rank_of[%d] %s != engine row rank %d" % (l, i, rk, rank_of(e[l], i)))
            lo_r = 1 + int((r[l] > r[l][i] + 2 * d[l] + 1e-6).sum())
            hi_r = int((r[l] >= r[l][i] - 2 * d[l] - 1e-6).sum())
            if not (isinstance(rk, int) and lo_r <= rk <= hi_r):
                problems.append("layer %d: rank_of[%d] %s outside the reference's [%d, %d]" % (l, i, rk, lo_r, hi_r))
            if not isinstance(lp, (int, float)) or abs(lp - lr[i]) > tol or abs(lp - le[i]) > 1e-6:
                problems.append("layer %d: logprob_of[%d] %r vs reference %.9g / engine row %.9g" % (l, i, lp, lr[i], le[i]))
            else:
                worst["lp_of_ref"] = max(worst["lp_of_ref"], abs(lp - lr[i]))
        # sampler_choice / chosen_prob
        sc = (x.get("sampler_choice") or {}).get("id")
        if sc != ch_e[l]:
            problems.append("layer %d: sampler_choice %s != the chain on the engine row %d" % (l, sc, ch_e[l]))
        if not amb[l] and sc != ch_r[l]:
            problems.append("layer %d: sampler_choice %s != the chain on the reference row %d" % (l, sc, ch_r[l]))
        if not isinstance((x.get("sampler_choice") or {}).get("token"), str):
            problems.append("layer %d: sampler_choice has no token text" % l)
        cp = x.get("chosen_prob")
        pe = float(oe[l].probs()[chosen])
        if not isinstance(cp, (int, float)) or abs(cp - pe) > 1e-6 * pe + 1e-12:
            problems.append("layer %d: chosen_prob %r != numpy on the engine row %.9g" % (l, cp, pe))
            continue
        worst["prob_eng"] = max(worst["prob_eng"], abs(cp - pe))
        plo, phi = orf[l].prob_bounds(chosen)
        if not (plo - 1e-9 <= cp <= phi + 1e-9):
            problems.append("layer %d: chosen_prob %r outside the reference's [%.9g, %.9g]" % (l, cp, plo, phi))
        worst["prob_ref"] = max(worst["prob_ref"], abs(cp - float(orf[l].probs()[chosen])))
    C.check(not problems, "%s: top/entropy/rank_of/logprob_of/sampler_choice/chosen_prob over %d layers, ids %s "
            "(max |diff| vs reference: top logprob %.2g, entropy %.2g, logprob_of %.2g, chosen_prob %.2g; vs engine rows: "
            "top logprob %.2g, chosen_prob %.2g)%s" % (
                tag, len(rows), ids_named, worst["top_lp_ref"], worst["entropy_ref"], worst["lp_of_ref"],
                worst["prob_ref"], worst["top_lp_eng"], worst["prob_eng"],
                "" if not problems else "\n        " + "\n        ".join(problems[:12])))


def check_next_bitwise(tag, d, toks, P, e):
    out = os.path.join(d, "next_%d.npy" % os.getpid())
    p, _ = tfr.run(["next", "--model", d, "--tokens", ",".join(map(str, toks[:P + 1])), "--dump-logits", out])
    if not C.check(p.returncode == 0, "%s: next exits 0 %s" % (tag, p.stderr.strip()[-200:])):
        return
    n = np.load(out)
    C.check(n.shape == (1, e.shape[1]) and np.array_equal(n[0], e[-1]),
            "%s: lens row L == `next --tokens tokens[:P+1] --dump-logits` bit for bit (max diff %.3g, %d ids differ)" % (
                tag, float(np.abs(n[0] - e[-1]).max()), int((n[0] != e[-1]).sum())))


# ------------------------------------------------------------------ power

def mutant_lens(m, toks, P, name):
    res = m.residual_stream(list(toks)[:P + 1])[:, P]          # [L+1, hidden]
    L = res.shape[0] - 1
    nw = m.w["model.norm.weight"]
    eps = m.cfg.rms_norm_eps
    if name == "no final norm":
        return m.head(res)
    if name == "residual after layer l+1":
        return m.head(m.final_norm(res[[min(l + 1, L) for l in range(L + 1)]]))
    if name == "final norm without its weight":
        return m.head(ref.rms_norm(res, np.ones_like(nw), eps))
    if name == "last row normed twice (HF's normed last hidden state)":
        n = m.final_norm(res)
        n[L] = m.final_norm(n[L])
        return m.head(n)
    if name == "position P-1":
        return m.lens_logits(toks, P - 1)
    raise KeyError(name)


MUTANTS = ["no final norm", "residual after layer l+1", "final norm without its weight",
           "last row normed twice (HF's normed last hidden state)", "position P-1"]


def power(name, m, toks, P, r, assert_it):
    scale = np.maximum(1.0, np.abs(r).max(axis=1))
    for mu in MUTANTS:
        if mu == "position P-1" and P == 0:
            continue
        rel = float((np.abs(mutant_lens(m, toks, P, mu) - r).max(axis=1) / scale).max())
        if assert_it:
            C.check(rel > 10 * TOL_REL, "%s P=%d: mutant '%s' moves a lens row by %.3g x max(1,|ref|) > 10x tolerance"
                    % (name, P, mu, rel))
        else:
            print("%s  %s P=%d: mutant '%s' moves a lens row by %.3g x max(1,|ref|)%s" % (
                "INFO" if rel > 10 * TOL_REL else "WEAK", name, P, mu, rel,
                "" if rel > 10 * TOL_REL else " (engine-synthesized weights; not asserted)"))


# ------------------------------------------------------------------ main

CHAINS = [Chain("greedy"),
          Chain("t0.7 top-k 20 draw 0.37", greedy=False, temperature=0.7, top_k=20, draw=0.37),
          Chain("t1.3 (top-k 50 default) top-p 0.9 min-p 0.02 draw 0.81", greedy=False, temperature=1.3, top_p=0.9,
                min_p=0.02, draw=0.81),
          Chain("t1 top-k 0 top-p 0.5 draw 0.05", greedy=False, temperature=1.0, top_k=0, top_p=0.5, draw=0.05),
          Chain.seeded("t0.9 top-k 40 --seed 1234 (no --draw)", 1234, temperature=0.9, top_k=40)]


def run_case(name, d, m, toks, P, chains, tracks=(), layers=None, top=5, token=None, bitwise=True):
    tag = "%s T=%d P=%d" % (name, len(toks), P)
    r = m.lens_logits(toks, P)
    extra = ["--position", str(P), "--top", str(top)]
    if tracks:
        extra += ["--track", ",".join(map(str, tracks))]
    if layers is not None:
        extra += ["--layers", ",".join(map(str, layers))]
    if token is not None:
        extra += ["--token", str(token)]
    first = True
    for ch in chains:
        j, e = lens(d, toks, extra=extra + ch.flags())
        if j is None or e is None:
            continue
        if first:
            dd = check_dump(tag, e, r)
            if dd is None:
                return r
            if bitwise:
                check_next_bitwise(tag, d, toks, P, e)
            first = False
        else:
            dd = np.abs(e.astype(np.float64) - r).max(axis=1)
        check_lens_json(tag + (" --token %d" % token if token is not None else ""), j, e, r, dd, ch, P, toks,
                        tracks=tracks, layers=layers, top=top, token=token)
        if ch.rep is not None and token is None and layers is None:
            rep_power(tag + " [%s]" % ch.name, j, e, ch, toks, P, assert_it=name.startswith("synth_tiny"))
    return r


def rep_power(tag, j, e, chain, toks, P, assert_it):
    """The repetition penalty's history is the input up to P: the answer differs from what no
    penalty, or a penalty over all the --tokens (past P as well), would give. Asserted on the
    tied synth model, where the layer-0 lens of a token ranks that token high (so the penalty
    matters); printed for the others."""
    L = e.shape[0] - 1
    got = [(x["sampler_choice"]["id"], x["chosen_prob"]) for x in j["layers"]]
    chosen = j["chosen"]["id"]

    def sig(hist, rep):
        saved = chain.rep
        chain.rep = rep
        try:
            out = []
            for l in range(L + 1):
                o = chain.analyze(e[l], 0.0, hist)
                out.append((o.choice, float(o.probs()[chosen])))
            return out
        finally:
            chain.rep = saved

    def moved(other):
        return max(abs(a[1] - b[1]) + (a[0] != b[0]) for a, b in zip(got, other))
    def report(ok, what):
        if assert_it:
            C.check(ok, what)
        else:
            print("%s  %s (not asserted on this model)" % ("INFO" if ok else "WEAK", what))
    no_pen = moved(sig([], None))
    report(no_pen > 1e-3, "%s: without the repetition penalty the per-layer choices/chosen_prob would differ by %.3g"
           % (tag, no_pen))
    if P < len(toks) - 1:
        full = moved(sig(list(toks), chain.rep))
        report(full > 1e-3, "%s: a penalty over all %d --tokens (not the %d up to P) would move them by %.3g"
               % (tag, len(toks), P + 1, full))


def main():
    a, tmp = tfr.engine_test_setup("ls_lens_")
    t0 = time.time()

    p, _ = tfr.run(["lens", "--help"])
    if not C.check(p.returncode == 0, "logitscope lens --help exits 0 (%s)" % p.stderr.strip()[-200:]):
        return 1

    models = []
    for shape, dtype, untied, seed, layers in (("tiny", "f32", False, 61, 6), ("qwen3-tiny", "f32", True, 62, 0)):
        dd = os.path.join(tmp, "synth_%s_%s%s" % (shape, dtype, "_untied" if untied else ""))
        args = ["synth", "--shape", shape, "--dtype", dtype, "--seed", str(seed), "--out", dd]
        if untied:
            args.append("--untied")
        if layers:
            args += ["--layers", str(layers)]
        if a.tokenizer_from:
            args += ["--tokenizer-from", a.tokenizer_from]
        p, dt = tfr.run(args)
        if C.check(p.returncode == 0, "%s (%.1fs) %s" % (" ".join(args[:-2]), dt, p.stderr.strip()[-300:])):
            models.append((os.path.basename(dd), dd))
    if not models:
        return 1
    template = models[0][1]
    dd = os.path.join(tmp, "py_qwen2_f32_untied")
    tfam.py_model(dd, template, "qwen2", "F32", False, 63)
    models.append(("py_qwen2_f32_untied", dd))
    dd = os.path.join(tmp, "py_qwen3_yarn_f32_untied")
    tfam.py_model(dd, template, "qwen3", "F32", False, 64, rope_scaling=tfam.yarn_scaling(), theta=1e6)
    models.append(("py_qwen3_yarn_f32_untied", dd))

    for name, d in models:
        m = ref.Qwen2Ref(d)
        V, L = m.cfg.vocab_size, m.cfg.num_hidden_layers
        rng = np.random.default_rng(len(name) + 7)
        print("---- (%.1fs) %s: %s, %d layers, hidden %d, vocab %d, tied=%s, rope_scaling %s" % (
            time.time() - t0, name, m.cfg.model_type, L, m.cfg.hidden_size, V, m.cfg.tie_word_embeddings,
            m.cfg.rope_scaling), flush=True)
        if m.cfg.rope_scaling:
            long = [int(x) for x in rng.integers(0, V, size=120)]
            long[40], long[119] = V - 1, 151643
            cases = [(long, 119, CHAINS[:3]), (long, 90, CHAINS[:1])]
        else:
            long = [int(x) for x in rng.integers(0, V, size=20)]
            long[3], long[19] = V - 1, V - 2
            short = [9707, 11, 1879, 0, V - 2]
            cases = [([V - 1], 0, CHAINS[:1]), (short, 4, CHAINS), (short, 2, CHAINS[:1]),
                     (long, 19, CHAINS[:3]), (long, 0, CHAINS[:1]), (long, 11, CHAINS[1:2] + CHAINS[3:5])]
        tracks = (V - 1, 0, 151643)
        # the model's own generation_config.json (Qwen2 synth: repetition_penalty 1.1 over the input);
        # at P = 11 of a sequence whose token 12 is the reference's final-layer top-1 there, so a
        # penalty over tokens past P would show
        gc = [Chain.from_generation_config(d, True), Chain.from_generation_config(d, False, 0.5)]
        cases[1] = (cases[1][0], cases[1][1], cases[1][2] + gc[1:])
        if not m.cfg.rope_scaling:
            after = list(long)
            after[12] = int(np.argmax(m.lens_logits(long, 11)[L]))
            cases.append((after, 11, gc))
        for toks, P, chains in cases:
            r = run_case(name, d, m, toks, P, chains, tracks=tracks)
            if P == len(toks) - 1 and len(toks) > 1:
                power(name, m, toks, P, r, assert_it=name.startswith("py_"))
        # a subset of layers, --top 3, and a forced --token (the reference's rank-7 token of the last row)
        toks, P = (long, len(long) - 1)
        r = m.lens_logits(toks, P)
        forced = desc_ids(r[L], 7)[6]
        run_case(name, d, m, toks, P, CHAINS[:2], tracks=(5,), layers=sorted({0, L // 2, L}), top=3,
                 token=forced, bitwise=False)

    name, d = models[0]
    m = ref.Qwen2Ref(d)
    V, L = m.cfg.vocab_size, m.cfg.num_hidden_layers
    print("---- (%.1fs) --prompt, --chat" % (time.time() - t0), flush=True)
    if a.tokenizer_from:
        for chat in (False, True):
            j, e = lens(d, prompt="The capital of France is", chat=chat, extra=CHAINS[0].flags())
            if j is None or e is None:
                continue
            toks = j.get("input_tokens") or []
            p, _ = tfr.run(["next", "--model", d, "--prompt", "The capital of France is", "--json"] +
                           (["--chat"] if chat else []))
            try:
                want = json.loads(p.stdout).get("input_tokens")
            except ValueError:
                want = None
            C.check(bool(toks) and want == toks, "--prompt%s: input_tokens %s == `next --prompt` input_tokens %s" % (
                " --chat" if chat else "", toks[:12], (want or [])[:12]))
            if toks:
                r = m.lens_logits(toks)
                dd = check_dump("--prompt%s" % (" --chat" if chat else ""), e, r)
                if dd is not None:
                    check_lens_json("--prompt%s" % (" --chat" if chat else ""), j, e, r, dd, CHAINS[0], len(toks) - 1, toks)

    print("---- (%.1fs) errors" % (time.time() - t0), flush=True)
    toks = [9707, 11, 1879, 0, V - 2]
    base = ["lens", "--model", d, "--json"]
    for args, flag, what in (
            (["--tokens", "9707,11,1879,0,%d" % (V - 2), "--position", "5"], "--position", "--position 5 of 5 tokens"),
            (["--tokens", "9707,11,1879,0,%d" % (V - 2), "--position", "99"], "--position", "--position 99"),
            (["--tokens", "9707,11", "--layers", "0,%d" % (L + 1)], "--layers", "--layers index L+1 = %d" % (L + 1)),
            (["--prompt", ""], "prompt", "an empty --prompt"),
            (["--tokens", "9707,11", "--track", "5,%d" % V], "--track", "--track id %d == vocab_size" % V),
            (["--tokens", "9707,11", "--track", "-1"], "--track", "--track id -1")):
        p, _ = tfr.run(base + args)
        C.check(p.returncode != 0 and flag in p.stderr.lower() if flag == "prompt" else p.returncode != 0 and flag in p.stderr,
                "lens with %s exits non-zero naming %s (exit %d: %s)" % (what, flag, p.returncode, p.stderr.strip()[-200:]))
    for bad in ("1", "1.5", "-0.1"):
        p, _ = tfr.run(base + ["--tokens", "9707,11", "--do-sample", "true", "--draw", bad])
        C.check(p.returncode != 0 and "--draw" in p.stderr, "lens --draw %s exits non-zero naming --draw (exit %d: %s)" % (
            bad, p.returncode, p.stderr.strip()[-200:]))
    p, _ = tfr.run(base + ["--tokens", ",".join(map(str, toks)), "--position", "4", "--layers", "0,%d" % L])
    C.check(p.returncode == 0, "lens --position 4 (the last) --layers 0,L is accepted (exit %d %s)" % (
        p.returncode, p.stderr.strip()[-200:]))

    print("---- summary: worst lens row rel diff %.3g (tolerance %g); %d of %d (layer, chain) reference choices "
          "within the slack of a boundary (compared to the engine rows only); %d top-id swaps allowed as reference "
          "near-ties" % (STATS["worst_rel"], TOL_REL, STATS["amb_layers"], STATS["ref_layers"], STATS["tie_allowances"]))
    return C.finish(t0)


if __name__ == "__main__":
    sys.exit(main())
