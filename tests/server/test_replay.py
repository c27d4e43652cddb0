#!/usr/bin/env python3
"""The logit microscope of `logitscope serve` (docs/server-api.md, last section) end to end: kept
generations (chat and completions, streamed and not) carry their id and prompt ids in the header,
GET /v1/logitscope/generations/ID matches the streamed trace, GET .../logits/K are the raw logits
the trace was computed from, POST /v1/logitscope/replay reproduces the recording with its own
settings and equals web/test/oracle/rescore_oracle.py (transformers' formulas in numpy) on the fetched
logits under other settings, a fork continues from a token the run did not choose, every error
names its field, --keep-mib bounds what is kept (a long generation keeps its first steps, older
ones are dropped), and the page is served with its Content-Security-Policy.

usage: test_replay.py --logitscope BIN --tokenizer-from DIR"""
import argparse
import json
import os
import re
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "web", "test", "oracle"))
from server_util import Checker, Server, collect_stream, short, synth_tiny  # noqa: E402
import rescore_oracle as oracle  # noqa: E402

CHAT, COMP = "/v1/chat/completions", "/v1/completions"
INFO, GEN, REPLAY = "/v1/logitscope/info", "/v1/logitscope/generations/", "/v1/logitscope/replay"
V = 151936
TOKENS = 8
TRACE_TOP = 5
# The tiny model repeats its last token unless penalised; 3 makes it vary.
BASE = {"max_tokens": TOKENS, "repetition_penalty": 3, "seed": 21,
        "logitscope": {"keep": True, "trace": TRACE_TOP}}
MESSAGES = [{"role": "user", "content": "中国的首都是"}]
PROMPT_IDS = [9707, 11, 1879, 374]
FOCUS = 2
REL = 1e-6

c = Checker()


def close(a, b, rel=REL, abs_=1e-12):
    return oracle.close(a, b, rel, abs_)


# ---------------------------------------------------------------------------------------------
# Requests and what comes back.

def run_request(server, path, body):
    """(header, trace steps, text, finish_reason, error) of a request, streamed or not."""
    if body.get("stream"):
        chunks, done, errors = collect_stream(server.stream(path, body))
        if errors or not done:
            return None, [], "", None, {"errors": errors, "done": done}
        header, trace, text, finish = None, [], "", None
        for ch in chunks:
            ls = ch.get("logitscope") or {}
            if "header" in ls and header is None:
                header = ls["header"]
            trace += ls.get("trace", [])
            for choice in ch.get("choices", []):
                text += (choice.get("delta") or {}).get("content") or choice.get("text") or ""
                finish = choice.get("finish_reason") or finish
        return header, trace, text, finish, None
    r = server.post(path, body)
    if r.status != 200:
        return None, [], "", None, repr(r)
    j = r.json
    ch = j["choices"][0]
    text = ch.get("text") if "text" in ch else (ch.get("message") or {}).get("content") or ""
    return j["logitscope"]["header"], j["logitscope"].get("trace", []), text, ch["finish_reason"], None


def fetch_logits(server, gid, k):
    r = server.get(f"{GEN}{gid}/logits/{k}")
    if r.status != 200:
        return r, None
    return r, np.frombuffer(r.body, dtype="<f4").astype(np.float32)


def generation(server, gid):
    r = server.get(GEN + str(gid))
    return r, (r.json if r.status == 200 else None)


def param_of(r):
    return r.error().get("param")


# ---------------------------------------------------------------------------------------------

def test_info(server):
    r = server.get(INFO)
    c.equal("info: HTTP 200", r.status, 200)
    j = r.json or {}
    c.equal("info: model is the served name", j.get("model"), "tiny")
    c.equal("info: vocab_size", j.get("vocab_size"), V)
    c.equal("info: max_model_len is --ctx", j.get("max_model_len"), 512)
    c.equal("info: order_presets", j.get("order_presets"), ["hf", "vllm", "llama_cpp"])
    c.check("info: has_chat_template is a bool", isinstance(j.get("has_chat_template"), bool),
            j.get("has_chat_template"))
    st = j.get("settings") or {}
    want = {"temperature": 0.7, "top_k": 20, "top_p": 0.8}
    c.check("info: settings carry generation_config.json's temperature, top_k and top_p",
            all((st.get(k) or {}).get("value") == v and (st.get(k) or {}).get("source") ==
                "generation_config.json" for k, v in want.items()),
            {k: st.get(k) for k in want})
    c.check("info: min_p and repetition_penalty have a value and a source",
            all(isinstance(st.get(k), dict) and "value" in st[k] and "source" in st[k]
                for k in ("min_p", "repetition_penalty")),
            {k: st.get(k) for k in ("min_p", "repetition_penalty")})


def kept_request(server, label, path, body, want_prompt):
    """One kept request: checks its header and the kept generation against its trace. Returns
    (gid, header, trace, generation json) or None."""
    header, trace, text, finish, err = run_request(server, path, body)
    if not c.check(f"{label}: HTTP 200 / a stream with [DONE] and no error", err is None, err):
        return None
    header = header or {}
    gid = header.get("generation")
    c.check(f"{label}: the header carries a generation id", isinstance(gid, (str, int)) and gid != "",
            gid)
    pids = header.get("prompt_token_ids")
    c.check(f"{label}: the header carries prompt_token_ids (a list of ids)",
            isinstance(pids, list) and pids and all(isinstance(t, int) for t in pids), pids)
    if want_prompt is not None:
        c.equal(f"{label}: prompt_token_ids are the prompt's tokens", pids, want_prompt)
    c.equal(f"{label}: the trace has one step per token", [s.get("step") for s in trace],
            list(range(len(trace))))
    r, g = generation(server, gid)
    if not c.equal(f"{label}: GET generations/ID: HTTP 200", r.status, 200):
        print(r)
        return None
    c.equal(f"{label}: generation id", g.get("id"), gid)
    c.equal(f"{label}: generation prompt_token_ids = the header's", g.get("prompt_token_ids"), pids)
    c.equal(f"{label}: generation tokens = the trace's chosen ids", g.get("tokens"),
            [s["chosen"]["id"] for s in trace])
    c.equal(f"{label}: generation draws = the trace's draws", g.get("draws"),
            [s.get("draw") for s in trace])
    c.equal(f"{label}: kept_steps = every step", g.get("kept_steps"), len(trace))
    c.equal(f"{label}: finished", g.get("finished"), True)
    c.equal(f"{label}: vocab_size", g.get("vocab_size"), V)
    gh = g.get("header") or {}
    c.check(f"{label}: the generation's header is the response's (chain, mode, settings, seed)",
            all(gh.get(k) == header.get(k) for k in ("chain", "mode", "settings", "seed", "stages")),
            {k: (gh.get(k), header.get(k)) for k in ("chain", "mode", "seed")})
    return gid, header, trace, g


def test_kept(server, results):
    chat_prompt = server.post("/tokenize", {"messages": MESSAGES, "add_generation_prompt": True})
    want_chat = chat_prompt.json.get("tokens") if chat_prompt.status == 200 else None
    c.check("POST /tokenize renders the chat prompt", want_chat is not None, chat_prompt)
    for label, path, extra, want in (
            ("completions", COMP, {"prompt": PROMPT_IDS}, PROMPT_IDS),
            ("completions streamed", COMP, {"prompt": PROMPT_IDS, "stream": True, "seed": 22},
             PROMPT_IDS),
            ("chat", CHAT, {"messages": MESSAGES, "seed": 23}, want_chat),
            ("chat streamed", CHAT, {"messages": MESSAGES, "stream": True, "seed": 24}, want_chat),
            ("completions greedy", COMP, {"prompt": "中国的首都是", "temperature": 0}, None)):
        out = kept_request(server, label, path, {**BASE, **extra}, want)
        if out:
            results[label] = out
    # The same seed and settings kept and not kept: the same tokens (keeping changes nothing).
    if "completions" in results:
        plain = server.post(COMP, {**BASE, "prompt": PROMPT_IDS, "logitscope": {"trace": TRACE_TOP}})
        c.equal("keeping changes no token: the same request without keep has the same trace",
                plain.json["logitscope"]["trace"] if plain.status == 200 else plain.text,
                results["completions"][2])
        c.check("without keep: no generation id in the header",
                plain.status == 200 and "generation" not in plain.json["logitscope"]["header"],
                plain.json["logitscope"]["header"].get("generation") if plain.status == 200 else plain)
    r = server.post(COMP, {**BASE, "prompt": PROMPT_IDS, "max_tokens": 2, "logitscope": {"keep": True}})
    c.check("keep without trace: the header has a generation id and the response no trace",
            r.status == 200 and r.json["logitscope"]["header"].get("generation") is not None
            and "trace" not in r.json["logitscope"], short(r.json or r.text))
    ids = [o[0] for o in results.values()]
    c.equal("every kept generation has its own id", len(set(ids)), len(ids))
    # A client that read [DONE] (or the whole answer) then asks: the generation is finished.
    seen = []
    for i in range(6):
        body = {**BASE, "prompt": PROMPT_IDS, "max_tokens": 2, "seed": 40 + i, "stream": i % 2 == 0}
        h, _, _, _, err = run_request(server, COMP, body)
        gid = (h or {}).get("generation")
        _, g = generation(server, gid) if gid is not None else (None, None)
        seen.append({"stream": body["stream"], "finished": (g or {}).get("finished"), "error": err})
    c.check("right after [DONE] or the whole answer, GET generations/ID says finished (6 requests)",
            all(s["finished"] is True for s in seen), seen)


def test_logits(server, results):
    for label in ("completions", "chat streamed", "completions greedy"):
        if label not in results:
            continue
        gid, header, trace, g = results[label]
        ok_size, ok_type, ok_prob, ok_top, ok_logit, first = True, True, True, True, True, None
        for k, s in enumerate(trace):
            r, x = fetch_logits(server, gid, k)
            ok_size &= r.status == 200 and len(r.body) == V * 4
            ok_type &= r.headers.get("content-type", "").startswith("application/octet-stream")
            if x is None or len(x) != V:
                first = first or {"step": k, "answer": repr(r)}
                continue
            p = oracle.hf.softmax(x)
            good_p = close(float(p[s["chosen"]["id"]]), s["chosen"]["raw_prob"], 1e-9)
            good_t = oracle.top_ids(x, TRACE_TOP) == [t["id"] for t in s["raw"]["top"]]
            good_l = float(x[s["chosen"]["id"]]) == s["chosen"]["logit"]
            if not (good_p and good_t and good_l) and first is None:
                first = {"step": k, "softmax": float(p[s["chosen"]["id"]]),
                         "raw_prob": s["chosen"]["raw_prob"], "top": oracle.top_ids(x, TRACE_TOP),
                         "trace top": [t["id"] for t in s["raw"]["top"]]}
            ok_prob &= good_p
            ok_top &= good_t
            ok_logit &= good_l
        n = len(trace)
        c.check(f"{label}: GET logits/K for all {n} steps: HTTP 200, V*4 = {V * 4} bytes", ok_size, first)
        c.check(f"{label}: logits are application/octet-stream", ok_type, r.headers.get("content-type"))
        c.check(f"{label}: softmax(logits)[chosen] = the trace's chosen.raw_prob (1e-9)", ok_prob, first)
        c.check(f"{label}: logits' top {TRACE_TOP} ids = the trace's raw.top", ok_top, first)
        c.check(f"{label}: logits[chosen] = the trace's chosen.logit (bit for bit)", ok_logit, first)
        # The logits are the raw ones: the recorded chain on them gives every recorded stage.
        rec = oracle.settings_from_header(header)
        prompt = g["prompt_token_ids"]
        bad = None
        for k, s in enumerate(trace):
            _, x = fetch_logits(server, gid, k)
            if x is None:
                break
            o = oracle.rescore(x, prompt + g["tokens"][:k], len(prompt), rec, s.get("draw"))
            got = [(st["name"], st["candidates"], st["mass_removed"], st["entropy"]) for st in s["stages"]]
            want = [(st["name"], st["candidates"], st["mass_removed"], st["entropy"]) for st in o["stages"]]
            same = len(got) == len(want) and all(a[:2] == b[:2] and close(a[2], b[2]) and close(a[3], b[3])
                                                 for a, b in zip(got, want))
            if not same or o["chosen"] != s["chosen"]["id"]:
                bad = {"step": k, "trace": got, "oracle": want, "trace chosen": s["chosen"]["id"],
                       "oracle chosen": o["chosen"]}
                break
        c.check(f"{label}: the recorded settings re-run by the oracle on the logits give every traced "
                "stage and token", bad is None, bad)
    if "completions" in results:
        gid, _, trace, _ = results["completions"]
        for k in (len(trace), 10 ** 6):
            r = server.get(f"{GEN}{gid}/logits/{k}")
            c.check(f"GET logits/{k} (out of range): 400 or 404 with a param", r.status in (400, 404)
                    and param_of(r) is not None, repr(r))
        for k in (-1, "x"):  # not a step number at all: no such route is as good as naming the step
            r = server.get(f"{GEN}{gid}/logits/{k}")
            c.check(f"GET logits/{k}: 400 or 404", r.status in (400, 404), repr(r))


def replay(server, gid, settings=None, step=None, top_n=None):
    body = {"generation": gid}
    if settings is not None:
        body["settings"] = settings
    if step is not None:
        body["step"] = step
    if top_n is not None:
        body["top_n"] = top_n
    return server.post(REPLAY, body)


FOCUS_KEYS = ["step", "raw", "stages", "chosen", "runner_up", "margin_prob", "margin_logit",
              "entropy_before", "entropy_after", "final_candidates", "mass_removed", "draw"]


def test_replay_recorded(server, results):
    for label, (gid, header, trace, g) in results.items():
        r = replay(server, gid)
        if not c.equal(f"{label}: replay with no settings: HTTP 200", r.status, 200):
            print(r)
            continue
        j = r.json
        c.equal(f"{label}: replay names the generation", j.get("generation"), gid)
        steps = j.get("steps") or []
        c.equal(f"{label}: replay with no settings changes nothing (changed == [])", j.get("changed"), [])
        c.equal(f"{label}: every replayed step chooses the recorded token",
                [(s["recorded"], s["chosen"], s["changed"]) for s in steps],
                [(t, t, False) for t in g["tokens"]])
        c.equal(f"{label}: every replayed step reuses the recorded draw", [s["draw"] for s in steps],
                g["draws"])
        c.equal(f"{label}: replay's chain is the recorded chain", j.get("chain"), header.get("chain"))
        c.equal(f"{label}: no step asked: focus is null", j.get("focus"), None)
        c.check(f"{label}: pool and chosen_prob are the trace's final_candidates and chosen.prob",
                all(s["pool"] == t["final_candidates"] and close(s["chosen_prob"], t["chosen"]["prob"], 1e-9)
                    and close(s["entropy"], t["entropy_after"], 1e-9) for s, t in zip(steps, trace)),
                [(s["pool"], t["final_candidates"]) for s, t in zip(steps, trace)])
        # The focus step with the recorded settings is the traced step itself.
        r = replay(server, gid, step=FOCUS, top_n=TRACE_TOP)
        focus = (r.json or {}).get("focus") or {}
        want = trace[FOCUS] if len(trace) > FOCUS else {}
        diff = {k: {"replay": focus.get(k), "trace": want.get(k)} for k in FOCUS_KEYS
                if focus.get(k) != want.get(k)}
        c.check(f"{label}: replay focus step {FOCUS} (top_n {TRACE_TOP}) equals the traced step "
                f"({', '.join(FOCUS_KEYS)})", r.status == 200 and not diff, diff or None)


REPLAY_SETTINGS = [
    {"temperature": 1.3},
    {"top_k": 5},
    {"top_p": 0.5},
    {"min_p": 0.1},
    {"repetition_penalty": 1.5},
    {"order_preset": "vllm"},
    {"order_preset": "llama_cpp"},
    {"order_preset": "llama_cpp", "top_k": 3, "temperature": 1.5, "top_p": 0.9},
    {"order_preset": "vllm", "temperature": 1.2, "min_p": 0.05, "top_k": 0},
    {"temperature": 2, "top_k": 0, "top_p": 1, "repetition_penalty": 1},
    {"presence_penalty": 0.7, "frequency_penalty": 0.4},
    {"temperature": 0},
    {"temperature": 0, "repetition_penalty": 1.0},
]


def compare_replay(server, label, gid, g, header, settings, step=FOCUS, top_n=10):
    r = replay(server, gid, settings, step=step, top_n=top_n)
    name = f"{label}, replay {json.dumps(settings)}"
    if not c.equal(f"{name}: HTTP 200", r.status, 200):
        print(r)
        return
    j = r.json
    st = oracle.merged(oracle.settings_from_header(header), settings)
    prompt = g["prompt_token_ids"]
    steps = j.get("steps") or []
    c.equal(f"{name}: one step per kept step", len(steps), g["kept_steps"])
    bad, changed, focus_oracle = [], [], None
    for k, s in enumerate(steps):
        _, x = fetch_logits(server, gid, k)
        sampled = not oracle.is_greedy(st)
        # A sampled replay uses the recorded draw; a greedy recording has none, so the server's.
        draw = (g["draws"][k] if g["draws"][k] is not None else s.get("draw")) if sampled else None
        o = oracle.rescore(x, prompt + g["tokens"][:k], len(prompt), st, draw)
        want = {"step": k, "recorded": g["tokens"][k], "chosen": o["chosen"], "pool": o["pool"],
                "changed": o["chosen"] != g["tokens"][k], "draw": draw}
        got = {kk: s.get(kk) for kk in want}
        if (got != want or not close(s["entropy"], o["entropy"]) or not close(s["chosen_prob"], o["chosen_prob"])
                or not close(s["recorded_prob"], oracle.prob_of(o, g["tokens"][k]))):
            bad.append({"server": s, "oracle": {**want, "entropy": o["entropy"], "chosen_prob": o["chosen_prob"],
                                                "recorded_prob": oracle.prob_of(o, g["tokens"][k])}})
        if o["chosen"] != g["tokens"][k]:
            changed.append(k)
        if k == step:
            focus_oracle = o
    c.check(f"{name}: every step's chosen, pool, entropy, chosen_prob, recorded_prob and draw equal the "
            f"oracle's", not bad, bad[:1] or None)
    c.equal(f"{name}: changed lists the steps whose oracle choice differs ({len(changed)} of {len(steps)})",
            j.get("changed"), changed)
    names = [] if j.get("chain") in ("", "(no stages)") else [p.split("(")[0] for p in j["chain"].split(" -> ")]
    c.equal(f"{name}: chain stages are the oracle's", names, oracle.active_stages(st))
    f = j.get("focus") or {}
    if focus_oracle is None:
        c.check(f"{name}: focus step {step}", False, "no such step")
        return
    got = [(s.get("name"), s.get("candidates")) for s in f.get("stages", [])]
    want = [(s["name"], s["candidates"]) for s in focus_oracle["stages"]]
    ok = got == want and all(close(a["mass_removed"], b["mass_removed"]) and close(a["entropy"], b["entropy"])
                             for a, b in zip(f.get("stages", []), focus_oracle["stages"]))
    c.check(f"{name}: focus step {step}: every stage's name, candidates, mass_removed, entropy equal the "
            "oracle's", ok, {"server": [(s.get("name"), s.get("candidates"), s.get("mass_removed"),
                                         s.get("entropy")) for s in f.get("stages", [])],
                             "oracle": focus_oracle["stages"]} if not ok else None)
    tops_ok = all([t["id"] for t in s.get("top", [])] == oracle.top_ids(sc, top_n)
                  for s, sc in zip(f.get("stages", []), focus_oracle["stage_scores"]))
    c.check(f"{name}: focus step {step}: every stage's top {top_n} ids equal the oracle's", tops_ok and ok)
    fc = f.get("chosen") or {}
    c.check(f"{name}: focus chosen, final_candidates, entropy_after and chosen.prob equal the oracle's",
            fc.get("id") == focus_oracle["chosen"] and f.get("final_candidates") == focus_oracle["pool"]
            and close(f.get("entropy_after"), focus_oracle["entropy"])
            and close(fc.get("prob"), focus_oracle["chosen_prob"]),
            {"server": [fc.get("id"), f.get("final_candidates"), f.get("entropy_after"), fc.get("prob")],
             "oracle": [focus_oracle["chosen"], focus_oracle["pool"], focus_oracle["entropy"],
                        focus_oracle["chosen_prob"]]})
    c.equal(f"{name}: focus step number", f.get("step"), step)
    return changed


def test_replay_settings(server, results):
    if "completions" not in results:
        c.check("replay under other settings: a kept sampled generation", False, "none")
        return
    gid, header, _, g = results["completions"]
    total = 0
    for settings in REPLAY_SETTINGS:
        changed = compare_replay(server, "completions", gid, g, header, settings)
        total += len(changed or [])
    c.check("replays under other settings change some steps (the comparison is not vacuous)", total > 0, total)
    # A streamed chat generation, focus on the last step.
    if "chat streamed" in results:
        gid, header, _, g = results["chat streamed"]
        compare_replay(server, "chat streamed", gid, g, header,
                       {"temperature": 1.3, "top_k": 5, "order_preset": "llama_cpp"},
                       step=g["kept_steps"] - 1, top_n=3)
    # Recorded under llama_cpp (its header writes "llama.cpp"): replayed as recorded, then changed.
    out = kept_request(server, "completions llama_cpp", COMP,
                       {**BASE, "prompt": PROMPT_IDS, "seed": 31,
                        "logitscope": {**BASE["logitscope"], "order_preset": "llama_cpp"}}, PROMPT_IDS)
    if out:
        gid, header, _, g = out
        compare_replay(server, "completions llama_cpp", gid, g, header, {})
        compare_replay(server, "completions llama_cpp", gid, g, header, {"top_k": 5, "temperature": 1.3})
        compare_replay(server, "completions llama_cpp", gid, g, header, {"order_preset": "hf"})
    # A greedy recording has no draws; replayed as sampling, the oracle takes the server's draw.
    if "completions greedy" in results:
        gid, header, _, g = results["completions greedy"]
        c.equal("greedy recording: the draws are null", g["draws"], [None] * len(g["tokens"]))
        compare_replay(server, "completions greedy", gid, g, header, {"repetition_penalty": 1.5})
        r = replay(server, gid, {"temperature": 1.0, "top_k": 10})
        draws = [s.get("draw") for s in (r.json or {}).get("steps", [])]
        c.check("greedy recording replayed as sampling: every step reports a draw in [0, 1)",
                r.status == 200 and draws and all(isinstance(d, float) and 0 <= d < 1 for d in draws), draws)
        if r.status == 200 and draws and all(isinstance(d, float) for d in draws):
            compare_replay(server, "completions greedy", gid, g, header, {"temperature": 1.0, "top_k": 10})


def test_fork(server, results):
    if "completions" not in results:
        c.check("fork: a kept generation", False, "none")
        return
    gid, header, trace, g = results["completions"]
    step = trace[FOCUS]
    alt = next(t["id"] for t in step["raw"]["top"] if t["id"] != step["chosen"]["id"])
    prompt = g["prompt_token_ids"] + g["tokens"][:FOCUS] + [alt]
    body = {**BASE, "prompt": prompt, "stream": True, "max_tokens": 4}
    h, tr, text, finish, err = run_request(server, COMP, body)
    c.check(f"fork at step {FOCUS} with token {alt}: the stream ends with [DONE], no error", err is None, err)
    fid = (h or {}).get("generation")
    c.check("fork: a new generation id", fid is not None and fid != gid, fid)
    r, fg = generation(server, fid)
    c.equal("fork: the kept fork's prompt_token_ids = prompt_token_ids + tokens[:2] + [token]",
            (fg or {}).get("prompt_token_ids"), prompt)
    c.equal("fork: its tokens are the streamed trace's", (fg or {}).get("tokens"), [s["chosen"]["id"] for s in tr])
    c.check("fork: text was streamed", isinstance(text, str) and len(tr) > 0, {"text": text, "steps": len(tr)})
    # Step K's logits are those of prompt + tokens[:K]: a generation from that prefix sees (nearly)
    # the same first logits (prefill of the prefix vs decoding it token by token).
    prefix = g["prompt_token_ids"] + g["tokens"][:FOCUS]
    h2, _, _, _, err = run_request(server, COMP, {**BASE, "prompt": prefix, "max_tokens": 1})
    if c.check("a generation from prompt + tokens[:2]: kept", err is None and h2 and h2.get("generation"), err):
        _, a = fetch_logits(server, h2["generation"], 0)
        _, b = fetch_logits(server, gid, FOCUS)
        if a is not None and b is not None:
            d = float(np.max(np.abs(a.astype(np.float64) - b)))
            c.check(f"its step-0 logits equal the recording's step-{FOCUS} logits (max |diff| {d:.3g} <= 1e-2, "
                    "same argmax)", d <= 1e-2 and int(np.argmax(a)) == int(np.argmax(b)), d)


def err_check(name, r, statuses, params):
    e = r.error()
    c.check(f"{name}: {'/'.join(map(str, statuses))} with param {' or '.join(map(str, params))}",
            r.status in statuses and e.get("param") in params and e.get("type") == "invalid_request_error",
            repr(r))


def test_errors(server, results):
    err_check("GET an unknown generation", server.get(GEN + "no-such-generation"), [404], ["generation"])
    r = server.get(GEN + "no-such-generation")
    c.equal("unknown generation: code not_found", r.error().get("code"), "not_found")
    err_check("GET logits of an unknown generation", server.get(GEN + "no-such-generation/logits/0"), [404],
              ["generation"])
    err_check("replay of an unknown generation", server.post(REPLAY, {"generation": "no-such-generation"}),
              [404], ["generation"])
    err_check("replay without a generation", server.post(REPLAY, {}), [400], ["generation"])
    err_check("replay: generation of the wrong type", server.post(REPLAY, {"generation": [1]}), [400, 404],
              ["generation"])
    err_check("replay: a body that is not JSON", server.post(REPLAY, None, raw=b"{nope"), [400], [None])
    err_check("keep with n 2", server.post(COMP, {"prompt": "Hi", "max_tokens": 2, "n": 2,
                                                  "logitscope": {"keep": True}}), [400],
              ["n", "logitscope.keep"])
    err_check("keep with two prompts", server.post(COMP, {"prompt": ["Hi", "Yo"], "max_tokens": 2,
                                                          "logitscope": {"keep": True}}), [400],
              ["prompt", "logitscope.keep"])
    err_check("keep: not a bool", server.post(COMP, {"prompt": "Hi", "max_tokens": 2,
                                                     "logitscope": {"keep": "yes"}}), [400], ["logitscope.keep"])
    if "completions" not in results:
        return
    gid, _, trace, _ = results["completions"]
    err_check("replay: step = kept_steps", replay(server, gid, step=len(trace)), [400, 404], ["step"])
    err_check("replay: step -1", replay(server, gid, step=-1), [400], ["step"])
    err_check("replay: step \"2\"", replay(server, gid, step="2"), [400], ["step"])
    err_check("replay: top_n 0", replay(server, gid, step=0, top_n=0), [400], ["top_n"])
    err_check("replay: top_n 51", replay(server, gid, step=0, top_n=51), [400], ["top_n"])
    err_check("replay: settings not an object", replay(server, gid, settings=[1]), [400], ["settings"])
    for field, value in (("temperature", 5), ("temperature", -1), ("temperature", "hot"), ("top_k", "x"),
                         ("top_k", -2), ("top_k", 1.5), ("top_p", 0), ("top_p", 1.5), ("min_p", 2),
                         ("repetition_penalty", 0), ("repetition_penalty", 11), ("presence_penalty", 3),
                         ("frequency_penalty", -3), ("order_preset", "llama.cpp2"), ("order_preset", 1)):
        err_check(f"replay: settings.{field} = {json.dumps(value)}",
                  replay(server, gid, settings={field: value}), [400], [f"settings.{field}"])
    ok = replay(server, gid, settings={"top_k": -1})
    c.check("replay: settings.top_k = -1 turns top_k off (as the request field)",
            ok.status == 200 and "top_k" not in ok.json.get("chain", ""), short(ok.json or ok.text))


def test_budget(binary, model, servers):
    """--keep-mib 1: one step of this vocabulary is 151936 x 4 bytes = 593.5 KiB, so one fits."""
    srv = Server(binary, model, ["--parallel", "2", "--threads", "2", "--ctx", "512", "--keep-mib", "1"],
                 api_key="k")
    servers.append(srv)
    r = srv.get(INFO, auth=False)
    c.equal("--api-key: /v1/logitscope/info without the key is 401", r.status, 401)
    h, tr, _, _, err = run_request(srv, COMP, {**BASE, "prompt": PROMPT_IDS, "max_tokens": 4, "ignore_eos": True})
    c.check("keep-mib 1: a 4-token kept generation ran", err is None and h and h.get("generation"), err)
    if err is not None:
        return
    a = h["generation"]
    r, g = generation(srv, a)
    kept = (g or {}).get("kept_steps")
    c.check("keep-mib 1: it keeps its first steps only (1 <= kept_steps < 4 tokens)",
            isinstance(kept, int) and 1 <= kept < 4 and len(g["tokens"]) == 4, g and {
                "kept_steps": kept, "tokens": g["tokens"]})
    c.equal("keep-mib 1: tokens and draws still cover every step", [len(g["tokens"]), len(g["draws"])], [4, 4])
    rr = replay(srv, a)
    c.equal("keep-mib 1: replay covers only the kept steps", [s["step"] for s in (rr.json or {}).get("steps", [])],
            list(range(kept or 0)))
    c.equal("keep-mib 1: the kept steps replay unchanged", (rr.json or {}).get("changed"), [])
    _, x = fetch_logits(srv, a, 0)
    c.check("keep-mib 1: logits/0 is there", x is not None and len(x) == V)
    r = srv.get(f"{GEN}{a}/logits/{kept}")
    c.check(f"keep-mib 1: logits/{kept} (not kept) is 400 or 404 with a param",
            r.status in (400, 404) and param_of(r) is not None, repr(r))
    err_check("keep-mib 1: replay focus on a step not kept", replay(srv, a, step=kept), [400, 404], ["step"])
    # Newer generations fill the budget: the older one is dropped.
    h2, _, _, _, err = run_request(srv, COMP, {**BASE, "prompt": PROMPT_IDS, "max_tokens": 1, "seed": 5})
    c.check("keep-mib 1: a second kept generation ran", err is None and h2 and h2.get("generation"), err)
    h3, _, _, _, err = run_request(srv, CHAT, {**BASE, "messages": MESSAGES, "max_tokens": 1, "seed": 6})
    c.check("keep-mib 1: a third kept generation ran", err is None and h3 and h3.get("generation"), err)
    r = srv.get(GEN + str(a))
    err_check("keep-mib 1: the oldest generation is dropped", r, [404], ["generation"])
    err_check("keep-mib 1: replay of the dropped generation", replay(srv, a), [404], ["generation"])
    r, g3 = generation(srv, (h3 or {}).get("generation"))
    c.check("keep-mib 1: the newest generation is kept", r.status == 200 and g3["kept_steps"] == 1, repr(r))


def test_page(server):
    r = server.get("/", auth=False)
    c.equal("GET /: HTTP 200", r.status, 200)
    c.check("GET /: text/html", r.headers.get("content-type", "").startswith("text/html"),
            r.headers.get("content-type"))
    csp = r.headers.get("content-security-policy", "")
    c.check("GET /: Content-Security-Policy has default-src 'self'", "default-src 'self'" in csp, csp)
    c.check("GET /: a <script> loads /assets/index.js",
            re.search(r"<script[^>]*\ssrc=\"/assets/index\.js\"", r.text) is not None, r.text[:600])
    urls = re.findall(r"(?:src|href)\s*=\s*\"([^\"]*)\"", r.text)
    c.check("GET /: every src and href is on this server", all(not re.match(r"^(?:[a-z]+:)?//", u, re.I)
                                                                for u in urls), urls)
    loads = {u: server.get(u, auth=False).status for u in urls if u.startswith("/")}
    c.check("GET /: every file it names (src, href) is served (200)", all(v == 200 for v in loads.values()), loads)
    js = server.get("/assets/index.js", auth=False)
    c.equal("GET /assets/index.js: HTTP 200", js.status, 200)
    c.check("GET /assets/index.js: a JavaScript content type",
            re.match(r"(text|application)/javascript", js.headers.get("content-type", "")) is not None,
            js.headers.get("content-type"))
    c.check("GET /assets/index.js: a script, not an error", js.status == 200 and len(js.body) > 100
            and not js.text.lstrip().startswith("{\"error\""), len(js.body))
    nope = server.get("/assets/no-such-file.js", auth=False)
    c.equal("GET /assets/no-such-file.js: 404", nope.status, 404)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    ap.add_argument("--model", help="a model directory instead of synthesising the tiny one")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ls_server_replay_")
    servers = []
    try:
        model = a.model or synth_tiny(a.logitscope, a.tokenizer_from, tmp)
        server = Server(a.logitscope, model, ["--parallel", "4", "--threads", "2", "--ctx", "512",
                                              "--served-model-name", "tiny"])
        servers.append(server)
        results = {}
        c.section("info", test_info, server)
        c.section("kept generations", test_kept, server, results)
        c.section("kept logits", test_logits, server, results)
        c.section("replay with the recorded settings", test_replay_recorded, server, results)
        c.section("replay under other settings vs the oracle", test_replay_settings, server, results)
        c.section("fork", test_fork, server, results)
        c.section("errors", test_errors, server, results)
        c.section("the page", test_page, server)
        c.section("--keep-mib 1", test_budget, a.logitscope, model, servers)
    except Exception as e:  # noqa: BLE001 - no model, or a server that did not start
        import traceback
        traceback.print_exc()
        c.check("the model was made and the servers started", False, f"{type(e).__name__}: {e}")
    finally:
        for srv in servers:
            if c.failures:
                print(f"\n--- server {' '.join(srv.args[2:])} log tail ---\n{srv.log_tail()}")
            srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
