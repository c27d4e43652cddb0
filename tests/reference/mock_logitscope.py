#!/usr/bin/python3
"""A stand-in for the logitscope binary built on the numpy reference, for checking that
test_forward_ref.py / test_family_ref.py fail when the engine is wrong:
    MOCK_BUG=rope|threads|entropy|nof16 test_forward_ref.py --logitscope mock_logitscope.py ...
    MOCK_BUG=qknorm|yarn|yarnfactor test_family_ref.py --logitscope mock_logitscope.py ...
(qknorm: Qwen3 without q/k norm; yarn: rope_scaling ignored; yarnfactor: YaRN without its
attention factor.)  Shapes: tiny, qwen3-tiny, qwen3-0.6b.  Not used by CTest."""
import sys, os, json, shutil, argparse, math  # noqa: E401
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np, qwen2_ref as ref, st_write
bug = os.environ.get("MOCK_BUG", "")
cmd = sys.argv[1]
ap = argparse.ArgumentParser()
if cmd == "synth":
    ap.add_argument("--shape"); ap.add_argument("--dtype"); ap.add_argument("--seed", type=int)
    ap.add_argument("--untied", action="store_true"); ap.add_argument("--out"); ap.add_argument("--tokenizer-from")
    a = ap.parse_args(sys.argv[2:])
    if a.dtype == "f16" and bug == "nof16":
        sys.exit("f16 unsupported")
    rng = np.random.default_rng(a.seed)
    if a.shape == "qwen3-tiny":
        w, cfg = st_write.random_qwen3(rng, hidden=64, inter=128, heads=4, kv=2, head_dim=32, vocab=151936, tied=not a.untied, scale=0.02)
    elif a.shape == "qwen3-0.6b":
        w, cfg = st_write.random_qwen3(rng, hidden=1024, inter=3072, layers=28, heads=16, kv=8, head_dim=128, vocab=151936, tied=not a.untied, scale=0.02)
    elif a.shape in (None, "tiny"):
        w, cfg = st_write.random_model(rng, hidden=64, inter=128, heads=4, kv=2, vocab=151936, tied=not a.untied, scale=0.02)
    else:
        sys.exit("--shape %s unknown" % a.shape)
    cfg.update(bos_token_id=151643, eos_token_id=151645, max_position_embeddings=32768)
    st_write.write_model(a.out, w, cfg, dtype=a.dtype.upper())
    shutil.copy(os.path.join(a.tokenizer_from, "tokenizer.json"), a.out)
    shutil.copy(os.path.join(a.tokenizer_from, "tokenizer_config.json"), a.out)
else:
    ap.add_argument("--model"); ap.add_argument("--tokens"); ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--temperature", type=float, default=1.0); ap.add_argument("--json", action="store_true")
    ap.add_argument("--dump-logits"); ap.add_argument("--all-positions", action="store_true"); ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args(sys.argv[2:])
    toks = [int(t) for t in a.tokens.split(",")]
    if bug == "rope":
        ref.apply_rope = lambda x, c, s: x
    try:
        m = ref.Qwen2Ref(a.model)
    except ValueError as ex:
        sys.exit("logitscope: error: %s" % ex)
    if bug == "qknorm":
        m.cfg.qk_norm = False
    if bug == "yarn":
        m.cfg.rope_scaling = None
    if bug == "yarnfactor":
        rp = ref.rope_parameters
        ref.rope_parameters = lambda c: (rp(c)[0], 1.0)
    lg = m.logits(toks).astype(np.float32)
    if bug == "threads" and a.threads == 2:
        lg[0, 0] = np.nextafter(lg[0, 0], np.float32(1))
    if a.dump_logits:
        np.save(a.dump_logits, lg if a.all_positions else lg[-1:])
    z = lg[-1].astype(np.float64); zt = z / a.temperature
    lp = zt - (zt.max() + math.log(np.exp(zt - zt.max()).sum())); p = np.exp(lp)
    ent = float(-(p * lp).sum())
    if bug == "entropy": ent *= 1.0001
    order = np.argsort(-z, kind="stable")[:a.top]
    if a.json:
        print(json.dumps({"n_input_tokens": len(toks), "logits_shape": [1, len(z)], "min_logit": float(z.min()), "max_logit": float(z.max()),
                          "entropy_nats": ent, "entropy_bits": ent / math.log(2), "temperature": a.temperature,
                          "top": [{"rank": k + 1, "id": int(i), "text": "", "logit": float(z[i]), "prob": float(p[i]), "logprob": float(lp[i])} for k, i in enumerate(order)]}))
