#!/usr/bin/python3
"""logitscope's logits vs the independent numpy mixture-of-experts reference (moe_ref.py) for
Qwen3-MoE and Qwen2-MoE (issue 48).

Run by CTest as
    test_moe_ref.py --logitscope BIN --tokenizer-from DIR [--keep DIR]
Cases (each compared at every position and over the whole vocab):
  (0) the reference's own self-test (moe_ref.self_test: routing by hand, a second formulation,
      torch float64 written as transformers writes the block and the model, mutants);
  (a) models written here (hidden 64, 4 heads, 2 KV heads, the real tokenizer's vocab from the
      --tokenizer-from directory, else from `synth --shape qwen3-tiny`'s config):
        qwen3_moe: 8 experts top-2 norm true (F32 untied, 3 shards + model.safetensors.index.json);
                   4 experts top-1 (BF16 tied); 6 experts top-3 norm false (F32 tied);
                   decoder_sparse_step 2 over 3 layers (F32 untied); mlp_only_layers [0] (BF16 untied);
        qwen2_moe: 6 experts top-2, norm_topk_prob absent (= false), shared expert (F32 untied);
                   6 experts top-2 norm true, shared expert (BF16 tied);
      T = 1, 5, 20 (ids up to vocab-1; sequences whose router top-k is within 1e-3 of a tie in
      the reference are redrawn so float32 rounding cannot flip a routing choice); `next`
      without --all-positions == the last row;
  (b) GGUF: `quantize --type f32` of a qwen3_moe and a qwen2_moe model, read back with
      gguf_ref.read_gguf: llama.cpp's tensor names and shapes (blk.L.ffn_gate_inp [E, H] F32,
      ffn_{gate,up}_exps [E, moe_inter, H], ffn_down_exps [E, H, moe_inter], ffn_*_shexp,
      ffn_gate_inp_shexp [H]), the data bit-exact, the expert_* metadata keys; the same logit
      comparison on the .gguf, and == the directory's logits, and again with the file's
      {arch}.expert_weights_norm key renamed away (as llama.cpp's converter writes none: the
      architecture's default, qwen3moe renormalised, qwen2moe not); `--type q8_0`: router still F32,
      expert stacks Q8_0 within their rounding error, logits vs the reference run on the file's
      own dequantized weights (the engine rounds activations to 8 bits too, and that alone moves
      these sharp models' logits by several 1e-2 x scale, dense ones included): <= 0.1 x scale at
      positions routed >= 0.1 from a tie, median position <= 0.05 x scale, top-1 equal where the
      reference's top-2 gap exceeds twice the diff; mlp_only_layers / decoder_sparse_step 2
      refused by quantize naming the field; norm_topk_prob opposite to the GGUF architecture's
      fixed choice either refused naming the field or run to the reference's logits;
  (c) --threads 1 vs --threads 2 byte-identical .npy for one MoE model (batch invariance: not
      here; `next --prompts` batches prompts and is tested in C++);
  (d) bad input (exit 1, the message names the tensor or field): an expert tensor missing, one
      mis-shaped, the router mis-shaped, num_experts_per_tok > num_experts and 0, config
      num_experts 8 with experts 0..5 in the files, and with an extra expert 8, qwen2_moe without
      its shared expert;
  (e) power: each mutant of the reference (renormalisation flipped, shared expert dropped,
      softmax over the top-k only, top-(k+1), a dense layer run as sparse, plus a dense MLP
      skipped, expert gate/up swapped, shared gate without sigmoid) moves the logits by more
      than 10x the tolerance on at least one model.
Tolerance (as test_family_ref.py): max |engine - reference| <= 1e-4 x max(1, max |reference
logit|) over the positions compared; top-1 equal at every position (a reference near-tie within
1e-6 excepted). Every check prints its figure; exit code 1 if any failed.
"""
import json
import os
import re
import shutil
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import moe_ref  # noqa: E402
import gguf_ref  # noqa: E402
import st_write  # noqa: E402
import test_forward_ref as tfr  # noqa: E402  (Checks / run / engine_logits / check_threads)

TOL_REL = 1e-4
MARGIN_MIN = 1e-3     # smallest allowed gap between the k-th and (k+1)-th router logit
Q8_GAP = 0.1         # q8_0: positions whose router top-k is closer than this to a tie are exempt
Q8_POS = 0.1         # q8_0: max abs diff / logit scale at the other positions
Q8_MEDIAN = 0.05     # q8_0: median position's max abs diff / logit scale (dense Qwens of this sharpness: up to ~0.06 at the worst position)
C = tfr.C
MUTANT_TARGETS = ["renorm_flipped", "no_shared_expert", "softmax_topk_only", "top_k_plus_1", "dense_as_sparse"]


def template_config(tok_dir, tmp):
    """(config dict, directory with tokenizer files) giving the real vocab size and special ids."""
    if tok_dir and os.path.exists(os.path.join(tok_dir, "config.json")):
        return json.load(open(os.path.join(tok_dir, "config.json"))), tok_dir
    d = os.path.join(tmp, "template_qwen3-tiny")
    p, _ = tfr.synth(d, "f32", 1, False, tok_dir, shape="qwen3-tiny")
    if p.returncode != 0:
        raise SystemExit("synth --shape qwen3-tiny (for the vocab size) failed: %s" % p.stderr.strip()[-300:])
    return json.load(open(os.path.join(d, "config.json"))), d


def py_moe(d, tcfg, tok_src, dtype="F32", shards=1, seed=0, **kw):
    rng = np.random.default_rng(seed)
    kw.setdefault("head_dim", 32 if kw.get("family", "qwen3_moe") == "qwen3_moe" else None)
    w, shape = st_write.random_moe(rng, hidden=64, heads=4, kv=2, vocab=tcfg["vocab_size"],
                                   eps=tcfg.get("rms_norm_eps", 1e-6), theta=tcfg.get("rope_theta", 1e6), **kw)
    cfg = {k: tcfg[k] for k in ("bos_token_id", "eos_token_id", "max_position_embeddings") if k in tcfg}
    cfg.update(shape)
    cfg["torch_dtype"] = {"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[dtype]
    st_write.write_model(d, w, cfg, dtype=dtype, shards=shards)
    if tok_src:
        for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            if os.path.exists(os.path.join(tok_src, f)):
                shutil.copy(os.path.join(tok_src, f), d)
    return w, cfg


def pick_sequences(m, name):
    """T = 1, 5, 20 token sequences whose routing is at least MARGIN_MIN from a tie in every sparse
    layer (redrawn otherwise); returns [(tokens, reference logits, margin)]."""
    V = m.cfg.vocab_size
    rng = np.random.default_rng(sum(map(ord, name)))
    out = []
    for T in (1, 5, 20):
        for attempt in range(20):
            toks = [int(x) for x in rng.integers(0, V, size=T)]
            if attempt == 0:
                if T == 1:
                    toks = [V - 1]
                elif T == 5:
                    toks = [9707, 11, 1879, 0, V - 2]
                else:
                    toks[3], toks[19] = V - 1, V - 2
            r = m.logits(toks)
            margin = m.min_router_margin()
            if margin >= MARGIN_MIN:
                break
            print("      %s T=%d: router margin %.2g < %g, redrawn" % (name, T, margin, MARGIN_MIN))
        out.append((toks, r, margin))
    return out


def compare_one(tag, e, r, extra_note=""):
    """Returns (diff, scale) and records the tolerance and top-1 checks."""
    if not C.check(e.shape == r.shape, "%s: shape %s == reference %s" % (tag, e.shape, r.shape)):
        return None, None
    scale = max(1.0, float(np.abs(r).max()))
    tol = TOL_REL * scale
    diff = float(np.abs(e.astype(np.float64) - r).max())
    C.check(diff <= tol, "%s: max abs diff %.3g <= %.3g (1e-4 x max |logit| %.2f; rel %.2g) over %d positions x %d vocab%s"
            % (tag, diff, tol, scale, diff / scale, r.shape[0], r.shape[1], extra_note))
    te, tr = e.argmax(axis=1), r.argmax(axis=1)
    bad = [i for i in range(r.shape[0]) if te[i] != tr[i] and r[i, tr[i]] - r[i, te[i]] > 1e-6]
    C.check(not bad, "%s: top-1 equal at every position (mismatch at %s)" % (tag, bad))
    return diff, scale


def compare(name, model, seqs, summary, out_dir):
    worst, scale_all = 0.0, 1.0
    for i, (toks, r, margin) in enumerate(seqs):
        e = tfr.engine_logits(model, toks, out=os.path.join(out_dir, "engine_%s_%d.npy" % (os.path.basename(model), i)))
        if e is None:
            continue
        d, s = compare_one("%s T=%d" % (name, len(toks)), e, r, "; router margin %.2g" % margin)
        if d is not None:
            worst, scale_all = max(worst, d), max(scale_all, s)
    summary.append((name, worst, scale_all))
    return scale_all


# ------------------------------------------------------------------ GGUF

def gguf_expect(kv, key, typ, want, what):
    t, v = kv.get(key, (None, None))
    C.check(t == typ and v == want, "%s: %s = %r (type %s), want %r" % (what, key, v, t, want))


def check_gguf(path, cfg, w, type_name):
    """Tensor names / shapes / types / data and the MoE metadata of a quantize output."""
    tag = os.path.basename(path)
    try:
        _, kv, tensors, _ = gguf_ref.read_gguf(path)
    except Exception as ex:  # noqa: BLE001
        C.check(False, "%s: read by gguf_ref.read_gguf (%s)" % (tag, ex))
        return
    qwen2 = cfg["model_type"] == "qwen2_moe"
    arch = "qwen2moe" if qwen2 else "qwen3moe"
    U32 = 4
    C.check(kv.get("general.architecture", (None, None))[1] == arch,
            "%s: general.architecture %r == %r" % (tag, kv.get("general.architecture", (None, None))[1], arch))
    gguf_expect(kv, arch + ".expert_count", U32, cfg["num_experts"], tag)
    gguf_expect(kv, arch + ".expert_used_count", U32, cfg["num_experts_per_tok"], tag)
    gguf_expect(kv, arch + ".expert_feed_forward_length", U32, cfg["moe_intermediate_size"], tag)
    gguf_expect(kv, arch + ".block_count", U32, cfg["num_hidden_layers"], tag)
    gguf_expect(kv, arch + ".embedding_length", U32, cfg["hidden_size"], tag)
    if qwen2:
        gguf_expect(kv, arch + ".expert_shared_feed_forward_length", U32, cfg["shared_expert_intermediate_size"], tag)
    got = {t["name"]: t for t in tensors}
    E, I, H = cfg["num_experts"], cfg["moe_intermediate_size"], cfg["hidden_size"]
    want = {}   # gguf name -> (numpy shape, source float32 array, must-be kind or None)
    for L in range(cfg["num_hidden_layers"]):
        p, b = "model.layers.%d.mlp." % L, "blk.%d." % L
        want[b + "ffn_gate_inp.weight"] = ((E, H), w[p + "gate.weight"], "F32")
        for n in ("gate", "up", "down"):
            stack = np.stack([w[p + "experts.%d.%s_proj.weight" % (e, n)] for e in range(E)])
            want[b + "ffn_%s_exps.weight" % n] = ((E, H, I) if n == "down" else (E, I, H), stack, None)
        if qwen2:
            S = cfg["shared_expert_intermediate_size"]
            for n in ("gate", "up", "down"):
                want[b + "ffn_%s_shexp.weight" % n] = ((H, S) if n == "down" else (S, H), w[p + "shared_expert.%s_proj.weight" % n], None)
            want[b + "ffn_gate_inp_shexp.weight"] = ((H,), w[p + "shared_expert_gate.weight"].reshape(H), "F32")
    missing = [n for n in want if n not in got]
    C.check(not missing, "%s: llama.cpp's MoE tensor names present (missing %s)" % (tag, missing[:4]))
    stray = [n for n in got if "experts." in n or "shared_expert" in n or re.match(r"blk\.\d+\.ffn_(gate|up|down)\.weight$", n)]
    C.check(not stray, "%s: no per-expert / HF-named / dense ffn tensors (found %s)" % (tag, stray[:4]))
    bad_shape, bad_data, kinds, worst_q = [], [], {}, 0.0
    for n, (shape, src, kind) in want.items():
        t = got.get(n)
        if t is None:
            continue
        if tuple(t["shape"]) != shape:
            bad_shape.append("%s %s != %s" % (n, t["shape"], list(shape)))
            continue
        kinds.setdefault(n.split(".", 2)[2], set()).add(t["kind"])
        if kind is not None and t["kind"] != kind:
            bad_data.append("%s is %s, want %s" % (n, t["kind"], kind))
            continue
        flat = np.asarray(src, dtype=np.float32).reshape(-1)
        if t["kind"] == "F32":
            if t["data"] != flat.astype("<f4").tobytes():
                bad_data.append(n + " F32 data differs from the source")
        elif t["kind"] == "F16":
            if t["data"] != flat.astype("<f2").tobytes():
                bad_data.append(n + " F16 data differs")
        elif t["kind"] == "BF16":
            if t["data"] != st_write.to_bf16_bits(flat).astype("<u2").tobytes():
                bad_data.append(n + " BF16 data differs")
        else:
            deq, step = gguf_ref.dequant(t["kind"], t["data"], flat.size)
            err = np.abs(deq - flat)
            ratio = float((err / np.maximum(0.6 * step + 1e-6 * np.abs(flat).max(), 1e-30)).max())
            worst_q = max(worst_q, ratio)
            if ratio > 1:
                bad_data.append("%s %s error above half a step (x%.2f)" % (n, t["kind"], ratio))
    C.check(not bad_shape, "%s: shapes (numpy order = reversed ggml ne) [E, H] router, [E, moe_inter, H] gate/up, "
            "[E, H, moe_inter] down%s (bad: %s)" % (tag, ", shexp, [H] shexp gate" if qwen2 else "", bad_shape[:3]))
    C.check(not bad_data, "%s: data of the MoE tensors == the source (%s; kinds %s%s) (bad: %s)"
            % (tag, type_name, {k: sorted(v) for k, v in kinds.items()},
               "; quantized error/half-step %.2f" % worst_q if worst_q else "", bad_data[:3]))
    if type_name == "q8_0":
        C.check(kinds.get("ffn_gate_inp.weight") == {"F32"}, "%s: the router ffn_gate_inp stays F32 under q8_0 (%s)"
                % (tag, kinds.get("ffn_gate_inp.weight")))
        exps = set().union(*(kinds.get("ffn_%s_exps.weight" % n, set()) for n in ("gate", "up", "down")))
        C.check(exps == {"Q8_0"}, "%s: expert stacks quantized to Q8_0 (%s)" % (tag, sorted(exps)))


GGUF_LAYER = dict(gguf_ref.LAYER, **{"self_attn.q_norm.weight": "attn_q_norm.weight",
                                     "self_attn.k_norm.weight": "attn_k_norm.weight",
                                     "mlp.gate.weight": "ffn_gate_inp.weight",
                                     "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight",
                                     "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
                                     "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
                                     "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight"})


def gguf_reference(path, m0):
    """A MoeRef whose weights are the GGUF's values (block types dequantized here by gguf_ref),
    mapped back to the Hugging Face names of m0's model: the reference of what the file holds."""
    _, _, tensors, _ = gguf_ref.read_gguf(path)
    got = {t["name"]: t for t in tensors}
    cache = {}

    def value(name):
        if name not in cache:
            t = got[name]
            n = int(np.prod(t["shape"]))
            if t["kind"] == "F32":
                a = np.frombuffer(t["data"], dtype="<f4")
            elif t["kind"] == "F16":
                a = np.frombuffer(t["data"], dtype="<f2")
            elif t["kind"] == "BF16":
                a = (np.frombuffer(t["data"], dtype="<u2").astype(np.uint32) << 16).view("<f4")
            else:
                a = gguf_ref.dequant(t["kind"], t["data"], n)[0]
            cache[name] = a.astype(np.float64).reshape(t["shape"])
        return cache[name]

    w = {}
    for hf, src in m0.w.items():
        parts = hf.split(".")
        if hf in gguf_ref.HF_TO_GGUF:
            w[hf] = value(gguf_ref.HF_TO_GGUF[hf])
        elif parts[3:5] == ["mlp", "experts"]:   # model.layers.L.mlp.experts.E.{gate,up,down}_proj.weight
            w[hf] = value("blk.%s.ffn_%s_exps.weight" % (parts[2], parts[6].split("_")[0]))[int(parts[5])]
        else:
            w[hf] = value("blk.%s.%s" % (parts[2], GGUF_LAYER[".".join(parts[3:])]))
        w[hf] = w[hf].reshape(src.shape)
    m = moe_ref.MoeRef.__new__(moe_ref.MoeRef)
    m.__dict__.update(m0.__dict__)
    m.w, m.stats = w, {}
    m.lm_head = w["model.embed_tokens.weight"] if m.cfg.tie_word_embeddings else w["lm_head.weight"]
    return m


def compare_q8(name, path, m0, seqs, out_dir):
    """Q8_0: against the reference run on the file's own (dequantized) weights. The engine also rounds
    the activations of each Q8_0 product to 8 bits (as llama.cpp does); on these sharp models that
    alone moves a dense Qwen's logits by up to ~6e-2 x scale, and near a router tie it can flip a
    routing choice (a jump at that position). So: positions whose router choice is at least
    Q8_GAP from a tie in every sparse layer within Q8_POS x scale, the median position within
    Q8_MEDIAN x scale, top-1 equal where the reference's top-2 gap exceeds twice that position's
    diff; the distance to the original (unquantized) reference is printed."""
    try:
        mq = gguf_reference(path, m0)
    except Exception as ex:  # noqa: BLE001
        C.check(False, "%s: the GGUF's weights read back for the reference (%s: %s)" % (name, type(ex).__name__, ex))
        return
    for i, (toks, r0, _) in enumerate(seqs):
        e = tfr.engine_logits(path, toks, out=os.path.join(out_dir, "engine_q8_%d.npy" % i))
        if e is None or not C.check(e.shape == r0.shape, "%s T=%d: shape %s" % (name, len(toks), e.shape)):
            continue
        e = e.astype(np.float64)
        r = mq.logits(toks)
        gaps = mq.token_router_margins()
        scale = max(1.0, float(np.abs(r).max()))
        rel = np.abs(e - r).max(axis=1) / scale
        clear = gaps >= Q8_GAP
        worst_clear = float(rel[clear].max()) if clear.any() else 0.0
        C.check(worst_clear <= Q8_POS, "%s T=%d: vs the reference on the file's weights, max abs diff %.3g x scale %.2f over the "
                "%d positions routed >= %g from a tie (<= %g); %d near-tie positions exempt (their worst %.3g)"
                % (name, len(toks), worst_clear, scale, int(clear.sum()), Q8_GAP, Q8_POS, int((~clear).sum()),
                   float(rel[~clear].max()) if (~clear).any() else 0.0))
        C.check(float(np.median(rel)) <= Q8_MEDIAN, "%s T=%d: median position's max abs diff %.3g x scale <= %g"
                % (name, len(toks), float(np.median(rel)), Q8_MEDIAN))
        srt = -np.sort(-r, axis=1)
        te, tr = e.argmax(axis=1), r.argmax(axis=1)
        dpos = np.abs(e - r).max(axis=1)
        bad = [j for j in range(len(toks)) if te[j] != tr[j] and srt[j, 0] - srt[j, 1] > 2 * dpos[j]]
        C.check(not bad, "%s T=%d: top-1 equal where the reference's top-2 gap > 2 x the position's diff (mismatch at %s; "
                "%d near-ties exempt)" % (name, len(toks), bad, sum(1 for j in range(len(toks)) if srt[j, 0] - srt[j, 1] <= 2 * dpos[j])))
        corr = float(np.corrcoef(e.ravel(), r0.ravel())[0, 1]) if e.size > 1 else 1.0
        print("      INFO %s T=%d: vs the unquantized reference max abs diff %.3g (%.3g x scale), r = %.6f; the file's weights "
              "alone move the reference by %.3g" % (name, len(toks), float(np.abs(e - r0).max()),
                                                   float(np.abs(e - r0).max()) / max(1.0, float(np.abs(r0).max())), corr,
                                                   float(np.abs(r - r0).max())))


def llama_cpp_like(name, path, seqs, out_dir, summary):
    """llama.cpp's converter writes no {arch}.expert_weights_norm (its qwen3moe graph always
    renormalises the top-k weights, qwen2moe never does): the same file with that key renamed
    (same length, so no offset moves) must give the same logits, the architecture's default."""
    blob = open(path, "rb").read()
    arch = "qwen2moe" if "qwen2moe" in blob[:4096].decode("latin-1") else "qwen3moe"
    key = ("%s.expert_weights_norm" % arch).encode()
    if blob.count(key) != 1:
        print("      NOTE %s: no %s key (nothing to rename)" % (os.path.basename(path), key.decode()))
        return
    p2 = os.path.join(out_dir, os.path.basename(path).replace(".gguf", ".nonormkey.gguf"))
    with open(p2, "wb") as f:
        f.write(blob.replace(key, ("%s.zzzzzz_weights_norm" % arch).encode()))
    compare(name + " GGUF without %s (default)" % key.decode(), p2, seqs[-1:], summary, out_dir)


def quantize(src, out, t):
    return tfr.run(["quantize", "--model", src, "--type", t, "--out", out], timeout=300)


# ------------------------------------------------------------------ bad input

def expect_refused(tag, d, needle, regex=False):
    p, _ = tfr.run(["next", "--model", d, "--tokens", "1,2,3"])
    msg = p.stderr.strip()
    found = re.search(needle, msg) is not None if regex else needle in msg
    C.check(p.returncode == 1 and found, "bad input, %s: exit %d (want 1), message names %r: %s"
            % (tag, p.returncode, needle, msg[-300:]))


def bad_inputs(tmp):
    base_w, base_cfg = st_write.random_moe(np.random.default_rng(77), family="qwen3_moe", hidden=64, heads=4, kv=2,
                                           head_dim=32, num_experts=8, top_k=2, moe_inter=32, vocab=300)
    base_cfg["max_position_embeddings"] = 128

    def variant(tag, edit_w=None, edit_cfg=None, w=None, cfg=None):
        ww, cc = dict(w or base_w), json.loads(json.dumps(cfg or base_cfg))
        if edit_w:
            edit_w(ww)
        if edit_cfg:
            edit_cfg(cc)
        d = os.path.join(tmp, "bad_" + tag)
        st_write.write_model(d, ww, cc)
        return d

    ok = variant("none")
    p, _ = tfr.run(["next", "--model", ok, "--tokens", "1,2,3"])
    if not C.check(p.returncode == 0, "bad input: the unedited base model (qwen3_moe, vocab 300, no tokenizer) runs "
                   "(exit %d %s)" % (p.returncode, p.stderr.strip()[-200:])):
        return
    name = "model.layers.1.mlp.experts.3.up_proj.weight"
    expect_refused("expert tensor missing", variant("missing", edit_w=lambda w: w.pop(name)), name)
    name2 = "model.layers.0.mlp.experts.2.down_proj.weight"

    def misshape(w):
        w[name2] = w[name2][:, :24]
    expect_refused("expert tensor [64, 24] instead of [64, 32]", variant("misshaped", edit_w=misshape), name2)

    def router(w):
        w["model.layers.1.mlp.gate.weight"] = w["model.layers.1.mlp.gate.weight"][:7]
    expect_refused("router [7, 64] with num_experts 8", variant("router", edit_w=router), "model.layers.1.mlp.gate.weight")
    expect_refused("num_experts_per_tok 9 > num_experts 8",
                   variant("topk9", edit_cfg=lambda c: c.update(num_experts_per_tok=9)), "num_experts_per_tok")
    expect_refused("num_experts_per_tok 0", variant("topk0", edit_cfg=lambda c: c.update(num_experts_per_tok=0)),
                   "num_experts_per_tok")

    def only6(w):
        for k in [k for k in w if re.search(r"mlp\.experts\.[67]\.", k)]:
            del w[k]
    expect_refused("config num_experts 8, files hold experts 0..5", variant("six", edit_w=only6),
                   r"mlp\.experts\.[67]\.(gate|up|down)_proj\.weight", regex=True)

    def extra(w):
        rng = np.random.default_rng(5)
        for n, shape in (("gate", (32, 64)), ("up", (32, 64)), ("down", (64, 32))):
            w["model.layers.0.mlp.experts.8.%s_proj.weight" % n] = rng.standard_normal(shape).astype(np.float32)
    expect_refused("config num_experts 8, files also hold an expert 8", variant("nine", edit_w=extra),
                   r"mlp\.experts\.8\.", regex=True)
    w2, c2 = st_write.random_moe(np.random.default_rng(78), family="qwen2_moe", hidden=64, heads=4, kv=2, num_experts=6,
                                 top_k=2, moe_inter=32, vocab=300, shared_expert=False)
    c2["max_position_embeddings"] = 128
    expect_refused("qwen2_moe without its shared expert tensors", variant("noshared", w=w2, cfg=c2), "shared_expert")


# ------------------------------------------------------------------ main

def main():
    a, tmp = tfr.engine_test_setup("ls_moe_")
    t0 = time.time()

    print("---- (0) the reference's self-test")
    moe_ref.self_test(C.check)

    tcfg, tok_src = template_config(a.tokenizer_from, tmp)
    print("      vocab %d from %s" % (tcfg["vocab_size"], tok_src))
    q3, q2 = "qwen3_moe", "qwen2_moe"
    specs = [  # name, dtype, shards, seed, random_moe options
        ("q3_e8k2_norm_f32_untied_3shards", "F32", 3, 61, dict(family=q3, num_experts=8, top_k=2, norm_topk_prob=True,
                                                                tied=False, moe_inter=32)),
        ("q3_e4k1_bf16_tied", "BF16", 1, 62, dict(family=q3, num_experts=4, top_k=1, norm_topk_prob=True, tied=True,
                                                  moe_inter=48)),
        ("q3_e6k3_nonorm_f32_tied", "F32", 1, 63, dict(family=q3, num_experts=6, top_k=3, norm_topk_prob=False, tied=True,
                                                       moe_inter=48)),
        ("q3_step2_3layers_f32_untied", "F32", 1, 64, dict(family=q3, num_experts=8, top_k=2, norm_topk_prob=True,
                                                           tied=False, layers=3, decoder_sparse_step=2, moe_inter=32)),
        ("q3_mlponly0_bf16_untied", "BF16", 1, 65, dict(family=q3, num_experts=8, top_k=2, norm_topk_prob=True, tied=False,
                                                        mlp_only_layers=[0], moe_inter=48)),
        ("q2_e6k2_nonorm_shared_f32_untied", "F32", 1, 66, dict(family=q2, num_experts=6, top_k=2, norm_topk_prob=None,
                                                                tied=False, moe_inter=32, shared_inter=64)),
        ("q2_e6k2_norm_shared_bf16_tied", "BF16", 1, 67, dict(family=q2, num_experts=6, top_k=2, norm_topk_prob=True,
                                                              tied=True, moe_inter=48, shared_inter=96)),
    ]
    models, weights, refs, seqs, scales, summary = {}, {}, {}, {}, {}, []
    for name, dtype, shards, seed, kw in specs:
        d = os.path.join(tmp, name)
        weights[name] = py_moe(d, tcfg, tok_src, dtype=dtype, shards=shards, seed=seed, **kw)
        models[name] = d

    print("---- (%.1fs) (a) Python-written MoE models vs the reference" % (time.time() - t0))
    for name, d in models.items():
        m = moe_ref.MoeRef(d)
        c = m.cfg
        refs[name] = m
        print("---- (%.1fs) %s: %s, %d layers (sparse %s), %d experts top-%d norm_topk_prob %s, moe_inter %d%s, vocab %d, tied %s"
              % (time.time() - t0, name, c.model_type, c.num_hidden_layers,
                 [i for i in range(c.num_hidden_layers) if c.is_sparse(i)], c.num_experts, c.num_experts_per_tok,
                 c.norm_topk_prob, c.moe_intermediate_size,
                 ", shared %d" % c.shared_expert_intermediate_size if c.shared_expert else "", c.vocab_size,
                 c.tie_word_embeddings), flush=True)
        seqs[name] = pick_sequences(m, name)
        m.logits(seqs[name][-1][0])
        chosen = m.stats["chosen"]
        sets = [len({tuple(sorted(r)) for r in ch.tolist()}) for ch in chosen]
        C.check(min(sets) > 1, "%s: routing differs between the 20 tokens (%s distinct expert sets per sparse layer; "
                "%d of %d experts used)" % (name, sets, len(np.unique(np.concatenate(chosen))), c.num_experts))
        scales[name] = compare(name, d, seqs[name], summary, tmp)
    # without --all-positions: [1, vocab], the last row
    name = specs[0][0]
    toks, r, _ = seqs[name][-1]
    e1 = tfr.engine_logits(models[name], toks, all_positions=False, out=os.path.join(tmp, "last.npy"))
    if e1 is not None:
        compare_one("%s T=%d without --all-positions (last row)" % (name, len(toks)), e1, r[-1:])

    # ---- (b) GGUF
    print("---- (%.1fs) (b) GGUF: quantize --type f32 / q8_0" % (time.time() - t0))
    for name in ("q3_e8k2_norm_f32_untied_3shards", "q2_e6k2_nonorm_shared_f32_untied"):
        w, cfg = weights[name]
        for t in ("f32", "q8_0"):
            out = os.path.join(tmp, "%s.%s.gguf" % (name, t))
            p, dt = quantize(models[name], out, t)
            if not C.check(p.returncode == 0, "quantize %s --type %s exits 0 (%.1fs) %s" % (name, t, dt, p.stderr.strip()[-300:])):
                continue
            check_gguf(out, cfg, w, t)
            if t == "f32":
                compare(name + ".f32.gguf", out, seqs[name], summary, tmp)
                llama_cpp_like(name, out, seqs[name], tmp, summary)
                toks = seqs[name][-1][0]
                a1 = tfr.engine_logits(models[name], toks, out=os.path.join(tmp, "dir.npy"))
                a2 = tfr.engine_logits(out, toks, out=os.path.join(tmp, "gguf.npy"))
                if a1 is not None and a2 is not None:
                    C.check(a1.shape == a2.shape and np.array_equal(a1, a2), "%s: F32 GGUF logits == directory logits bit for bit "
                            "(max diff %.3g)" % (name, float(np.abs(a1 - a2).max()) if a1.shape == a2.shape else float("nan")))
            else:
                compare_q8(name + ".q8_0.gguf", out, refs[name], seqs[name], tmp)
    for name, field in (("q3_step2_3layers_f32_untied", "decoder_sparse_step"), ("q3_mlponly0_bf16_untied", "mlp_only_layers")):
        out = os.path.join(tmp, name + ".gguf")
        p, _ = quantize(models[name], out, "f32")
        C.check(p.returncode != 0 and field in p.stderr and not os.path.exists(out),
                "quantize refuses %s (%s not representable in GGUF): exit %d (non-zero), message names it, no file: %s"
                % (name, field, p.returncode, p.stderr.strip()[-300:]))
    # norm_topk_prob opposite to llama.cpp's fixed choice (qwen3moe renormalises, qwen2moe does not)
    for name in ("q3_e6k3_nonorm_f32_tied", "q2_e6k2_norm_shared_bf16_tied"):
        out = os.path.join(tmp, name + ".gguf")
        p, _ = quantize(models[name], out, "f32")
        if p.returncode != 0:
            C.check("norm_topk_prob" in p.stderr, "quantize %s (norm_topk_prob %s) refused naming norm_topk_prob: %s"
                    % (name, refs[name].cfg.norm_topk_prob, p.stderr.strip()[-300:]))
        else:
            print("      quantize %s (norm_topk_prob %s) accepted: its GGUF must give the reference's logits"
                  % (name, refs[name].cfg.norm_topk_prob))
            compare(name + ".gguf", out, seqs[name], summary, tmp)

    # ---- (c) threads
    print("---- (%.1fs) (c) --threads 1 vs 2; batch invariance left to the C++ tests (next --prompts batches)"
          % (time.time() - t0))
    for name in ("q3_e8k2_norm_f32_untied_3shards", "q2_e6k2_nonorm_shared_f32_untied"):
        tfr.check_threads(models[name], seqs[name][-1][0])

    # ---- (d) bad input
    print("---- (%.1fs) (d) bad input" % (time.time() - t0))
    bad_inputs(tmp)

    # ---- (e) power
    print("---- (%.1fs) (e) power of the comparison: reference with one injected bug vs the correct reference" % (time.time() - t0))
    best = {}
    for name, m in refs.items():
        toks = seqs[name][-1][0]
        V = m.cfg.vocab_size
        rows = np.unique(np.concatenate([np.arange(min(V, 2048)), np.random.default_rng(0).integers(0, V, 4096), [V - 1]]))
        good = m.logits(toks, rows)
        tol = TOL_REL * scales[name]
        for mu in moe_ref.MUTANTS:
            mm = moe_ref.MoeRef.__new__(moe_ref.MoeRef)
            mm.__dict__.update(m.__dict__)
            mm.mutant, mm.stats = mu, {}
            delta = float(np.abs(mm.logits(toks, rows) - good).max())
            print("      %-34s %-24s moves logits by %-9.3g (%.3g x tolerance %.3g)" % (name, mu, delta, delta / tol, tol))
            if delta / tol > best.get(mu, (0, None))[0]:
                best[mu] = (delta / tol, name)
    for mu in moe_ref.MUTANTS:
        ratio, where = best.get(mu, (0, None))
        C.check(ratio > 10, "bug '%s'%s moves the logits by %.3g x the tolerance (> 10) on %s"
                % (mu, "" if mu in MUTANT_TARGETS else " (extra)", ratio, where))

    print("---- summary: max |engine - reference| over all compared positions x vocab; scale = max |reference logit|;"
          " passes at rel <= %g" % TOL_REL)
    for name, w_, sc in summary:
        print("      %-44s abs %-9.3g scale %-7.2f rel %.3g" % (name, w_, sc, w_ / sc))
    return C.finish(t0)


if __name__ == "__main__":
    sys.exit(main())
