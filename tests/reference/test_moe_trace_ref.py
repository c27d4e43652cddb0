#!/usr/bin/python3
"""The router's choice in logitscope's traces vs the independent numpy MoE reference (moe_ref.py,
issue 48): per generated step, the experts each layer routed the step's input token to (the
prompt's last token for step 0, the token chosen at step k-1 for step k) and their weights.

Run by CTest as
    test_moe_trace_ref.py --logitscope BIN --tokenizer-from DIR [--keep DIR]
Models (st_write.random_moe via test_moe_ref.py_moe, the real tokenizer's vocab):
  qwen3_moe 8 experts top-2 norm true (2 layers); 6 experts top-3 norm false with mlp_only_layers [0]
  (3 layers: a dense layer); qwen2_moe 6 experts top-2 norm absent (= false) with the shared expert
  and decoder_sparse_step 2 (3 layers: layers 0 and 2 dense); qwen2_moe 4 experts top-1 norm true.
Checks:
  (a) `generate --json` greedy, 8 new tokens: every step has `experts` with one row per layer, [] for
      a dense layer; ids equal to the reference's top-k in order, weights within 1e-5 (a reference
      near-tie, gap < 1e-4 between the k-th and (k+1)-th router logit or between two chosen experts'
      weights, is reported and exempt), for the generated token sequence (one reference forward pass
      over prompt + generated tokens);
  (b) sampling with num_return_sequences 2 (the prompt is fed once and forked): each sequence's
      steps against the reference of its own tokens;
  (c) `generate --trace --experts all`: the text's `experts` lines equal the JSON's to the 3 printed
      decimals; `--experts 1` lists one per layer; `--experts 0` none;
  (d) `next --json`: `experts` of the prompt's last token vs the reference;
  (g) beam search (num_beams 2): each step's `beam_experts`, one per beam that ran (the prompt for
      step 0, then the previous step's live beams in order), against the reference over that
      beam's tokens; every candidate extends its parent's tokens; --trace prints them per beam;
  (e) power: the weights of the reference with renormalisation flipped (norm_topk_prob models) are
      farther than 100x the tolerance from the engine's;
  (f) a dense model: no `experts` key in --json steps or `next --json`, no experts lines in --trace.
Exit code 1 if any check failed.
"""
import json
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import moe_ref  # noqa: E402
import test_forward_ref as tfr  # noqa: E402
import test_moe_ref as tmr  # noqa: E402

TOL = 1e-5      # routing weights
NEAR_TIE = 1e-4  # reference router-logit gap (or weight gap) below which a swap is exempt
NEW = 8
C = tfr.C


def json_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip().startswith("{")]


def generate_json(d, prompt, extra):
    p, dt = tfr.run(["generate", "--model", d, "--tokens", ",".join(map(str, prompt)), "--json",
                     "--max-new-tokens", str(NEW), "--min-new-tokens", str(NEW)] + list(extra))
    if not C.check(p.returncode == 0, "generate --json %s exits 0 (%.1fs) %s" % (" ".join(extra), dt, p.stderr.strip()[-300:])):
        return None
    return json_lines(p.stdout)


def compare_routes(tag, got, want):
    """got: the engine's [[expert, weight], ...] per layer; want: the reference's row (per layer
    (ids, weights, gap) or None). Returns (max weight diff, exempt layers) and records the checks."""
    if not C.check(isinstance(got, list) and len(got) == len(want),
                   "%s: experts has one row per layer (%s rows, %d layers)" % (tag, len(got) if isinstance(got, list) else got, len(want))):
        return float("inf"), 0
    worst, exempt, bad = 0.0, 0, []
    for layer, (g, w) in enumerate(zip(got, want)):
        if w is None:
            if g != []:
                bad.append("L%d dense but %s" % (layer, g))
            continue
        ids, wts, gap = w
        gids = [int(e) for e, _ in g]
        gw = [float(x) for _, x in g]
        if len(gids) != len(ids):
            bad.append("L%d %d experts, want %d" % (layer, len(gids), len(ids)))
            continue
        close_weights = min((abs(wts[i] - wts[i + 1]) for i in range(len(wts) - 1)), default=np.inf)
        if gids != ids:
            if gap < NEAR_TIE or close_weights < NEAR_TIE:
                exempt += 1
                print("      %s L%d: experts %s vs reference %s at a near tie (gap %.2g, weight gap %.2g): exempt"
                      % (tag, layer, gids, ids, gap, close_weights))
                continue
            bad.append("L%d experts %s != reference %s (gap %.3g)" % (layer, gids, ids, gap))
            continue
        worst = max(worst, max(abs(a - b) for a, b in zip(gw, wts)))
    C.check(not bad and worst <= TOL, "%s: experts ids equal, weights max diff %.2g <= %g%s%s"
            % (tag, worst, TOL, "; " + "; ".join(bad) if bad else "", ", %d near-tie layers exempt" % exempt if exempt else ""))
    return worst, exempt


def check_steps(name, m, prompt, lines, seqs=1):
    """Every step of every returned sequence against the reference over its own tokens."""
    results = {j["sequence"]: j for j in lines if j.get("type") == "result"}
    steps = [j for j in lines if j.get("type") == "step"]
    worst = 0.0
    for s in range(seqs):
        if not C.check(s in results, "%s: a result line for sequence %d" % (name, s)):
            continue
        gen = results[s]["tokens"]
        mine = sorted((j for j in steps if j["sequence"] == s), key=lambda j: j["step"])
        C.check(len(mine) == len(gen) == NEW, "%s seq %d: %d steps, %d tokens (want %d)" % (name, s, len(mine), len(gen), NEW))
        full = list(prompt) + list(gen[:-1])
        routes = m.routes(full)
        for j in mine:
            k = j["step"]
            pos = len(prompt) - 1 + k
            C.check(k == 0 or j["chosen"]["id"] == gen[k], "%s seq %d step %d: chosen == result token" % (name, s, k))
            if not C.check("experts" in j, "%s seq %d step %d has experts" % (name, s, k)):
                continue
            w, _ = compare_routes("%s seq %d step %d (input token %d at position %d)" % (name, s, k, full[pos], pos),
                                  j["experts"], routes[pos])
            worst = max(worst, w)
    return worst


TEXT_ITEM = re.compile(r"L(\d+)((?: -?\d+:[0-9.]+)*| dense)")


def parse_text_experts(out):
    """Per step, {layer: [(expert, weight)] or 'dense'} from --trace's experts lines."""
    steps, cur, in_block = [], None, False
    for line in out.splitlines():
        if line.startswith("── step "):
            cur = {}
            steps.append(cur)
            in_block = False
            continue
        if cur is None:
            continue
        if line.startswith("  experts of the input token"):
            in_block = True
            continue
        if in_block and line.startswith("    L"):
            for item in line.strip().split(" | "):
                mm = TEXT_ITEM.fullmatch(item)
                if mm is None:
                    cur["bad"] = item
                    continue
                body = mm.group(2).strip()
                cur[int(mm.group(1))] = "dense" if body == "dense" else [
                    (int(a), float(b)) for a, b in (x.split(":") for x in body.split())]
            continue
        in_block = False
    return steps


def check_text(name, d, prompt, lines, m):
    base = ["generate", "--model", d, "--tokens", ",".join(map(str, prompt)), "--max-new-tokens", str(NEW),
            "--min-new-tokens", str(NEW), "--do-sample", "false", "--trace"]
    steps_json = sorted((j for j in lines if j.get("type") == "step"), key=lambda j: j["step"])
    for shown in ("all", "1", "0"):
        p, _ = tfr.run(base + ["--experts", shown])
        if not C.check(p.returncode == 0, "%s: generate --trace --experts %s exits 0 %s" % (name, shown, p.stderr.strip()[-300:])):
            continue
        text = parse_text_experts(p.stdout)
        if shown == "0":
            C.check("experts of the input token" not in p.stdout, "%s --experts 0: no experts lines" % name)
            continue
        C.check(len(text) == len(steps_json) == NEW, "%s --experts %s: %d text steps, %d JSON steps" % (name, shown, len(text), len(steps_json)))
        bad = []
        for t, j in zip(text, steps_json):
            if "bad" in t:
                bad.append("unparsed %r" % t["bad"])
            for layer, row in enumerate(j.get("experts", [])):
                if not row:
                    if t.get(layer) != "dense":
                        bad.append("step %d L%d: %s, want dense" % (j["step"], layer, t.get(layer)))
                    continue
                want = row if shown == "all" else row[:int(shown)]
                got = t.get(layer)
                if (not isinstance(got, list) or [e for e, _ in got] != [e for e, _ in want]
                        or any(abs(a - b) > 5.1e-4 for (_, a), (_, b) in zip(got, want))):
                    bad.append("step %d L%d: text %s, JSON %s" % (j["step"], layer, got, want))
        C.check(not bad, "%s --trace --experts %s: the text's experts == the JSON's (3 decimals)%s"
                % (name, shown, "; " + "; ".join(bad[:4]) if bad else ""))


def check_next(name, d, prompt, m):
    p, _ = tfr.run(["next", "--model", d, "--tokens", ",".join(map(str, prompt)), "--json", "--top", "1"])
    if not C.check(p.returncode == 0, "%s: next --json exits 0 %s" % (name, p.stderr.strip()[-300:])):
        return
    j = json.loads(p.stdout)
    if C.check("experts" in j, "%s: next --json has experts" % name):
        compare_routes("%s next (last prompt token)" % name, j["experts"], m.routes(prompt)[-1])
    p, _ = tfr.run(["next", "--model", d, "--tokens", ",".join(map(str, prompt)), "--top", "1", "--experts", "all"])
    C.check(p.returncode == 0 and "experts      of the last input token" in p.stdout,
            "%s: next's table lists the experts" % name)


def check_power(name, d, lines, prompt):
    m = moe_ref.MoeRef(d, mutant="renorm_flipped")
    steps = [j for j in lines if j.get("type") == "step" and j["sequence"] == 0]
    gen = [j for j in lines if j.get("type") == "result"][0]["tokens"]
    routes = m.routes(list(prompt) + list(gen[:-1]))
    worst = 0.0
    for j in steps:
        for g, w in zip(j["experts"], routes[len(prompt) - 1 + j["step"]]):
            if w is not None and [e for e, _ in g] == w[0]:
                worst = max(worst, max(abs(a - b) for (_, a), b in zip(g, w[1])))
    C.check(worst > 100 * TOL, "%s power: the renorm_flipped reference's weights differ by %.3g > %g"
            % (name, worst, 100 * TOL))


def check_beams(name, d, prompt, m):
    lines = generate_json(d, prompt, ["--num-beams", "2", "--do-sample", "false"])
    if lines is None:
        return 0.0
    steps = sorted((j for j in lines if j.get("type") == "step"), key=lambda j: j["step"])
    worst, running = 0.0, [[]]  # the tokens of each beam that runs this step
    C.check(len(steps) > 1, "%s beams: %d steps" % (name, len(steps)))
    queries = []  # (tag, the engine's experts, prompt + the beam's tokens)
    for j in steps:
        k = j["step"]
        got = j.get("beam_experts")
        if not C.check(isinstance(got, list) and len(got) == len(running),
                       "%s beams step %d: beam_experts for each of the %d beams that ran (got %s)"
                       % (name, k, len(running), len(got) if isinstance(got, list) else got)):
            break
        beams = j["beams"]
        ids = [[t["id"] for t in c["tokens"]] for c in beams]
        C.check(all(ids[i][:-1] == running[c["parent"]] for i, c in enumerate(beams)),
                "%s beams step %d: every candidate extends its parent's tokens" % (name, k))
        for b, toks in enumerate(running):
            full = list(prompt) + toks
            queries.append(("%s beams step %d beam %d (input token %d)" % (name, k, b, full[-1]), got[b], full))
        running = [ids[i] for i, c in enumerate(beams) if c["status"] == "live"]
    # A causal pass over a sequence routes every prefix of it: one reference pass per sequence
    # that is no other's prefix, longest first.
    passes = []  # (tokens, routes)
    for tag, got_b, full in sorted(queries, key=lambda q: -len(q[2])):
        done = next((r for t, r in passes if t[:len(full)] == full), None)
        if done is None:
            done = m.routes(full)
            passes.append((full, done))
        w, _ = compare_routes(tag, got_b, done[len(full) - 1])
        worst = max(worst, w)
    p, _ = tfr.run(["generate", "--model", d, "--tokens", ",".join(map(str, prompt)), "--max-new-tokens", "2",
                    "--num-beams", "2", "--do-sample", "false", "--trace", "--experts", "all"])
    C.check(p.returncode == 0 and "experts of beam 0's input token" in p.stdout
            and "experts of beam 1's input token" in p.stdout,
            "%s beams: --trace prints each beam's experts %s" % (name, p.stderr.strip()[-300:]))
    return worst


def check_dense(tmp, tok_dir):
    d = os.path.join(tmp, "dense")
    p, _ = tfr.synth(d, "f32", 3, False, tok_dir, shape="tiny")
    if not C.check(p.returncode == 0, "synth tiny (dense) %s" % p.stderr.strip()[-200:]):
        return
    lines = generate_json(d, [9707, 11, 1879], ["--do-sample", "false"])
    if lines is not None:
        C.check(all("experts" not in j for j in lines), "dense model: no experts key in --json lines")
    p, _ = tfr.run(["generate", "--model", d, "--tokens", "9707,11", "--max-new-tokens", "2", "--trace", "--experts", "all"])
    C.check(p.returncode == 0 and "experts" not in p.stdout, "dense model: no experts lines in --trace")
    p, _ = tfr.run(["next", "--model", d, "--tokens", "9707,11", "--json"])
    C.check(p.returncode == 0 and "experts" not in json.loads(p.stdout), "dense model: no experts in next --json")


def main():
    a, tmp = tfr.engine_test_setup("ls_moe_trace_")
    t0 = time.time()
    tcfg, tok_src = tmr.template_config(a.tokenizer_from, tmp)
    q3, q2 = "qwen3_moe", "qwen2_moe"
    specs = [  # name, seed, random_moe options
        ("q3_e8k2_norm", 71, dict(family=q3, num_experts=8, top_k=2, norm_topk_prob=True, tied=False, moe_inter=32)),
        ("q3_e6k3_nonorm_mlponly0", 72, dict(family=q3, num_experts=6, top_k=3, norm_topk_prob=False, tied=True, layers=3,
                                             mlp_only_layers=[0], moe_inter=48)),
        ("q2_e6k2_shared_step2", 73, dict(family=q2, num_experts=6, top_k=2, norm_topk_prob=None, tied=False, layers=3,
                                          decoder_sparse_step=2, moe_inter=32, shared_inter=64)),
        ("q2_e4k1_norm_shared", 74, dict(family=q2, num_experts=4, top_k=1, norm_topk_prob=True, tied=True, moe_inter=32,
                                         shared_inter=64)),
    ]
    prompt = [9707, 11, 1879, 0, 358]
    worst = 0.0
    for name, seed, kw in specs:
        d = os.path.join(tmp, name)
        tmr.py_moe(d, tcfg, tok_src, seed=seed, **kw)
        m = moe_ref.MoeRef(d)
        c = m.cfg
        print("---- (%.1fs) %s: %s, %d layers (sparse %s), %d experts top-%d norm %s" % (
            time.time() - t0, name, c.model_type, c.num_hidden_layers,
            [i for i in range(c.num_hidden_layers) if c.is_sparse(i)], c.num_experts, c.num_experts_per_tok,
            c.norm_topk_prob), flush=True)
        greedy = generate_json(d, prompt, ["--do-sample", "false"])
        if greedy is not None:
            worst = max(worst, check_steps(name + " greedy", m, prompt, greedy))
            check_text(name, d, prompt, greedy, m)
            if c.norm_topk_prob and c.num_experts_per_tok > 1:
                check_power(name, d, greedy, prompt)
        sampled = generate_json(d, prompt, ["--do-sample", "true", "--temperature", "1.5", "--top-k", "0",
                                            "--top-p", "1", "--seed", "5", "--num-return-sequences", "2"])
        if sampled is not None:
            worst = max(worst, check_steps(name + " sampled n=2", m, prompt, sampled, seqs=2))
        check_next(name, d, prompt, m)
        worst = max(worst, check_beams(name, d, prompt, m))
    check_dense(tmp, tok_src)
    return C.finish(t0, "; routing weights max diff %.3g (tolerance %g)" % (worst, TOL))


if __name__ == "__main__":
    sys.exit(main())
