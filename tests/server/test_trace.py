#!/usr/bin/env python3
"""The server's numbers against `logitscope generate --json` (whose processors and samplers are
checked against numpy and transformers' formulas in tests/decode): for the same prompt, settings
and seed, the server's `logitscope.trace` steps equal the CLI's step lines, its tokens equal the
CLI's, and its logprobs (raw and processed, with top entries) equal the trace's figures. Also
streamed, and for n = 2 (sequence i of the CLI's num_return_sequences is choice i). Prompts that
share a prefix reuse its KV (alone and concurrently) and give exactly what a server without the
prefix cache gives."""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import Checker, Server, collect_stream, synth_tiny  # noqa: E402

PROMPT = [9707, 11, 1879, 374]
SETTINGS = {"temperature": 0.9, "top_k": 40, "top_p": 0.95, "repetition_penalty": 1.3, "seed": 7}
FLAGS = ["--do-sample", "true", "--temperature", "0.9", "--top-k", "40", "--top-p", "0.95",
         "--repetition-penalty", "1.3", "--seed", "7"]
TOKENS = 10
TOP = 5

c = Checker()


def cli_run(binary, model, n):
    """The CLI's header, steps (by sequence) and results for the same request."""
    r = subprocess.run([binary, "generate", "--model", model, "--tokens", ",".join(map(str, PROMPT)),
                        "--max-new-tokens", str(TOKENS), "--num-return-sequences", str(n), "--json",
                        "--top", str(TOP)] + FLAGS, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"generate failed: {r.stderr}")
    lines = [json.loads(line) for line in r.stdout.splitlines() if line.strip()]
    steps = [x for x in lines if x.get("type") == "step"]
    results = [x for x in lines if x.get("type") == "result"]
    return steps, results


def request(n, mode="raw", stream=False):
    return {"prompt": PROMPT, "max_tokens": TOKENS, "n": n, "logprobs": TOP, "logprobs_mode": mode,
            "stream": stream, "logitscope": {"trace": TOP}, **SETTINGS}


def by_sequence(steps):
    out = {}
    for s in steps:
        out.setdefault(s["sequence"], []).append(s)
    return out


def test_against_cli(server, binary, model, n):
    cli_steps, cli_results = cli_run(binary, model, n)
    r = server.request("POST", "/v1/completions", request(n))
    c.equal(f"n={n}: HTTP 200", r.status, 200)
    trace = r.json["logitscope"]["trace"]
    c.equal(f"n={n}: the trace has the CLI's number of steps", len(trace), len(cli_steps))
    cli_by, srv_by = by_sequence(cli_steps), by_sequence(trace)
    for i in range(n):
        c.check(f"n={n}, sequence {i}: every step object equals generate --json's",
                srv_by.get(i) == cli_by.get(i),
                {"first difference": next(({"server": a, "cli": b} for a, b in
                                           zip(srv_by.get(i, []), cli_by.get(i, [])) if a != b), None)})
        choice = r.json["choices"][i]
        want_text = cli_results[i]["text"]
        c.equal(f"n={n}, choice {i}: text equals the CLI's", choice["text"], want_text)
        lp = choice["logprobs"]
        steps = cli_by.get(i, [])
        # EOS ends a CLI sequence with a step but no text; the server leaves it out of logprobs.
        eos = cli_results[i]["finish_reason"] == "eos"
        steps_with_text = steps[:-1] if eos else steps
        c.equal(f"n={n}, choice {i}: token_logprobs are the trace's chosen raw_logprob",
                lp["token_logprobs"], [s["chosen"]["raw_logprob"] for s in steps_with_text])
        tops_ok = True
        for got, s in zip(lp["top_logprobs"], steps_with_text):
            # The raw log-sum-exp from the chosen token: logit - raw_logprob.
            lse = s["chosen"]["logit"] - s["chosen"]["raw_logprob"]
            want = {}
            for t in s["raw"]["top"]:
                want.setdefault(t["text"], t["logit"] - lse)
            tops_ok &= got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-9 for k in want)
        c.check(f"n={n}, choice {i}: top_logprobs are the trace's raw top {TOP}", tops_ok,
                {"server": lp["top_logprobs"][:1], "trace": [steps_with_text[0]["raw"]["top"]]})


def test_processed(server, binary, model):
    cli_steps, _ = cli_run(binary, model, 1)
    r = server.request("POST", "/v1/completions", request(1, mode="processed"))
    lp = r.json["choices"][0]["logprobs"]
    c.equal("processed: token_logprobs are the trace's chosen logprob (final distribution)",
            lp["token_logprobs"], [s["chosen"]["logprob"] for s in cli_steps[:len(lp["token_logprobs"])]])
    ok = True
    for got, s in zip(lp["top_logprobs"], cli_steps):
        final = s["stages"][-1]["top"]  # the pool after the last stage: what was drawn from
        want = {t["text"]: math.log(t["prob"]) for t in final[:TOP]}
        ok &= got.keys() == want.keys() and all(abs(got[k] - want[k]) < 1e-9 for k in want)
    c.check("processed: top_logprobs are log(prob) of the last stage's top entries", ok,
            {"server": lp["top_logprobs"][:1], "last stage": cli_steps[0]["stages"][-1]["top"][:TOP]})


def test_streamed(server):
    whole = server.request("POST", "/v1/completions", request(2)).json
    chunks, done, errors = collect_stream(server.stream("/v1/completions", request(2, stream=True)))
    c.check("streamed: [DONE] and no error event", done and not errors, errors)
    trace, texts = [], {0: "", 1: ""}
    for ch in chunks:
        trace += (ch.get("logitscope") or {}).get("trace", [])
        for choice in ch.get("choices", []):
            texts[choice["index"]] += choice.get("text", "")
    c.check("streamed: the trace steps equal the non-streamed response's (in order per sequence)",
            by_sequence(trace) == by_sequence(whole["logitscope"]["trace"]),
            {"streamed": len(trace), "whole": len(whole["logitscope"]["trace"])})
    c.equal("streamed: each choice's text equals the non-streamed one",
            [texts[0], texts[1]], [whole["choices"][0]["text"], whole["choices"][1]["text"]])


SYSTEM = ("You are a careful assistant. Answer in one short sentence, and say when you do not "
          "know. Never invent facts, names or numbers that were not given to you.")


def chat(question, seed):
    return {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}],
            "max_tokens": 12, "temperature": 1.0, "seed": seed, "repetition_penalty": 1.5,
            "logprobs": True, "top_logprobs": 3, "ignore_eos": True, "logitscope": {"trace": 2}}


def answer(r):
    """What must not change with prefix reuse: text, logprobs and the trace."""
    j = r.json or {}
    return {"content": j["choices"][0]["message"]["content"], "logprobs": j["choices"][0]["logprobs"],
            "trace": j["logitscope"]["trace"]} if r.status == 200 else r.text


def test_prefix_reuse(cached, plain):
    """Prompts that share the system prompt reuse its KV; every bit equals a server without reuse."""
    import threading
    questions = [f"Question {i}: what is {i} plus {i}?" for i in range(6)]
    want = [answer(plain.request("POST", "/v1/chat/completions", chat(q, i))) for i, q in enumerate(questions)]
    first = cached.request("POST", "/v1/chat/completions", chat(questions[0], 0))
    c.equal("first request: nothing cached yet",
            first.json["usage"]["prompt_tokens_details"]["cached_tokens"], 0)
    c.check("first request equals the server without reuse", answer(first) == want[0])
    second = cached.request("POST", "/v1/chat/completions", chat(questions[1], 1))
    shared = second.json["usage"]["prompt_tokens_details"]["cached_tokens"]
    c.check("second request: the shared system prompt is reused (cached_tokens >= 16)", shared >= 16,
            second.json["usage"])
    c.check("second request equals the server without reuse", answer(second) == want[1])
    # Four at once: later ones wait for the first to compute the shared part, then copy it.
    got = {}

    def run(i):
        got[i] = cached.request("POST", "/v1/chat/completions", chat(questions[i], i))

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2, 6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    c.check("four concurrent requests each equal the server without reuse",
            all(answer(got.get(i)) == want[i] for i in range(2, 6) if got.get(i) is not None)
            and len(got) == 4, {i: got[i].json["usage"] for i in got})
    # A short prompt (under the 16 tokens a request would wait for) sent again: its KV is
    # already there, so all but its last token are reused, as a crowd resending short chats gets.
    short = {**chat("Hi", 7), "messages": [{"role": "system", "content": ""},
                                           {"role": "user", "content": "Hi"}]}
    want_short = answer(plain.request("POST", "/v1/chat/completions", short))
    once = cached.request("POST", "/v1/chat/completions", short)
    again = cached.request("POST", "/v1/chat/completions", short)
    n = again.json["usage"]["prompt_tokens"]
    c.check("a short prompt (under 16 tokens) sent again reuses all but its last token",
            n < 16 and again.json["usage"]["prompt_tokens_details"]["cached_tokens"] == n - 1,
            again.json["usage"])
    c.check("both equal the server without reuse", answer(once) == want_short and answer(again) == want_short)
    m = cached.metrics()
    c.check("metrics: logitscope_prompt_tokens_cached_total counts the reused tokens",
            m.get("logitscope_prompt_tokens_cached_total", 0) >= shared, m.get("logitscope_prompt_tokens_cached_total"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ls_server_trace_")
    server = None
    try:
        model = synth_tiny(a.logitscope, a.tokenizer_from, tmp)
        server = Server(a.logitscope, model, ["--parallel", "4", "--threads", "2", "--ctx", "512"])
        c.section("one sequence against generate --json", test_against_cli, server, a.logitscope, model, 1)
        c.section("two sequences against generate --json", test_against_cli, server, a.logitscope, model, 2)
        c.section("logprobs_mode processed", test_processed, server, a.logitscope, model)
        c.section("streamed", test_streamed, server)
        plain = Server(a.logitscope, model, ["--parallel", "4", "--threads", "2", "--ctx", "512",
                                             "--prefix-cache", "0"])
        try:
            c.section("prefix reuse changes no bit", test_prefix_reuse, server, plain)
        finally:
            plain.kill()
    finally:
        if server is not None:
            if c.failures:
                print(server.log_tail())
            server.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return c.summary()


if __name__ == "__main__":
    sys.exit(main())
