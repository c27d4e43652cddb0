#!/usr/bin/env python3
"""End-to-end HTTP tests of `logitscope serve` (src/server/API.md) with raw http.client: every
request-field validation rule, body and context limits, routes, /metrics, the API key, client
disconnects, the queue, equality with `logitscope next --chat`, batch invariance under load,
flat memory over rounds of concurrent streams, and SIGTERM. Each check prints what it got."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import Checker, Server, collect_stream, short, synth_tiny  # noqa: E402

CHAT = "/v1/chat/completions"
COMP = "/v1/completions"
CTX = 256  # --ctx of the main server
PARALLEL = 16
MODEL_NAME = "tiny"
# The tiny model mostly repeats its last input token (tied embeddings, two layers), so
# unpenalised output is "\n" over and over; repetition_penalty 3 makes it produce varied tokens.
LIVELY = {"repetition_penalty": 3}
DEL = object()  # marks a field to remove in with_fields

CHAT_BASE = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
COMP_BASE = {"prompt": "Hi", "max_tokens": 2}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]

c = Checker()


def with_fields(base, **changes):
    body = json.loads(json.dumps(base))
    for k, v in changes.items():
        if v is DEL:
            body.pop(k, None)
        else:
            body[k] = v
    return body


def endpoint(path):
    return "chat" if path == CHAT else "completions"


def obj(r):
    """The response's JSON object ({} when the body is not one)."""
    return r.json if isinstance(r.json, dict) else {}


def usage(r):
    return obj(r).get("usage") or {}


def choice0(r):
    choices = obj(r).get("choices") or [{}]
    return choices[0]


def wait_for(pred, timeout, interval=0.05):
    """Polls pred() until it returns a truthy value or timeout s pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


# ---------------------------------------------------------------------------------------------
def test_routes(s):
    r = s.get("/health", auth=False)
    c.check("GET /health (no key): 200 {status: ok}", r.status == 200 and r.json == {"status": "ok"}, r)
    r = s.get("/v1/models")
    data = obj(r).get("data") or []
    m = data[0] if data else {}
    c.check("GET /v1/models: one model, id = the directory name, max_model_len = --ctx",
            r.status == 200 and obj(r).get("object") == "list" and len(data) == 1
            and m.get("id") == MODEL_NAME and m.get("object") == "model"
            and m.get("owned_by") == "logitscope" and m.get("max_model_len") == CTX
            and isinstance(m.get("created"), int), r)
    for method, path in (("GET", "/v1/nope"), ("POST", "/nope"), ("POST", "/v1/embeddings")):
        r = s.request(method, path, body={} if method == "POST" else None)
        e = r.error()
        c.check(f"{method} {path}: 404 JSON error, code not_found",
                r.status == 404 and e.get("type") == "invalid_request_error"
                and e.get("code") == "not_found" and isinstance(e.get("message"), str), r)
    for path, base in ((CHAT, CHAT_BASE), (COMP, COMP_BASE)):
        r = s.post(path, with_fields(base, model="nope"))
        e = r.error()
        c.check(f"{path} model 'nope': 404 model_not_found",
                r.status == 404 and e.get("code") == "model_not_found"
                and e.get("type") == "invalid_request_error", r)
        r = s.post(path, with_fields(base, model=MODEL_NAME))
        c.check(f"{path} model '{MODEL_NAME}': 200", r.status == 200, r)


def test_tokenize(s):
    text = "Hello, 世界"
    r = s.post("/tokenize", {"prompt": text})
    toks = obj(r).get("tokens")
    c.check("/tokenize {prompt}: 200, tokens are ints, count = len, max_model_len = --ctx",
            r.status == 200 and isinstance(toks, list) and len(toks) > 0
            and all(isinstance(t, int) for t in toks) and obj(r).get("count") == len(toks)
            and obj(r).get("max_model_len") == CTX, r)
    r2 = s.post("/tokenize", {"content": text})
    c.equal("/tokenize {content} (llama.cpp's name) gives the same tokens", obj(r2).get("tokens"), toks)
    r3 = s.post("/detokenize", {"tokens": toks})
    c.equal("/detokenize round trip of 'Hello, 世界'", obj(r3).get("prompt"), text)

    msgs = [{"role": "user", "content": "Hi"}]
    r = s.post("/apply-template", {"messages": msgs, "add_generation_prompt": True})
    p = obj(r).get("prompt") or ""
    c.check("/apply-template: the user turn and the generation prompt",
            r.status == 200 and "<|im_start|>user\nHi<|im_end|>" in p
            and p.endswith("<|im_start|>assistant\n"), r)
    r = s.post("/apply-template", {"messages": msgs, "add_generation_prompt": False})
    p = obj(r).get("prompt") or ""
    c.check("/apply-template add_generation_prompt false: no assistant header at the end",
            r.status == 200 and "<|im_start|>user\nHi<|im_end|>" in p
            and not p.rstrip().endswith("<|im_start|>assistant"), r)
    r = s.post("/apply-template", {"messages": msgs, "tools": TOOLS, "add_generation_prompt": True})
    p = obj(r).get("prompt") or ""
    c.check("/apply-template with tools: the tool signatures are in the system turn",
            r.status == 200 and "<tools>" in p and "get_weather" in p, r)

    r = s.post("/tokenize", {"messages": msgs, "add_generation_prompt": True})
    n = obj(r).get("count")
    rc = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=1))
    c.check("/tokenize {messages} count = the chat request's usage.prompt_tokens",
            r.status == 200 and isinstance(n, int) and n == usage(rc).get("prompt_tokens"),
            {"tokenize_count": n, "chat_usage": usage(rc)})


# ---------------------------------------------------------------------------------------------
# Validation: (label, path, body, param, exact). `exact` False: param must start with it (the
# API gives the path convention but not every nested name).
def validation_cases():
    cases = []
    common_bad = [
        ("max_tokens", -1), ("max_tokens", "x"), ("max_tokens", 1.5),
        ("temperature", -0.1), ("temperature", 2.5), ("temperature", "hot"),
        ("top_p", 0), ("top_p", 1.5), ("top_p", "x"),
        ("top_k", -2), ("top_k", 1.5), ("top_k", "x"),
        ("min_p", -0.1), ("min_p", 1.5),
        ("repetition_penalty", 0), ("repetition_penalty", -1), ("repetition_penalty", 10.5),
        ("presence_penalty", 3), ("presence_penalty", -2.5),
        ("frequency_penalty", 3), ("frequency_penalty", "x"),
        ("logit_bias", [1]), ("logit_bias", "x"),
        ("n", 0), ("n", 1000), ("n", PARALLEL + 1), ("n", 1.5), ("n", "x"),
        ("stop", ["a", "b", "c", "d", "e"]), ("stop", 5),
        ("stop_token_ids", "x"),
        ("seed", -1), ("seed", "x"), ("seed", 1.5), ("seed", 2**64),
        ("min_tokens", -1), ("min_tokens", "x"),
        ("ignore_eos", "yes"),
        ("bad_words", "x"),
        ("logprobs_mode", "bogus"),
        ("stream", "yes"),
        ("logitscope", "x"),
        ("model", 5),
    ]
    nested_bad = [
        ("logit_bias", {"5": 500}, "logit_bias.5"),
        ("logit_bias", {"5": -101}, "logit_bias.5"),
        ("logit_bias", {"5": "x"}, "logit_bias.5"),
        ("logit_bias", {"abc": 1}, "logit_bias.abc"),
        ("logit_bias", {"999999": 1}, "logit_bias.999999"),
        ("stop", [""], "stop[0]"),
        ("stop", ["a", ""], "stop[1]"),
        ("stop", ["a", 5], "stop[1]"),
        ("logitscope", {"trace": 21}, "logitscope.trace"),
        ("logitscope", {"trace": -1}, "logitscope.trace"),
        ("logitscope", {"trace": "x"}, "logitscope.trace"),
        ("logitscope", {"order_preset": "bogus"}, "logitscope.order_preset"),
    ]
    prefix_bad = [
        ("stop_token_ids", [999999], "stop_token_ids"),
        ("stop_token_ids", [-1], "stop_token_ids"),
        ("bad_words", [5], "bad_words"),
        ("logitscope", {"sequence_bias": "x"}, "logitscope.sequence_bias"),
        ("logitscope", {"sequence_bias": [[[999999], 1.0]]}, "logitscope.sequence_bias"),
        ("logitscope", {"sequence_bias": [[[5], "x"]]}, "logitscope.sequence_bias"),
    ]
    for path, base in ((CHAT, CHAT_BASE), (COMP, COMP_BASE)):
        for field, value in common_bad:
            cases.append((f"{field}={short(value, 40)}", path, with_fields(base, **{field: value}),
                          field, True))
        for field, value, param in nested_bad:
            cases.append((f"{field}={short(value, 40)}", path, with_fields(base, **{field: value}),
                          param, True))
        for field, value, param in prefix_bad:
            cases.append((f"{field}={short(value, 40)}", path, with_fields(base, **{field: value}),
                          param, False))
        cases.append(("min_tokens 5 > max_tokens 2", path, with_fields(base, min_tokens=5),
                      "min_tokens", True))
        cases.append(("stream_options='x'", path,
                      with_fields(base, stream=True, stream_options="x"), "stream_options", True))
        cases.append(("stream_options.include_usage='x'", path,
                      with_fields(base, stream=True, stream_options={"include_usage": "x"}),
                      "stream_options.include_usage", True))

    def chat(label, param, exact=True, **changes):
        cases.append((label, CHAT, with_fields(CHAT_BASE, **changes), param, exact))

    chat("max_tokens 0", "max_tokens", max_tokens=0)
    chat("max_completion_tokens 0", "max_completion_tokens", max_tokens=DEL, max_completion_tokens=0)
    chat("max_completion_tokens -1", "max_completion_tokens", max_tokens=DEL, max_completion_tokens=-1)
    chat("messages []", "messages", messages=[])
    chat("messages 'hi'", "messages", messages="hi")
    chat("messages missing", "messages", messages=DEL)
    chat("messages ['hi']", "messages[0]", False, messages=["hi"])
    chat("content 5", "messages[0].content", messages=[{"role": "user", "content": 5}])
    chat("user content null", "messages[0].content", messages=[{"role": "user", "content": None}])
    chat("content [5]", "messages[0].content", False, messages=[{"role": "user", "content": [5]}])
    chat("role missing", "messages[0].role", messages=[{"content": "x"}])
    chat("role 'wizard'", "messages[0].role", messages=[{"role": "wizard", "content": "x"}])
    chat("messages[1].role 5", "messages[1].role",
         messages=[{"role": "user", "content": "a"}, {"role": 5, "content": "b"}])
    chat("logprobs 'yes'", "logprobs", logprobs="yes")
    chat("top_logprobs 21", "top_logprobs", logprobs=True, top_logprobs=21)
    chat("top_logprobs -1", "top_logprobs", logprobs=True, top_logprobs=-1)
    chat("top_logprobs 'x'", "top_logprobs", logprobs=True, top_logprobs="x")
    chat("top_logprobs 5 without logprobs", "top_logprobs", top_logprobs=5)
    chat("tools 'x'", "tools", tools="x")
    chat("tools [5]", "tools[0]", False, tools=[5])
    chat("tools [{type: function}] (no function)", "tools[0]", False, tools=[{"type": "function"}])
    chat("tools type 'retrieval'", "tools[0]", False,
         tools=[{"type": "retrieval", "function": {"name": "f"}}])
    chat("tool_choice 'required'", "tool_choice", tools=TOOLS, tool_choice="required")
    chat("tool_choice a named function", "tool_choice", tools=TOOLS,
         tool_choice={"type": "function", "function": {"name": "get_weather"}})
    chat("tool_choice 'bogus'", "tool_choice", tools=TOOLS, tool_choice="bogus")

    def comp(label, param, exact=True, **changes):
        cases.append((label, COMP, with_fields(COMP_BASE, **changes), param, exact))

    comp("prompt missing", "prompt", prompt=DEL)
    comp("prompt []", "prompt", prompt=[])
    comp("prompt 5", "prompt", prompt=5)
    comp("prompt {a: 1}", "prompt", False, prompt={"a": 1})
    comp("prompt [999999] (out of the vocabulary)", "prompt", False, prompt=[999999])
    comp("prompt [-1]", "prompt", False, prompt=[-1])
    comp("prompt [1.5]", "prompt", False, prompt=[1.5])
    comp("prompt [[]]", "prompt", False, prompt=[[]])
    comp("prompt [[1, 999999]]", "prompt", False, prompt=[[1, 999999]])
    comp("logprobs 21", "logprobs", logprobs=21)
    comp("logprobs -1", "logprobs", logprobs=-1)
    comp("logprobs 'x'", "logprobs", logprobs="x")
    comp("echo 'yes'", "echo", echo="yes")
    return cases


def test_validation(s):
    for label, path, body, param, exact in validation_cases():
        r = s.post(path, body)
        e = r.error()
        got_param = e.get("param")
        param_ok = got_param == param if exact else (isinstance(got_param, str)
                                                     and got_param.startswith(param))
        ok = (r.status == 400 and e.get("type") == "invalid_request_error"
              and e.get("code") == "invalid_value" and param_ok
              and isinstance(e.get("message"), str) and e.get("message"))
        c.check(f"{endpoint(path)} {label}: 400 invalid_value, param "
                f"{param!r}{'' if exact else ' (prefix)'}", ok, {"status": r.status, "error": e or r.text})


def test_accepted(s):
    """Values at the edges of every range, and shapes the API allows, are accepted."""
    def ok(label, path, body, extra=None):
        r = s.post(path, body)
        good = r.status == 200 and (extra is None or extra(obj(r)))
        c.check(f"{endpoint(path)} {label}: 200", bool(good),
                r if r.status != 200 else {k: obj(r).get(k) for k in ("choices", "usage")})
        return r

    for path, base in ((CHAT, CHAT_BASE), (COMP, COMP_BASE)):
        ok("unknown fields are ignored", path,
           with_fields(base, foo=1, user="u", metadata={"a": "b"}, logitscope={"nope": 1}))
        for field, value in (("temperature", 0), ("temperature", 2), ("top_p", 1), ("top_p", 0.01),
                             ("top_k", -1), ("top_k", 0), ("top_k", 1), ("min_p", 0), ("min_p", 1),
                             ("repetition_penalty", 10), ("presence_penalty", -2),
                             ("presence_penalty", 2), ("frequency_penalty", -2),
                             ("logit_bias", {"5": 100}), ("logit_bias", {"5": -100}),
                             ("stop", "x"), ("stop", ["a", "b", "c", "d"]), ("stop_token_ids", [5]),
                             ("seed", 0), ("ignore_eos", True), ("bad_words", ["hello"]),
                             ("logprobs_mode", "processed"), ("logprobs_mode", "raw"),
                             ("logitscope", {"order_preset": "vllm"}),
                             ("logitscope", {"order_preset": "llama_cpp"}),
                             ("logitscope", {"sequence_bias": [[[5, 6], 1.5]]})):
            ok(f"{field}={short(value, 40)}", path, with_fields(base, **{field: value}))
        ok("min_tokens = max_tokens = 2", path, with_fields(base, min_tokens=2),
           lambda j: (j.get("usage") or {}).get("completion_tokens") == 2)
        big = 2**64 - 1
        ok("seed 2^64-1 is echoed in logitscope.header.seed", path, with_fields(base, seed=big),
           lambda j: ((j.get("logitscope") or {}).get("header") or {}).get("seed") == big)
        ok(f"n {PARALLEL} (= --parallel) gives {PARALLEL} choices", path,
           with_fields(base, n=PARALLEL, temperature=1, seed=1),
           lambda j: sorted(ch.get("index") for ch in j.get("choices", [])) == list(range(PARALLEL)))
        ok("logitscope.trace 2: a trace with each step's sequence", path,
           with_fields(base, logitscope={"trace": 2}, ignore_eos=True),
           lambda j: isinstance((j.get("logitscope") or {}).get("trace"), list)
           and len(j["logitscope"]["trace"]) == 2
           and all(st.get("sequence") == 0 for st in j["logitscope"]["trace"]))

    ok("content as a list of text parts", CHAT,
       with_fields(CHAT_BASE, messages=[{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]))
    ok("system and developer roles", CHAT, with_fields(CHAT_BASE, messages=[
        {"role": "system", "content": "Be brief."}, {"role": "developer", "content": "Be kind."},
        {"role": "user", "content": "Hi"}]))
    ok("max_completion_tokens 3", CHAT, with_fields(CHAT_BASE, max_tokens=DEL, max_completion_tokens=3,
                                                    ignore_eos=True),
       lambda j: (j.get("usage") or {}).get("completion_tokens") == 3)
    ok("logprobs true, top_logprobs 20", CHAT, with_fields(CHAT_BASE, logprobs=True, top_logprobs=20),
       lambda j: all(len(e.get("top_logprobs", [])) == 20
                     for e in ((j["choices"][0].get("logprobs") or {}).get("content") or [{}])))
    ok("top_logprobs 0 with logprobs", CHAT, with_fields(CHAT_BASE, logprobs=True, top_logprobs=0))
    for choice in ("auto", "none"):
        ok(f"tool_choice {choice!r} with tools", CHAT, with_fields(CHAT_BASE, tools=TOOLS,
                                                                 tool_choice=choice))
    ok("max_tokens 0 (nothing generated, as echo scoring needs)", COMP,
       with_fields(COMP_BASE, max_tokens=0),
       lambda j: (j.get("usage") or {}).get("completion_tokens") == 0)
    ok("logprobs 20", COMP, with_fields(COMP_BASE, logprobs=20))
    ok("logprobs 0", COMP, with_fields(COMP_BASE, logprobs=0))
    ok("prompt as token ids", COMP, with_fields(COMP_BASE, prompt=[9707, 11]))
    ok("two prompts x n 2: choice index = prompt x n + j", COMP,
       with_fields(COMP_BASE, prompt=["a", "b"], n=2, temperature=1, seed=3),
       lambda j: sorted(ch.get("index") for ch in j.get("choices", [])) == [0, 1, 2, 3])
    ok("a list of token-id prompts", COMP, with_fields(COMP_BASE, prompt=[[9707], [11, 12]]),
       lambda j: sorted(ch.get("index") for ch in j.get("choices", [])) == [0, 1])


def test_defaults(s):
    """Unset sampling fields come from generation_config.json (synth writes temperature 0.7,
    top_p 0.8, top_k 20, repetition_penalty 1.1); temperature 0 is greedy."""
    r = s.post(CHAT, CHAT_BASE)
    header = (obj(r).get("logitscope") or {}).get("header") or {}
    settings = header.get("settings") or {}
    for field, want in (("temperature", 0.7), ("top_p", 0.8), ("top_k", 20),
                        ("repetition_penalty", 1.1)):
        got = settings.get(field) or {}
        v = got.get("value")
        c.check(f"default {field} = {want} from generation_config.json",
                isinstance(v, (int, float)) and abs(v - want) < 1e-6
                and got.get("source") == "generation_config.json", got)
    c.check("no temperature given: header mode 'sample', a seed is reported",
            header.get("mode") == "sample" and isinstance(header.get("seed"), int),
            {k: header.get(k) for k in ("mode", "seed", "seed_source")})
    r = s.post(CHAT, with_fields(CHAT_BASE, temperature=0))
    header = (obj(r).get("logitscope") or {}).get("header") or {}
    c.equal("temperature 0: header mode 'greedy'", header.get("mode"), "greedy")


# ---------------------------------------------------------------------------------------------
def test_bodies(s):
    for label, raw in (("malformed JSON", b'{"prompt": '), ("a trailing comma", b'{"prompt": "a",}'),
                       ("an empty body", b"")):
        r = s.request("POST", COMP, raw=raw, headers={"Content-Type": "application/json"})
        e = r.error()
        c.check(f"{label}: 400 invalid_json", r.status == 400 and e.get("code") == "invalid_json"
                and e.get("type") == "invalid_request_error", r)
    for label, raw in (("a JSON array body", b'[{"prompt": "a"}]'), ("a JSON string body", b'"hi"')):
        for path in (CHAT, COMP):
            r = s.request("POST", path, raw=raw)
            c.check(f"{endpoint(path)} {label}: 400 invalid_request_error",
                    r.status == 400 and r.error().get("type") == "invalid_request_error", r)
    r = s.send_oversized(COMP, 200000)
    e = r.error()
    c.check("a 200000-byte body with --max-body 100000: 413 body_too_large",
            r.status == 413 and e.get("code") == "body_too_large"
            and e.get("type") == "invalid_request_error", r)
    body = with_fields(COMP_BASE, max_tokens=1, pad="a" * 90000)
    r = s.post(COMP, body)
    c.check("a 90000-byte body (under --max-body): 200", r.status == 200, r)


def test_context_limits(s):
    ids = [100 + i for i in range(300)]
    r = s.post(COMP, {"prompt": ids, "max_tokens": 1})
    e = r.error()
    c.check(f"a 300-token prompt with --ctx {CTX}: 400 context_length_exceeded, param prompt, "
            f"the message names {CTX}",
            r.status == 400 and e.get("param") == "prompt" and e.get("code") == "context_length_exceeded"
            and str(CTX) in (e.get("message") or ""), r)
    r = s.post(CHAT, {"messages": [{"role": "user", "content": "hello " * 300}], "max_tokens": 1})
    e = r.error()
    c.check("a 300-word chat message: 400 context_length_exceeded",
            r.status == 400 and e.get("code") == "context_length_exceeded", r)
    r = s.post(COMP, {"prompt": ids[:100], "max_tokens": 200})
    e = r.error()
    c.check("100 prompt tokens + max_tokens 200 > 256: 400, param max_tokens",
            r.status == 400 and e.get("param") == "max_tokens"
            and e.get("code") in ("context_length_exceeded", "invalid_value"), r)
    r = s.post(COMP, {"prompt": ids[:100], "max_tokens": 150})
    c.check("100 prompt tokens + max_tokens 150 fits: 200", r.status == 200, r)
    r = s.post(COMP, {"prompt": ids[:200], "ignore_eos": True})
    u = usage(r)
    c.check(f"no max_tokens: the completion fills the context ({CTX} - 200 = {CTX - 200} tokens, "
            "finish_reason length)",
            r.status == 200 and u.get("prompt_tokens") == 200 and u.get("completion_tokens") == CTX - 200
            and choice0(r).get("finish_reason") == "length", {"usage": u, "choice": choice0(r)})


# ---------------------------------------------------------------------------------------------
METRIC_NAMES = ["logitscope_prompt_tokens_total", "logitscope_generation_tokens_total",
                "logitscope_requests_total", "logitscope_requests_running",
                "logitscope_requests_waiting", "logitscope_kv_blocks_in_use",
                "logitscope_time_to_first_token_seconds_bucket",
                "logitscope_time_per_output_token_seconds_bucket",
                "logitscope_request_latency_seconds_bucket"]


def idle(s):
    """The metrics once nothing runs and the only KV blocks in use are the prefix cache's."""
    m = s.metrics()
    return m if (m.get("logitscope_requests_running") == 0
                 and m.get("logitscope_requests_waiting") == 0
                 and m.get("logitscope_kv_blocks_in_use", -1)
                 <= m.get("logitscope_prefix_cache_blocks", 0)) else None


def test_metrics(s):
    r = s.get("/metrics")
    c.check("GET /metrics: 200 text/plain", r.status == 200
            and r.headers.get("content-type", "").startswith("text/plain"),
            {"status": r.status, "content-type": r.headers.get("content-type")})
    m0 = wait_for(lambda: idle(s), 10) or s.metrics()
    for name in METRIC_NAMES:
        c.check(f"/metrics has {name}", name in m0, m0.get(name))
    c.check("idle: requests_running and requests_waiting 0, KV blocks only the prefix cache's",
            bool(idle(s)), {n: m0.get(n) for n in METRIC_NAMES[3:6] + ["logitscope_prefix_cache_blocks"]})
    r = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=7, ignore_eos=True))
    u = usage(r)
    gen, prm = "logitscope_generation_tokens_total", "logitscope_prompt_tokens_total"
    want_gen = m0.get(gen, 0) + (u.get("completion_tokens") or 0)
    m1 = wait_for(lambda: (lambda m: m if m.get(gen, 0) >= want_gen else None)(s.metrics()), 3) \
        or s.metrics()
    c.check("the request generated 7 tokens", u.get("completion_tokens") == 7, u)
    c.equal("generation_tokens_total grew by exactly the request's completion_tokens",
            m1.get(gen, 0) - m0.get(gen, 0), u.get("completion_tokens"))
    c.equal("prompt_tokens_total grew by exactly the request's prompt_tokens",
            m1.get(prm, 0) - m0.get(prm, 0), u.get("prompt_tokens"))
    c.check("requests_total grew", m1.get("logitscope_requests_total", 0)
            > m0.get("logitscope_requests_total", 0),
            [m0.get("logitscope_requests_total"), m1.get("logitscope_requests_total")])
    n = "logitscope_time_to_first_token_seconds_count"
    c.check("time_to_first_token_seconds_count grew by 1", m1.get(n, 0) - m0.get(n, 0) == 1,
            [m0.get(n), m1.get(n)])


def test_auth(s):
    for label, auth in (("no Authorization header", False), ("a wrong key", "wrong"),
                        ("the key without 'Bearer'", None)):
        headers = {"Authorization": s.api_key} if auth is None else None
        r = s.post(CHAT, CHAT_BASE, auth=False if auth is None else auth, headers=headers)
        e = r.error()
        c.check(f"chat with {label}: 401 invalid_api_key", r.status == 401
                and e.get("code") == "invalid_api_key" and e.get("type") == "invalid_request_error", r)
    r = s.get("/v1/models", auth=False)
    c.check("GET /v1/models without a key: 401", r.status == 401, r)
    r = s.post(CHAT, CHAT_BASE)
    c.check("chat with the right key: 200", r.status == 200, r)
    r = s.get("/health", auth=False)
    c.check("GET /health needs no key: 200", r.status == 200, r)


# ---------------------------------------------------------------------------------------------
def cli_token_text(bs):
    """A token's bytes as `logitscope next --json` prints them (Tokenizer::token_text): valid
    UTF-8 kept, every byte of an ill-formed sequence written as \\xNN."""
    text = bytes(bs).decode("utf-8", errors="surrogateescape")
    return "".join(f"\\x{ord(ch) - 0xDC00:02X}" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in text)


def test_next_equality(s, binary, model):
    cli = subprocess.run([binary, "next", "--model", model, "--chat", "--prompt", "Hello",
                          "--top", "10", "--json", "--threads", "2"],
                         capture_output=True, text=True, timeout=300)
    if not c.check("logitscope next --chat --json ran", cli.returncode == 0,
                   {"rc": cli.returncode, "stderr": cli.stderr[-500:]}):
        return
    want = json.loads(cli.stdout)
    r = s.post(CHAT, {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1,
                      "temperature": 0, "repetition_penalty": 1, "logprobs": True,
                      "top_logprobs": 10, "logprobs_mode": "raw"})
    if not c.check("server step-0 request: 200", r.status == 200, r):
        return
    entries = (choice0(r).get("logprobs") or {}).get("content") or []
    c.equal("prompt_tokens = next's n_input_tokens", usage(r).get("prompt_tokens"),
            want.get("n_input_tokens"))
    if not c.check("one logprobs entry with 10 top_logprobs",
                   len(entries) == 1 and len(entries[0].get("top_logprobs") or []) == 10, entries):
        return
    top = entries[0]["top_logprobs"]
    got_tokens = [cli_token_text(t.get("bytes") or []) for t in top]
    want_tokens = [t["text"] for t in want["top"]]
    c.equal("the top 10 tokens in next's order", got_tokens, want_tokens)
    diffs = [abs(a.get("logprob") - b["logprob"]) for a, b in zip(top, want["top"])]
    c.check("their logprobs equal next's within 1e-6", max(diffs) <= 1e-6,
            {"max_diff": max(diffs), "server": [t.get("logprob") for t in top],
             "next": [t["logprob"] for t in want["top"]]})
    c.equal("greedy chose next's top token", cli_token_text(entries[0].get("bytes") or []),
            want_tokens[0])


# ---------------------------------------------------------------------------------------------
WORDS = ("apple river stone cloud lamp orbit maple signal copper garden violet harbor "
         "thunder pixel canyon velvet").split()


def background_request(i):
    """The i-th of the different requests run next to the batch-invariance one."""
    # At most ~25 template + 80 prompt + 96 generated tokens: within --ctx 256.
    words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3 + 5 * i))
    body = {"messages": [{"role": "user", "content": f"Request {i}: {words}"}],
            "max_tokens": 40 + 4 * i, "ignore_eos": True}
    if i % 3 == 0:
        body["temperature"] = 0
    else:
        body.update(temperature=1, seed=100 + i)
    if i % 2:
        body.update(LIVELY)
    if i in (4, 8):
        body["n"] = 2
    if i % 4 == 1:
        body.update(logprobs=True, top_logprobs=2)
    return body


def first_difference(a, b):
    a, b = a or [], b or []
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else None
        y = b[k] if k < len(b) else None
        if x != y:
            return {"index": k, "alone": x, "under_load": y}
    return None


def test_batch_invariance(s):
    target = {"messages": [{"role": "user", "content": "Tell me a story about a lighthouse."}],
              "temperature": 1, "seed": 11, "max_tokens": 24, "ignore_eos": True, "logprobs": True,
              "top_logprobs": 3, **LIVELY}
    alone = s.post(CHAT, target)
    if not c.check("the request alone: 200", alone.status == 200, alone):
        return
    results, ends = {}, {}

    def run(i):
        r = s.post(CHAT, background_request(i), timeout=300)
        ends[i] = time.monotonic()
        results[i] = r

    threads = [threading.Thread(target=run, args=(i,)) for i in range(15)]
    for t in threads:
        t.start()
    running = wait_for(lambda: s.metrics().get("logitscope_requests_running", 0) >= 8, 20)
    c.check("the 15 other requests are running before the repeat is sent", running,
            s.metrics().get("logitscope_requests_running"))
    again = s.post(CHAT, target, timeout=300)
    t_end = time.monotonic()
    for t in threads:
        t.join(timeout=300)
    bad = {i: repr(r) for i, r in results.items() if r.status != 200}
    c.check("all 15 other requests: 200", len(results) == 15 and not bad, bad or len(results))
    later = sorted(round(ends[i] - t_end, 2) for i in ends if ends[i] > t_end)
    c.check("at least 3 other requests were still running when the repeat finished",
            len(later) >= 3, {"seconds_after": later})
    if not c.check("the repeat under load: 200", again.status == 200, again):
        return
    a, b = choice0(alone), choice0(again)
    c.equal("the same text alone and under load", b.get("message", {}).get("content"),
            a.get("message", {}).get("content"))
    la = (a.get("logprobs") or {}).get("content")
    lb = (b.get("logprobs") or {}).get("content")
    c.check("24 logprobs entries", isinstance(la, list) and len(la) == 24, len(la or []))
    c.check("tokens, logprobs and top_logprobs bit-identical alone and under load", la == lb,
            first_difference(la, lb) or f"identical ({len(la or [])} entries)")
    c.equal("the seed is echoed", ((obj(again).get("logitscope") or {}).get("header") or {}).get("seed"), 11)


def read_stream_usage(s, body):
    """Runs one streaming request; returns a dict describing how it went."""
    sse = s.stream(CHAT, body, timeout=300)
    if sse.status != 200 or sse.response is not None:
        return {"status": sse.status, "body": repr(sse.response)}
    chunks, done, errors = collect_stream(sse)
    sse.close()
    last = chunks[-1] if chunks else {}
    return {"status": 200, "done": done, "errors": errors, "chunks": len(chunks),
            "final_choices": last.get("choices"),
            "completion_tokens": (last.get("usage") or {}).get("completion_tokens")}


def stream_ok(res, tokens):
    return (res.get("status") == 200 and res.get("done") and not res.get("errors")
            and res.get("final_choices") == [] and res.get("completion_tokens") == tokens)


def test_load(s):
    rss = []
    for rnd in range(1, 4):
        results = {}

        def run(i):
            try:
                results[i] = read_stream_usage(s, {
                    "messages": [{"role": "user", "content": f"Load round {rnd}, stream {i}."}],
                    "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 64,
                    "ignore_eos": True, "temperature": 1, "seed": 1000 * rnd + i, **LIVELY})
            except Exception as e:  # noqa: BLE001
                results[i] = {"exception": f"{type(e).__name__}: {e}"}

        t0 = time.monotonic()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        secs = time.monotonic() - t0
        bad = {i: r for i, r in results.items() if not stream_ok(r, 64)}
        c.check(f"load round {rnd}: 16 streams x 64 tokens, all complete with usage 64 "
                f"({secs:.1f} s, {16 * 64 / secs:.0f} tok/s)", len(results) == 16 and not bad,
                bad or "16 ok")
        rss.append(s.rss_kib())
        print(f"   RSS after round {rnd}: {rss[-1] / 1024:.1f} MiB", flush=True)
    c.check("RSS flat: round 3 <= round 1 x 1.10 + 8 MiB", rss[2] <= rss[0] * 1.10 + 8 * 1024,
            {"rss_mib": [round(x / 1024, 1) for x in rss]})
    m = wait_for(lambda: idle(s), 10)
    c.check("after the load: nothing running or waiting, KV blocks only the prefix cache's", bool(m),
            {k: s.metrics().get(k) for k in METRIC_NAMES[3:6]})


def test_streaming_completions(s):
    body = {"prompt": "The quick brown fox", "max_tokens": 12, "ignore_eos": True, "temperature": 0,
            **LIVELY}
    whole = s.post(COMP, body)
    sse = s.stream(COMP, {**body, "stream": True, "stream_options": {"include_usage": True}})
    if not c.check("streaming completions: 200 text/event-stream", sse.status == 200
                   and sse.response is None, sse.response or sse.status):
        return
    chunks, done, errors = collect_stream(sse)
    text = "".join(ch["choices"][0].get("text") or "" for ch in chunks if ch.get("choices"))
    c.check("every chunk is a text_completion, the stream ends with [DONE], no error",
            done and not errors and all(ch.get("object") == "text_completion" for ch in chunks),
            {"objects": sorted({ch.get("object") for ch in chunks}), "done": done, "errors": errors})
    c.equal("joined stream text = the non-streaming text", text, choice0(whole).get("text"))
    c.check("the last chunk has choices [] and usage with 12 completion tokens",
            bool(chunks) and chunks[-1].get("choices") == []
            and (chunks[-1].get("usage") or {}).get("completion_tokens") == 12,
            chunks[-1] if chunks else None)
    reasons = [ch["choices"][0].get("finish_reason") for ch in chunks if ch.get("choices")]
    c.check("one chunk carries finish_reason 'length'", reasons.count("length") == 1,
            [x for x in reasons if x])


# ---------------------------------------------------------------------------------------------
LONG_STREAM = {"messages": [{"role": "user", "content": "Write a very long essay."}], "stream": True,
               "max_tokens": 3000, "ignore_eos": True, "temperature": 1, "seed": 1, **LIVELY}


def first_events(sse, n):
    got = []
    for ev in sse.events():
        got.append(ev)
        if len(got) >= n:
            break
    return got


def test_disconnect(s):
    before = s.metrics()
    sse = s.stream(CHAT, LONG_STREAM)
    if not c.check("long stream started: 200", sse.status == 200 and sse.response is None,
                   sse.response or sse.status):
        return
    evs = first_events(sse, 2)
    c.check("read the first two SSE events", len(evs) == 2 and all(isinstance(e, dict) for e in evs), evs)
    m = s.metrics()
    c.check("while streaming: requests_running >= 1, kv_blocks_in_use > 0",
            m.get("logitscope_requests_running", 0) >= 1 and m.get("logitscope_kv_blocks_in_use", 0) > 0,
            {k: m.get(k) for k in METRIC_NAMES[3:6]})
    sse.abort()
    t0 = time.monotonic()
    m = wait_for(lambda: idle(s), 10)
    c.check("after the client went away: requests_running 0, KV blocks only the prefix cache's, within 10 s",
            bool(m), {"seconds": round(time.monotonic() - t0, 2),
                      **{k: s.metrics().get(k) for k in METRIC_NAMES[3:6]}})
    gen = "logitscope_generation_tokens_total"
    g1 = s.metrics().get(gen, 0)
    time.sleep(1.0)
    g2 = s.metrics().get(gen, 0)
    c.check("the cancelled request stopped generating (counter still, far below 3000)",
            g2 == g1 and g2 - before.get(gen, 0) < 3000,
            {"grew_during_1s": g2 - g1, "total_since_start": g2 - before.get(gen, 0)})


def test_queue(s):
    """--parallel 1 --queue 1: of three concurrent long streams, one runs, one waits, and the
    rest are refused with 503 and Retry-After."""
    results = {}
    barrier = threading.Barrier(3)

    def run(i):
        body = {**LONG_STREAM, "max_tokens": 300, "seed": i, "stream_options": {"include_usage": True}}
        barrier.wait()
        sse = s.stream(CHAT, body, timeout=300)
        if sse.response is not None:
            results[i] = {"status": sse.status, "retry_after": sse.headers.get("retry-after"),
                          "error": sse.response.error() or sse.response.text}
            return
        chunks, done, errors = collect_stream(sse)
        sse.close()
        last = chunks[-1] if chunks else {}
        results[i] = {"status": 200, "done": done, "errors": errors,
                      "completion_tokens": (last.get("usage") or {}).get("completion_tokens")}

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    max_waiting = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(t.is_alive() for t in threads):
        max_waiting = max(max_waiting, s.metrics().get("logitscope_requests_waiting", 0))
        time.sleep(0.05)
    for t in threads:
        t.join(timeout=300)
    refused = [r for r in results.values() if r["status"] == 503]
    served = [r for r in results.values() if r["status"] != 503]
    c.check("at least one of 3 is refused: 503, Retry-After: 1, server_error/overloaded",
            len(refused) >= 1 and all(r["retry_after"] == "1" and isinstance(r["error"], dict)
                                      and r["error"].get("type") == "server_error"
                                      and r["error"].get("code") == "overloaded" for r in refused),
            results)
    c.check("the others stream all 300 tokens", len(served) >= 1 and all(
        r["status"] == 200 and r["done"] and not r["errors"] and r["completion_tokens"] == 300
        for r in served), served)
    if len(served) >= 2:
        c.check("requests_waiting was 1 while the second request waited", max_waiting >= 1, max_waiting)
    r = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=2))
    c.check("after the queue drained: a new request is served", r.status == 200, r)


def test_sigterm_while_streaming(s):
    sse = s.stream(CHAT, LONG_STREAM)
    if not c.check("stream before SIGTERM: 200", sse.status == 200 and sse.response is None,
                   sse.response or sse.status):
        return
    first_events(sse, 2)
    ended = {}

    def drain():
        try:
            chunks, done, errors = collect_stream(sse)
            ended.update(chunks=len(chunks), done=done, errors=errors,
                         finish=[ch["choices"][0].get("finish_reason") for ch in chunks
                                 if ch.get("choices") and ch["choices"][0].get("finish_reason")])
        except Exception as e:  # noqa: BLE001 - a reset connection is an acceptable ending
            ended.update(exception=f"{type(e).__name__}: {e}")
        ended["at"] = time.monotonic()

    reader = threading.Thread(target=drain)
    reader.start()
    t0 = time.monotonic()
    rc = s.stop(timeout=15)
    c.check("SIGTERM while a stream runs: exit status 0 within 15 s", rc == 0,
            {"rc": rc, "seconds": s.exit_seconds})
    reader.join(timeout=20)
    c.check("the running stream ended (it was cancelled or finished)", "at" in ended,
            {**ended, "at": round(ended["at"] - t0, 2) if "at" in ended else None})
    # API.md: each choice ends with a chunk carrying its finish_reason; an error after the start
    # is an error event. Either way a client must be able to tell the answer was cut short.
    c.check("the cut stream ends with a finish_reason chunk or an error event, not silently",
            bool(ended.get("finish") or ended.get("errors")),
            {k: ended.get(k) for k in ("finish", "errors", "done", "exception")})


# ---------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ls_server_http_")
    model = synth_tiny(a.logitscope, a.tokenizer_from, tmp, MODEL_NAME)
    servers = []
    try:
        s1 = Server(a.logitscope, model, ["--parallel", str(PARALLEL), "--threads", "2", "--ctx", str(CTX),
                                          "--max-body", "100000"], api_key="secret")
        servers.append(s1)
        for name, fn in (("routes", test_routes), ("tokenize, detokenize, apply-template", test_tokenize),
                         ("validation: 400 with the field's param", test_validation),
                         ("accepted edge values", test_accepted),
                         ("generation_config.json defaults", test_defaults),
                         ("malformed and oversized bodies", test_bodies),
                         ("context limits", test_context_limits), ("metrics", test_metrics),
                         ("api key", test_auth), ("streaming completions", test_streaming_completions)):
            c.section(name, fn, s1)
        c.section("step 0 equals `logitscope next --chat`", test_next_equality, s1, a.logitscope, model)
        c.section("batch invariance", test_batch_invariance, s1)
        c.section("load: 3 rounds of 16 streams, flat RSS", test_load, s1)
        print("\n== SIGTERM (idle server)")
        rc = s1.stop(timeout=15)
        c.check("SIGTERM: exit status 0 within 15 s", rc == 0, {"rc": rc, "seconds": s1.exit_seconds})

        s2 = Server(a.logitscope, model, ["--parallel", "1", "--queue", "1", "--threads", "2",
                                          "--ctx", "4096"])
        servers.append(s2)
        c.section("client disconnect frees the sequence", test_disconnect, s2)
        c.section("queue full: 503", test_queue, s2)
        c.section("SIGTERM while streaming", test_sigterm_while_streaming, s2)
    except Exception as e:  # noqa: BLE001 - a server that did not start
        c.check("servers started", False, f"{type(e).__name__}: {e}")
    finally:
        for srv in servers:
            if c.failures:
                print(f"\n--- server {' '.join(srv.args[2:])} log tail ---\n{srv.log_tail()}")
            srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(c.summary())


if __name__ == "__main__":
    main()
