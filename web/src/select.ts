// Ordering helpers for rescore.ts over a vocabulary of float32 scores, without comparator sorts
// of 151,936 ids: a stable radix sort of the scores' ordered bits (ties keep ascending ids, as
// src/decode/distribution.cpp's ids_by_score_desc breaks them), a top-n insertion list and a
// quickselect for the k-th largest score.

const NEG_INF = Number.NEGATIVE_INFINITY;
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** A uint32 whose unsigned order is the float32 order of `v` (-0 and +0 map alike). */
function orderedBits(v: number): number {
  f32[0] = v === 0 ? 0 : v;
  const b = u32[0];
  return b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0;
}

/**
 * `ids` ordered by score (ascending or descending), ties by ascending id: an LSD radix sort
 * (two 16-bit passes) of the ordered bits, stable, so equal scores keep the ids' order.
 */
function sortIds(s: Float32Array, ids: Int32Array, descending: boolean): Int32Array {
  const n = ids.length;
  let keys: Uint32Array = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const b = orderedBits(s[ids[i]]);
    keys[i] = descending ? ~b >>> 0 : b;
  }
  let src: Int32Array = ids;
  let keysOut: Uint32Array = new Uint32Array(n);
  let dst: Int32Array = new Int32Array(n);
  const count = new Uint32Array(65537);
  for (const shift of [0, 16]) {
    count.fill(0);
    for (let i = 0; i < n; i++) count[((keys[i] >>> shift) & 0xffff) + 1]++;
    for (let b = 1; b <= 65536; b++) count[b] += count[b - 1];
    for (let i = 0; i < n; i++) {
      const at = count[(keys[i] >>> shift) & 0xffff]++;
      dst[at] = src[i];
      keysOut[at] = keys[i];
    }
    [src, dst] = [dst, src === ids ? new Int32Array(n) : src];
    [keys, keysOut] = [keysOut, keys];
  }
  return src;
}

function idsWhere(s: Float32Array, pred: (v: number) => boolean): Int32Array {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (pred(s[i])) n++;
  const ids = new Int32Array(n);
  n = 0;
  for (let i = 0; i < s.length; i++) if (pred(s[i])) ids[n++] = i;
  return ids;
}

/** Every token still in the pool (score > -inf), ascending by score, ties by ascending id. */
export function sortIdsAscending(s: Float32Array): Int32Array {
  return sortIds(s, idsWhere(s, (v) => v > NEG_INF), false);
}

/**
 * A prefix of the pool in descending order (ties: lower id first) that is sure to hold the
 * point where the cumulative probability reaches `mass`; the whole pool when it may not.
 */
export function sortIdsDescending(s: Float32Array, mass: number, prob: (id: number) => number): Int32Array {
  let max = NEG_INF;
  for (let i = 0; i < s.length; i++) if (s[i] > max) max = s[i];
  if (max === NEG_INF) return new Int32Array(0);
  // Gather the tokens within `gap` of the best score, widening until they hold enough mass.
  for (let gap = 8; gap < 1e4; gap *= 2) {
    const floor = max - gap;
    const ids = idsWhere(s, (v) => v > NEG_INF && v >= floor);
    let sum = 0;
    for (let i = 0; i < ids.length; i++) sum += prob(ids[i]);
    if (sum >= mass + 1e-9) return sortIds(s, ids, true);
  }
  return sortIds(s, idsWhere(s, (v) => v > NEG_INF), true);
}

/** The `n` best tokens still in the pool by score descending, ties: lower id first. */
export function topIds(s: Float32Array, n: number): number[] {
  const ids: number[] = [];
  const scores: number[] = [];
  if (n <= 0) return ids;
  for (let i = 0; i < s.length; i++) {
    const v = s[i];
    if (!(v > NEG_INF)) continue;
    if (ids.length === n && !(v > scores[n - 1])) continue;
    let j = ids.length === n ? n - 1 : ids.length;
    while (j > 0 && v > scores[j - 1]) {
      ids[j] = ids[j - 1];
      scores[j] = scores[j - 1];
      j--;
    }
    ids[j] = i;
    scores[j] = v;
  }
  return ids;
}

/** The k-th largest value of `s` (1-based; no NaN), by quickselect on a copy. */
export function kthLargest(s: Float32Array, k: number): number {
  const a = new Float32Array(s);
  const target = k - 1; // index in descending order
  let lo = 0;
  let hi = a.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    // median of three as the pivot, so sorted input stays linear
    const x = a[lo], y = a[mid], z = a[hi];
    const pivot = x > y ? (y > z ? y : x > z ? z : x) : x > z ? x : y > z ? z : y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i] > pivot) i++;
      while (a[j] < pivot) j--;
      if (i <= j) {
        const t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (target <= j) hi = j;
    else if (target >= i) lo = i;
    else return a[target];
  }
  return a[target];
}
