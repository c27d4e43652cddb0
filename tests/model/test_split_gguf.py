"""Split GGUF models (issue 17): a GGUF that `quantize` wrote is split here, in Python and
independently of the C++ writer, the way llama.cpp's gguf-split lays parts out (the first part
keeps every metadata key, each part gets split.no / split.count, the first split.tensors.count,
tensors in order, each part its own tensor-info table and data section). Opening the first
part must give logits identical to the unsplit file, and broken splits must be refused naming
the part: a later part given first, a missing part, a part with the wrong split.no, a tensor in
two parts, a wrong split.tensors.count, a first part not named NAME-00001-of-0000N.gguf.

usage: test_split_gguf.py --logitscope BIN --tokenizer-from DIR"""
import argparse
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import gguf_ref  # noqa: E402

U16, I32 = 2, 5
failures = []


def check(label, cond, got):
    print(("ok   " if cond else "FAIL ") + f"{label} -- got: {str(got)[:220]}")
    if not cond:
        failures.append(label)


def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, t, value):
    fmt = {U16: "<H", I32: "<i"}[t]
    return gstr(key) + struct.pack("<I", t) + struct.pack(fmt, value)


def parse(path):
    """-> (version, raw bytes of every key-value, count of them, [tensor info], alignment, blob)."""
    blob = open(path, "rb").read()
    r = gguf_ref.Reader(blob)
    assert r.take(4) == b"GGUF"
    version, n_tensors, n_kv = struct.unpack("<IQQ", r.take(20))
    start = r.p
    align = 32
    for _ in range(n_kv):
        key = r.string()
        (t,) = struct.unpack("<I", r.take(4))
        value = r.value(t)
        if key == "general.alignment":
            align = value
    raw_kvs = blob[start:r.p]
    infos = []
    for _ in range(n_tensors):
        name = r.string()
        (nd,) = struct.unpack("<I", r.take(4))
        ne = list(struct.unpack("<%dQ" % nd, r.take(8 * nd)))
        t, off = struct.unpack("<IQ", r.take(12))
        infos.append({"name": name, "ne": ne, "type": t, "offset": off})
    data_start = (r.p + align - 1) // align * align
    ends = [i["offset"] for i in infos[1:]] + [len(blob) - data_start]
    for info, end in zip(infos, ends):
        info["data"] = blob[data_start + info["offset"]:data_start + end]
    return version, raw_kvs, n_kv, infos, align


def write_part(path, version, raw_kvs, n_kv, infos, align):
    head = b"GGUF" + struct.pack("<IQQ", version, len(infos), n_kv) + raw_kvs
    table, data = b"", b""
    for i in infos:
        data += b"\0" * ((-len(data)) % align)
        table += gstr(i["name"]) + struct.pack("<I", len(i["ne"])) + \
            struct.pack("<%dQ" % len(i["ne"]), *i["ne"]) + struct.pack("<IQ", i["type"], len(data))
        data += i["data"]
    out = head + table
    out += b"\0" * ((-len(out)) % align)
    with open(path, "wb") as f:
        f.write(out + data)


def split(src, prefix, parts, no_override=None, count_tensors=None, duplicate=False):
    version, raw_kvs, n_kv, infos, align = parse(src)
    per = (len(infos) + parts - 1) // parts
    groups = [infos[i * per:(i + 1) * per] for i in range(parts)]
    if duplicate:
        groups[1] = groups[1] + [groups[0][0]]
    paths = []
    for no, group in enumerate(groups):
        split_no = no if no_override is None or no != 1 else no_override
        extra = kv("split.no", U16, split_no) + kv("split.count", U16, parts)
        n = 2
        if no == 0:
            extra += kv("split.tensors.count", I32,
                        len(infos) if count_tensors is None else count_tensors)
            n += 1
        path = f"{prefix}-{no + 1:05d}-of-{parts:05d}.gguf"
        write_part(path, version, (raw_kvs if no == 0 else b"") + extra,
                   (n_kv if no == 0 else 0) + n, group, align)
        paths.append(path)
    return paths


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    binary = a.logitscope
    tmp = tempfile.mkdtemp(prefix="ls_split_")

    def run(args):
        return subprocess.run([binary] + args, capture_output=True, text=True, timeout=120)
    try:
        model = os.path.join(tmp, "tiny")
        subprocess.run([binary, "synth", "--shape", "tiny", "--dtype", "bf16", "--seed", "2",
                        "--out", model, "--tokenizer-from", a.tokenizer_from], check=True,
                       capture_output=True)
        whole = os.path.join(tmp, "whole.gguf")
        subprocess.run([binary, "quantize", "--model", model, "--type", "q8_0", "--out", whole],
                       check=True, capture_output=True)
        args = ["next", "--tokens", "9707,11,1879", "--json", "--top", "5"]
        want = run(["next", "--model", whole] + args[1:])
        check("the unsplit file runs", want.returncode == 0, want.stderr[-200:])
        for parts in (2, 3):
            paths = split(whole, os.path.join(tmp, f"m{parts}"), parts)
            got = run(["next", "--model", paths[0]] + args[1:])
            check(f"split in {parts}: the first part gives the unsplit logits",
                  got.returncode == 0 and got.stdout.replace(paths[0], whole) == want.stdout,
                  (got.returncode, got.stderr[-200:]))
            versions = [gguf_ref.read_gguf(p)[1].get("split.no") for p in paths]
            check(f"split in {parts}: the numpy reader reads every part with its split.no",
                  [v[1] for v in versions] == list(range(parts)), versions)
        paths = split(whole, os.path.join(tmp, "later"), 2)
        r = run(["next", "--model", paths[1]] + args[1:])
        check("a later part given first is refused, naming the first",
              r.returncode == 1 and "this is part 2 of a model split into 2 files; give the first "
              "part, " + paths[0] in r.stderr, r.stderr.strip())
        os.remove(paths[1])
        r = run(["next", "--model", paths[0]] + args[1:])
        check("a missing part is named", r.returncode == 1 and
              f"part 2 of 2 is missing: expected {paths[1]}" in r.stderr, r.stderr.strip())
        paths = split(whole, os.path.join(tmp, "wrongno"), 2, no_override=5)
        r = run(["next", "--model", paths[0]] + args[1:])
        check("a part with the wrong split.no is refused", r.returncode == 1 and
              "expected split.no 1 and split.count 2" in r.stderr, r.stderr.strip())
        paths = split(whole, os.path.join(tmp, "dup"), 2, duplicate=True)
        r = run(["next", "--model", paths[0]] + args[1:])
        check("a tensor in two parts is refused", r.returncode == 1 and
              "is also in an earlier part" in r.stderr, r.stderr.strip())
        paths = split(whole, os.path.join(tmp, "count"), 2, count_tensors=3)
        r = run(["next", "--model", paths[0]] + args[1:])
        check("a wrong split.tensors.count is refused", r.returncode == 1 and
              "split.tensors.count says 3 tensors" in r.stderr, r.stderr.strip())
        paths = split(whole, os.path.join(tmp, "named"), 2)
        renamed = os.path.join(tmp, "renamed.gguf")
        shutil.copy(paths[0], renamed)
        r = run(["next", "--model", renamed] + args[1:])
        check("a first part not named NAME-00001-of-00002.gguf is refused, saying why",
              r.returncode == 1 and "not named like the first of 2 parts" in r.stderr,
              r.stderr.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
