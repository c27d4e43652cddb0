#!/usr/bin/python3
"""Independent numpy oracle for GGML's block formats, written from the format descriptions
(ggml-common.h block layouts, dequantize_row_* semantics), not from logitscope's C++.

Runs `quant_dump DIR` and checks, for every case it writes:
  * dequantize_row == this file's dequantizer, bit for bit (float32 arithmetic as GGML does it);
  * quantize_row and quantize_activations bytes == this file's quantizer for Q8_0, Q4_0, Q8_K,
    Q5_0, Q5_1, Q4_1, IQ4_NL (GGML's reference rules: roundf for Q8_0, d = max_signed / -8 for
    Q4_0 and / -16 for Q5_0, min and (max - min) / 15 or 31 for Q4_1 / Q5_1, -127 / max_signed and
    round-half-even for Q8_K, bsums; IQ4_NL's scale search as llama-quantize runs it);
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


# The 32-element formats with 4-bit indices and (Q5_*) a fifth bit per element: nibble byte j
# holds elements j (low) and j + 16 (high); bit e of the little-endian uint32 qh is bit 4 of e.
def nib32(b, at):
    qs = np.frombuffer(b[at:at + 16], dtype=np.uint8)
    return np.concatenate([qs & 0x0F, qs >> 4]).astype(np.int32)


def bit5(b, at):
    qh = int.from_bytes(b[at:at + 4], "little")
    return np.array([(qh >> e) & 1 for e in range(32)], dtype=np.int32) << 4


def deq_q5_0(raw):  # f16 d, qh[4], qs[16]; x = d * (q - 16)
    return np.concatenate([((nib32(b, 6) | bit5(b, 2)) - 16).astype(f32) * f16(b, 0)
                           for b in blocks(raw, 22)])


def deq_q5_1(raw):  # f16 d, f16 m, qh[4], qs[16]; x = d * q + m
    return np.concatenate([((nib32(b, 8) | bit5(b, 4)).astype(f32) * f16(b, 0)).astype(f32) + f16(b, 2)
                           for b in blocks(raw, 24)])


def deq_q4_1(raw):  # f16 d, f16 m, qs[16]; x = d * q + m
    return np.concatenate([(nib32(b, 4).astype(f32) * f16(b, 0)).astype(f32) + f16(b, 2)
                           for b in blocks(raw, 20)])


IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                 dtype=f32)


def deq_iq4_nl(raw):  # f16 d, qs[16]; x = d * table[index]
    return np.concatenate([IQ4NL[nib32(b, 2)] * f16(b, 0) for b in blocks(raw, 18)])


def two_bit(qs, e):  # element e = 128h + 32j + l: bits 2j of byte 32h + l
    return (qs[32 * (e // 128) + e % 32] >> (2 * ((e // 32) % 4))) & 3


E256 = np.arange(256)


def deq_q5_k(raw):  # f16 d, f16 dmin, scales[12] (Q4_K's packing), qh[32], qs[128]
    out = []
    for b in blocks(raw, 176):
        d, dmin = f16(b, 0), f16(b, 2)
        s = np.frombuffer(b[4:16], dtype=np.uint8).astype(np.int32)
        qh = np.frombuffer(b[16:48], dtype=np.uint8).astype(np.int32)
        qs = np.frombuffer(b[48:176], dtype=np.uint8).astype(np.int32)
        y = np.zeros(256, dtype=f32)
        for j in range(8):  # sub-block j: nibble half j % 2 of bytes 32 (j // 2).., fifth bit j of qh
            sc, m = q4k_scale_min(s, j)
            q = ((qs[32 * (j // 2):32 * (j // 2) + 32] >> (4 * (j % 2))) & 0x0F) | (((qh >> j) & 1) << 4)
            y[32 * j:32 * j + 32] = f32(d * f32(sc)) * q.astype(f32) - f32(dmin * f32(m))
        out.append(y)
    return np.concatenate(out)


def q3k_scales(s):  # 16 six-bit scales: low 4 bits in bytes 0..7 (two per byte), high 2 in 8..11
    s = [int(v) for v in s]
    return [((s[j] & 0x0F if j < 8 else s[j - 8] >> 4) | (((s[8 + j % 4] >> (2 * (j // 4))) & 3) << 4)) - 32
            for j in range(16)]


def deq_q3_k(raw):  # hmask[32], qs[64], scales[12], f16 d; x = d * (scale - 32) * (q - 4)
    out = []
    for b in blocks(raw, 110):
        hm = np.frombuffer(b[0:32], dtype=np.uint8).astype(np.int32)
        qs = np.frombuffer(b[32:96], dtype=np.uint8).astype(np.int32)
        sc = np.array(q3k_scales(b[96:108]), dtype=f32)
        d = f16(b, 108)
        q = two_bit(qs, E256) + 4 * ((hm[E256 % 32] >> (E256 // 32)) & 1) - 4
        out.append((d * sc)[E256 // 16].astype(f32) * q.astype(f32))
    return np.concatenate(out)


def deq_q2_k(raw):  # scales[16] (scale low nibble, min high), qs[64], f16 d, f16 dmin
    out = []
    for b in blocks(raw, 84):
        s = np.frombuffer(b[0:16], dtype=np.uint8).astype(np.int32)
        qs = np.frombuffer(b[16:80], dtype=np.uint8).astype(np.int32)
        d, dmin = f16(b, 80), f16(b, 82)
        ds = (d * (s & 0x0F).astype(f32)).astype(f32)[E256 // 16]
        dm = (dmin * (s >> 4).astype(f32)).astype(f32)[E256 // 16]
        out.append((ds * two_bit(qs, E256).astype(f32)).astype(f32) - dm)
    return np.concatenate(out)


DEQ = {"Q8_0": deq_q8_0, "Q4_0": deq_q4_0, "Q4_K": deq_q4_k, "Q6_K": deq_q6_k, "Q8_K": deq_q8_k,
       "Q5_0": deq_q5_0, "Q5_1": deq_q5_1, "Q4_1": deq_q4_1, "IQ4_NL": deq_iq4_nl,
       "Q5_K": deq_q5_k, "Q3_K": deq_q3_k, "Q2_K": deq_q2_k}
ACT = {"Q8_0": "Q8_0", "Q4_0": "Q8_0", "Q4_K": "Q8_K", "Q6_K": "Q8_K", "Q5_0": "Q8_0",
       "Q5_1": "Q8_0", "Q4_1": "Q8_0", "IQ4_NL": "Q8_0", "Q5_K": "Q8_K", "Q3_K": "Q8_K",
       "Q2_K": "Q8_K"}


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


def pack32(q, five):  # levels 0..31 -> (qh bytes if five) + nibble bytes
    q = q.astype(np.int64)
    nibs = ((q[:16] & 0x0F) | ((q[16:] & 0x0F) << 4)).astype(np.uint8).tobytes()
    if not five:
        return nibs
    qh = int(np.sum(((q >> 4) & 1) << np.arange(32, dtype=np.int64)))
    return qh.to_bytes(4, "little") + nibs


def quant_q5_0(x):  # d = max_signed / -16; q = min(31, trunc(x / d + 16.5))
    out = bytearray()
    for b in x.reshape(-1, 32):
        d = f32(first_max_signed(b) / f32(-16))
        i = f32(1) / d if d != 0 else f32(0)
        q = np.minimum(31, np.trunc(((b * i).astype(f32) + f32(16.5)).astype(f32)))
        out += np.float16(d).tobytes() + pack32(q.astype(np.int32), True)
    return bytes(out)


def quant_min(x, levels):  # Q4_1 (15) / Q5_1 (31): m = min, d = (max - min) / levels
    out = bytearray()
    for b in x.reshape(-1, 32):
        lo, hi = b.min(), b.max()
        d = f32(f32(hi - lo) / f32(levels))
        i = f32(1) / d if d != 0 else f32(0)
        v = (((b - lo).astype(f32) * i).astype(f32) + f32(0.5)).astype(f32)
        q = np.minimum(15, np.trunc(v)) if levels == 15 else np.trunc(v)
        out += np.float16(d).tobytes() + np.float16(lo).tobytes() + pack32(q.astype(np.int32), levels == 31)
    return bytes(out)


def iq4nl_index(v):  # nearest table entry; a tie between two neighbours takes the upper one
    v = np.asarray(v, dtype=f32)
    up = np.clip(np.searchsorted(IQ4NL, v, side="right"), 1, 15)
    below = (v - IQ4NL[up - 1]).astype(f32) < (IQ4NL[up] - v).astype(f32)
    idx = np.where(below, up - 1, up)
    return np.where(v <= IQ4NL[0], 0, np.where(v >= IQ4NL[15], 15, idx))


def seqsum(v):  # float32 sum in element order (as a C loop adds)
    return np.cumsum(np.asarray(v, dtype=f32), dtype=f32)[-1]


def quant_iq4_nl(x):
    """llama-quantize's IQ4_NL search without an importance matrix: weights x^2; the first scale
    maps the signed value of largest magnitude to +127 and is refined by weighted least squares
    (d = sum w q x / sum w q^2); then inverse scales (k - 127) / max for k = -7..7 are tried, each
    kept when (sum w q x)^2 / sum w q^2 improves; final indices nearest under the float d."""
    out = bytearray()
    for b in x.reshape(-1, 32):
        w = (b * b).astype(f32)
        mx = first_max_signed(b)
        d = f32(0)
        if abs(mx) >= f32(1e-15):
            def fit(inv):
                q = IQ4NL[iq4nl_index((inv * b).astype(f32))]
                return seqsum((w * q).astype(f32) * b), seqsum((w * q).astype(f32) * q)
            sqx, sq2 = fit(f32(1) / f32(mx / f32(127)))
            d = f32(sqx / sq2)
            best = f32(d * sqx)
            for k in range(-7, 8):
                sqx, sq2 = fit(f32(f32(k - 127) / mx))
                if sq2 > 0 and f32(sqx * sqx) > f32(best * sq2):
                    d = f32(sqx / sq2)
                    best = f32(d * sqx)
        inv = f32(1) / d if d != 0 else f32(0)
        out += np.float16(d).tobytes() + pack32(iq4nl_index((inv * b).astype(f32)), False)
    return bytes(out)


# ---- K-quant searches (GGML's reference quantizers without an importance matrix), float32 ------

def grid_fit(x, w, nmax, rmin, rdelta, nstep, mad):
    """Levels 0..nmax under x ~ s * l + m, s >= 0, m <= 0: the min/max grid first, then inverse
    scales (rmin + rdelta k + nmax) / (max - min), k = 0..nstep, each with its weighted least
    squares s, m (m clamped to 0, then s = S_wlx / S_wll); the smallest weighted squared (or,
    with mad, absolute) error wins. -> (levels, s, -m)."""
    lo, hi = min(x.min(), f32(0)), x.max()
    if hi == lo:
        return np.zeros(len(x), dtype=np.int64), f32(0), f32(-lo)
    err = (lambda v: np.abs(v)) if mad else (lambda v: (v * v).astype(f32))
    sw, swx = seqsum(w), seqsum(w * x)
    inv = f32(f32(nmax) / f32(hi - lo))
    L = np.clip(np.rint((inv * (x - lo).astype(f32)).astype(f32)), 0, nmax).astype(np.int64)
    scale, mn = f32(f32(1) / inv), lo
    best = seqsum(w * err(((scale * L.astype(f32)).astype(f32) + mn).astype(f32) - x))
    for k in range(nstep + 1):
        inv = f32(f32(f32(rmin) + f32(f32(rdelta) * f32(k))) + f32(nmax)) / f32(hi - lo)
        l = np.clip(np.rint((inv * (x - lo).astype(f32)).astype(f32)), 0, nmax).astype(np.int64)
        wl = (w * l.astype(f32)).astype(f32)
        sl, sll, sxl = seqsum(wl), seqsum(wl * l.astype(f32)), seqsum(wl * x)
        det = f32(f32(sw * sll) - f32(sl * sl))
        if not det > 0:
            continue
        sc = f32(f32(f32(sw * sxl) - f32(swx * sl)) / det)
        m = f32(f32(f32(sll * swx) - f32(sl * sxl)) / det)
        if m > 0:
            m, sc = f32(0), f32(sxl / sll)
        e = seqsum(w * err(((sc * l.astype(f32)).astype(f32) + m).astype(f32) - x))
        if e < best:
            L, best, scale, mn = l, e, sc, m
    return L, scale, f32(-mn)


def pack_k4_scales(ls, lm):  # Q4_K / Q5_K packing of 8 six-bit scales and mins into 12 bytes
    s = [0] * 12
    for j in range(8):
        if j < 4:
            s[j], s[j + 4] = ls[j], lm[j]
        else:
            s[j + 4] = (ls[j] & 0x0F) | ((lm[j] & 0x0F) << 4)
            s[j - 4] |= (ls[j] >> 4) << 6
            s[j] |= (lm[j] >> 4) << 6
    return np.array(s, dtype=np.uint8)


def pack_two_bit(L):  # 256 levels 0..3 -> 64 bytes (element 128h + 32j + l at bits 2j of 32h + l)
    L = np.asarray(L, dtype=np.int64)
    out = np.zeros(64, dtype=np.int64)
    for e in range(256):
        out[32 * (e // 128) + e % 32] |= L[e] << (2 * ((e // 32) % 4))
    return out.astype(np.uint8).tobytes()


def quant_q5_k(x):
    out = bytearray()
    for b in x.reshape(-1, 256):
        fits = []
        for j in range(8):
            xs = b[32 * j:32 * j + 32]
            rms = np.sqrt(f32(seqsum(xs * xs) / f32(32))).astype(f32)
            fits.append(grid_fit(xs, (rms + np.abs(xs)).astype(f32), 31, -0.5, 0.1, 15, False))
        scales = [f[1] for f in fits]
        mins = [f[2] for f in fits]
        max_s, max_m = max([f32(0)] + scales), max([f32(0)] + mins)
        i_s = f32(f32(63) / max_s) if max_s > 0 else f32(0)
        i_m = f32(f32(63) / max_m) if max_m > 0 else f32(0)
        ls = [min(63, int(np.rint(f32(i_s * v))) & 0xFF) for v in scales]  # as uint8, then <= 63
        lm = [min(63, int(np.rint(f32(i_m * v))) & 0xFF) for v in mins]
        sc = pack_k4_scales(ls, lm)
        d16, m16 = np.float16(f32(max_s / f32(63))), np.float16(f32(max_m / f32(63)))
        d, dmin = f32(d16), f32(m16)
        L = np.concatenate([f[0] for f in fits])
        for j in range(8):
            s6, m6 = q4k_scale_min(sc.astype(np.int32), j)
            ds, dm = f32(d * f32(s6)), f32(dmin * f32(m6))
            if ds == 0:
                continue
            xs = b[32 * j:32 * j + 32]
            L[32 * j:32 * j + 32] = np.clip(np.rint(((xs + dm).astype(f32) / ds).astype(f32)), 0, 31)
        qh = np.zeros(32, dtype=np.int64)
        qs = np.zeros(128, dtype=np.int64)
        for j in range(8):
            g, half = divmod(j, 2)
            qs[32 * g:32 * g + 32] |= (L[32 * j:32 * j + 32] & 0x0F) << (4 * half)
            qh |= (L[32 * j:32 * j + 32] >> 4) << j
        out += (d16.tobytes() + m16.tobytes() + sc.tobytes() + qh.astype(np.uint8).tobytes()
                + qs.astype(np.uint8).tobytes())
    return bytes(out)


def q3_fit(x):
    """Symmetric levels -4..3, weights x^2: the grid mapping the signed value of largest magnitude
    to -4, then up to 5 passes that move each level to round(x S_ll / S_xl) of the others when
    that raises S_xl^2 / S_ll; returns (levels + 4, S_xl / S_ll)."""
    mx = first_max_signed(x)
    if abs(mx) < f32(1e-15):
        return [0] * 16, f32(0)
    inv = f32(f32(-4) / mx)
    L = [int(min(3, max(-4, np.rint(f32(inv * v))))) for v in x]
    sxl = sll = f32(0)
    for v, l in zip(x, L):
        w = f32(v * v)
        sxl = f32(sxl + f32(f32(w * v) * f32(l)))
        sll = f32(sll + f32(f32(w * f32(l)) * f32(l)))
    for _ in range(5):
        changed = 0
        for i, v in enumerate(x):
            w = f32(v * v)
            slx = f32(sxl - f32(f32(w * v) * f32(L[i])))
            if not slx > 0:
                continue
            sl2 = f32(sll - f32(f32(w * f32(L[i])) * f32(L[i])))
            nl = int(min(3, max(-4, np.rint(f32(f32(v * sl2) / slx)))))
            if nl == L[i]:
                continue
            slx = f32(slx + f32(f32(w * v) * f32(nl)))
            sl2 = f32(sl2 + f32(f32(w * f32(nl)) * f32(nl)))
            if sl2 > 0 and f32(f32(slx * slx) * sll) > f32(f32(sxl * sxl) * sl2):
                L[i], sxl, sll = nl, slx, sl2
                changed += 1
        if not changed:
            break
    return [l + 4 for l in L], f32(sxl / sll)


def quant_q3_k(x):
    out = bytearray()
    for b in x.reshape(-1, 256):
        fits = [q3_fit(b[16 * j:16 * j + 16]) for j in range(16)]
        scales = [f[1] for f in fits]
        mx = scales[int(np.argmax(np.abs(scales)))]
        sc = [0] * 12
        d16 = np.float16(0)
        if mx != 0:
            inv = f32(f32(-32) / mx)
            for j in range(16):
                l = int(min(31, max(-32, np.rint(f32(inv * scales[j]))))) + 32
                if j < 8:
                    sc[j] = l & 0x0F
                else:
                    sc[j - 8] |= (l & 0x0F) << 4
                sc[8 + j % 4] |= (l >> 4) << (2 * (j // 4))
            d16 = np.float16(f32(f32(1) / inv))
        L = np.array([l for f in fits for l in f[0]], dtype=np.int64)
        for j, s6 in enumerate(q3k_scales(sc)):
            ds = f32(f32(d16) * f32(s6))
            if ds == 0:
                continue
            xs = b[16 * j:16 * j + 16]
            L[16 * j:16 * j + 16] = np.clip(np.rint((xs / ds).astype(f32)), -4, 3) + 4
        hm = np.zeros(32, dtype=np.int64)
        for e in range(256):
            hm[e % 32] |= int(L[e] > 3) << (e // 32)
        out += (hm.astype(np.uint8).tobytes() + pack_two_bit(L & 3) + bytes(sc) + d16.tobytes())
    return bytes(out)


def quant_q2_k(x):
    out = bytearray()
    for b in x.reshape(-1, 256):
        fits = [grid_fit(b[16 * j:16 * j + 16], np.abs(b[16 * j:16 * j + 16]), 3, -0.5, 0.1, 15, True)
                for j in range(16)]
        scales, mins = [f[1] for f in fits], [f[2] for f in fits]
        max_s, max_m = max([f32(0)] + scales), max([f32(0)] + mins)
        sc = [0] * 16
        d16 = m16 = np.float16(0)
        if max_s > 0:
            inv = f32(f32(15) / max_s)
            sc = [int(np.rint(f32(inv * v))) & 0xFF for v in scales]
            d16 = np.float16(f32(max_s / f32(15)))
        if max_m > 0:
            inv = f32(f32(15) / max_m)
            sc = [(s | (int(np.rint(f32(inv * v))) << 4)) & 0xFF for s, v in zip(sc, mins)]
            m16 = np.float16(f32(max_m / f32(15)))
        L = np.concatenate([f[0] for f in fits])
        for j in range(16):
            ds = f32(f32(d16) * f32(sc[j] & 0x0F))
            if ds == 0:
                continue
            dm = f32(f32(m16) * f32(sc[j] >> 4))
            xs = b[16 * j:16 * j + 16]
            L[16 * j:16 * j + 16] = np.clip(np.rint(((xs + dm).astype(f32) / ds).astype(f32)), 0, 3)
        out += bytes(sc) + pack_two_bit(L) + d16.tobytes() + m16.tobytes()
    return bytes(out)


QUANT = {"Q8_0": quant_q8_0, "Q4_0": quant_q4_0, "Q8_K": quant_q8_k, "Q5_0": quant_q5_0,
         "Q5_1": lambda x: quant_min(x, 31), "Q4_1": lambda x: quant_min(x, 15),
         "IQ4_NL": quant_iq4_nl, "Q5_K": quant_q5_k, "Q3_K": quant_q3_k, "Q2_K": quant_q2_k}


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


def dmins(t, raw):  # per element: the subtracted minimum dmin * m of its sub-block
    out = []
    if t == "Q5_K":
        for b in blocks(raw, 176):
            s = np.frombuffer(b[4:16], dtype=np.uint8).astype(np.int32)
            out += [np.full(32, float(f16(b, 2)) * q4k_scale_min(s, j)[1]) for j in range(8)]
    else:
        for b in blocks(raw, 84):
            out += [np.full(16, float(f16(b, 82)) * (v >> 4)) for v in b[0:16]]
    return np.concatenate(out)


def main():
    np.seterr(all="ignore")  # the "huge" rows overflow f16 scales on purpose (as GGML's do)
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
                if t in ("Q4_1", "Q5_1"):  # w = d q + m: the two parts are summed separately
                    m = np.repeat([float(f16(b, 2)) for b in blocks(q, len(q) // (n // 32))], 32)
                    mag = float(np.sum((np.abs(wv - m) + np.abs(m)) * np.abs(xv)))
                if t in ("Q5_K", "Q2_K"):  # likewise d sc q and dmin m
                    m = dmins(t, q)
                    mag = float(np.sum((np.abs(wv + m) + np.abs(m)) * np.abs(xv)))
                if not np.isfinite(exact):  # an f16 scale or minimum overflowed (huge input)
                    if np.isfinite(got) or np.isfinite(ref):
                        failures.append(f"{where}: finite dot {got!r} / {ref!r} of non-finite rows")
                    counts[t] = counts.get(t, 0) + 1
                    continue
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
