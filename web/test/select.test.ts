// The ordering helpers under rescore.ts against plain comparator sorts on random scores with
// many ties and removed (-inf) tokens: the radix sort (ties: lower id first), top-n and the
// k-th largest score.
import { describe, expect, it } from 'vitest';
import { kthLargest, sortIdsAscending, sortIdsDescending, topIds } from '../src/select';

function scores(n: number, seed: number): Float32Array {
  const s = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const r = seed / 2 ** 31;
    s[i] = r < 0.1 ? Number.NEGATIVE_INFINITY : r < 0.2 ? 0 : r < 0.25 ? -0 : Math.round((r - 0.5) * 40) / 4; // ties galore
  }
  return s;
}
const finite = (s: Float32Array) => Array.from(s.keys()).filter((i) => s[i] > Number.NEGATIVE_INFINITY);

describe('select', () => {
  for (const n of [1, 7, 1000, 151936]) {
    const s = scores(n, n);
    it(`sortIdsAscending, n = ${n}`, () => {
      const want = finite(s).sort((a, b) => (s[a] === s[b] ? a - b : s[a] - s[b]));
      expect(Array.from(sortIdsAscending(s))).toEqual(want);
    });
    it(`sortIdsDescending and topIds, n = ${n}`, () => {
      const want = finite(s).sort((a, b) => (s[a] === s[b] ? a - b : s[b] - s[a]));
      const prob = () => 1 / Math.max(1, want.length);
      expect(Array.from(sortIdsDescending(s, 2, prob))).toEqual(want); // never enough mass: all of them
      const prefix = Array.from(sortIdsDescending(s, 0.3, prob));
      expect(prefix).toEqual(want.slice(0, prefix.length));
      expect(topIds(s, 10)).toEqual(want.slice(0, 10));
    });
    it(`kthLargest, n = ${n}`, () => {
      const sorted = Array.from(s).sort((a, b) => b - a);
      for (const k of [1, 2, Math.ceil(n / 2), n]) expect(kthLargest(s, k)).toBe(sorted[k - 1]);
    });
  }
});
