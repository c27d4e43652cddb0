import { describe, expect, it } from 'vitest';
import { expertsView, shareColor } from '../src/experts';
import { requestBody } from '../src/stream';
import type { Settings } from '../src/types';

describe('expertsView', () => {
  it('shapes one row per layer, best first, with shares of the chosen weight; dense layers kept', () => {
    const v = expertsView({ experts: [[], [[3, 0.6], [7, 0.2]], [[7, 0.5], [1, 0.5]]] })!;
    expect(v.k).toBe(2);
    expect(v.rows.map((r) => r.layer)).toEqual([0, 1, 2]);
    expect(v.rows[0]).toEqual({ layer: 0, dense: true, cells: [], total: 0 });
    expect(v.rows[1].dense).toBe(false);
    expect(v.rows[1].cells.map((c) => c.expert)).toEqual([3, 7]);
    expect(v.rows[1].total).toBeCloseTo(0.8, 12);
    expect(v.rows[1].cells[0].share).toBeCloseTo(0.75, 12); // not renormalised: 0.6 of 0.8
    expect(v.rows[1].cells[1].share).toBeCloseTo(0.25, 12);
    expect(v.rows[2].cells.map((c) => c.share)).toEqual([0.5, 0.5]);
    expect(v.mostUsed).toEqual([
      { expert: 7, layers: 2 },
      { expert: 1, layers: 1 },
      { expert: 3, layers: 1 },
    ]);
  });

  it('zero weights share equally', () => {
    const v = expertsView({ experts: [[[0, 0], [1, 0]]] })!;
    expect(v.rows[0].cells.map((c) => c.share)).toEqual([0.5, 0.5]);
  });

  it('is null without a router choice or for a malformed field', () => {
    expect(expertsView({})).toBeNull();
    expect(expertsView({ experts: [] })).toBeNull();
    expect(expertsView({ experts: [[], []] })).toBeNull(); // every layer dense
    expect(expertsView({ experts: [[[1, 'x']]] })).toBeNull();
    expect(expertsView({ experts: [[[-1, 0]]] })).toBeNull();
    expect(expertsView({ experts: [[[1.5, 0.2]]] })).toBeNull();
    expect(expertsView({ experts: [[1, 0.2]] })).toBeNull();
    expect(expertsView({ experts: 'no' })).toBeNull();
  });

  it('shades from pale (share 0) to deep (share 1), clamped', () => {
    expect(shareColor(0)).toBe('hsl(215, 70%, 96.0%)');
    expect(shareColor(1)).toBe('hsl(215, 70%, 46.0%)');
    expect(shareColor(2)).toBe(shareColor(1));
    expect(shareColor(Number.NaN)).toBe(shareColor(0));
  });
});

describe('requestBody experts', () => {
  const settings = { temperature: 1, top_k: 0, top_p: 1, min_p: 0, repetition_penalty: 1, order_preset: 'hf' } as unknown as Settings;
  it('asks for the router choice only when told (an MoE model)', () => {
    const plain = requestBody({ kind: 'completion', prompt: 'x', settings, maxTokens: 4, seed: '' });
    expect(plain.logitscope).toEqual({ trace: 10, keep: true, order_preset: 'hf' });
    const moe = requestBody({ kind: 'completion', prompt: 'x', settings, maxTokens: 4, seed: '', experts: true });
    expect(moe.logitscope).toEqual({ trace: 10, keep: true, order_preset: 'hf', experts: true });
  });
});
