// Chip colours: the probability scale is monotonic (red at 0 to green at 1), raw ranks fall in
// GLTR's buckets (1, 2-10, 11-100, beyond), the entropy scale darkens as entropy grows.
import { describe, expect, it } from 'vitest';
import { chipColor, entropyLightness, legend, probHue, RANK_COLORS, rankBucket } from '../src/colors';
import type { Step } from '../src/types';

describe('colour modes', () => {
  it('probability: hue rises monotonically from red to green', () => {
    const ps = Array.from({ length: 101 }, (_, i) => i / 100);
    for (let i = 1; i < ps.length; i++) expect(probHue(ps[i])).toBeGreaterThan(probHue(ps[i - 1]));
    expect(probHue(0)).toBe(0);
    expect(probHue(1)).toBe(120);
    expect(probHue(Number.NaN)).toBe(0);
    expect(probHue(2)).toBe(120);
  });

  it('rank: GLTR buckets', () => {
    expect(rankBucket(1)).toBe('top1');
    expect(rankBucket(2)).toBe('top10');
    expect(rankBucket(10)).toBe('top10');
    expect(rankBucket(11)).toBe('top100');
    expect(rankBucket(100)).toBe('top100');
    expect(rankBucket(101)).toBe('beyond');
    expect(rankBucket(151936)).toBe('beyond');
    expect(new Set(Object.values(RANK_COLORS)).size).toBe(4);
  });

  it('entropy: darker for more entropy, saturating', () => {
    const hs = [0, 0.5, 1, 2, 3, 4];
    for (let i = 1; i < hs.length; i++) expect(entropyLightness(hs[i])).toBeLessThan(entropyLightness(hs[i - 1]));
    expect(entropyLightness(10)).toBe(entropyLightness(4));
  });

  it('chipColor follows the mode', () => {
    const step = { chosen: { prob: 0.9, raw_rank: 1 }, entropy_after: 0.2 } as unknown as Step;
    expect(chipColor(step, 'rank')).toBe(RANK_COLORS.top1);
    expect(chipColor(step, 'prob')).toMatch(/^hsl\(/);
    expect(chipColor(step, 'entropy')).toMatch(/^hsl\(215/);
    expect(legend('rank')).toHaveLength(4);
  });
});
