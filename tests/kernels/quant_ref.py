#!/usr/bin/python3
"""Independent numpy oracle for GGML's block formats, written from the format descriptions
(ggml-common.h block layouts, dequantize_row_* semantics), not from logitscope's C++.

Runs `quant_dump DIR` and checks, for every case it writes:
  * dequantize_row == this file's dequantizer, bit for bit (float32 arithmetic as GGML does it);
  * quantize_row and quantize_activations bytes == this file's quantizer for Q8_0, Q4_0, Q8_K
    (GGML's reference rules: roundf for Q8_0, d = max_signed / -8 for Q4_0, -127 / max_signed
    and round-half-even for Q8_K, bsums);
  * Q4_K / Q6_K: every stored level is the nearest level of x under the stored scales;
  * dot_quantized and dot_quantized_ref == the float64 dot of the numpy-dequantized rows.
Usage: quant_ref.py PATH/TO/quant_dump
"""
import os
import subprocess
import sys
import tempfile

import numpy as np

f32 = np.float32


def f16(buf, off):
    return np.frombuffer(buf[off:off + 2], dtype="<f2")[0].astype(f32)


def blocks(raw, size):
    assert len(raw) % size == 0, (len(raw), size)
    return [raw[i:i + size] for i in range(0, len(raw), size)]


# ---- dequantizers (block layouts from ggml-common.h) ----------------------------------------

def deq_q8_0(raw):  # f16 d, int8 qs[32]; x = qs * d
    out = []
    for b in blocks(raw, 34):
        d = f16(b, 0)
        q = np.frombuffer(b[2:34], dtype=np.int8).astype(f32)
        out.append(q * d)
    return np.concatenate(out)


def deq_q4_0(raw):  # f16 d, uint8 qs[16]; element j = low nibble of qs[j], j+16 = high nibble
    out = []
    for b in blocks(raw, 18):
        d = f16(b, 0)
        qs = np.frombuffer(b[2:18], dtype=np.uint8)
        q = np.concatenate([qs & 0x0F, qs >> 4]).astype(np.int32) - 8
        out.append(q.astype(f32) * d)
    return np.concatenate(out)


def q4k_scale_min(s, j):  # 12 bytes: 8 six-bit scales and 8 six-bit mins
    if j < 4:
        return s[j] & 63, s[j + 4] & 63
    return (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4)


def deq_q4_k(raw):  # f16 d, f16 dmin, scales[12], qs[128]; 8 sub-blocks of 32
    out = []
    for b in blocks(raw, 144):
        d, dmin = f16(b, 0), f16(b, 2)
        s = np.frombuffer(b[4:16], dtype=np.uint8).astype(np.int32)
        qs = np.frombuffer(b[16:144], dtype=np.uint8)
        y = np.zeros(256, dtype=f32)
        for g in range(4):  # 32 bytes: sub-block 2g in the low nibbles, 2g+1 in the high
            part = qs[32 * g:32 * g + 32]
            for half, q in ((0, part & 0x0F), (1, part >> 4)):
                sc, m = q4k_scale_min(s, 2 * g + half)
                y[64 * g + 32 * half:64 * g + 32 * half + 32] = (
                    f32(d * f32(sc)) * q.astype(f32) - f32(dmin * f32(m)))
        out.append(y)
    return np.concatenate(out)


def q6k_levels(b):  # ql[128], qh[64] -> 256 levels 0..63
    ql = np.frombuffer(b[0:128], dtype=np.uint8).astype(np.int32)
    qh = np.frombuffer(b[128:192], dtype=np.uint8).astype(np.int32)
    L = np.zeros(256, dtype=np.int32)
    for h in range(2):
        l0, l1, hh = ql[64 * h:64 * h + 32], ql[64 * h + 32:64 * h + 64], qh[32 * h:32 * h + 32]
        L[128 * h + 0:128 * h + 32] = (l0 & 0x0F) | ((hh & 3) << 4)
        L[128 * h + 32:128 * h + 64] = (l1 & 0x0F) | (((hh >> 2) & 3) << 4)
        L[128 * h + 64:128 * h + 96] = (l0 >> 4) | (((hh >> 4) & 3) << 4)
        L[128 * h + 96:128 * h + 128] = (l1 >> 4) | (((hh >> 6) & 3) << 4)
    return L


def deq_q6_k(raw):  # ql[128], qh[64], int8 scales[16], f16 d; 16 sub-blocks of 16
    out = []
    for b in blocks(raw, 210):
        sc = np.frombuffer(b[192:208], dtype=np.int8).astype(f32)
        d = f16(b, 208)
        q = (q6k_levels(b) - 32).astype(f32)
        out.append(np.repeat(f32(d) * sc, 16).astype(f32) * q)
    return np.concatenate(out)


def deq_q8_k(raw):  # float d, int8 qs[256], int16 bsums[16]
    out = []
    for b in blocks(raw, 292):
        d = np.frombuffer(b[0:4], dtype="<f4")[0]
        out.append(np.frombuffer(b[4:260], dtype=np.int8).astype(f32) * d)
    return np.concatenate(out)


DEQ = {"Q8_0": deq_q8_0, "Q4_0": deq_q4_0, "Q4_K": deq_q4_k, "Q6_K": deq_q6_k, "Q8_K": deq_q8_k}
ACT = {"Q8_0": "Q8_0", "Q4_0": "Q8_0", "Q4_K": "Q8_K", "Q6_K": "Q8_K"}


# ---- quantizers (GGML's reference rules) ----------------------------------------------------

def round_away(v):  # C roundf: halves away from zero
    t = np.trunc(v)
    return t + np.where(np.abs(v - t) >= f32(0.5), np.sign(v), f32(0)).astype(f32)


def first_max_signed(x):  # the first value of largest magnitude
    return x[int(np.argmax(np.abs(x)))]


def quant_q8_0(x):
    out = bytearray()
    for b in x.reshape(-1, 32):
        amax = np.max(np.abs(b))
        d = f32(amax / f32(127))
        i = f32(1) / d if d != 0 else f32(0)
        q = round_away((b * f32(i)).astype(f32)).astype(np.int8)
        out += np.float16(d).tobytes() + q.tobytes()
    return bytes(out)


def quant_q4_0(x):
    out = bytearray()
    for b in x.reshape(-1, 32):
        mx = first_max_signed(b)
        d = f32(mx / f32(-8))
        i = f32(1) / d if d != 0 else f32(0)
        v = ((b * f32(i)).astype(f32) + f32(8.5)).astype(f32)
        q = np.minimum(15, np.trunc(v).astype(np.int8).astype(np.int32)).astype(np.uint8)
        out += np.float16(d).tobytes() + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def quant_q8_k(x):
    out = bytearray()
    for b in x.reshape(-1, 256):
        if np.max(np.abs(b)) == 0:
            out += bytes(292)
            continue
        iscale = f32(f32(-127) / first_max_signed(b))
        q = np.minimum(127, np.rint((b * iscale).astype(f32))).astype(np.int8)
        bsums = q.astype(np.int32).reshape(16, 16).sum(axis=1).astype("<i2")
        out += np.array([f32(1) / iscale], dtype="<f4").tobytes() + q.tobytes() + bsums.tobytes()
    return bytes(out)


QUANT = {"Q8_0": quant_q8_0, "Q4_0": quant_q4_0, "Q8_K": quant_q8_k}


def check_levels_q4_k(x, raw):
    """Each stored nibble is clamp(round((x + dmin*m) / (d*sc)), 0, 15) under the stored scales."""
    bad = 0
    for bi, b in enumerate(blocks(raw, 144)):
        d, dmin = f16(b, 0), f16(b, 2)
        s = np.frombuffer(b[4:16], dtype=np.uint8).astype(np.int32)
        qs = np.frombuffer(b[16:144], dtype=np.uint8)
        for j in range(8):
            sc, m = q4k_scale_min(s, j)
            ds, dm = f32(d * f32(sc)), f32(dmin * f32(m))
            if ds == 0:
                continue
            g, half = divmod(j, 2)
            got = (qs[32 * g:32 * g + 32] >> (4 * half)) & 0x0F
            xs = x[256 * bi + 32 * j:256 * bi + 32 * j + 32]
            want = np.clip(np.rint(((xs + dm).astype(f32) / ds).astype(f32)), 0, 15)
            bad += int(np.sum(got != want))
    return bad


def check_levels_q6_k(x, raw):
    bad = 0
    for bi, b in enumerate(blocks(raw, 210)):
        sc = np.frombuffer(b[192:208], dtype=np.int8)
        d = f16(b, 208)
        L = q6k_levels(b)
        for j in range(16):
            ds = f32(d * f32(sc[j]))
            if ds == 0:
                continue
            xs = x[256 * bi + 16 * j:256 * bi + 16 * j + 16]
            want = np.clip(np.rint((xs / ds).astype(f32)), -32, 31) + 32
            bad += int(np.sum(L[16 * j:16 * j + 16] != want))
    return bad


def main():
    dump = sys.argv[1]
    failures = []
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        print(subprocess.run([dump, tmp], check=True, capture_output=True, text=True).stdout.strip())
        cases = [line.split() for line in open(os.path.join(tmp, "manifest.txt"))]
        for t, fill, n, name in cases:
            n = int(n)
            p = os.path.join(tmp, name)
            rd = lambda suffix: open(p + suffix, "rb").read()
            x = np.frombuffer(rd("_x.f32"), dtype="<f4")
            q = rd("_q.bin")
            where = f"{t} {fill} n={n}"
            # 1. dequantization, bit for bit
            deq = np.frombuffer(rd("_deq.f32"), dtype="<f4")
            mine = DEQ[t](q)
            if not np.array_equal(deq.view(np.uint32), mine.view(np.uint32)):
                k = int(np.argmax(deq.view(np.uint32) != mine.view(np.uint32)))
                failures.append(f"{where}: dequantize_row[{k}] = {deq[k]!r}, numpy {mine[k]!r}")
            # 2. quantization bytes (closed-form formats) / levels under stored scales (K-quants)
            if t in QUANT:
                want = QUANT[t](x)
                if q != want:
                    k = next(i for i in range(len(q)) if q[i] != want[i])
                    failures.append(f"{where}: quantize_row byte {k} = {q[k]}, numpy {want[k]}")
                if t in ("Q8_0", "Q8_K") and rd("_act.bin") != want:
                    failures.append(f"{where}: quantize_activations bytes differ from numpy")
            elif t == "Q4_K":
                bad = check_levels_q4_k(x, q)
                if bad:
                    failures.append(f"{where}: {bad} Q4_K levels are not the nearest under the stored scales")
            elif t == "Q6_K":
                bad = check_levels_q6_k(x, q)
                if bad:
                    failures.append(f"{where}: {bad} Q6_K levels are not the nearest under the stored scales")
            # 3. dot products against the float64 dot of numpy's dequantized rows
            if t in ACT:
                at = ACT[t]
                xa = np.frombuffer(rd("_xa.f32"), dtype="<f4")
                xq = rd("_xq.bin")
                if xq != QUANT[at](xa):
                    failures.append(f"{where}: activation bytes ({at}) differ from numpy")
                wv, xv = DEQ[t](q).astype(np.float64), DEQ[at](xq).astype(np.float64)
                exact = float(np.dot(wv, xv))
                mag = float(np.sum(np.abs(wv * xv)))
                got, ref = np.frombuffer(rd("_dot.f64"), dtype="<f8")
                nblk = n // (32 if at == "Q8_0" else 256)
                # the dequantized values carry one or two float roundings per element (K-quants)
                if abs(ref - exact) > 3e-7 * mag + 1e-30:
                    failures.append(f"{where}: dot_quantized_ref {ref!r} vs numpy {exact!r} (mag {mag})")
                if abs(got - exact) > 4e-7 * (nblk + 4) * mag + 1e-30:
                    failures.append(f"{where}: dot_quantized {got!r} vs numpy {exact!r} (mag {mag})")
            counts[t] = counts.get(t, 0) + 1
    print("cases per format:", counts)
    for f in failures[:40]:
        print("FAIL", f)
    if failures:
        print(f"{len(failures)} failures")
        sys.exit(1)
    print("quant_ref: all formats match the numpy oracle")


if __name__ == "__main__":
    main()
