#!/usr/bin/env python3
"""`logitscope pull`, `models` and model ids in --model, against a loopback fake Hub
(tests/hub/fake_hub.py; nothing leaves 127.0.0.1). Checked: the cache layout byte for byte as
huggingface_hub writes it (blobs named by sha256 / git blob id, relative snapshot links one
"../" deeper per folder, refs without a newline); logits of a pulled model equal to those of the
folder it was served from (safetensors, two shards in parallel, and GGUFs picked by quant tag);
resume with Range after a dropped connection and of a left-over .incomplete; a corrupted LFS
file refused with nothing in blobs/ or snapshots/; 401 (HF_TOKEN sent as a Bearer token to the
hub, never to the LFS store), 404s for repo, revision and file; a stalled server bounded by
HF_HUB_DOWNLOAD_TIMEOUT; HF_HUB_OFFLINE; HF_HUB_CACHE / HF_HOME / ~/.cache; blobs of a cache
transformers made reused without a download; the disk-space check; --include/--exclude."""
import argparse
import atexit
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hub"))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import fake_hub  # noqa: E402
from st_write import random_model, write_model  # noqa: E402

failures = []
BIN = None
HUB = None
BASE_ENV = {}


def ok(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + (": " + str(detail)[:600] if detail and not cond else ""))
    if not cond:
        failures.append(what)


def run(args, env=None, timeout=120):
    e = dict(BASE_ENV)
    e.update(env or {})
    t0 = time.time()
    try:
        r = subprocess.run([BIN] + args, capture_output=True, text=True, timeout=timeout, env=e)
    except subprocess.TimeoutExpired as t:
        r = subprocess.CompletedProcess(t.cmd, -1, t.stdout or "", "timed out after %d s" % timeout)
    r.seconds = time.time() - t0
    return r


def read_dir(d):
    files = {}
    for root, _, names in os.walk(d):
        for n in names:
            p = os.path.join(root, n)
            files[os.path.relpath(p, d)] = open(p, "rb").read()
    return files


def expect_layout(cache, repo_id, commit, files, branch="main", what=""):
    """The cache as huggingface_hub lays it out, computed here independently."""
    d = os.path.join(cache, "models--" + repo_id.replace("/", "--"))
    ref = os.path.join(d, "refs", branch)
    ok(os.path.isfile(ref) and open(ref, "rb").read() == commit.encode(),
       what + "refs/%s holds the commit, no newline" % branch,
       open(ref, "rb").read() if os.path.isfile(ref) else "missing")
    want_blobs = {fake_hub.etag_of(p, data): data for p, data in files.items()}
    blobs_dir = os.path.join(d, "blobs")
    got_blobs = sorted(os.listdir(blobs_dir)) if os.path.isdir(blobs_dir) else []
    ok(got_blobs == sorted(want_blobs), what + "blobs/ holds exactly the etags",
       "got %s want %s" % (got_blobs, sorted(want_blobs)))
    bad = [e for e, data in want_blobs.items()
           if not os.path.isfile(os.path.join(blobs_dir, e))
           or open(os.path.join(blobs_dir, e), "rb").read() != data]
    ok(not bad, what + "every blob's bytes are the file's", bad)
    snap = os.path.join(d, "snapshots", commit)
    wrong = []
    for p, data in files.items():
        link = os.path.join(snap, p)
        want = "../" * (2 + p.count("/")) + "blobs/" + fake_hub.etag_of(p, data)
        if not os.path.islink(link) or os.readlink(link) != want:
            wrong.append((p, os.readlink(link) if os.path.islink(link) else "no link", want))
    ok(not wrong, what + "snapshot links are relative links to ../../blobs/{etag}", wrong)
    listed = sorted(read_dir(snap)) if os.path.isdir(snap) else []
    ok(listed == sorted(files), what + "the snapshot holds exactly the files", listed)


def dump_logits(model, tmp, tag, env=None, extra=None):
    out = os.path.join(tmp, tag + ".npy")
    r = run(["next", "--model", model, "--tokens", "1,2,3,4,5", "--all-positions",
             "--dump-logits", out, "--threads", "1"] + (extra or []), env=env)
    if r.returncode != 0:
        return None, r
    return np.load(out), r


def same_logits(a, b):
    return a is not None and b is not None and a.shape == b.shape and float(np.abs(a - b).max()) == 0.0


def store_gets(digest):
    return [r for r in HUB.requests("store") if digest in r["path"]]


def main():
    global BIN, HUB, BASE_ENV
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    BIN = os.path.abspath(a.logitscope)
    tmp = tempfile.mkdtemp(prefix="ls_pull_")
    # Gone however the test ends (each run writes hundreds of MiB of models).
    atexit.register(shutil.rmtree, tmp, True)
    HUB = fake_hub.Hub()
    cache = os.path.join(tmp, "cache")
    BASE_ENV = {k: v for k, v in os.environ.items()
                if not k.startswith("HF_") and k not in ("XDG_CACHE_HOME",)}
    BASE_ENV.update({"HF_ENDPOINT": HUB.endpoint, "HF_HUB_CACHE": cache, "HOME": tmp,
                     "HF_HUB_DOWNLOAD_TIMEOUT": "5", "HF_HUB_ETAG_TIMEOUT": "5"})

    # The models the fake Hub serves: a synthetic Qwen2.5 folder (plus a nested file), its two
    # GGUFs, and a two-shard model.
    tiny = os.path.join(tmp, "tiny")
    r = run(["synth", "--shape", "tiny", "--dtype", "bf16", "--seed", "1", "--out", tiny,
             "--tokenizer-from", a.tokenizer_from])
    assert r.returncode == 0, r.stderr
    ggufs = {}
    for t, name in (("q8_0", "tiny-instruct-Q8_0.gguf"), ("q4_0", "tiny-instruct-q4_0.gguf")):
        ggufs[t] = os.path.join(tmp, name)
        r = run(["quantize", "--model", tiny, "--type", t, "--out", ggufs[t]])
        assert r.returncode == 0, r.stderr
    tiny_files = read_dir(tiny)
    tiny_files["notes/deep/readme.txt"] = b"a file two folders down\n"
    commit = HUB.add_commit("test-org/tiny", tiny_files)
    gguf_files = {os.path.basename(p): open(p, "rb").read() for p in ggufs.values()}
    gguf_files["README.md"] = b"# tiny GGUF\n"
    gguf_commit = HUB.add_commit("test-org/tiny-GGUF", gguf_files)
    wide = os.path.join(tmp, "wide")
    w, cfg = random_model(np.random.default_rng(5), hidden=256, inter=512, layers=2, heads=4, kv=2,
                          vocab=384, tied=False, scale=0.05)
    cfg["max_position_embeddings"] = 128
    write_model(wide, w, cfg, dtype="BF16", shards=2)
    wide_files = read_dir(wide)
    wide_commit = HUB.add_commit("test-org/wide", wide_files)
    st = fake_hub.sha256(tiny_files["model.safetensors"])

    # 1. A model id not in the cache: the error gives the exact pull command; nothing fetched.
    r = run(["next", "--model", "test-org/tiny", "--tokens", "1,2"])
    ok(r.returncode == 1 and "`logitscope pull test-org/tiny`" in r.stderr and "--pull" in r.stderr
       and not HUB.requests(), "missing id: exit 1 with the pull command, no request", r.stderr)
    r = run(["next", "--model", "test-org/tiny-GGUF:q8_0", "--revision", "v2", "--tokens", "1"])
    ok(r.returncode == 1 and "`logitscope pull test-org/tiny-GGUF:q8_0 --revision v2`" in r.stderr,
       "missing id with tag and revision: the pull command names both", r.stderr)

    # 2. pull: the layout byte for byte, the path on stdout, one line per file when not a TTY.
    r = run(["pull", "test-org/tiny"])
    snap = os.path.join(cache, "models--test-org--tiny", "snapshots", commit)
    ok(r.returncode == 0 and r.stdout.strip() == snap, "pull prints the snapshot path",
       r.stdout + r.stderr)
    ok(all(p in r.stderr for p in ("config.json", "model.safetensors", "notes/deep/readme.txt"))
       and "\r" not in r.stderr, "pull: one line per file on a non-terminal stderr", r.stderr)
    expect_layout(cache, "test-org/tiny", commit, tiny_files, what="pull: ")
    refs = os.listdir(os.path.join(cache, "models--test-org--tiny", "refs"))
    ok(refs == ["main"], "refs/ holds main alone (no partial file left)", refs)
    heads = HUB.requests("hub", "HEAD")
    ok(len(heads) == len(tiny_files) and all("/resolve/%s/" % commit in h["path"] for h in heads),
       "one HEAD per file, at the commit the API named", [h["path"] for h in heads][:3])
    api = HUB.requests("hub", "GET")
    ok(any(x["path"] == "/api/models/test-org/tiny/revision/main?blobs=true" for x in api),
       "the file list comes from /api/models/{repo}/revision/main?blobs=true")
    ok(len(HUB.requests("store")) == sum(fake_hub.is_lfs(p) for p in tiny_files),
       "LFS files come from the store they redirect to")

    # 3. Logits of the pulled model == those of the folder it was served from.
    want, _ = dump_logits(tiny, tmp, "tiny-dir")
    got, rr = dump_logits("test-org/tiny", tmp, "tiny-id")
    ok(same_logits(want, got), "next --model test-org/tiny: logits == the served folder's",
       rr.stderr if got is None else "")
    got_path, _ = dump_logits(snap, tmp, "tiny-path")
    ok(same_logits(want, got_path), "next --model <snapshot path>: the same logits")
    # A local path that exists wins over the id it also spells (here: another model's folder).
    local = os.path.join(tmp, "cwd", "test-org")
    os.makedirs(local)
    os.symlink(wide, os.path.join(local, "tiny"))
    out = os.path.join(tmp, "local-wins.npy")
    r = subprocess.run([BIN, "next", "--model", "test-org/tiny", "--tokens", "1,2,3,4,5",
                        "--all-positions", "--dump-logits", out, "--threads", "1"],
                       capture_output=True, text=True, env=BASE_ENV, cwd=os.path.join(tmp, "cwd"))
    want_local, _ = dump_logits(wide, tmp, "wide-dir-local")
    ok(r.returncode == 0 and same_logits(np.load(out), want_local),
       "a local folder named like the id wins over the cache", r.stderr)

    # 4. A second pull downloads nothing and makes no HEAD (the snapshot links are the files).
    HUB.clear()
    r = run(["pull", "test-org/tiny"])
    ok(r.returncode == 0 and not HUB.requests("hub", "HEAD") and not HUB.requests("store")
       and "already in the cache" in r.stderr, "second pull: nothing fetched", r.stderr)

    # 5. Offline: no request at all, by repo id; a missing repo is a clear error.
    HUB.clear()
    off = {"HF_HUB_OFFLINE": "1"}
    got_off, rr = dump_logits("test-org/tiny", tmp, "tiny-offline", env=off)
    r = run(["pull", "test-org/tiny"], env=off)
    ok(same_logits(want, got_off) and r.returncode == 0 and r.stdout.strip() == snap
       and not HUB.requests(), "HF_HUB_OFFLINE=1: next and pull from the cache, no request",
       rr.stderr + r.stderr)
    r = run(["pull", "test-org/wide"], env=off)
    ok(r.returncode == 1 and "HF_HUB_OFFLINE" in r.stderr and "test-org/wide" in r.stderr
       and not HUB.requests(), "HF_HUB_OFFLINE=1 and not cached: clear error", r.stderr)
    r = run(["next", "--model", "test-org/wide", "--pull", "--tokens", "1"], env=off)
    ok(r.returncode == 1 and "HF_HUB_OFFLINE is set" in r.stderr and not HUB.requests(),
       "HF_HUB_OFFLINE=1 beats --pull", r.stderr)

    # 6. Two shards downloaded at once (--pull on a model command), logits equal.
    HUB.clear()
    HUB.faults["store_delay"] = 0.05
    got_wide, rr = dump_logits("test-org/wide", tmp, "wide-id", extra=["--pull"])
    want_wide, _ = dump_logits(wide, tmp, "wide-dir")
    ok(same_logits(want_wide, got_wide), "next --model test-org/wide --pull: sharded logits equal",
       rr.stderr)
    ok(HUB.max_active_store_gets >= 2, "the two shards were downloaded in parallel",
       "at most %d at once" % HUB.max_active_store_gets)
    expect_layout(cache, "test-org/wide", wide_commit, wide_files, what="shards: ")

    # 7. GGUF quant tags, case-insensitive; missing and ambiguous tags list the available ones.
    HUB.clear()
    r = run(["pull", "test-org/tiny-GGUF:q8_0"])
    gsnap = os.path.join(cache, "models--test-org--tiny-GGUF", "snapshots", gguf_commit)
    ok(r.returncode == 0 and r.stdout.strip() == os.path.join(gsnap, "tiny-instruct-Q8_0.gguf")
       and os.listdir(gsnap) == ["tiny-instruct-Q8_0.gguf"],
       "pull REPO:q8_0 fetches only the GGUF with that tag", r.stdout + r.stderr)
    want_q8, _ = dump_logits(ggufs["q8_0"], tmp, "q8-file")
    got_q8, rr = dump_logits("test-org/tiny-GGUF:q8_0", tmp, "q8-id")
    ok(same_logits(want_q8, got_q8), "--model REPO-GGUF:q8_0: logits == the served GGUF's",
       rr.stderr)
    r = run(["next", "--model", "test-org/tiny-GGUF:Q4_0", "--tokens", "1"])
    ok(r.returncode == 1 and "logitscope pull test-org/tiny-GGUF:Q4_0" in r.stderr,
       "a tag not yet pulled: the pull command", r.stderr)
    want_q4, _ = dump_logits(ggufs["q4_0"], tmp, "q4-file")
    got_q4, rr = dump_logits("test-org/tiny-GGUF:Q4_0", tmp, "q4-id", extra=["--pull"])
    ok(same_logits(want_q4, got_q4), "--model REPO-GGUF:Q4_0 --pull (upper case tag)", rr.stderr)
    r = run(["next", "--model", "test-org/tiny-GGUF", "--tokens", "1"])
    ok(r.returncode == 1 and "q4_0, q8_0" in r.stderr and ":q" in r.stderr,
       "a GGUF repo with two files and no tag: asks for one, listing them", r.stderr)
    r = run(["pull", "test-org/tiny-GGUF:q5_k_m"])
    ok(r.returncode == 1 and "no .gguf file has the quant tag 'q5_k_m'" in r.stderr
       and "q4_0, q8_0" in r.stderr, "an unknown tag lists the available ones", r.stderr)
    HUB.add_commit("test-org/amb-GGUF", {"a-q8_0.gguf": gguf_files["tiny-instruct-Q8_0.gguf"],
                                         "b-q8_0.gguf": gguf_files["tiny-instruct-q4_0.gguf"]})
    r = run(["pull", "test-org/amb-GGUF:q8_0"])
    ok(r.returncode == 1 and "ambiguous" in r.stderr and "a-q8_0.gguf" in r.stderr
       and "b-q8_0.gguf" in r.stderr, "an ambiguous tag names the files it matches", r.stderr)

    # A split GGUF: every part pulled by the tag, opened from its first part.
    sys.path.insert(0, os.path.join(HERE, "..", "model"))
    from test_split_gguf import split  # noqa: E402
    parts = split(ggufs["q8_0"], os.path.join(tmp, "tiny-split-q8_0"), 2)
    HUB.add_commit("test-org/split-GGUF", {os.path.basename(p): open(p, "rb").read() for p in parts})
    r = run(["pull", "test-org/split-GGUF:Q8_0"])
    got_split, rr = dump_logits("test-org/split-GGUF:q8_0", tmp, "split-id")
    ok(r.returncode == 0 and r.stdout.strip().endswith("tiny-split-q8_0-00001-of-00002.gguf")
       and same_logits(want_q8, got_split), "a split GGUF by tag: both parts, the first opens it",
       r.stdout + r.stderr + rr.stderr)

    # 8. Resume after a dropped connection: the retry asks for the rest with Range.
    cache2 = os.path.join(tmp, "cache-resume")
    HUB.clear()
    half = len(tiny_files["model.safetensors"]) // 2
    HUB.faults["drop_after"] = {st: half}
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": cache2})
    ranges = [g["headers"].get("range") for g in store_gets(st)]
    ok(r.returncode == 0 and ranges == [None, "bytes=%d-" % half],
       "dropped mid-file: resumed with Range from the byte it stopped at", (ranges, r.stderr))
    expect_layout(cache2, "test-org/tiny", commit, tiny_files, what="resumed: ")
    # A .incomplete left by an interrupted pull is resumed too.
    cache3 = os.path.join(tmp, "cache-incomplete")
    blobs3 = os.path.join(cache3, "models--test-org--tiny", "blobs")
    os.makedirs(blobs3)
    with open(os.path.join(blobs3, st + ".incomplete"), "wb") as f:
        f.write(tiny_files["model.safetensors"][:1000])
    HUB.clear()
    r = run(["pull", "test-org/tiny", "--quiet"], env={"HF_HUB_CACHE": cache3})
    ranges = [g["headers"].get("range") for g in store_gets(st)]
    ok(r.returncode == 0 and ranges == ["bytes=1000-"] and r.stderr == "",
       "a left-over .incomplete resumes at its size; --quiet prints nothing", (ranges, r.stderr))
    expect_layout(cache3, "test-org/tiny", commit, tiny_files, what=".incomplete resumed: ")

    # 9. A corrupted LFS file is refused: exit 1, nothing in blobs/ or snapshots/, no ref.
    cache4 = os.path.join(tmp, "cache-corrupt")
    HUB.clear()
    HUB.faults["corrupt"] = {st}
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": cache4})
    d4 = os.path.join(cache4, "models--test-org--tiny")
    ok(r.returncode == 1 and "corrupted" in r.stderr and st in r.stderr
       and "model.safetensors" in r.stderr, "corrupted LFS file: exit 1 naming file and sha256",
       r.stderr)
    ok(not [b for b in os.listdir(os.path.join(d4, "blobs")) if b.startswith(st)]
       and not os.path.lexists(os.path.join(d4, "snapshots", commit, "model.safetensors"))
       and not os.path.exists(os.path.join(d4, "refs", "main")),
       "corrupted: no blob, no .incomplete, no snapshot link, no ref",
       os.listdir(os.path.join(d4, "blobs")))

    # A store that refuses its own signed link (expired): said so, the pull may be rerun.
    HUB.clear()
    HUB.faults["expired"] = {st}
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": os.path.join(tmp, "c-expired")})
    ok(r.returncode == 1 and "the file store answered 403" in r.stderr
       and "run the pull again" in r.stderr, "the LFS store's 403: an expired link, not 'gated'",
       r.stderr)
    HUB.clear()

    # 10. A private repo: 401 explained; HF_TOKEN goes to the hub as a Bearer token, never to
    # the LFS store on another origin.
    HUB.add_commit("test-org/private", {"config.json": b"{}", "model.safetensors": b"x" * 5000})
    HUB.repos["test-org/private"].token = "hf_secret"
    HUB.clear()
    r = run(["pull", "test-org/private"])
    ok(r.returncode == 1 and "401" in r.stderr and "HF_TOKEN" in r.stderr
       and "license" in r.stderr, "401: says to set HF_TOKEN and accept the license", r.stderr)
    HUB.clear()
    r = run(["pull", "test-org/private"], env={"HF_TOKEN": "hf_secret"})
    hub_auth = {x["headers"].get("authorization") for x in HUB.requests("hub")}
    store_auth = [x["headers"].get("authorization") for x in HUB.requests("store")]
    ok(r.returncode == 0 and hub_auth == {"Bearer hf_secret"}, "HF_TOKEN sent as Bearer to the hub",
       (hub_auth, r.stderr))
    ok(len(store_auth) == 1 and store_auth == [None], "HF_TOKEN not forwarded to the LFS store",
       store_auth)
    HUB.clear()
    r = run(["pull", "test-org/private"], env={"HF_TOKEN": "hf_wrong",
                                             "HF_HUB_CACHE": os.path.join(tmp, "c5")})
    ok(r.returncode == 1 and "refused" in r.stderr, "a wrong token: says it was refused", r.stderr)

    # 11. 404s, each named.
    for args, needle in ((["test-org/nope"], "repository 'test-org/nope' not found"),
                         (["test-org/tiny", "--revision", "v9"], "revision 'v9' not found"),
                         (["not a repo"], "is not a Hugging Face repo id")):
        r = run(["pull"] + args, env={"HF_HUB_CACHE": os.path.join(tmp, "c6")})
        ok(r.returncode == 1 and needle in r.stderr, "pull %s: %s" % (args[0], needle), r.stderr)
    HUB.faults["missing"] = {"tokenizer_config.json"}
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": os.path.join(tmp, "c7")})
    ok(r.returncode == 1 and "file 'tokenizer_config.json' not found in test-org/tiny" in r.stderr,
       "a file the resolve route does not have: named", r.stderr)
    HUB.clear()

    # 12. A stalled server: bounded by HF_HUB_DOWNLOAD_TIMEOUT and the retry limit.
    HUB.faults["slow"] = {st}
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": os.path.join(tmp, "c8"),
                                          "HF_HUB_DOWNLOAD_TIMEOUT": "1"}, timeout=60)
    ok(r.returncode == 1 and "timed out" in r.stderr and "attempts" in r.stderr
       and r.seconds < 20, "stalled download: exit 1 after %.1f s" % r.seconds, r.stderr)
    HUB.clear()
    HUB.faults["slow_api"] = True
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": os.path.join(tmp, "c9"),
                                          "HF_HUB_ETAG_TIMEOUT": "1"}, timeout=60)
    ok(r.returncode == 1 and "timed out" in r.stderr and r.seconds < 20,
       "stalled API: exit 1 after %.1f s" % r.seconds, r.stderr)
    HUB.clear()

    # 13. A cache transformers made (an older commit, fabricated as huggingface_hub writes it):
    # its blob is reused without a download, and the new snapshot links it.
    cache10 = os.path.join(tmp, "cache-transformers")
    d10 = os.path.join(cache10, "models--test-org--tiny")
    old = "0123456789abcdef0123456789abcdef01234567"
    os.makedirs(os.path.join(d10, "blobs"))
    os.makedirs(os.path.join(d10, "snapshots", old))
    os.makedirs(os.path.join(d10, "refs"))
    with open(os.path.join(d10, "blobs", st), "wb") as f:
        f.write(tiny_files["model.safetensors"])
    os.symlink("../../blobs/" + st, os.path.join(d10, "snapshots", old, "model.safetensors"))
    with open(os.path.join(d10, "refs", "main"), "w") as f:
        f.write(old)
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": cache10})
    ok(r.returncode == 0 and not store_gets(st) and len(HUB.requests("store")) >= 1,
       "a blob transformers fetched is reused: no download of it", r.stderr)
    expect_layout(cache10, "test-org/tiny", commit, tiny_files, what="transformers cache: ")
    ok(os.readlink(os.path.join(d10, "snapshots", old, "model.safetensors")) == "../../blobs/" + st,
       "the older snapshot is left as it was")

    # 14. --include / --exclude (fnmatch: '*' crosses '/'; 'dir/' means everything under it).
    cache11 = os.path.join(tmp, "cache-include")
    r = run(["pull", "--include", "*.json", "--exclude", "tokenizer*", "test-org/tiny"],
            env={"HF_HUB_CACHE": cache11})
    s11 = os.path.join(cache11, "models--test-org--tiny", "snapshots", commit)
    ok(r.returncode == 0 and sorted(os.listdir(s11)) == ["config.json", "generation_config.json"],
       "--include '*.json' --exclude 'tokenizer*'", sorted(os.listdir(s11)) if os.path.isdir(s11) else r.stderr)
    r = run(["pull", "test-org/tiny", "--include", "notes/"], env={"HF_HUB_CACHE": cache11})
    ok(r.returncode == 0 and os.path.islink(os.path.join(s11, "notes/deep/readme.txt")),
       "--include 'notes/': the folder's files", r.stderr)
    r = run(["pull", "test-org/tiny", "--include", "*.bin"], env={"HF_HUB_CACHE": cache11})
    ok(r.returncode == 1 and "matches the --include/--exclude" in r.stderr and "config.json" in r.stderr,
       "--include matching nothing: error listing the files", r.stderr)

    # 15. Free disk space is checked before a large file.
    HUB.faults["linked_size"] = {"model.safetensors": 1 << 55}
    r = run(["pull", "test-org/tiny"], env={"HF_HUB_CACHE": os.path.join(tmp, "c12")})
    blobs12 = os.path.join(tmp, "c12", "models--test-org--tiny", "blobs")
    ok(r.returncode == 1 and "not enough free space" in r.stderr and not store_gets(st)
       and not [b for b in os.listdir(blobs12) if b.startswith(st)],
       "a file larger than the free space: refused before any byte or file", r.stderr)
    HUB.clear()

    # 16. HF_HOME/hub, then ~/.cache/huggingface/hub, when HF_HUB_CACHE is not set.
    env = {k: v for k, v in BASE_ENV.items() if k != "HF_HUB_CACHE"}
    home = os.path.join(tmp, "hfhome")
    r = subprocess.run([BIN, "pull", "test-org/tiny", "--include", "config.json", "-q"],
                       capture_output=True, text=True, env=dict(env, HF_HOME=home))
    ok(r.returncode == 0 and r.stdout.startswith(os.path.join(home, "hub", "models--test-org--tiny")),
       "HF_HOME: the cache is $HF_HOME/hub", r.stdout + r.stderr)
    user = os.path.join(tmp, "user")
    r = subprocess.run([BIN, "pull", "test-org/tiny", "--include", "config.json", "-q"],
                       capture_output=True, text=True, env=dict(env, HOME=user))
    ok(r.returncode == 0 and r.stdout.startswith(
        os.path.join(user, ".cache", "huggingface", "hub", "models--test-org--tiny")),
       "default: ~/.cache/huggingface/hub", r.stdout + r.stderr)

    # 17. On a terminal, stderr shows a live status line (files, bytes, speed, each file).
    import pty
    master, slave = pty.openpty()
    HUB.faults["store_delay"] = 0.05  # about 1 s per shard: speed and ETA show after 0.5 s
    p = subprocess.Popen([BIN, "pull", "test-org/wide"], stdout=subprocess.PIPE, stderr=slave,
                         env=dict(BASE_ENV, HF_HUB_CACHE=os.path.join(tmp, "c13")))
    os.close(slave)
    screen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        screen += chunk
    p.wait(timeout=60)
    os.close(master)
    text = screen.decode(errors="replace")
    ok(p.returncode == 0 and "\r\x1b[K[0/%d files]" % len(wide_files) in text and "% of " in text
       and re.search(r"\d\.\d [KMG]iB/s  ETA \d+:\d\d", text)
       and "model-00001-of-00002.safetensors" in text,
       "a terminal gets the live status line", text[:400])
    HUB.clear()

    # 18. quantize takes an id too (the GGUF named after the repo, not the commit folder).
    out = os.path.join(tmp, "from-id.gguf")
    r = run(["quantize", "--model", "test-org/tiny", "--type", "bf16", "--out", out])
    got_q, rr = dump_logits(out, tmp, "from-id")
    want_f32, _ = dump_logits(tiny, tmp, "tiny-dir-again")
    head = open(out, "rb").read(4096) if os.path.exists(out) else b""
    ok(r.returncode == 0 and same_logits(want_f32, got_q) and b"tiny" in head
       and commit.encode() not in head,
       "quantize --model ID: a BF16 GGUF with the folder's logits, named after the repo", r.stderr + rr.stderr)

    # 19. `models` lists the cache.
    r = run(["models"])
    lines = r.stdout.splitlines()
    row = [l for l in lines if l.startswith("test-org/tiny ")]
    grow = [l for l in lines if l.startswith("test-org/tiny-GGUF")]
    ok(r.returncode == 0 and row and "main" in row[0] and commit[:12] in row[0]
       and "safetensors" in row[0] and grow and "gguf (q4_0, q8_0)" in grow[0],
       "models: repos, revision, commit, formats, quant tags", r.stdout)
    r = run(["models", "--json"])
    js = {j["repo"]: j for j in map(json.loads, r.stdout.splitlines())}
    size = sum(len(v) for v in tiny_files.values())
    ok(js.get("test-org/tiny", {}).get("size_on_disk") == size
       and js["test-org/tiny"]["snapshots"][0]["files"] == len(tiny_files),
       "models --json: size on disk and file count", js.get("test-org/tiny"))

    # 20. serve by id: the served model name is the repo id.
    p = subprocess.Popen([BIN, "serve", "--model", "test-org/tiny", "--port", "0", "--threads", "1"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=BASE_ENV)
    try:
        line = p.stdout.readline()
        import urllib.request
        port = int(line.strip().rsplit(":", 1)[1])
        models = json.load(urllib.request.urlopen("http://127.0.0.1:%d/v1/models" % port, timeout=10))
        ok([m["id"] for m in models["data"]] == ["test-org/tiny"], "serve --model ID serves it as the id",
           models)
    except Exception as e:  # noqa: BLE001
        ok(False, "serve --model test-org/tiny", repr(e))
    finally:
        p.terminate()
        p.wait(timeout=30)

    HUB.stop()
    if failures:
        print("%d failed: %s" % (len(failures), ", ".join(failures)))
        return 1
    print("all pull checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
