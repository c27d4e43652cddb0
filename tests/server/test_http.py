#!/usr/bin/env python3
"""End-to-end HTTP tests of `logitscope serve` (docs/server-api.md), one request at a time, with
raw http.client: routes, every request-field validation rule, accepted edge values, malformed,
oversized and hostile bodies and bytes on raw sockets, context limits, /metrics, the API key and
streaming completions. Each check prints what it got. Load and lifecycle: test_http_load.py."""
import os
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import (CHAT, CHAT_BASE, COMP, COMP_BASE, CTX, DEL, LIVELY, METRIC_NAMES,  # noqa: E402
                         MODEL_NAME, PARALLEL, Checker, Server, choice0, collect_stream, idle, obj,
                         run_main, short, usage, wait_for, with_fields)

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]

c = Checker()


def endpoint(path):
    return "chat" if path == CHAT else "completions"


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
    # A known path asked with a method it does not take: 405 naming both, Allow listing its own
    # (issue 47: it was a 404 "no route").
    for method, path, allow in (("GET", CHAT, "POST"), ("GET", COMP, "POST"), ("PUT", "/tokenize", "POST"),
                                ("DELETE", "/v1/models", "GET, HEAD"), ("POST", "/health", "GET, HEAD"),
                                ("POST", "/v1/logitscope/generations/abc", "GET, HEAD")):
        r = s.request(method, path, body={} if method in ("POST", "PUT") else None)
        e = r.error()
        msg = e.get("message") or ""
        c.check(f"{method} {path}: 405, Allow: {allow}, JSON error method_not_allowed naming both",
                r.status == 405 and r.headers.get("allow") == allow
                and e.get("type") == "invalid_request_error" and e.get("code") == "method_not_allowed"
                and method in msg and path in msg, {"status": r.status, "allow": r.headers.get("allow"),
                                                    "error": e or r.text})
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
    # (Forced calls, "required" and a named function, are served: test_structured_output.py.)
    chat("tool_choice 'required' without tools", "tool_choice", tool_choice="required")
    chat("tool_choice naming a function not in tools", "tool_choice.function.name", tools=TOOLS,
         tool_choice={"type": "function", "function": {"name": "nope"}})
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


def test_seed_range(s):
    """The seed error states the range accepted, all of uint64 (issue 47: it said 2^63-1)."""
    for path, base in ((CHAT, CHAT_BASE), (COMP, COMP_BASE)):
        for value in (-1, 2**64, 1.5):
            r = s.post(path, with_fields(base, seed=value))
            msg = r.error().get("message") or ""
            c.check(f"{endpoint(path)} seed={value}: 400 stating [0, 18446744073709551615]",
                    r.status == 400 and "[0, 18446744073709551615]" in msg
                    and "9223372036854775807" not in msg, r)
        r = s.post(path, with_fields(base, seed=2**64 - 1, temperature=1))
        c.check(f"{endpoint(path)} seed=18446744073709551615: 200", r.status == 200, r)


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
    # The message gives where the body stops being JSON (issue 47): a bare NaN, invalid UTF-8,
    # a comma too many. nlohmann counts bytes from 1: byte 25 is the N of NaN.
    for label, raw, byte in (("a bare NaN", b'{"prompt": "a", "seed": NaN}', 25),
                             ("invalid UTF-8 in a string", b'{"prompt": "a\xff"}', 14),
                             ("a trailing comma", b'{"prompt": "a",}', 16)):
        r = s.request("POST", COMP, raw=raw, headers={"Content-Type": "application/json"})
        e = r.error()
        c.check(f"{label}: 400 invalid_json, the message names byte {byte}",
                r.status == 400 and e.get("code") == "invalid_json"
                and f"not valid JSON at byte {byte}:" in (e.get("message") or ""), r)
    r = s.request("POST", COMP, raw=b'{"prompt": "a", "seed": 1e999}')
    c.check("a number past double's range: 400 invalid_json (not a 500)",
            r.status == 400 and r.error().get("code") == "invalid_json", r)
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
    r = s.post(CHAT, CHAT_BASE, auth=False, headers={"Authorization": f"bearer {s.api_key}"})
    c.check("the scheme in lower case ('bearer KEY', RFC 9110): 200", r.status == 200, r)
    r = s.post(CHAT, CHAT_BASE, auth=False, headers={"Authorization": f"Bearer {s.api_key.upper()}x"})
    c.check("the key is compared exactly: a changed key is 401", r.status == 401, r)
    r = s.get("/health", auth=False)
    c.check("GET /health needs no key: 200", r.status == 200, r)


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
# Hostile bytes on raw sockets. Each case is answered with a status from an explicit set (an
# error status with an OpenAI error object), or the connection is closed, within a few seconds;
# after each the server still runs and GET /health answers.
RAW_TIMEOUT = 5.0


def head(s, method, path, length=None, extra=""):
    """A request head with Host, the API key and Connection: close (and Content-Length)."""
    return (f"{method} {path} HTTP/1.1\r\nHost: {s.host}:{s.port}\r\n"
            f"Authorization: Bearer {s.api_key}\r\nContent-Type: application/json\r\n"
            + ("" if length is None else f"Content-Length: {length}\r\n")
            + f"Connection: close\r\n{extra}\r\n").encode()


def raw_post(s, path, body, **kw):
    return s.raw(head(s, "POST", path, len(body)) + body, timeout=RAW_TIMEOUT, **kw)


def still_up(s, after):
    """Checks that the server process runs and GET /health answers 200 within a few seconds."""
    t0 = time.monotonic()
    try:
        r = s.get("/health", auth=False, timeout=RAW_TIMEOUT)
        got = {"health": repr(r), "seconds": round(time.monotonic() - t0, 2)}
        ok = r.status == 200 and r.json == {"status": "ok"}
    except Exception as e:  # noqa: BLE001 - a hang or a refused connection is the failure
        got, ok = {"health": f"{type(e).__name__}: {e}", "seconds": round(time.monotonic() - t0, 2)}, False
    alive = s.proc.poll() is None
    c.check(f"after {after}: the server runs, GET /health 200", alive and ok,
            {**got, "exit_status": s.proc.returncode})


def expect(s, label, ans, statuses, closed_ok):
    """`ans` has a status in `statuses` (an error status with an OpenAI error object), or, when
    closed_ok, the server closed the connection without a status line; then still_up."""
    if ans.status is None:
        ok = closed_ok and ans.ended in ("closed", "reset")
    else:
        e = ans.response.error()
        ok = ans.status in statuses and (ans.status < 400 or (
            isinstance(e.get("message"), str) and isinstance(e.get("type"), str)))
    allowed = "/".join(map(str, sorted(statuses))) + (" or the connection closed" if closed_ok else "")
    c.check(f"{label}: {allowed}", ok, ans.describe())
    still_up(s, label)
    return ans


def test_raw_abuse(s):
    expect(s, "a garbage request line (HELLO)", s.raw(b"HELLO\r\n\r\n", timeout=RAW_TIMEOUT),
           {400}, True)
    expect(s, "a request line of 20 KB", s.raw(b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
                                               timeout=RAW_TIMEOUT), {400, 414, 431}, True)
    body = b'{"prompt": "Hi", "max_tokens": 2}'
    expect(s, f"Content-Length 1000 with {len(body)} bytes sent, then the write side shut",
           s.raw(head(s, "POST", COMP, 1000) + body, timeout=RAW_TIMEOUT, shut_write=True),
           {400}, True)
    # The same, then the socket closed without reading: nothing to observe but the server.
    sock = socket.create_connection((s.host, s.port), timeout=RAW_TIMEOUT)
    sock.sendall(head(s, "POST", COMP, 1000) + body)
    sock.close()
    still_up(s, f"Content-Length 1000 with {len(body)} bytes sent, then the socket closed")
    expect(s, "a 100 KB header",
           s.raw(head(s, "GET", "/health", extra="X-Big: " + "a" * 100000 + "\r\n"),
                 timeout=RAW_TIMEOUT), {400, 413, 431}, True)
    ans = expect(s, "a body that is not UTF-8 ({\"prompt\": \"\\xff\\xfe\"})",
                 raw_post(s, COMP, b'{"prompt": "\xff\xfe"}'), {400}, False)
    c.check("... its error is invalid_request_error", ans.response is not None
            and ans.response.error().get("type") == "invalid_request_error",
            ans.response.error() if ans.response is not None else None)
    ans = expect(s, "a raw NUL byte inside a JSON string (invalid JSON)",
                 raw_post(s, COMP, b'{"prompt": "a\x00b", "max_tokens": 2}'), {400}, False)
    c.check("... its error is invalid_json", ans.response is not None
            and ans.response.error().get("code") == "invalid_json",
            ans.response.error() if ans.response is not None else None)
    nul = b'"a\\u0000b"'
    for label, path, body in (
            ("completions", COMP, b'{"prompt": %s, "max_tokens": 2}' % nul),
            ("chat", CHAT, b'{"messages": [{"role": "user", "content": %s}], "max_tokens": 2}' % nul),
            ("tokenize", "/tokenize", b'{"prompt": %s}' % nul)):
        ans = expect(s, f"{label} with an escaped NUL (\\u0000) in a string",
                     raw_post(s, path, body), {200, 400}, False)
        if ans.status == 200:
            c.check("... the 200 answer is a JSON object", isinstance(ans.response.json, dict),
                    ans.describe())

    msg = b'{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}'
    chunked = (head(s, "POST", CHAT, extra="Transfer-Encoding: chunked\r\n")
               + b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (msg[:20], msg[20:]))
               + b"0\r\n\r\n")
    ans = expect(s, "a chunked POST of a valid chat request", s.raw(chunked, timeout=30),
                 {200, 400, 411, 413, 501}, False)
    if ans.status == 200:
        c.check("... the 200 answer is a chat.completion with usage.completion_tokens 2",
                obj(ans.response).get("object") == "chat.completion"
                and usage(ans.response).get("completion_tokens") == 2, ans.describe())

    # The listen backlog is small (5): a connect beyond it waits for a SYN retransmit (1 s, then
    # 3 s), hence the longer connect timeout.
    socks, errors, slow = [], [], 0
    t0 = time.monotonic()
    for _ in range(200):
        t = time.monotonic()
        try:
            socks.append(socket.create_connection((s.host, s.port), timeout=2 * RAW_TIMEOUT))
        except OSError as e:
            errors.append(f"{type(e).__name__}: {e}")
        slow += time.monotonic() - t > 0.5
    opened = time.monotonic() - t0
    t1 = time.monotonic()
    try:
        r = s.get("/health", auth=False, timeout=30)
        during = repr(r)
    except Exception as e:  # noqa: BLE001 - reported, not a check
        during = f"{type(e).__name__}: {e}"
    print(f"   (with {len(socks)} idle connections open: GET /health -> {short(during, 80)} "
          f"in {time.monotonic() - t1:.2f} s)", flush=True)
    for sock in socks:
        sock.close()
    c.check("200 connections opened (then closed without sending a byte)",
            len(socks) == 200 and not errors,
            {"opened": len(socks), "errors": errors[:3], "seconds": round(opened, 2),
             "connects_over_0.5_s": slow})
    still_up(s, "200 connections opened and closed without a byte")

    r = s.post(CHAT, CHAT_BASE, timeout=30)
    c.check("after all the raw abuse: a normal chat request answers 200",
            r.status == 200 and usage(r).get("completion_tokens") == 2, r)


# ---------------------------------------------------------------------------------------------
def run(binary, model, servers):
    s = Server(binary, model, ["--parallel", str(PARALLEL), "--threads", "2", "--ctx", str(CTX),
                               "--max-body", "100000"], api_key="secret")
    servers.append(s)
    for name, fn in (("routes", test_routes), ("tokenize, detokenize, apply-template", test_tokenize),
                     ("validation: 400 with the field's param", test_validation),
                     ("the seed's range", test_seed_range),
                     ("accepted edge values", test_accepted),
                     ("generation_config.json defaults", test_defaults),
                     ("malformed and oversized bodies", test_bodies),
                     ("context limits", test_context_limits), ("metrics", test_metrics),
                     ("api key", test_auth), ("streaming completions", test_streaming_completions),
                     ("raw-socket abuse", test_raw_abuse)):
        c.section(name, fn, s)
    print("\n== SIGTERM after the abuse")
    rc = s.stop(timeout=15)
    c.check("SIGTERM: exit status 0 within 15 s", rc == 0, {"rc": rc, "seconds": s.exit_seconds})


if __name__ == "__main__":
    run_main(c, "ls_server_http_", run)
