"""llama-server's native POST /completion (issue 46, item 1), against numpy on the CLI's logits of
the same tokens (`next --all-positions --dump-logits`) and llama.cpp's formulas written in
tests/decode/{hf,llama}_formulas.py:

  - the defaults (top_k 40, top_p 0.95 by llama.cpp's rule, min_p 0.05, temperature 0.8 last):
    post_sampling_probs lists exactly the kept tokens, best first, with numpy's probabilities;
  - `samplers` (a list of names, or letters) runs the named samplers in its order and no others;
  - the penalties over repeat_last_n, DRY, mirostat 1 and 2 (mu carried over the steps) and
    min_keep;
  - n_probs without post_sampling_probs: the model's own softmax (llama-server's pre-sampling);
  - logit_bias in its list forms ([id, bias], [id, false], [text, bias]) and ignore_eos;
  - stop words (stop_type "word", stopping_word), n_predict 0 and -1, several prompts, mixed
    token/text prompts, return_tokens, response_fields, streaming (chunks, then the final
    object; no [DONE]);
  - errors: 400 naming the field (samplers[i], logit_bias[i][j], n_probs, ...)."""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "decode"))
import hf_formulas as hf  # noqa: E402
import llama_formulas as llama  # noqa: E402
from cli_logits import cli_logits  # noqa: E402
from server_util import EOS, Checker, Server, obj, run_main  # noqa: E402

c = Checker()
BINARY, MODEL = None, None
NATIVE = "/completion"
PROMPT = [785, 3974, 13876]  # "The quick brown": the tiny model's distribution is wide here
TOL = 2e-4  # the bound: the server's batched forward against the CLI's one sequence


def cli_rows(tokens):
    """Raw logits after every token of `tokens` (row i predicts token i + 1), float32."""
    return cli_logits(BINARY, MODEL, tokens).astype(np.float32)


def softmax_kept(row):
    """Probabilities of the tokens a chain kept (the rest 0), float64."""
    p = np.zeros(len(row))
    live = row > -np.inf
    x = row[live].astype(np.float64)
    e = np.exp(x - x.max())
    p[live] = e / e.sum()
    return p


def llama_chain(row, stages):
    """`stages`: (name, value) in order, llama.cpp's formulas on float32 scores."""
    s = row.astype(np.float32)
    for name, v in stages:
        if name == "top_k":
            s = hf.top_k(s, v, keep_ties=False)
        elif name == "top_p":
            s = hf.top_p_llama(s, v)
        elif name == "min_p":
            s = hf.min_p(s, v)
        elif name == "temperature":
            s = (s.astype(np.float64) / v).astype(np.float32)
        elif name == "typical_p":
            s = hf.typical_p(s, v)
    return s


def check_post_sampling(label, j, prompt, stages, n_probs):
    """Every step's top_probs against numpy's chain on the CLI's logits of the same tokens.
    `stages`: a list of (name, value), or a function (row, history, step) -> scores."""
    probs = j.get("completion_probabilities") or []
    tokens = [e["id"] for e in probs]
    c.check(f"{label}: one entry per generated token", len(probs) == j["tokens_predicted"] > 0,
            j.get("tokens_predicted"))
    rows = cli_rows(prompt + tokens)
    for k, entry in enumerate(probs):
        row = rows[len(prompt) - 1 + k]
        p = softmax_kept(stages(row, prompt + tokens[:k], k) if callable(stages)
                         else llama_chain(row, stages))
        kept = [int(t) for t in np.argsort(-p, kind="stable") if p[t] > 0][:n_probs]
        got = [e["id"] for e in entry["top_probs"]]
        c.check(f"{label} step {k}: top_probs are the kept tokens, best first "
                f"({len(kept)} of them)", got == kept, {"got": got[:8], "want": kept[:8]})
        worst = max([abs(e["prob"] - p[e["id"]]) for e in entry["top_probs"]] + [0])
        c.check(f"{label} step {k}: probabilities within {TOL} (worst {worst:.2e})",
                worst <= TOL, entry["top_probs"][:3])
        c.check(f"{label} step {k}: the drawn token's prob {entry['prob']:.6f}",
                abs(entry["prob"] - p[entry["id"]]) <= TOL and p[entry["id"]] > 0, entry["id"])


def test_defaults(s):
    body = {"prompt": PROMPT, "n_predict": 6, "n_probs": 50, "post_sampling_probs": True,
            "seed": 11}
    j = obj(s.post(NATIVE, body))
    check_post_sampling("defaults", j, PROMPT,
                        [("top_k", 40), ("top_p", 0.95), ("min_p", 0.05), ("temperature", 0.8)],
                        50)
    g = j["generation_settings"]
    want = {"temperature": 0.8, "top_k": 40, "top_p": 0.95, "min_p": 0.05, "typical_p": 1.0,
            "repeat_penalty": 1.0, "n_predict": 6, "seed": 11, "n_probs": 50}
    c.check("generation_settings: llama-server's defaults and the request",
            all(abs(g[k] - v) < 1e-9 for k, v in want.items()), {k: g.get(k) for k in want})
    c.equal("generation_settings.samplers: llama-server's default list", g["samplers"],
            ["penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"])
    for k in ("content", "stop_type", "stopping_word", "tokens_cached", "timings", "prompt",
              "truncated", "has_new_line", "tokens_evaluated", "model", "index"):
        c.check(f"the final object has '{k}'", k in j, list(j))
    c.equal("stop_type limit at n_predict", j["stop_type"], "limit")
    c.equal("tokens_evaluated: the prompt's tokens", j["tokens_evaluated"], len(PROMPT))
    c.equal("prompt: the prompt's text", j["prompt"], "The quick brown")
    t = j["timings"]
    c.check("timings: predicted_n = tokens_predicted, rates from the times",
            t["predicted_n"] == 6 and t["predicted_ms"] > 0 and
            abs(t["predicted_per_second"] - 6e3 / t["predicted_ms"]) < 1e-6 * t["predicted_per_second"],
            t)
    again = obj(s.post(NATIVE, body))
    c.equal("the same seed gives the same text", again["content"], j["content"])


def test_samplers(s):
    for samplers, stages, extra in (
            (["temperature", "min_p"], [("temperature", 2.0), ("min_p", 0.1)],
             {"temperature": 2.0, "min_p": 0.1}),
            (["min_p", "temperature"], [("min_p", 0.1), ("temperature", 2.0)],
             {"temperature": 2.0, "min_p": 0.1}),
            ("kpt", [("top_k", 7), ("top_p", 0.6), ("temperature", 0.5)],
             {"top_k": 7, "top_p": 0.6, "temperature": 0.5}),
            (["typ_p", "top_k", "temperature"], [("typical_p", 0.9), ("top_k", 30), ("temperature", 1.3)],
             {"typical_p": 0.9, "top_k": 30, "temperature": 1.3})):
        body = {"prompt": PROMPT, "n_predict": 4, "n_probs": 40, "post_sampling_probs": True,
                "seed": 5, "samplers": samplers, **extra}
        j = obj(s.post(NATIVE, body))
        if "completion_probabilities" not in j:
            c.check(f"samplers {samplers}: answered", False, j)
            continue
        check_post_sampling(f"samplers {samplers}", j, PROMPT, stages, 40)


def test_llama_only(s):
    """The penalties over repeat_last_n, DRY, mirostat (mu carried over the steps) and min_keep,
    against tests/decode/llama_formulas.py; the prompt repeats so that they act."""
    prompt = PROMPT + [785, 3974, 13876, 785, 3974]
    no_cut = {"top_k": 0, "top_p": 1, "min_p": 0}

    def penalties(row, hist, last_n, rep, freq, pres):
        w = hist[len(hist) - last_n:] if last_n > 0 else []
        x = hf.repetition_penalty(row, w, rep)
        return hf.presence_penalty(hf.frequency_penalty(x, w, freq), w, pres)

    for last_n in (3, 64, -1):
        body = {"prompt": prompt, "n_predict": 4, "n_probs": 60, "post_sampling_probs": True,
                "seed": 4, "repeat_penalty": 1.6, "frequency_penalty": 0.4,
                "presence_penalty": 0.3, "repeat_last_n": last_n, "top_k": 60, "top_p": 1,
                "min_p": 0, "temperature": 0.9}
        j = obj(s.post(NATIVE, body))
        n = 256 if last_n == -1 else last_n  # -1: the context (--ctx 256)
        check_post_sampling(
            f"penalties over the last {last_n}", j, prompt,
            lambda row, hist, k: llama_chain(penalties(row, hist, n, 1.6, 0.4, 0.3),
                                             [("top_k", 60), ("temperature", 0.9)]), 60)
    # DRY with a breaker no token of this text holds: the runs reach back unbroken.
    for allowed, last_n in ((1, -1), (2, 6)):
        body = {"prompt": prompt, "n_predict": 4, "n_probs": 60, "post_sampling_probs": True,
                "seed": 6, "dry_multiplier": 1.5, "dry_base": 1.5, "dry_allowed_length": allowed,
                "dry_penalty_last_n": last_n, "dry_sequence_breakers": ["@@"], "top_k": 60,
                "top_p": 1, "min_p": 0, "temperature": 1}
        j = obj(s.post(NATIVE, body))
        check_post_sampling(
            f"DRY allowed {allowed}, last {last_n}", j, prompt,
            lambda row, hist, k: llama_chain(llama.dry(row, hist, 1.5, 1.5, allowed, last_n, {}),
                                             [("top_k", 60)]), 60)
    # Mirostat: temperature, then mirostat with mu from 2 tau, moved by each chosen token.
    for version in (1, 2):
        body = {"prompt": PROMPT, "n_predict": 5, "n_probs": 200, "post_sampling_probs": True,
                "seed": 8, "mirostat": version, "mirostat_tau": 6.0, "mirostat_eta": 0.5,
                "temperature": 1.2, **no_cut}
        j = obj(s.post(NATIVE, body))
        tokens = [e["id"] for e in j.get("completion_probabilities") or []]
        mus = [12.0]
        rows = cli_rows(PROMPT + tokens)
        for k, t in enumerate(tokens[:-1]):
            row = (rows[len(PROMPT) - 1 + k].astype(np.float64) / 1.2).astype(np.float32)
            kept = llama.mirostat_keep(row, version, mus[-1], len(row))
            mus.append(llama.mirostat_update(kept, t, mus[-1], 6.0, 0.5))

        def miro(row, hist, k, version=version):
            x = (row.astype(np.float64) / 1.2).astype(np.float32)
            return llama.mirostat_keep(x, version, mus[k], len(row))
        check_post_sampling(f"mirostat {version} (mu {[round(m, 3) for m in mus]})", j, PROMPT,
                            miro, 200)
    body = {"prompt": PROMPT, "n_predict": 3, "n_probs": 20, "post_sampling_probs": True,
            "seed": 9, "min_keep": 7, "top_k": 0, "top_p": 0.05, "min_p": 0.9, "temperature": 1}
    j = obj(s.post(NATIVE, body))
    check_post_sampling("min_keep 7 under top_p 0.05 and min_p 0.9", j, PROMPT,
                        lambda row, hist, k: hf.min_p(hf.top_p_llama(row, 0.05, 7), 0.9, 7), 20)


def test_raw_probs(s):
    body = {"prompt": PROMPT, "n_predict": 3, "n_probs": 5, "seed": 2, "temperature": 1.5}
    j = obj(s.post(NATIVE, body))
    probs = j["completion_probabilities"]
    tokens = [e["id"] for e in probs]
    rows = cli_rows(PROMPT + tokens).astype(np.float64)
    for k, entry in enumerate(probs):
        lp = hf.log_softmax(rows[len(PROMPT) - 1 + k])
        want = [int(t) for t in np.argsort(-lp, kind="stable")[:5]]
        c.equal(f"raw step {k}: top_logprobs are the model's 5 best", [e["id"] for e in
                entry["top_logprobs"]], want)
        worst = max(abs(e["logprob"] - lp[e["id"]]) for e in entry["top_logprobs"])
        c.check(f"raw step {k}: logprobs within {TOL} (worst {worst:.2e})", worst <= TOL,
                entry["top_logprobs"][:2])
        c.check(f"raw step {k}: the drawn token's logprob, bytes and text",
                abs(entry["logprob"] - lp[entry["id"]]) <= TOL and
                bytes(entry["bytes"]).decode("utf-8", "replace") == entry["token"], entry)


def test_logit_bias(s):
    row = cli_rows(PROMPT)[-1].astype(np.float64)
    order = [int(t) for t in np.argsort(-row, kind="stable")]
    greedy = {"prompt": PROMPT, "n_predict": 1, "temperature": 0}
    j = obj(s.post(NATIVE, greedy))
    c.check("n_probs 0: no completion_probabilities", "completion_probabilities" not in j, list(j))
    j = obj(s.post(NATIVE, {**greedy, "return_tokens": True}))
    c.equal("greedy: tokens (return_tokens) is the best token", j["tokens"], [order[0]])
    j = obj(s.post(NATIVE, {**greedy, "n_probs": 3, "post_sampling_probs": True}))
    e = j["completion_probabilities"][0]
    c.check("greedy after the chain: the best token alone, probability 1 (as llama-server)",
            e["prob"] == 1.0 and [(x["id"], x["prob"]) for x in e["top_probs"]] == [(order[0], 1.0)],
            e)
    j = obj(s.post(NATIVE, {**greedy, "return_tokens": True, "logit_bias": [[order[0], False]]}))
    c.equal("logit_bias [[best, false]]: the second best", j["tokens"], [order[1]])
    gap = row[order[0]] - row[order[2]]
    j = obj(s.post(NATIVE, {**greedy, "return_tokens": True,
                            "logit_bias": [[order[2], gap / 2], [order[2], gap]]}))
    c.equal("logit_bias: two entries of one token add up", j["tokens"], [order[2]])
    j = obj(s.post(NATIVE, {**greedy, "return_tokens": True,
                            "logit_bias": {str(order[3]): float(gap + 1)}}))
    c.equal("logit_bias: OpenAI's object form", j["tokens"], [order[3]])
    j = obj(s.post(NATIVE, {**greedy, "return_tokens": True, "logit_bias": [[" brown", -1000]]}))
    c.check("logit_bias [[text, bias]]: the text's token is never chosen",
            j["tokens"] != [13876] and j["tokens"][0] == [t for t in order if t != 13876][0],
            j["tokens"])
    eos = {**greedy, "n_predict": 3, "return_tokens": True, "logit_bias": [[EOS, 1000]]}
    j = obj(s.post(NATIVE, eos))
    c.check("EOS biased up: stop_type eos after one token",
            j["stop_type"] == "eos" and j["tokens"] == [EOS], {k: j[k] for k in ("stop_type", "tokens")})
    j = obj(s.post(NATIVE, {**eos, "ignore_eos": True}))
    c.check("ignore_eos: EOS is never chosen, n_predict tokens",
            j["stop_type"] == "limit" and len(j["tokens"]) == 3 and EOS not in j["tokens"],
            {k: j[k] for k in ("stop_type", "tokens")})


def test_shapes(s):
    base = {"prompt": PROMPT, "n_predict": 8, "seed": 3, "temperature": 0}
    whole = obj(s.post(NATIVE, {**base, "return_tokens": True}))
    text = whole["content"]
    # A stop word: the first piece of the greedy text that recurs.
    word = " brown" if " brown" in text else text[-3:]
    j = obj(s.post(NATIVE, {**base, "stop": [word]}))
    c.check("stop: stop_type word, stopping_word, the text before it",
            j["stop_type"] == "word" and j["stopping_word"] == word and
            j["content"] == text[:text.index(word)], {k: j[k] for k in ("stop_type", "stopping_word",
                                                                        "content")})
    j = obj(s.post(NATIVE, {**base, "n_predict": 0}))
    c.check("n_predict 0: nothing generated, the prompt evaluated",
            j["content"] == "" and j["tokens_predicted"] == 0 and j["tokens_evaluated"] == 3, j)
    j = obj(s.post(NATIVE, {"prompt": PROMPT, "n_predict": -1, "temperature": 0,
                            "logit_bias": [[EOS, False]]}))
    c.check("n_predict -1: to the end of the context (truncated)",
            j["tokens_predicted"] + 3 == 256 and j["stop_type"] == "limit" and j["truncated"],
            {k: j[k] for k in ("tokens_predicted", "stop_type", "truncated")})
    j = s.post(NATIVE, {**base, "prompt": [PROMPT[:2], "The quick brown"]}).json
    c.check("two prompts: a list of two results, by index",
            isinstance(j, list) and [r["index"] for r in j] == [0, 1], j)
    if isinstance(j, list) and len(j) == 2:
        c.equal("a text prompt and its tokens give the same greedy text", j[1]["content"], text)
    j = obj(s.post(NATIVE, {**base, "prompt": [785, " quick", 13876], "return_tokens": True}))
    c.equal("a mixed prompt [id, text, id] is the same prompt", j["tokens"], whole["tokens"])
    j = obj(s.post(NATIVE, {**base, "response_fields": ["content", "generation_settings/n_predict",
                                                        "nothing/here"]}))
    c.equal("response_fields: only those, a path lifted under its name", j,
            {"content": text, "generation_settings/n_predict": 8})
    chunks = list(s.stream(NATIVE, {**base, "stream": True, "n_probs": 2}).events())
    c.check("stream: no [DONE] (llama-server's native stream ends with the final object)",
            "[DONE]" not in chunks, chunks[-1:])
    parts = [ch for ch in chunks if isinstance(ch, dict) and not ch.get("stop")]
    final = chunks[-1] if chunks else {}
    c.equal("stream: the pieces make the whole text", "".join(p["content"] for p in parts), text)
    c.equal("stream: each piece's tokens, in order",
            [t for p in parts for t in p["tokens"]], whole["tokens"])
    c.check("stream: each piece has its tokens' probabilities",
            all(len(p["completion_probabilities"]) == len(p["tokens"]) for p in parts), parts[:2])
    c.check("stream: the final object has stop true, empty content, stop_type and timings",
            final.get("stop") is True and final.get("content") == "" and
            final.get("stop_type") == "limit" and "timings" in final, final)


def test_errors(s):
    base = {"prompt": PROMPT, "n_predict": 2}
    cases = [
        ({**base, "samplers": ["top_k", "foo"]}, "samplers[1]"),
        ({**base, "samplers": "kz"}, "samplers[1]"),
        ({**base, "samplers": ["top_k", "top-k"]}, "samplers[1]"),
        ({**base, "samplers": 3}, "samplers"),
        ({**base, "logit_bias": [[1]]}, "logit_bias[0]"),
        ({**base, "logit_bias": [[1, "x"]]}, "logit_bias[0][1]"),
        ({**base, "logit_bias": [[10 ** 7, 1]]}, "logit_bias[0][0]"),
        ({**base, "logit_bias": 5}, "logit_bias"),
        ({**base, "n_probs": -1}, "n_probs"),
        ({**base, "n_probs": 1025}, "n_probs"),
        ({**base, "top_k": "a"}, "top_k"),
        ({**base, "top_p": 0}, "top_p"),
        ({**base, "temperature": 1e-6}, "temperature"),
        ({**base, "n_predict": -2}, "n_predict"),
        ({**base, "seed": -5}, "seed"),
        ({**base, "stop": [1]}, "stop[0]"),
        ({**base, "prompt": []}, "prompt"),
        ({**base, "prompt": [1, None]}, "prompt[1]"),
        ({"n_predict": 1}, "prompt"),
        ({**base, "image_data": [{"data": "x", "id": 1}]}, "image_data"),
        ({**base, "n_indent": 2}, "n_indent"),
        ({**base, "response_fields": "content"}, "response_fields"),
    ]
    for body, field in cases:
        r = s.post(NATIVE, body)
        err = obj(r).get("error") or {}
        c.check(f"{json.dumps(body)[-70:]}: 400 naming {field}",
                r.status == 400 and err.get("param") == field, obj(r))


def run(binary, model, servers):
    global BINARY, MODEL
    BINARY, MODEL = binary, model
    s = Server(binary, model, ["--parallel", "4", "--threads", "2", "--ctx", "256"])
    servers.append(s)
    c.section("defaults, post-sampling probabilities", test_defaults, s)
    c.section("samplers order", test_samplers, s)
    c.section("penalties, DRY, mirostat, min_keep", test_llama_only, s)
    c.section("pre-sampling probabilities", test_raw_probs, s)
    c.section("logit_bias and ignore_eos", test_logit_bias, s)
    c.section("response shapes", test_shapes, s)
    c.section("errors", test_errors, s)


if __name__ == "__main__":
    run_main(c, "ls_server_native_", run)
