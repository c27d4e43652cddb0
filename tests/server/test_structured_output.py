"""Structured output end to end (issue 44): response_format json_object / json_schema, forced tool
calls (tool_choice "required" and a named function), llama-server's `grammar` and `json_schema`
fields, on the tiny random model with the real Qwen tokenizer. A random model writes whatever the
grammar leaves it, so every reply that stops is checked against an independent oracle: Python's
json module and, for schemas, the `jsonschema` package's validator (Debian's python3-jsonschema).
Bounded schemas (enums, integer ranges, booleans) make every reply finish within max_tokens.
Errors: 400 naming the field (and the schema keyword's path)."""
import json
import re

import jsonschema

from server_util import (CHAT, COMP, CTX, LIVELY, Checker, Server, choice0, obj, run_main,
                         short)

c = Checker()
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"enum": ["Paris", "Rome", "Oslo"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 14},
        "hot": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "minItems": 1, "maxItems": 3},
    },
    "required": ["city", "days", "hot", "tags"],
    "additionalProperties": False,
}
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"enum": ["Paris", "Rome"]}},
        "required": ["city"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "parameters": {
        "type": "object", "properties": {"utc": {"type": "boolean"}},
        "required": ["utc"], "additionalProperties": False}}}
USER = [{"role": "user", "content": "Weather?"}]


def chat(s, **fields):
    body = {"messages": USER, "max_tokens": 96, "temperature": 1.0, **LIVELY}
    body.update(fields)
    return s.post(CHAT, body)


def test_json_schema(s):
    replies = []
    for seed in range(6):
        r = chat(s, seed=seed, response_format={
            "type": "json_schema", "json_schema": {"name": "trip", "schema": SCHEMA, "strict": True}})
        ch = choice0(r)
        text = (ch.get("message") or {}).get("content") or ""
        ok = r.status == 200 and ch.get("finish_reason") == "stop"
        try:
            jsonschema.validate(json.loads(text), SCHEMA)
        except (ValueError, jsonschema.ValidationError) as e:
            ok = False
            text += f"  [{type(e).__name__}: {short(str(e), 120)}]"
        c.check(f"json_schema seed {seed}: stops with JSON the schema validates", ok, text)
        replies.append(text)
    c.check("json_schema: the seeds give different replies (the model chooses within the grammar)",
            len(set(replies)) > 1, replies)


def test_json_object(s):
    # The tiny model would write long strings; a bias towards '}' ends the object early, which
    # only the grammar's mask makes valid (the bias alone would give '}' first).
    ids = s.post("/tokenize", {"prompt": "}"}).json.get("tokens") or [None]
    r = chat(s, seed=1, max_tokens=64, logit_bias={str(ids[0]): 100},
             response_format={"type": "json_object"})
    text = (choice0(r).get("message") or {}).get("content") or ""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    c.check("json_object: a JSON object (starts with '{' even though '}' is favoured)",
            r.status == 200 and isinstance(value, dict) and text.lstrip().startswith("{"), text)


def test_tool_choice(s):
    r = chat(s, seed=2, tools=[WEATHER, TIME],
             tool_choice={"type": "function", "function": {"name": "get_weather"}})
    ch = choice0(r)
    calls = (ch.get("message") or {}).get("tool_calls") or []
    args = [json.loads(k["function"]["arguments"]) for k in calls] if calls else []
    c.check("named tool_choice: finish_reason tool_calls, only get_weather calls, valid arguments",
            r.status == 200 and ch.get("finish_reason") == "tool_calls" and calls and
            all(k["function"]["name"] == "get_weather" for k in calls) and
            all(a.get("city") in ("Paris", "Rome") and len(a) == 1 for a in args), obj(r))
    for seed in range(4):
        r = chat(s, seed=seed, tools=[WEATHER, TIME], tool_choice="required",
                 parallel_tool_calls=False)
        ch = choice0(r)
        calls = (ch.get("message") or {}).get("tool_calls") or []
        ok = r.status == 200 and ch.get("finish_reason") == "tool_calls" and len(calls) == 1
        if ok:
            name = calls[0]["function"]["name"]
            schema = (WEATHER if name == "get_weather" else TIME)["function"]["parameters"]
            try:
                jsonschema.validate(json.loads(calls[0]["function"]["arguments"]), schema)
            except (ValueError, jsonschema.ValidationError):
                ok = False
        c.check(f"tool_choice required, no parallel calls, seed {seed}: one valid call", ok, obj(r))


def test_llama_server_fields(s):
    for seed in range(4):
        r = s.post(COMP, {"prompt": "Answer:", "max_tokens": 16, "seed": seed, "temperature": 1,
                          "grammar": 'root ::= ("yes" | "no") "."', **LIVELY})
        ch = choice0(r)
        c.check(f"completions grammar, seed {seed}: 'yes.' or 'no.' and stop",
                r.status == 200 and ch.get("text") in ("yes.", "no.") and
                ch.get("finish_reason") == "stop", obj(r))
    r = s.post(COMP, {"prompt": "Data:", "max_tokens": 96, "seed": 4, "json_schema": SCHEMA, **LIVELY})
    text = choice0(r).get("text") or ""
    try:
        jsonschema.validate(json.loads(text), SCHEMA)
        ok = r.status == 200
    except (ValueError, jsonschema.ValidationError):
        ok = False
    c.check("completions json_schema: JSON the schema validates", ok, text)


def test_processed_distribution(s):
    # With logprobs_mode processed, every candidate the reply could have taken is a token the
    # grammar allows: its text is a prefix of "yes." or "no.", and their probabilities sum to 1.
    r = s.post(COMP, {"prompt": "Answer:", "max_tokens": 1, "seed": 0, "logprobs": 20,
                      "logprobs_mode": "processed", "grammar": 'root ::= ("yes" | "no") "."'})
    lp = choice0(r).get("logprobs") or {}
    top = (lp.get("top_logprobs") or [{}])[0]
    total = sum(2.718281828459045 ** v for v in top.values())
    c.check("processed top_logprobs: only prefixes of the grammar's sentences, summing to 1",
            r.status == 200 and top and all(("yes.".startswith(t) or "no.".startswith(t)) and t
                                            for t in top) and abs(total - 1) < 1e-6,
            {"top": top, "sum": total})


def test_errors(s):
    def bad(name, body, param, pattern, path=CHAT):
        full = {"messages": USER, "max_tokens": 4} if path == CHAT else {"prompt": "x", "max_tokens": 4}
        full.update(body)
        r = s.post(path, full)
        err = obj(r).get("error") or {}
        c.check(f"400 {name}: param {param}, message matches {pattern!r}",
                r.status == 400 and err.get("param") == param and
                re.search(pattern, err.get("message", "")) is not None, obj(r))
    bad("response_format type", {"response_format": {"type": "xml"}}, "response_format.type",
        "must be \"text\"")
    bad("unsupported schema keyword", {"response_format": {"type": "json_schema", "json_schema": {
        "name": "x", "schema": {"type": "object", "patternProperties": {"a": {}}}}}},
        "response_format.json_schema.schema", "patternProperties")
    bad("grammar syntax", {"grammar": "root ::= \"a"}, "grammar", r"grammar:1:\d+: missing '\"'",
        path=COMP)
    bad("undefined rule", {"grammar": "root ::= x"}, "grammar", "'x' is used but never defined",
        path=COMP)
    bad("two constraints", {"grammar": "root ::= \"a\"", "json_schema": {"type": "integer"}},
        "json_schema", "both constrain", path=COMP)
    bad("tool_choice without tools", {"tool_choice": "required"}, "tool_choice", "give 'tools'")
    bad("tool_choice unknown function", {"tools": [WEATHER], "tool_choice": {
        "type": "function", "function": {"name": "nope"}}}, "tool_choice.function.name", "nope")
    bad("tool_choice bad string", {"tools": [WEATHER], "tool_choice": "always"}, "tool_choice",
        "required")
    bad("keep with a grammar", {"grammar": "root ::= \"a\"", "logitscope": {"keep": True}},
        "logitscope.keep", "cannot keep a constrained generation", path=COMP)
    r = chat(s, response_format={"type": "text"}, max_tokens=2)
    c.check("response_format text: 200, unconstrained", r.status == 200, obj(r))


def bounded_schema(rng, depth=0):
    """A random schema whose every valid text is short: enums, booleans, integer ranges, strings
    with maxLength, arrays with maxItems, objects of such, anyOf, nullable types, $defs refs."""
    kinds = ["enum", "bool", "int", "str", "null", "const"] + (["obj", "arr", "any"] if depth < 2 else [])
    k = rng.choice(kinds)
    if k == "enum":
        return {"enum": rng.sample(["red", "green", "blue", "日本", "a b", 7, None, True], rng.randint(1, 4))}
    if k == "bool":
        return {"type": "boolean"}
    if k == "int":
        lo = rng.randint(-50, 50)
        return {"type": "integer", "minimum": lo, "maximum": lo + rng.randint(0, 300)}
    if k == "str":
        return {"type": "string", "minLength": rng.randint(0, 2), "maxLength": rng.randint(2, 8)}
    if k == "null":
        return {"type": ["integer", "null"], "minimum": 0, "maximum": 9}
    if k == "const":
        return {"const": rng.choice(["on", 3, False, [1, 2]])}
    if k == "arr":
        return {"type": "array", "items": bounded_schema(rng, depth + 1),
                "minItems": rng.randint(0, 1), "maxItems": rng.randint(1, 3)}
    if k == "any":
        return {"anyOf": [bounded_schema(rng, depth + 1) for _ in range(rng.randint(2, 3))]}
    names = rng.sample(["id", "name", "ok", "tags", "kind", "n", "note", "城市"], rng.randint(1, 4))
    props = {n: bounded_schema(rng, depth + 1) for n in names}
    return {"type": "object", "properties": props,
            "required": rng.sample(names, rng.randint(0, len(names))), "additionalProperties": False}


def test_schema_corpus(s):
    """64 random bounded schemas, each the grammar of one completion on the random model (and a
    $ref-using one): every reply must stop by itself (finish_reason stop) and validate."""
    import random
    import concurrent.futures
    rng = random.Random(2026)
    schemas = [bounded_schema(rng) for _ in range(63)]
    schemas.append({"$defs": {"leaf": {"enum": ["x", "y"]}}, "type": "object",
                    "properties": {"a": {"$ref": "#/$defs/leaf"}, "b": {"type": "array", "maxItems": 2,
                                                                      "items": {"$ref": "#/$defs/leaf"}}},
                    "required": ["a", "b"], "additionalProperties": False})

    def one(i):
        r = s.post(COMP, {"prompt": f"Record {i}:", "max_tokens": 400, "seed": i, "temperature": 1,
                          "json_schema": schemas[i], **LIVELY})
        ch = choice0(r)
        text = ch.get("text") or ""
        try:
            jsonschema.validate(json.loads(text), schemas[i])
            valid = True
        except (ValueError, jsonschema.ValidationError):
            valid = False
        return r.status, ch.get("finish_reason"), valid, text

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(len(schemas))))
    bad = [(i, r[:3], short(r[3], 120), short(schemas[i], 160)) for i, r in enumerate(results)
           if r[0] != 200 or r[1] != "stop" or not r[2]]
    c.check(f"{len(schemas)} bounded schemas: every reply stops by itself and validates",
            not bad, bad[:5])


def test_refused_fields(s):
    """Fields that would change the output and are not implemented: a 400 naming them, unless at
    their neutral value; fields with no effect on the text stay ignored."""
    cases = [  # (path, field, value, refused)
        (CHAT, "functions", [{"name": "f", "parameters": {}}], True),
        (CHAT, "function_call", "auto", True),
        (COMP, "best_of", 2, True), (COMP, "best_of", 1, False),
        (CHAT, "modalities", ["text", "audio"], True), (CHAT, "modalities", ["text"], False),
        (CHAT, "reasoning_effort", "low", True),
        (COMP, "guided_json", {"type": "object"}, True), (COMP, "guided_choice", ["a", "b"], True),
        (COMP, "n_predict", 4, True), (COMP, "samplers", ["top_k"], True),
        (COMP, "n_probs", 3, True), (COMP, "mirostat", 2, False),
        (COMP, "repeat_penalty", 1.1, True), (COMP, "repeat_penalty", 1.0, False),
        (COMP, "tfs_z", 0.9, True), (COMP, "dry_multiplier", 0.8, False),
        (COMP, "typical_p", 0.9, False), (COMP, "xtc_probability", 0.5, False),
        (CHAT, "user", "someone", False), (CHAT, "metadata", {"a": "b"}, False),
        (COMP, "cache_prompt", True, False),
    ]
    for path, field, value, refused in cases:
        base = {"messages": USER} if path == CHAT else {"prompt": "x"}
        r = s.post(path, {**base, "max_tokens": 2, field: value})
        err = obj(r).get("error") or {}
        if refused:
            c.check(f"{path} {field}={json.dumps(value)}: 400 naming it",
                    r.status == 400 and err.get("param") == field and field in err.get("message", ""),
                    obj(r))
        else:
            c.check(f"{path} {field}={json.dumps(value)}: accepted (neutral or no effect)",
                    r.status == 200, obj(r))


def run(binary, model, servers):
    s = Server(binary, model, ["--parallel", "4", "--threads", "2", "--ctx", str(CTX * 2)])
    servers.append(s)
    c.section("response_format json_schema", test_json_schema, s)
    c.section("response_format json_object", test_json_object, s)
    c.section("forced tool calls", test_tool_choice, s)
    c.section("llama-server's grammar and json_schema", test_llama_server_fields, s)
    c.section("the processed distribution holds only allowed tokens", test_processed_distribution, s)
    c.section("a corpus of bounded schemas", test_schema_corpus, s)
    c.section("errors", test_errors, s)
    c.section("fields that would change the output are refused", test_refused_fields, s)


if __name__ == "__main__":
    run_main(c, "ls_server_structured_", run)
