"""Token scoring on the server (issue 46, item 2), against numpy on the CLI's logits of the same
tokens (`next --all-positions --dump-logits`):

  - chat `prompt_logprobs: N` (vLLM's shape): a top-level list, null for the first prompt token,
    then per token {"<id>": {logprob, rank, decoded_token}} with the token itself and the N best;
  - `token_ids_logprob: [ids]` (SGLang's idea) on chat: every content entry lists the named
    tokens' {token_id, token, logprob, rank}, raw or (logprobs_mode processed) after the chain;
  - completions: prompt_logprobs per choice, token_ids_logprob as a fifth legacy list (null for
    echoed prompt tokens);
  - streaming: prompt_logprobs on the first chunk, the same entries as without streaming;
  - errors: 400 naming the field."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "decode"))
import hf_formulas as hf  # noqa: E402
import llama_formulas as llama  # noqa: E402
from cli_logits import cli_logits  # noqa: E402
from server_util import CHAT, COMP, Checker, Server, collect_stream, obj, run_main

c = Checker()
BINARY, MODEL = None, None
NAMED = [0, 13, 151645, 1000, 42]
TOL = 2e-4  # the server's batched forward against the CLI's one-sequence forward


def cli_rows(tokens):
    """Raw logits after every token of `tokens` (row i predicts token i + 1), float64."""
    return cli_logits(BINARY, MODEL, tokens).astype(np.float64)


def log_softmax(row):
    m = row.max()
    return row - m - np.log(np.exp(row - m).sum())


def rank(row32, t):
    """1-based rank with ties to the lower id, on the float32 values the server compares."""
    s = row32[t]
    return int(1 + np.sum(row32 > s) + np.sum((row32 == s) & (np.arange(len(row32)) < t)))


def near_tie(row, t):
    d = np.abs(row - row[t])
    d[t] = np.inf
    return d.min() < 1e-3


def check_ranked(label, got, row, token):
    """A {logprob, rank} against the row's log-softmax and rank."""
    lp = log_softmax(row)[token]
    c.check(f"{label}: logprob {got.get('logprob')} = numpy {lp:.6f}",
            abs(got.get("logprob", 1e9) - lp) <= TOL, got)
    want = rank(row.astype(np.float32), token)
    c.check(f"{label}: rank {got.get('rank')} = numpy {want}",
            got.get("rank") == want or near_tie(row, token), got)


def kept(s, body, path=CHAT):
    r = s.post(path, {**body, "logitscope": {"keep": True}})
    j = obj(r)
    gen = j["logitscope"]["header"]["generation"]
    g = obj(s.get(f"/v1/logitscope/generations/{gen}"))
    return j, g["prompt_token_ids"], g["tokens"]


CHAT_BODY = {"messages": [{"role": "user", "content": "Count: one two"}], "max_tokens": 5,
             "temperature": 0, "repetition_penalty": 3, "logprobs": True, "top_logprobs": 2,
             "prompt_logprobs": 3, "token_ids_logprob": NAMED}


def test_chat(s):
    j, prompt, tokens = kept(s, CHAT_BODY)
    rows = cli_rows(prompt + tokens)
    pl = j.get("prompt_logprobs")
    c.check("prompt_logprobs: one entry per prompt token, the first null",
            isinstance(pl, list) and len(pl) == len(prompt) and pl[0] is None, pl and pl[:2])
    for i in (1, 2, len(prompt) // 2, len(prompt) - 1):
        e, row = pl[i], rows[i - 1]
        check_ranked(f"prompt token {i}", e.get(str(prompt[i]), {}), row, prompt[i])
        order = sorted(range(len(row)), key=lambda t: (-np.float32(row[t]), t))[:3]
        c.check(f"prompt token {i}: the 3 best are listed with ranks 1-3",
                all(str(t) in e and e[str(t)]["rank"] == k + 1 for k, t in enumerate(order)
                    if not near_tie(row, t)), {"got": list(e), "want": order})
        c.check(f"prompt token {i}: decoded_token is a string", all(
            isinstance(v.get("decoded_token"), str) for v in e.values()), e)
    content = j["choices"][0]["logprobs"]["content"]
    c.check("one content entry per generated token", len(content) == len(tokens), len(content))
    for k, entry in enumerate(content):
        named = entry.get("token_ids_logprob")
        c.check(f"step {k}: token_ids_logprob lists the named ids in order",
                isinstance(named, list) and [n.get("token_id") for n in named] == NAMED, named)
        row = rows[len(prompt) - 1 + k]
        for n in named or []:
            check_ranked(f"step {k} token {n['token_id']}", n, row, n["token_id"])
    # A generated token named: its named logprob is the entry's own.
    j2, prompt2, tokens2 = kept(s, {**CHAT_BODY, "token_ids_logprob": [tokens[0]]})
    e0 = j2["choices"][0]["logprobs"]["content"][0]
    c.check("the chosen token, named: the same logprob as the entry's",
            abs(e0["token_ids_logprob"][0]["logprob"] - e0["logprob"]) < 1e-12, e0)


def test_processed(s):
    body = {**CHAT_BODY, "temperature": 0.7, "repetition_penalty": 1, "seed": 3, "top_p": 1,
            "top_k": 0, "min_p": 0, "logprobs_mode": "processed"}
    body.pop("prompt_logprobs")
    j, prompt, tokens = kept(s, body)
    rows = cli_rows(prompt + tokens)
    for k, entry in enumerate(j["choices"][0]["logprobs"]["content"]):
        row = rows[len(prompt) - 1 + k] / 0.7  # the chain at temperature 0.7, nothing cut
        for n in entry["token_ids_logprob"]:
            check_ranked(f"processed step {k} token {n['token_id']}", n, row, n["token_id"])
    c.check("no prompt_logprobs unless asked", "prompt_logprobs" not in j, list(j))


def test_llama_samplers(s):
    """llama-server's top_n_sigma, dynamic temperature, typical_p and XTC, seen through processed
    logprobs: the named tokens' logprob after the chain (hf order: temperature, top_n_sigma,
    typical_p, xtc) against tests/decode/{hf,llama}_formulas.py; a removed token reads -9999.
    On completions with a token prompt, where the tiny model's distribution is wide (after the
    chat template it is nearly one-hot); the named tokens include the first step's 10 best."""
    prompt = [785, 3974, 13876]
    first = cli_rows(prompt)[-1]
    named = NAMED + [int(t) for t in np.argsort(-first, kind="stable")[:10] if t not in NAMED]
    for extra in ({"top_n_sigma": 1.0}, {"dynatemp_range": 0.5, "dynatemp_exponent": 2},
                  {"top_n_sigma": 2.0, "dynatemp_range": 0.3}, {"typical_p": 0.8},
                  {"xtc_probability": 1.0, "xtc_threshold": 0.005},
                  {"xtc_probability": 0.5, "xtc_threshold": 0.005, "dynatemp_range": 0.2, "seed": 3}):
        # (seed 3's coins: 0.14, 0.75, 0.51, 0.6, 0.29: XTC acts at steps 0 and 4)
        body = {"prompt": prompt, "max_tokens": 5, "logprobs": 1, "temperature": 0.8,
                "repetition_penalty": 1,
                "seed": 5, "top_p": 1, "top_k": 0, "min_p": 0, "logprobs_mode": "processed",
                "token_ids_logprob": named, **extra}
        j, prompt, tokens = kept(s, body, COMP)
        rows = cli_rows(prompt + tokens)
        removed = 0
        for k, entry in enumerate(j["choices"][0]["logprobs"]["token_ids_logprob"]):
            row = rows[len(prompt) - 1 + k].astype(np.float32)
            if "dynatemp_range" in extra:
                row = llama.dynatemp(row, 0.8, extra["dynatemp_range"],
                                     extra.get("dynatemp_exponent", 1.0))
            else:
                row = (row.astype(np.float64) / 0.8).astype(np.float32)
            if "top_n_sigma" in extra:
                row = llama.top_n_sigma(row, extra["top_n_sigma"])
            if "typical_p" in extra:
                row = hf.typical_p(row, extra["typical_p"])
            if "xtc_probability" in extra:  # the coin of (seed, stream 0, step k)
                row = llama.xtc(row, extra["xtc_probability"], extra["xtc_threshold"], 1,
                                llama.xtc_coin(body["seed"], 0, k))
            live = row > -np.inf
            c.check(f"{extra} step {k}: the chosen token survives the chain",
                    bool(live[tokens[k]]), tokens[k])
            lp = np.full(len(row), -np.inf)
            lp[live] = log_softmax(row[live].astype(np.float64))
            for n in entry:
                want = lp[n["token_id"]]
                ok = (n["logprob"] == -9999.0) if want == -np.inf else \
                    abs(n["logprob"] - want) <= TOL * 2
                c.check(f"{extra} step {k} token {n['token_id']}: processed logprob "
                        f"{n['logprob']} = numpy {want:.6f}", ok, n)
                removed += want == -np.inf
        if "xtc_threshold" in extra or "top_n_sigma" in extra or "typical_p" in extra:
            c.check(f"{extra}: the chain removed some of the named tokens", removed > 0, removed)
        settings = j["logitscope"]["header"]["settings"]
        c.check(f"{extra}: the settings report it, from the request",
                all(settings[f] == {"value": v, "source": "request"} for f, v in extra.items()),
                {f: settings.get(f) for f in extra})


def test_llama_more(s):
    """llama-server's penalty window, DRY, mirostat and min_keep as extension fields of the
    OpenAI routes (hf order: penalties and DRY among the processors, temperature, then mirostat
    replacing the truncations), seen through processed logprobs of named tokens."""
    prompt = [785, 3974, 13876, 785, 3974, 13876, 785]
    first = cli_rows(prompt)[-1]
    named = NAMED + [int(t) for t in np.argsort(-first, kind="stable")[:10] if t not in NAMED]
    cases = (
        {"repetition_penalty": 1.8, "repeat_last_n": 2},
        {"repetition_penalty": 1.8, "frequency_penalty": 0.5, "repeat_last_n": 5},
        {"dry_multiplier": 1.5, "dry_base": 1.5, "dry_allowed_length": 1,
         "dry_sequence_breakers": ["@@"]},
        {"mirostat": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.5},
        {"mirostat": 1, "mirostat_tau": 4.0},
        {"min_keep": 4, "top_p": 0.05, "min_p": 0.9},
    )
    for extra in cases:
        body = {"prompt": prompt, "max_tokens": 4, "logprobs": 1, "temperature": 0.8,
                "repetition_penalty": 1, "seed": 5, "top_p": 1, "top_k": 0, "min_p": 0,
                "logprobs_mode": "processed", "token_ids_logprob": named, **extra}
        j, prompt_ids, tokens = kept(s, body, COMP)
        rows = cli_rows(prompt_ids + tokens)
        mu = 2 * extra.get("mirostat_tau", 5.0)
        for k, entry in enumerate(j["choices"][0]["logprobs"]["token_ids_logprob"]):
            hist = prompt_ids + tokens[:k]
            row = rows[len(prompt_ids) - 1 + k].astype(np.float32)
            if "repeat_last_n" in extra:
                w = hist[len(hist) - extra["repeat_last_n"]:]
                row = hf.repetition_penalty(row, w, extra["repetition_penalty"])
                if "frequency_penalty" in extra:
                    row = hf.frequency_penalty(row, w, extra["frequency_penalty"])
            if "dry_multiplier" in extra:
                row = llama.dry(row, hist, 1.5, 1.5, 1, -1, {})
            row = (row.astype(np.float64) / 0.8).astype(np.float32)
            if "mirostat" in extra:
                row = llama.mirostat_keep(row, extra["mirostat"], mu, len(row))
                mu = llama.mirostat_update(row, tokens[k], mu, extra["mirostat_tau"],
                                           extra.get("mirostat_eta", 0.1))
            if "min_keep" in extra:
                row = hf.min_p(hf.top_p(row, 0.05, 4), 0.9, 4)
            live = row > -np.inf
            lp = np.full(len(row), -np.inf)
            lp[live] = log_softmax(row[live].astype(np.float64))
            worst = 0.0
            for n in entry:
                want = lp[n["token_id"]]
                ok = (n["logprob"] == -9999.0) if want == -np.inf else \
                    abs(n["logprob"] - want) <= TOL * 2
                worst = max(worst, 0 if want == -np.inf else abs(n["logprob"] - want))
                c.check(f"{extra} step {k} token {n['token_id']}: processed logprob "
                        f"{n['logprob']} = numpy {want:.6f}", ok, n)
        settings = j["logitscope"]["header"]["settings"]
        c.check(f"{extra}: the settings report it, from the request",
                all(settings[f] == {"value": v, "source": "request"} for f, v in extra.items()),
                {f: settings.get(f) for f in extra})
        if "mirostat" in extra:  # a later step cannot be re-run alone: mu depends on the others
            gen = j["logitscope"]["header"]["generation"]
            for route, body in (("/v1/logitscope/lens", {"generation": gen, "step": 2}),
                                ("/v1/logitscope/tree", {"generation": gen, "step": 1,
                                                         "depth": 2})):
                r = s.post(route, body)
                c.check(f"{extra}: {route} of a later step is a 400 saying why",
                        r.status == 400 and "mirostat" in (obj(r).get("error") or {}).get(
                            "message", ""), obj(r))


def test_completions(s):
    prompt = [785, 3974, 13876, 38835, 34208]
    body = {"prompt": prompt, "max_tokens": 3, "temperature": 0, "repetition_penalty": 3,
            "logprobs": 2, "echo": True, "prompt_logprobs": 2, "token_ids_logprob": NAMED}
    j = obj(s.post(COMP, body))
    ch = j["choices"][0]
    lp = ch["logprobs"]
    n = len(lp["tokens"]) - len(prompt)
    c.check("completions: 3 generated tokens after the echoed prompt", n == 3, lp["tokens"])
    named = lp.get("token_ids_logprob")
    c.check("legacy token_ids_logprob: null for echoed prompt tokens, lists after",
            isinstance(named, list) and len(named) == len(lp["tokens"])
            and all(x is None for x in named[:len(prompt)])
            and all(isinstance(x, list) and len(x) == len(NAMED) for x in named[len(prompt):]),
            named)
    pl = ch.get("prompt_logprobs")
    c.check("completions: prompt_logprobs per choice, first null",
            isinstance(pl, list) and len(pl) == len(prompt) and pl[0] is None, pl)
    rows = cli_rows(prompt)
    for i in range(1, len(prompt)):
        check_ranked(f"completion prompt token {i}", pl[i][str(prompt[i])], rows[i - 1], prompt[i])
    c.check("echo's own top_logprobs keep 'logprobs: 2' entries",
            all(t is None or len(t) <= 2 for t in lp["top_logprobs"]), lp["top_logprobs"][:3])


def test_streaming(s):
    body = dict(CHAT_BODY)
    whole = obj(s.post(CHAT, body))
    sse = s.stream(CHAT, {**body, "stream": True})
    chunks, done, errors = collect_stream(sse)
    c.check("stream: [DONE], no error", done and not errors, errors)
    first = chunks[0] if chunks else {}
    c.equal("stream: prompt_logprobs on the first chunk", first.get("prompt_logprobs"),
            whole.get("prompt_logprobs"))
    entries = [e for ch in chunks for chc in ch.get("choices", [])
               for e in ((chc.get("logprobs") or {}).get("content") or [])]
    c.equal("stream: the same content entries", entries,
            whole["choices"][0]["logprobs"]["content"])


def test_errors(s):
    base = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    cases = [
        (CHAT, {**base, "token_ids_logprob": [1]}, "token_ids_logprob"),
        (CHAT, {**base, "logprobs": True, "token_ids_logprob": []}, "token_ids_logprob"),
        (CHAT, {**base, "logprobs": True, "token_ids_logprob": [10 ** 7]}, "token_ids_logprob"),
        (CHAT, {**base, "logprobs": True, "token_ids_logprob": ["a"]}, "token_ids_logprob"),
        (CHAT, {**base, "logprobs": True, "token_ids_logprob": list(range(257))},
         "token_ids_logprob"),
        (CHAT, {**base, "prompt_logprobs": 21}, "prompt_logprobs"),
        (CHAT, {**base, "prompt_logprobs": "3"}, "prompt_logprobs"),
        (COMP, {"prompt": "x", "max_tokens": 1, "prompt_logprobs": -1}, "prompt_logprobs"),
        (CHAT, {**base, "top_n_sigma": 101}, "top_n_sigma"),
        (CHAT, {**base, "dynatemp_range": -0.1}, "dynatemp_range"),
        (CHAT, {**base, "dynatemp_exponent": "2"}, "dynatemp_exponent"),
        (CHAT, {**base, "xtc_probability": 1.5}, "xtc_probability"),
        (CHAT, {**base, "xtc_threshold": -1}, "xtc_threshold"),
        (CHAT, {**base, "typical_p": 0}, "typical_p"),
        (CHAT, {**base, "mirostat": 3}, "mirostat"),
        (CHAT, {**base, "dry_base": 0.5}, "dry_base"),
        (CHAT, {**base, "dry_multiplier": -1}, "dry_multiplier"),
        (CHAT, {**base, "dry_sequence_breakers": "x"}, "dry_sequence_breakers"),
        (CHAT, {**base, "dry_sequence_breakers": [1]}, "dry_sequence_breakers[0]"),
        (CHAT, {**base, "repeat_last_n": -2}, "repeat_last_n"),
        (CHAT, {**base, "min_keep": -1}, "min_keep"),
        (CHAT, {**base, "repeat_penalty": 1.2}, "repeat_penalty"),
    ]
    for path, body, field in cases:
        r = s.post(path, body)
        err = obj(r).get("error") or {}
        c.check(f"{path} {json.dumps(body)[-60:]}: 400 naming {field}",
                r.status == 400 and (err.get("param") or "").startswith(field), obj(r))


def run(binary, model, servers):
    global BINARY, MODEL
    BINARY, MODEL = binary, model
    s = Server(binary, model, ["--parallel", "4", "--threads", "2"])
    servers.append(s)
    c.section("chat: prompt_logprobs and token_ids_logprob", test_chat, s)
    c.section("chat: processed logprobs", test_processed, s)
    c.section("chat: llama-server's top_n_sigma and dynamic temperature", test_llama_samplers, s)
    c.section("llama-server's penalty window, DRY, mirostat, min_keep", test_llama_more, s)
    c.section("completions", test_completions, s)
    c.section("streaming", test_streaming, s)
    c.section("errors", test_errors, s)


if __name__ == "__main__":
    run_main(c, "ls_server_scoring_", run)
