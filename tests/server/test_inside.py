"""POST /v1/logitscope/lens, /attribute (issue 45, item 4) and /tree (issue 49) on the tiny model,
against the CLI run alone (whose numbers tests/reference/test_lens_ref.py and
test_attribute_ref.py check against numpy):

  - a kept generation's step K: the lens reads the context prompt + tokens[:K], follows the
    recorded token with the recorded draw, and the chain on the last layer (the step's real
    logits) picks the recorded token again; every raw number equals `lens --tokens <context>`;
  - lens on its own tokens equals the CLI's lens with the same settings and draw;
  - attribution of a kept step equals `attribute --tokens <context> --target <token>` bit for bit;
  - the tree of a kept step equals `tree --tokens <context>` node for node;
  - generation keeps running while lens requests arrive (both answer);
  - errors: 400 naming the field."""
import json
import subprocess
import threading

from server_util import CHAT, Checker, Server, obj, run_main

c = Checker()
LENS, ATTR, TREE = "/v1/logitscope/lens", "/v1/logitscope/attribute", "/v1/logitscope/tree"
BASE = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 6, "repetition_penalty": 3,
        "seed": 5, "temperature": 1.0, "logitscope": {"keep": True}}
BINARY, MODEL = None, None


def cli_json(*args):
    out = subprocess.run([BINARY, *args, "--model", MODEL, "--json"], capture_output=True,
                         text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{args}: {out.stderr}")
    return json.loads(out.stdout)


def kept(s):
    r = s.post(CHAT, BASE)
    gen = obj(r)["logitscope"]["header"]["generation"]
    g = obj(s.get(f"/v1/logitscope/generations/{gen}"))
    return gen, g


def raw_numbers(j):
    """The numbers that depend on the lens rows only (not on the chain)."""
    return [(l["layer"], [(t["id"], t["logprob"]) for t in l["top"]], l["entropy"])
            for l in j["layers"]]


def test_kept_step(s):
    gen, g = kept(s)
    c.check("a kept generation with 6 tokens", len(g["tokens"]) == 6, g)
    for k in (0, 3, 5):
        r = s.post(LENS, {"generation": gen, "step": k, "top": 4})
        j = obj(r)
        context = g["prompt_token_ids"] + g["tokens"][:k]
        c.check(f"step {k}: 200, the recorded token and draw", r.status == 200
                and j.get("chosen", {}).get("id") == g["tokens"][k] and j.get("draw") == g["draws"][k]
                and j.get("step") == k and j.get("generation") == gen, j)
        c.check(f"step {k}: the last layer's chain picks the recorded token again",
                j["layers"][-1]["sampler_choice"]["id"] == g["tokens"][k], j["layers"][-1])
        cli = cli_json("lens", "--tokens", ",".join(map(str, context)), "--top", "4",
                       "--token", str(g["tokens"][k]), "--draw", repr(g["draws"][k]))
        c.check(f"step {k}: every raw number equals lens --tokens <{len(context)} tokens> alone",
                raw_numbers(j) == raw_numbers(cli) and j["position"] == cli["position"],
                (raw_numbers(j)[-1], raw_numbers(cli)[-1]))
    r = s.post(ATTR, {"generation": gen, "step": 2})
    j = obj(r)
    context = g["prompt_token_ids"] + g["tokens"][:2]
    cli = cli_json("attribute", "--tokens", ",".join(map(str, context)), "--target",
                   str(g["tokens"][2]))
    c.check("attribution of step 2 equals attribute --tokens --target bit for bit",
            r.status == 200 and j["target"] == cli["target"] and
            j["base_logprob"] == cli["base_logprob"] and j["attributions"] == cli["attributions"],
            (j.get("attributions", [None])[:2], cli["attributions"][:2]))


def test_own_tokens(s):
    body = {"tokens": [9707, 11, 1879, 374], "top": 3, "track": [5], "layers": [0, 2],
            "draw": 0.25,
            "settings": {"temperature": 0.8, "top_k": 7, "top_p": 1, "repetition_penalty": 1}}
    j = obj(s.post(LENS, body))
    cli = cli_json("lens", "--tokens", "9707,11,1879,374", "--top", "3", "--track", "5",
                   "--layers", "0,2", "--draw", "0.25", "--temperature", "0.8", "--top-k", "7",
                   "--top-p", "1", "--repetition-penalty", "1", "--do-sample")
    same = {k: (j.get(k), cli.get(k)) for k in ("chosen", "runner_up", "first_chosen_layer",
                                                "settled_layer", "runner_up_lost_at", "layers")}
    c.check("tokens + settings + draw: the same chain and report as the CLI",
            j.get("chain") == cli.get("chain") and
            all(a == b for a, b in same.values()) and [l["layer"] for l in j["layers"]] == [0, 2],
            {k: v for k, v in same.items() if v[0] != v[1]})
    j = obj(s.post(LENS, {"prompt": "Hello there", "top": 1}))
    c.check("prompt: the lens of its last token", j.get("object") == "logitscope.lens"
            and len(j.get("layers", [])) == j.get("n_layers", -1) + 1, j)
    j = obj(s.post(ATTR, {"messages": [{"role": "user", "content": "Hi"}], "replace_with": 11}))
    c.check("messages + replace_with: one attribution per context token",
            j.get("mode") == "replace" and len(j.get("attributions", [])) == j.get("context_tokens"),
            j)


def nest(flat):
    """The route's flat node list (parents first) as the CLI's nested children lists."""
    out, made = [], []
    for n in flat:
        node = {k: n[k] for k in ("id", "token", "prob", "logprob", "raw_logprob", "path_logprob",
                                  "path_raw_logprob")}
        node["children"] = []
        made.append(node)
        (out if n["parent"] < 0 else made[n["parent"]]["children"]).append(node)
    return out


def test_tree(s):
    gen, g = kept(s)
    settings = {"temperature": 0.9, "top_k": 6, "top_p": 1, "repetition_penalty": 3}
    j = obj(s.post(TREE, {"generation": gen, "step": 2, "k": 2, "depth": 3, "min_prob": 0.05,
                          "settings": settings}))
    context = g["prompt_token_ids"] + g["tokens"][:2]
    cli = cli_json("tree", "--tokens", ",".join(map(str, context)), "--k", "2", "--depth", "3",
                   "--min-prob", "0.05", "--temperature", "0.9", "--top-k", "6", "--top-p", "1",
                   "--repetition-penalty", "3", "--min-p", "0", "--do-sample")
    c.check("tree of a kept step: the CLI's tree on its context, node for node",
            j.get("chain") == cli["chain"] and nest(j.get("nodes", [])) == cli["children"]
            and j.get("forward_steps") == 3, (j.get("chain"), cli["chain"]))


def test_boundaries(s):
    """Replay's "boundaries": each step's intervals, checked through replay itself."""
    r = s.post(CHAT, {**BASE, "temperature": 1.2, "top_p": 0.95, "top_k": 30})
    gen = obj(r)["logitscope"]["header"]["generation"]
    REPLAY = "/v1/logitscope/replay"
    j = obj(s.post(REPLAY, {"generation": gen, "boundaries": True}))
    steps = j.get("steps", [])
    c.check("boundaries: every kept step has them", len(steps) == 6 and
            all("boundaries" in st and len(st["boundaries"]["settings"]) == 5 for st in steps),
            steps[:1])
    ends = 0
    for st in steps[:3]:
        t = st["boundaries"]["settings"]["temperature"]
        if t["hi"] < t["max"] and t["hi"] * (1 + 1e-9) <= 2:  # the API's temperature range
            ends += 1
            for value, want in ((t["hi"], st["chosen"]), (t["hi"] * (1 + 1e-9), t["above"])):
                got = obj(s.post(REPLAY, {"generation": gen,
                                          "settings": {"temperature": value}}))["steps"]
                c.check(f"step {st['step']}: temperature {value!r} chooses {want}",
                        got[st["step"]]["chosen"] == want, got[st["step"]])
    c.check("at least one finite temperature end checked", ends > 0, ends)
    j = obj(s.post(REPLAY, {"generation": gen, "boundaries": [1]}))
    c.check("boundaries: [1] only step 1", [("boundaries" in st) for st in j["steps"]] ==
            [False, True, False, False, False, False], j["steps"][:2])
    for value, field in (([9], "boundaries[0]"), ("x", "boundaries")):
        e = obj(s.post(REPLAY, {"generation": gen, "boundaries": value})).get("error") or {}
        c.check(f"boundaries {value!r}: 400 naming {field}", e.get("param") == field, e)


def test_while_generating(s):
    results = {}

    def gen():
        results["gen"] = s.post(CHAT, {**BASE, "max_tokens": 40, "logitscope": {}})

    t = threading.Thread(target=gen)
    t.start()
    lens = [s.post(LENS, {"tokens": [1, 2, 3], "top": 1}) for _ in range(3)]
    t.join()
    c.check("three lens requests during a generation: all answer, and so does the generation",
            all(r.status == 200 for r in lens) and results["gen"].status == 200,
            [r.status for r in lens] + [results["gen"].status])


def test_errors(s):
    gen, _ = kept(s)
    cases = [
        (LENS, {}, "generation"),
        (LENS, {"tokens": [1], "prompt": "x"}, "generation"),
        (LENS, {"generation": gen}, "step"),
        (LENS, {"generation": gen, "step": 6}, "step"),
        (LENS, {"generation": "gen-nope", "step": 0}, "generation"),
        (LENS, {"tokens": [1], "step": 0}, "step"),
        (LENS, {"tokens": [1], "layers": [3]}, "layers[0]"),
        (LENS, {"tokens": [1], "top": 0}, "top"),
        (LENS, {"tokens": [1], "token": 151936}, "token"),
        (LENS, {"tokens": [1], "draw": 1}, "draw"),
        (LENS, {"tokens": [151936]}, "tokens[0]"),
        (LENS, {"tokens": []}, "tokens"),
        (LENS, {"tokens": [1], "settings": {"temperature": -1}}, "settings.temperature"),
        (ATTR, {"tokens": [1]}, "tokens"),
        (ATTR, {"tokens": list(range(1, 40)), "max_prompt": 10}, "max_prompt"),
        (ATTR, {"tokens": [1, 2], "max_prompt": 5000}, "max_prompt"),
        (ATTR, {"tokens": [1, 2], "target": -1}, "target"),
        (ATTR, {"tokens": [1, 2], "replace_with": "x"}, "replace_with"),
        (TREE, {"tokens": [1], "k": 10, "depth": 4}, "max_nodes"),
        (TREE, {"tokens": [1], "k": 0}, "k"),
        (TREE, {"tokens": [1], "depth": 17}, "depth"),
        (TREE, {"tokens": [1], "min_prob": 2}, "min_prob"),
    ]
    for path, body, field in cases:
        r = s.post(path, body)
        err = obj(r).get("error") or {}
        c.check(f"{path} {json.dumps(body)[:60]}: 4xx naming {field}",
                r.status in (400, 404) and err.get("param") == field, obj(r))


def run(binary, model, servers):
    global BINARY, MODEL
    BINARY, MODEL = binary, model
    s = Server(binary, model, ["--parallel", "4", "--threads", "2"])
    servers.append(s)
    c.section("a kept step", test_kept_step, s)
    c.section("tokens, prompt and messages of the request's own", test_own_tokens, s)
    c.section("the continuation tree", test_tree, s)
    c.section("decision boundaries through replay", test_boundaries, s)
    c.section("beside a running generation", test_while_generating, s)
    c.section("errors", test_errors, s)


if __name__ == "__main__":
    run_main(c, "ls_server_inside_", run)
