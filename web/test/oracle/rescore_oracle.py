#!/usr/bin/env python3
"""A numpy re-scoring of one decoding step from raw logits: what `logitscope replay`, the server's
POST /v1/logitscope/replay and the web page's re-scorer compute (docs/server-api.md, "The logit
microscope"). Each stage is one of transformers' formulas as tests/decode/hf_formulas.py states
them; what this file adds is which stages run and in which order, as src/decode/ decides:

- order (src/decode/order.cpp preset_order): hf: repetition, presence, frequency, temperature,
  top_k, top_p, min_p; vllm: repetition, frequency, presence, temperature, min_p, top_k, top_p;
  llama_cpp: repetition, frequency, presence, top_k, top_p, min_p, temperature.
- inactive stages are left out: temperature 1, top_k <= 0, top_p >= 1, min_p 0, repetition
  penalty 1, presence/frequency 0.
- temperature 0 is greedy (validate.cpp decode_mode); the warpers (temperature, top_k, top_p,
  min_p) then do not run (sampler.cpp: include_warpers only when sampling), the penalties do,
  and the choice is the argmax (lowest id on ties, choose.cpp).
- llama_cpp: top_k keeps exactly k (ties by lower id), top_p keeps until the mass reaches p
  (llama.cpp's rule); hf and vllm: top_k keeps ties, top_p removes while cum <= 1 - p.
- sampling: the recorded draw, walked by hf_formulas.sample_inverse_cdf (choose.cpp).
- per stage (trace.cpp trace_stage): candidates = scores above -inf after the stage,
  mass_removed = probability under the stage's input of what it set to -inf, entropy (nats) of
  the stage's output.

Run as a script, it checks itself against the CLI: `rescore_oracle.py --logitscope BIN
--tokenizer-from DIR [--model DIR]` records a sampled generation with `generate --json
--dump-logits`, compares every recorded stage with rescore() on the dumped rows, then runs
`logitscope replay` under several settings and compares every step."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "decode"))
import hf_formulas as hf  # noqa: E402

F32 = np.float32
NEG_INF = -np.inf

ORDERS = {
    "hf": ["repetition_penalty", "presence_penalty", "frequency_penalty",
           "temperature", "top_k", "top_p", "min_p"],
    "vllm": ["repetition_penalty", "frequency_penalty", "presence_penalty",
             "temperature", "min_p", "top_k", "top_p"],
    "llama_cpp": ["repetition_penalty", "frequency_penalty", "presence_penalty",
                  "top_k", "top_p", "min_p", "temperature"],
}
WARPERS = {"temperature", "top_k", "top_p", "min_p"}
# What a setting is when it is not given: every stage inactive.
NEUTRAL = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
           "presence_penalty": 0.0, "frequency_penalty": 0.0, "order_preset": "hf"}
SIX = ["temperature", "top_k", "top_p", "min_p", "repetition_penalty", "order_preset"]


def preset_name(name):
    """hf | vllm | llama_cpp (the CLI and the trace header write llama.cpp)."""
    name = str(name).replace(".", "_")
    if name not in ORDERS:
        raise ValueError(f"unknown order preset {name!r}")
    return name


def settings_from_header(header):
    """The six settings (and the two OpenAI penalties) a trace header or a kept generation's
    header recorded: header["settings"][field]["value"]."""
    recorded = header.get("settings") or {}
    out = dict(NEUTRAL)
    for k in NEUTRAL:
        entry = recorded.get(k)
        if isinstance(entry, dict) and "value" in entry:
            out[k] = entry["value"]
    out["order_preset"] = preset_name(out["order_preset"])
    return out


def merged(recorded, overrides):
    """recorded settings with the given ones replaced (settings not given stay as recorded)."""
    out = dict(recorded)
    out.update({k: v for k, v in (overrides or {}).items() if v is not None})
    out["order_preset"] = preset_name(out["order_preset"])
    return out


def is_greedy(settings):
    return float(settings.get("temperature", 1.0)) == 0.0


def active_stages(settings):
    """The stages that run, in order (the header's `stages`)."""
    s = {**NEUTRAL, **settings}
    greedy = is_greedy(s)
    active = {
        "repetition_penalty": float(s["repetition_penalty"]) != 1.0,
        "presence_penalty": float(s["presence_penalty"]) != 0.0,
        "frequency_penalty": float(s["frequency_penalty"]) != 0.0,
        "temperature": float(s["temperature"]) != 1.0 and float(s["temperature"]) > 0.0,
        "top_k": int(s["top_k"]) > 0,
        "top_p": float(s["top_p"]) < 1.0,
        "min_p": float(s["min_p"]) > 0.0,
    }
    return [name for name in ORDERS[preset_name(s["order_preset"])]
            if active[name] and not (greedy and name in WARPERS)]


def entropy(scores):
    """Nats, as distribution.cpp entropy(): over the tokens above -inf, logp = s - lse."""
    s = np.asarray(scores, dtype=np.float64)
    finite = s > NEG_INF
    if not finite.any():
        return 0.0
    logp = hf.log_softmax(s)[finite]
    p = np.exp(logp)
    keep = p > 0
    return float(-(p[keep] * logp[keep]).sum())


def log_probs(scores):
    """log-softmax in double; -inf for removed tokens."""
    s = np.asarray(scores, dtype=np.float64)
    out = np.full(len(s), NEG_INF)
    finite = s > NEG_INF
    if finite.any():
        out[finite] = hf.log_softmax(s)[finite]
    return out


def apply_stage(name, s, history, prompt_len, st):
    preset = preset_name(st["order_preset"])
    if name == "repetition_penalty":
        return hf.repetition_penalty(s, np.asarray(history, dtype=np.int64), float(st[name]))
    if name == "presence_penalty":
        gen = list(history[prompt_len:])
        return hf.presence_penalty(s, gen, float(st[name])) if gen else s.copy()
    if name == "frequency_penalty":
        gen = list(history[prompt_len:])
        return hf.frequency_penalty(s, gen, float(st[name])) if gen else s.copy()
    if name == "temperature":
        return hf.temperature(s, float(st[name]))
    if name == "top_k":
        return hf.top_k(s, int(st[name]), keep_ties=preset != "llama_cpp")
    if name == "top_p":
        if preset == "llama_cpp":
            return hf.top_p_llama(s, float(st[name]))
        return hf.top_p(s, float(st[name]))
    if name == "min_p":
        return hf.min_p(s, float(st[name]))
    raise ValueError(f"unknown stage {name}")


def rescore(logits, history, prompt_len, settings, draw=None):
    """One step. logits: the raw float32 scores; history: prompt + generated ids before this
    step; settings: temperature, top_k, top_p, min_p, repetition_penalty, order_preset (and
    optionally presence_penalty, frequency_penalty); draw: the uniform draw (None for greedy:
    temperature 0; a sampled step needs one). Returns {stages: [{name, candidates, mass_removed,
    entropy}], stage_scores (each stage's output), final (float32 scores), final_logprobs
    (float64, -inf = removed), pool, entropy, chosen, chosen_prob, mode}."""
    st = {**NEUTRAL, **settings}
    st["order_preset"] = preset_name(st["order_preset"])
    raw = np.asarray(logits, dtype=F32)
    greedy = is_greedy(st)
    if not greedy and draw is None:
        raise ValueError("a sampled step (temperature > 0) needs its draw")
    s = raw.copy()
    stages, stage_scores = [], []
    for name in active_stages(st):
        before = s
        after = apply_stage(name, before, history, prompt_len, st)
        p_before = hf.softmax(before)
        removed = (before > NEG_INF) & ~(after > NEG_INF)
        stages.append({"name": name,
                       "candidates": int((after > NEG_INF).sum()),
                       "mass_removed": float(p_before[removed].sum()),
                       "entropy": entropy(after)})
        stage_scores.append(after)
        s = after
    if not (s > NEG_INF).any():
        raise ValueError("every token was removed")
    if greedy:
        chosen = int(np.argmax(s))  # the first maximum: the lowest id of a tie
    else:
        chosen = int(hf.sample_inverse_cdf(s, float(draw)))
    lp = log_probs(s)
    return {"stages": stages, "stage_scores": stage_scores, "final": s, "final_logprobs": lp,
            "pool": int((s > NEG_INF).sum()), "entropy": entropy(s), "chosen": chosen,
            "chosen_prob": float(np.exp(lp[chosen])), "mode": "greedy" if greedy else "sample"}


def prob_of(result, token):
    lp = result["final_logprobs"][token]
    return float(np.exp(lp)) if lp > NEG_INF else 0.0


def top_ids(scores, n):
    """Ids by score descending, lower id first among ties, above -inf only."""
    order = hf.desc_order(scores)
    return [int(i) for i in order[:n] if scores[i] > NEG_INF]


def close(a, b, rel=1e-6, abs_=1e-9):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= max(abs_, rel * max(abs(a), abs(b)))


# ---------------------------------------------------------------------------------------------
# Self-check against the CLI (`generate --json --dump-logits` and `replay --json`).

def _self_check(args):
    sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "server"))
    from server_util import Checker, synth_tiny  # noqa: E402
    c = Checker()
    tmp = tempfile.mkdtemp(prefix="ls_rescore_oracle_")
    try:
        model = args.model or synth_tiny(args.logitscope, args.tokenizer_from, tmp)
        npy, trace = os.path.join(tmp, "l.npy"), os.path.join(tmp, "t.jsonl")
        g = subprocess.run([args.logitscope, "generate", "--model", model, "--prompt", "中国的首都是",
                            "--json", "--top", "5", "--do-sample", "true", "--seed", "11",
                            "--repetition-penalty", "3", "--max-new-tokens", "10",
                            "--dump-logits", npy, "--threads", "2"],
                           capture_output=True, text=True, timeout=300)
        if not c.check("generate --json --dump-logits ran", g.returncode == 0, g.stderr[-300:]):
            return c.summary()
        with open(trace, "w") as f:
            f.write(g.stdout)
        lines = [json.loads(x) for x in g.stdout.splitlines() if x.strip()]
        header = lines[0]
        steps = [x for x in lines if x.get("type") == "step"]
        rows = np.load(npy)
        prompt = header["prompt_token_ids"]
        tokens = [s["chosen"]["id"] for s in steps]
        rec = settings_from_header(header)
        c.equal("the header's stages are active_stages() of its settings", header["stages"],
                active_stages(rec))
        ok_stages, ok_choice, first_bad = True, True, None
        for k, s in enumerate(steps):
            r = rescore(rows[k], prompt + tokens[:k], len(prompt), rec, s["draw"])
            got = [(x["name"], x["candidates"]) for x in r["stages"]]
            want = [(x["name"], x["candidates"]) for x in s["stages"]]
            good = got == want and all(
                close(a["mass_removed"], b["mass_removed"]) and close(a["entropy"], b["entropy"])
                for a, b in zip(r["stages"], s["stages"]))
            good_c = (r["chosen"] == s["chosen"]["id"] and r["pool"] == s["final_candidates"]
                      and close(r["entropy"], s["entropy_after"])
                      and close(r["chosen_prob"], s["chosen"]["prob"]))
            if not (good and good_c) and first_bad is None:
                first_bad = {"step": k, "oracle": {kk: r[kk] for kk in ("stages", "chosen", "pool")},
                             "trace": {"stages": s["stages"], "chosen": s["chosen"]["id"],
                                       "pool": s["final_candidates"]}}
            ok_stages &= good
            ok_choice &= good_c
        c.check(f"generate's {len(steps)} traced steps: every stage's name, candidates, mass_removed "
                "and entropy equal the oracle's", ok_stages, first_bad)
        c.check("generate's steps: chosen, pool, entropy_after and chosen prob equal the oracle's",
                ok_choice, first_bad)

        cases = [
            ("recorded", [], {}),
            ("temperature 1.3", ["--temperature", "1.3"], {"temperature": 1.3}),
            ("top_k 5", ["--top-k", "5"], {"top_k": 5}),
            ("top_p 0.5", ["--top-p", "0.5"], {"top_p": 0.5}),
            ("min_p 0.1", ["--min-p", "0.1"], {"min_p": 0.1}),
            ("repetition_penalty 1.5", ["--repetition-penalty", "1.5"], {"repetition_penalty": 1.5}),
            ("vllm, t 1.3, min_p 0.05", ["--order-preset", "vllm", "--temperature", "1.3",
                                         "--min-p", "0.05"],
             {"order_preset": "vllm", "temperature": 1.3, "min_p": 0.05}),
            ("llama.cpp, top_k 3, top_p 0.6", ["--order-preset", "llama.cpp", "--top-k", "3",
                                               "--top-p", "0.6"],
             {"order_preset": "llama_cpp", "top_k": 3, "top_p": 0.6}),
            ("llama.cpp, t 2, no top_k", ["--order-preset", "llama.cpp", "--temperature", "2",
                                          "--top-k", "0"],
             {"order_preset": "llama_cpp", "temperature": 2.0, "top_k": 0}),
            ("temperature 0 (greedy)", ["--temperature", "0"], {"temperature": 0.0}),
            ("greedy, penalty 1", ["--temperature", "0", "--repetition-penalty", "1"],
             {"temperature": 0.0, "repetition_penalty": 1.0}),
        ]
        for name, flags, over in cases:
            r = subprocess.run([args.logitscope, "replay", "--trace", trace, "--json", "--top", "5",
                                *flags], capture_output=True, text=True, timeout=300)
            if not c.check(f"replay {name}: ran", r.returncode == 0, r.stderr[-300:]):
                continue
            out = json.loads(r.stdout)
            st = merged(rec, over)
            bad, changed = [], []
            for k, srv in enumerate(out["steps"]):
                draw = steps[k]["draw"] if not is_greedy(st) else None
                o = rescore(rows[k], prompt + tokens[:k], len(prompt), st, draw)
                want = {"chosen": o["chosen"], "pool": o["pool"], "changed": o["chosen"] != tokens[k],
                        "top": top_ids(o["final"], 5)}
                got = {"chosen": srv["chosen"], "pool": srv["pool"], "changed": srv["changed"],
                       "top": [t["id"] for t in srv["top"]]}
                if (got != want or not close(srv["entropy"], o["entropy"])
                        or not close(srv["chosen_prob"], o["chosen_prob"])
                        or not close(srv["recorded_prob"], prob_of(o, tokens[k]))):
                    bad.append({"step": k, "cli": srv, "oracle": want,
                                "oracle_entropy": o["entropy"], "oracle_chosen_prob": o["chosen_prob"]})
                if o["chosen"] != tokens[k]:
                    changed.append(k)
            c.check(f"replay {name}: every step's chosen, pool, entropy, probabilities and top 5 "
                    f"equal the oracle's ({len(changed)} of {len(out['steps'])} steps change)",
                    not bad, bad[:1] or None)
            c.equal(f"replay {name}: chain stages are the oracle's active stages",
                    [part.split("(")[0] for part in out["chain"].split(" -> ")] if out["chain"] != "(no stages)"
                    else [], active_stages(st))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return c.summary()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    ap.add_argument("--model", help="a model directory instead of synthesising the tiny one")
    sys.exit(_self_check(ap.parse_args()))
