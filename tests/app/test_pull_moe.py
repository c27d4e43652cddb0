#!/usr/bin/env python3
"""`logitscope pull` of Qwen's mixture-of-experts repositories as they are laid out on the Hub
(issue 48), against the loopback fake Hub (tests/hub/fake_hub.py; nothing leaves 127.0.0.1).

The repositories are tiny (`synth --shape qwen3-moe-tiny|qwen2-moe-tiny --untied`) but carry
the real repos' file names and layout:
  Qwen/Qwen3-30B-A3B       config.json (qwen3_moe), generation_config.json, tokenizer.json,
                           tokenizer_config.json, merges.txt, vocab.json, LICENSE, README.md,
                           .gitattributes, model-0000K-of-0000N.safetensors shards cut where the
                           state dict's order and a size limit put them (a layer's experts over
                           three shards, one expert's gate and up in two, a router apart from its
                           experts; tensors in a shard in name order, "experts.10" before
                           "experts.2", as safetensors writes them) and model.safetensors.index.json
  Qwen/Qwen3-30B-A3B-GGUF  Qwen3-30B-A3B-{Q4_K_M,Q5_0,Q5_K_M,Q6_K,Q8_0}.gguf (`quantize`), LICENSE,
                           README.md, .gitattributes
  Qwen/Qwen1.5-MoE-A2.7B   as the first, qwen2_moe with its shared expert
Checked: the cache layout byte for byte (tests/app/test_pull.py's expect_layout); next's logits
(--dump-logits, all positions) of the pulled id byte-identical to the synth directory's and to the
local re-sharded directory's; a quant tag picks its one GGUF (q5_0 vs q5_k_m, case-insensitive)
whose logits equal the local file's; offline use of the cache; a shard left out by --exclude is
named by `next`."""
import argparse
import atexit
import json
import os
import shutil
import struct
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_pull as tp  # noqa: E402  (run, ok, expect_layout, dump_logits, same_logits)
from test_pull import expect_layout, dump_logits, ok, read_dir, run, same_logits  # noqa: E402
import fake_hub  # noqa: E402  (on sys.path through test_pull)

LICENSE = b"""
                                 Apache License
                           Version 2.0, January 2004
                        http://www.apache.org/licenses/

   TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION
   (a tiny stand-in for the real file)
"""
GITATTRIBUTES = b"""*.7z filter=lfs diff=lfs merge=lfs -text
*.bin filter=lfs diff=lfs merge=lfs -text
*.gguf filter=lfs diff=lfs merge=lfs -text
*.safetensors filter=lfs diff=lfs merge=lfs -text
tokenizer.json filter=lfs diff=lfs merge=lfs -text
"""


def readme(name, base=None):
    lines = ["---", "library_name: transformers", "license: apache-2.0",
             "pipeline_tag: text-generation"]
    if base:
        lines += ["base_model: " + base]
    return ("\n".join(lines + ["---", "", "# " + name, "",
                               "A tiny random-weight stand-in for the fake Hub's tests.", ""])).encode()


def read_safetensors(path):
    """{name: (dtype, shape, raw bytes)} in the file's data order, and its __metadata__."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", None)
    body = data[8 + n:]
    items = sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0])
    return {k: (v["dtype"], v["shape"], body[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in items}, meta


def safetensors_bytes(tensors):
    """A safetensors file as the safetensors library writes it: tensors in name order (all of
    one dtype here), {"format": "pt"} metadata, the header padded with spaces to 8 bytes."""
    header = {"__metadata__": {"format": "pt"}}
    off, body = 0, []
    for name in sorted(tensors):
        dtype, shape, raw = tensors[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        body.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(body)


def reshard(model_dir, starts):
    """model.safetensors cut into shards in the state dict's order, a new shard starting at each
    name of `starts` (as save_pretrained cuts by size); returns the files and the weight_map."""
    tensors, _ = read_safetensors(os.path.join(model_dir, "model.safetensors"))
    order = list(tensors)  # synth writes the state dict's order
    missing = [s for s in starts if s not in tensors]
    assert not missing, "cut points not in the model: %s" % missing
    cuts = sorted(order.index(s) for s in starts)
    bounds = [0] + cuts + [len(order)]
    n = len(bounds) - 1
    files, weight_map = {}, {}
    for k in range(n):
        fn = "model-%05d-of-%05d.safetensors" % (k + 1, n)
        part = {name: tensors[name] for name in order[bounds[k]:bounds[k + 1]]}
        files[fn] = safetensors_bytes(part)
        weight_map.update({name: fn for name in part})
    index = {"metadata": {"total_size": sum(len(t[2]) for t in tensors.values())},
             "weight_map": dict(sorted(weight_map.items()))}
    files["model.safetensors.index.json"] = (json.dumps(index, indent=2, sort_keys=True) + "\n").encode()
    return files, weight_map


def shards_of(weight_map, prefix):
    return sorted({f for name, f in weight_map.items() if name.startswith(prefix)})


def hf_repo_files(synth_dir, starts, transformers_version, name, base=None):
    """The real repository's file set, built from a synth directory."""
    files = {p: d for p, d in read_dir(synth_dir).items() if p != "model.safetensors"}
    shards, weight_map = reshard(synth_dir, starts)
    files.update(shards)
    cfg = json.loads(files["config.json"])
    cfg["transformers_version"] = transformers_version
    files["config.json"] = (json.dumps(cfg, indent=2, sort_keys=True) + "\n").encode()
    tok = json.loads(files["tokenizer.json"])
    files["vocab.json"] = json.dumps(tok["model"]["vocab"], ensure_ascii=False,
                                     separators=(",", ":")).encode()
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    files["merges.txt"] = ("#version: 0.2\n" + "\n".join(merges) + "\n").encode()
    files["LICENSE"] = LICENSE
    files["README.md"] = readme(name, base)
    files[".gitattributes"] = GITATTRIBUTES
    return files, weight_map


def write_dir(d, files):
    for p, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(d, p)), exist_ok=True)
        with open(os.path.join(d, p), "wb") as f:
            f.write(data)


def check_hf_repo(repo_id, synth_dir, files, tmp, cache):
    """pull REPO: the layout byte for byte; next from the cache == the synth directory's logits."""
    commit = tp.HUB.add_commit(repo_id, files)
    tag = repo_id.split("/")[1]
    local = os.path.join(tmp, tag + "-local")
    write_dir(local, files)
    want, rw = dump_logits(synth_dir, tmp, tag + "-synth")
    ok(want is not None, repo_id + ": next on the synth directory", rw.stderr)
    got_local, rl = dump_logits(local, tmp, tag + "-resharded")
    ok(same_logits(want, got_local), repo_id + ": the re-sharded directory's logits == the synth's",
       rl.stderr)

    tp.HUB.clear()
    r = run(["pull", repo_id])
    snap = os.path.join(cache, "models--" + repo_id.replace("/", "--"), "snapshots", commit)
    ok(r.returncode == 0 and r.stdout.strip() == snap, "pull %s: exit 0, the snapshot path" % repo_id,
       r.stdout + r.stderr)
    n_shards = sum(p.endswith(".safetensors") for p in files)
    ok(len(tp.HUB.requests("store")) == sum(fake_hub.is_lfs(p) for p in files),
       "pull %s: the %d shards and tokenizer.json from the LFS store" % (repo_id, n_shards),
       [x["path"] for x in tp.HUB.requests("store")])
    expect_layout(cache, repo_id, commit, files, what=repo_id + ": ")
    got, rr = dump_logits(repo_id, tmp, tag + "-id")
    ok(same_logits(want, got),
       "next --model %s: logits byte-identical to the synth directory's" % repo_id,
       rr.stderr if got is None else "max diff %g" % float(np.abs(want - got).max()))
    if want is not None and got is not None:
        ok(open(os.path.join(tmp, tag + "-synth.npy"), "rb").read()
           == open(os.path.join(tmp, tag + "-id.npy"), "rb").read(),
           repo_id + ": the two .npy files are byte-identical")

    tp.HUB.clear()
    got_off, ro = dump_logits(repo_id, tmp, tag + "-offline", env={"HF_HUB_OFFLINE": "1"})
    ok(same_logits(want, got_off) and not tp.HUB.requests(),
       repo_id + ": HF_HUB_OFFLINE=1, the same logits, no request", ro.stderr)
    return commit, want


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    tp.BIN = os.path.abspath(a.logitscope)
    tmp = tempfile.mkdtemp(prefix="ls_pull_moe_")
    atexit.register(shutil.rmtree, tmp, True)
    tp.HUB = fake_hub.Hub()
    cache = os.path.join(tmp, "cache")
    tp.BASE_ENV = {k: v for k, v in os.environ.items()
                   if not k.startswith("HF_") and k not in ("XDG_CACHE_HOME",)}
    tp.BASE_ENV.update({"HF_ENDPOINT": tp.HUB.endpoint, "HF_HUB_CACHE": cache, "HOME": tmp,
                        "HF_HUB_DOWNLOAD_TIMEOUT": "5", "HF_HUB_ETAG_TIMEOUT": "5"})

    synth = {}
    for shape in ("qwen3-moe-tiny", "qwen2-moe-tiny"):
        synth[shape] = os.path.join(tmp, shape)
        r = run(["synth", "--shape", shape, "--dtype", "bf16", "--untied", "--seed", "7",
                 "--out", synth[shape], "--tokenizer-from", a.tokenizer_from])
        assert r.returncode == 0, r.stderr

    # 1. Qwen/Qwen3-30B-A3B: 7 shards; layer 0's experts over three of them (expert 3's gate_proj
    # and up_proj apart), layer 1's router apart from its experts, lm_head alone.
    L0, L1 = "model.layers.0.mlp.", "model.layers.1.mlp."
    files, wm = hf_repo_files(
        synth["qwen3-moe-tiny"],
        ["model.layers.0.input_layernorm.weight", L0 + "experts.3.up_proj.weight",
         L0 + "experts.6.gate_proj.weight", L1 + "experts.0.gate_proj.weight",
         L1 + "experts.5.down_proj.weight", "lm_head.weight"],
        "4.51.0", "Qwen3-30B-A3B", base="Qwen/Qwen3-30B-A3B-Base")
    assert len(shards_of(wm, L0 + "experts.")) == 3 and \
        shards_of(wm, L0 + "experts.3.gate_proj") != shards_of(wm, L0 + "experts.3.up_proj") and \
        shards_of(wm, L1 + "gate.") != shards_of(wm, L1 + "experts.0."), "the fixture's cut"
    q3_commit, q3_want = check_hf_repo("Qwen/Qwen3-30B-A3B", synth["qwen3-moe-tiny"], files, tmp,
                                       cache)
    tp.HUB.clear()
    r = run(["pull", "Qwen/Qwen3-30B-A3B"])
    ok(r.returncode == 0 and not tp.HUB.requests("store") and not tp.HUB.requests("hub", "HEAD"),
       "Qwen/Qwen3-30B-A3B: a second pull fetches nothing", r.stderr)
    # A shard left out (--exclude): next names the missing file rather than computing anything.
    c2 = os.path.join(tmp, "cache-partial")
    r = run(["pull", "Qwen/Qwen3-30B-A3B", "--exclude", "model-00003-of-00007.safetensors"],
            env={"HF_HUB_CACHE": c2})
    rr = run(["next", "--model", "Qwen/Qwen3-30B-A3B", "--tokens", "1,2"], env={"HF_HUB_CACHE": c2})
    ok(r.returncode == 0 and rr.returncode == 1 and "'model-00003-of-00007.safetensors' is listed in "
       "model.safetensors.index.json" in rr.stderr and "1 of 7 shards missing" in rr.stderr,
       "a shard excluded from the pull: next exits 1 naming it", rr.stderr)

    # 2. Qwen/Qwen3-30B-A3B-GGUF: the real repo's file names, quantized from the same model.
    ggufs, gguf_files = {}, {}
    for t in ("Q4_K_M", "Q5_0", "Q5_K_M", "Q6_K", "Q8_0"):
        name = "Qwen3-30B-A3B-%s.gguf" % t
        ggufs[t] = os.path.join(tmp, name)
        r = run(["quantize", "--model", synth["qwen3-moe-tiny"], "--type", t.lower(),
                 "--out", ggufs[t], "--name", "Qwen3-30B-A3B"])
        assert r.returncode == 0, r.stderr
        gguf_files[name] = open(ggufs[t], "rb").read()
    gguf_files["LICENSE"] = LICENSE
    gguf_files["README.md"] = readme("Qwen3-30B-A3B-GGUF", base="Qwen/Qwen3-30B-A3B")
    gguf_files[".gitattributes"] = GITATTRIBUTES
    g = "Qwen/Qwen3-30B-A3B-GGUF"
    gcommit = tp.HUB.add_commit(g, gguf_files)
    gsnap = os.path.join(cache, "models--Qwen--Qwen3-30B-A3B-GGUF", "snapshots", gcommit)
    tp.HUB.clear()
    r = run(["pull", g + ":q8_0"])
    ok(r.returncode == 0 and r.stdout.strip() == os.path.join(gsnap, "Qwen3-30B-A3B-Q8_0.gguf")
       and sorted(os.listdir(gsnap)) == ["Qwen3-30B-A3B-Q8_0.gguf"]
       and len(tp.HUB.requests("store")) == 1,
       "pull %s:q8_0 fetches Qwen3-30B-A3B-Q8_0.gguf alone" % g, r.stdout + r.stderr)
    expect_layout(cache, g, gcommit, {"Qwen3-30B-A3B-Q8_0.gguf": gguf_files["Qwen3-30B-A3B-Q8_0.gguf"]},
                  what=g + ":q8_0: ")
    want_q8, rw = dump_logits(ggufs["Q8_0"], tmp, "gguf-q8-file")
    got_q8, rr = dump_logits(g + ":q8_0", tmp, "gguf-q8-id")
    ok(want_q8 is not None and same_logits(want_q8, got_q8),
       "next --model %s:q8_0: logits == the local Q8_0 file's" % g, rw.stderr + rr.stderr)
    # Q8_0 of a BF16 model is close to it but not equal (a sanity check on what was compared).
    ok(want_q8 is not None and q3_want is not None and 0 < float(np.abs(want_q8 - q3_want).max()) < 1,
       "the Q8_0 logits are near the BF16 ones, not equal",
       None if want_q8 is None or q3_want is None else float(np.abs(want_q8 - q3_want).max()))
    # q5_0 vs q5_k_m: each tag its own file; upper case and --pull on a model command.
    r = run(["pull", g + ":Q5_K_M"])
    ok(r.returncode == 0 and r.stdout.strip().endswith("Qwen3-30B-A3B-Q5_K_M.gguf")
       and not os.path.lexists(os.path.join(gsnap, "Qwen3-30B-A3B-Q5_0.gguf")),
       "pull :Q5_K_M takes the Q5_K_M file, not Q5_0", r.stdout + r.stderr)
    want_q4, _ = dump_logits(ggufs["Q4_K_M"], tmp, "gguf-q4-file")
    got_q4, rr = dump_logits(g + ":q4_k_m", tmp, "gguf-q4-id", extra=["--pull"])
    ok(want_q4 is not None and same_logits(want_q4, got_q4),
       "next --model %s:q4_k_m --pull: logits == the local Q4_K_M file's" % g, rr.stderr)
    r = run(["pull", g + ":q4_0"])
    ok(r.returncode == 1 and "q4_k_m, q5_0, q5_k_m, q6_k, q8_0" in r.stderr,
       "a tag the repo lacks lists the real repo's five", r.stderr)
    r = run(["next", "--model", g, "--tokens", "1"])
    ok(r.returncode == 1 and ":q" in r.stderr and "q4_k_m, q5_k_m, q8_0" in r.stderr,
       "the GGUF repo without a tag: asks for one among those pulled", r.stderr)
    # --pull without a tag on a repo of five GGUF models, into an empty cache: refused before
    # any download (the real repo is ~120 GB), naming the tags.
    tp.HUB.clear()
    empty = os.path.join(tmp, "c-empty")
    r = run(["next", "--model", g, "--tokens", "1", "--pull"], env={"HF_HUB_CACHE": empty})
    ok(r.returncode == 1 and "5 GGUF models" in r.stderr and "q4_k_m, q5_0, q5_k_m, q6_k, q8_0" in r.stderr
       and "nothing was downloaded" in r.stderr and len(tp.HUB.requests("store")) == 0
       and not os.path.exists(os.path.join(empty, "models--Qwen--Qwen3-30B-A3B-GGUF", "blobs")),
       "next --model <GGUF repo> --pull without a tag: refused before any download", r.stderr)

    # 3. Qwen/Qwen1.5-MoE-A2.7B (qwen2_moe): 5 shards; layer 0's experts over two, its shared
    # expert's projections apart, the shared expert's gate with layer 1.
    files2, wm2 = hf_repo_files(
        synth["qwen2-moe-tiny"],
        [L0 + "experts.2.up_proj.weight", L0 + "shared_expert.down_proj.weight",
         L0 + "shared_expert_gate.weight", L1 + "experts.4.gate_proj.weight"],
        "4.40.0.dev0", "Qwen1.5-MoE-A2.7B")
    assert len(shards_of(wm2, L0 + "experts.")) == 2 and \
        len(shards_of(wm2, L0 + "shared_expert.")) == 2, "the fixture's cut"
    check_hf_repo("Qwen/Qwen1.5-MoE-A2.7B", synth["qwen2-moe-tiny"], files2, tmp, cache)

    r = run(["models"])
    rows = {l.split()[0]: l for l in r.stdout.splitlines() if l.startswith("Qwen/")}
    ok(r.returncode == 0 and q3_commit[:12] in rows.get("Qwen/Qwen3-30B-A3B", "")
       and "safetensors" in rows.get("Qwen/Qwen1.5-MoE-A2.7B", "")
       and "q4_k_m, q5_k_m, q8_0" in rows.get("Qwen/Qwen3-30B-A3B-GGUF", ""),
       "models lists the three repos", r.stdout + r.stderr)

    tp.HUB.stop()
    if tp.failures:
        print("%d failed: %s" % (len(tp.failures), ", ".join(tp.failures)))
        return 1
    print("all MoE pull checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
