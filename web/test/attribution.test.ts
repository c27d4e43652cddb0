// Attribution heat map: the diverging scale (white at 0, blue for helped, orange for hurt,
// saturating at the context's largest |delta|), the cells in position order split into prompt
// and generated tokens, tooltips with logprob and delta, and the strongest effects first.
import { describe, expect, it } from 'vitest';
import { attributionCells, deltaColor, deltaLightness, deltaScale, deltaShare, fmtDelta, HELPED_HUE, HURT_HUE, strongest } from '../src/attribution';
import type { AttributionResponse } from '../src/types';

function response(): AttributionResponse {
  const a = (position: number, token: string, delta: number) => ({ position, id: 100 + position, token, logprob: -2 - delta, delta });
  return {
    object: 'logitscope.attribution',
    context_tokens: 4,
    target: { id: 9, token: 'x' },
    base_logprob: -2,
    mode: 'remove',
    replacement: null,
    attributions: [a(2, 'c\n', -2), a(0, 'a', 1), a(1, ' b', 0.5), a(3, 'd', 0)],
  };
}

describe('attribution colours', () => {
  it('diverges around 0 and saturates at the scale', () => {
    expect(deltaShare(1, 2)).toBe(0.5);
    expect(deltaShare(-5, 2)).toBe(-1);
    expect(deltaShare(1, 0)).toBe(0);
    expect(deltaShare(Number.NaN, 1)).toBe(0);
    expect(deltaLightness(0, 1)).toBe(97);
    expect(deltaLightness(1, 1)).toBe(deltaLightness(-1, 1));
    expect(deltaLightness(3, 1)).toBe(deltaLightness(1, 1));
    const ds = [0, 0.25, 0.5, 1];
    for (let i = 1; i < ds.length; i++) expect(deltaLightness(ds[i], 1)).toBeLessThan(deltaLightness(ds[i - 1], 1));
    expect(deltaColor(0.5, 1)).toMatch(new RegExp(`^hsl\\(${HELPED_HUE},`));
    expect(deltaColor(-0.5, 1)).toMatch(new RegExp(`^hsl\\(${HURT_HUE},`));
  });

  it('takes the largest finite |delta| as the scale', () => {
    expect(deltaScale(response().attributions)).toBe(2);
    expect(deltaScale([])).toBe(0);
  });

  it('signs deltas', () => {
    expect(fmtDelta(0.5)).toBe('+0.500');
    expect(fmtDelta(-2)).toBe('-2.000');
    expect(fmtDelta(0)).toBe('0.000');
  });
});

describe('attribution cells', () => {
  it('are in position order, split at the prompt length, with tooltips', () => {
    const cells = attributionCells(response(), 2);
    expect(cells.map((c) => c.position)).toEqual([0, 1, 2, 3]);
    expect(cells.map((c) => c.generated)).toEqual([false, false, true, true]);
    expect(cells.map((c) => c.newline)).toEqual([false, false, true, false]);
    expect(cells[1].text).toBe('·b');
    expect(cells[2].color).toBe(deltaColor(-2, 2));
    expect(cells[0].title).toContain('without it: logprob -3.000 (with it -2.000)');
    expect(cells[0].title).toContain('delta +1.000');
    expect(cells[2].title).toContain('(generated)');
  });

  it('lists the strongest effects first', () => {
    const cells = attributionCells(response(), 4);
    expect(strongest(cells, 3).map((c) => c.position)).toEqual([2, 0, 1]);
    expect(strongest(cells, 10)).toHaveLength(4);
  });
});
