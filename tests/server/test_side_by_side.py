"""serve --model-b and POST /v1/logitscope/side_by_side (issue 49 item 4): a second tiny model
(another seed) compared with the first at every kept step of a generation, against numpy on
both models' `next --all-positions --dump-logits` rows over the same tokens: KL(A||B) of the
raw softmaxes, each model's top-1 and the flips, B's probability and rank of the recorded
token, the focus step's two candidate lists; /v1/logitscope/info names model B; a server
without --model-b answers 404; a mistyped --model-b fails at start."""
import json
import os
import subprocess

import numpy as np

from cli_logits import cli_logits
from server_util import CHAT, Checker, Server, obj, run_main

c = Checker()
SBS = "/v1/logitscope/side_by_side"


def log_softmax(x):
    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())


def run(binary, model, servers):
    tmp = os.path.dirname(model)
    # A second tiny model: the same shape and vocabulary, other weights.
    model_b = os.path.join(tmp, "tiny_b")
    subprocess.run([binary, "synth", "--shape", "tiny", "--seed", "5", "--out", model_b,
                    "--tokenizer-from", model], check=True, capture_output=True)
    s = Server(binary, model, ["--parallel", "2", "--threads", "2", "--model-b", model_b])
    servers.append(s)
    info = obj(s.get("/v1/logitscope/info"))
    c.check("info names model B", info.get("model_b") == "tiny_b", info)
    r = s.post(CHAT, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8,
                      "temperature": 1.0, "repetition_penalty": 3, "seed": 4,
                      "logitscope": {"keep": True}})
    gen = obj(r)["logitscope"]["header"]["generation"]
    g = obj(s.get(f"/v1/logitscope/generations/{gen}"))
    j = obj(s.post(SBS, {"generation": gen, "step": 2, "top": 5}))
    n = g["kept_steps"]
    c.check("one entry per kept step", len(j.get("steps", [])) == n and n == 8, j)
    ctx = g["prompt_token_ids"] + g["tokens"][:n - 1]
    ra = cli_logits(binary, model, ctx)[len(g["prompt_token_ids"]) - 1:]
    rb = cli_logits(binary, model_b, ctx)[len(g["prompt_token_ids"]) - 1:]
    kls = []
    for k, st in enumerate(j["steps"]):
        la, lb = log_softmax(ra[k]), log_softmax(rb[k])
        kl = float((np.exp(la) * (la - lb)).sum())
        kls.append(kl)
        tok = g["tokens"][k]
        top_a, top_b = int(np.argmax(ra[k])), int(np.argmax(rb[k]))
        rank_b = int((rb[k] > rb[k][tok]).sum() + (rb[k][:tok] == rb[k][tok]).sum() + 1)
        ok = (abs(st["kl"] - kl) <= 1e-6 * max(1.0, abs(kl)) and st["top_a"] == top_a and
              st["top_b"] == top_b and st["flip"] == (top_a != top_b) and st["token"] == tok and
              abs(st["prob_b"] - float(np.exp(lb[tok]))) <= 1e-9 and st["rank_b"] == rank_b)
        c.check(f"step {k}: KL {st['kl']:.6f} (numpy {kl:.6f}), top-1s, flip, B's prob and rank "
                f"of the recorded token", ok, (st, kl, top_a, top_b, rank_b))
    c.check("kl_mean and same_top1", abs(j["kl_mean"] - float(np.mean(kls))) <= 1e-9 and
            abs(j["same_top1"] - np.mean([not st["flip"] for st in j["steps"]])) <= 1e-12, j)
    f = j.get("focus") or {}
    want_a = [int(i) for i in np.argsort(-ra[2], kind="stable")[:5]]
    want_b = [int(i) for i in np.argsort(-rb[2], kind="stable")[:5]]
    c.check("focus step 2: both candidate lists", f.get("step") == 2 and
            [x["id"] for x in f.get("a", [])] == want_a and
            [x["id"] for x in f.get("b", [])] == want_b, f)
    e = obj(s.post(SBS, {"generation": gen, "step": 99})).get("error") or {}
    c.check("step past the kept ones: 400 naming step", e.get("param") == "step", e)
    plain = Server(binary, model, ["--parallel", "2", "--threads", "2"])
    servers.append(plain)
    r = plain.post(CHAT, {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
                          "logitscope": {"keep": True}})
    gen2 = obj(r)["logitscope"]["header"]["generation"]
    r = plain.post(SBS, {"generation": gen2})
    c.check("without --model-b: 404 saying how to start one",
            r.status == 404 and "--model-b" in (obj(r).get("error") or {}).get("message", ""),
            obj(r))
    bad = subprocess.run([binary, "serve", "--model", model, "--model-b",
                          os.path.join(tmp, "missing"), "--port", "0"], capture_output=True,
                         text=True, timeout=60)
    c.check("a --model-b that is not a model: exit 1 naming it",
            bad.returncode == 1 and "missing" in bad.stderr, bad.stderr[-300:])


if __name__ == "__main__":
    run_main(c, "ls_server_sbs_", run)
