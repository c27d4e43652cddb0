// The candidate rows of a step: the best rows ranked 1..n, the step's own token added once after
// them with its true rank when it lies beyond them, and that rank from the raw logits re-scored
// under the recorded settings (penalties change the order), equal to a plain sort's.
import { describe, expect, it } from 'vitest';
import { candidateRows, rankOf, recordedRank, recordedSettings } from '../src/candidates';
import type { Branch, Step } from '../src/types';

/** Rank by a full sort: score descending, ties by ascending id. */
function sortedRank(scores: ArrayLike<number>, id: number): number {
  const ids = Array.from({ length: scores.length }, (_, i) => i).filter((i) => scores[i] > Number.NEGATIVE_INFINITY);
  ids.sort((a, b) => scores[b] - scores[a] || a - b);
  return ids.indexOf(id) + 1;
}

describe('rankOf', () => {
  it('counts the better scores, ties going to lower ids', () => {
    const s = new Float32Array([1, 3, 3, -Infinity, 2, 3]);
    expect(rankOf(s, 1)).toBe(1);
    expect(rankOf(s, 2)).toBe(2);
    expect(rankOf(s, 5)).toBe(3);
    expect(rankOf(s, 4)).toBe(4);
    expect(rankOf(s, 0)).toBe(5);
    for (const id of [0, 1, 2, 4, 5]) expect(rankOf(s, id)).toBe(sortedRank(s, id));
  });

  it('has no rank for a removed token or an id outside the vocabulary', () => {
    const s = new Float32Array([1, -Infinity, Number.NaN]);
    expect(rankOf(s, 1)).toBeNull();
    expect(rankOf(s, 2)).toBeNull();
    expect(rankOf(s, 3)).toBeNull();
    expect(rankOf(s, -1)).toBeNull();
  });
});

describe('candidateRows', () => {
  const top = [
    { id: 5, prob: 0.5, score: 2 },
    { id: 9, prob: 0.3, score: 1 },
  ];

  it('adds the recorded token beyond the shown rows as an extra row with its rank', () => {
    const rows = candidateRows(top, [{ id: 42, prob: 0.01, score: -1, rank: 12, why: 'recorded' }]);
    expect(rows.map((r) => [r.id, r.rank, r.extra])).toEqual([
      [5, 1, null],
      [9, 2, null],
      [42, 12, 'recorded'],
    ]);
    expect(rows[2].removed).toBe(false);
  });

  it('adds nothing for a token among the rows, and each extra token once', () => {
    expect(candidateRows(top, [{ id: 9, prob: 0.3, score: 1, rank: 2, why: 'recorded' }])).toHaveLength(2);
    const rows = candidateRows(top, [
      { id: 42, prob: 0, score: -Infinity, rank: null, why: 'recorded' },
      { id: 42, prob: 0, score: -Infinity, rank: null, why: 'chosen' },
      { id: 43, prob: 0.02, score: 0, rank: 11, why: 'chosen' },
    ]);
    expect(rows.map((r) => [r.id, r.extra, r.removed])).toEqual([
      [5, null, false],
      [9, null, false],
      [42, 'recorded', true],
      [43, 'chosen', false],
    ]);
  });
});

describe('recordedRank', () => {
  // 40 tokens; the history repeats ids 0..4, which repetition_penalty 3 pushes down.
  const V = 40;
  const logits = new Float32Array(V);
  for (let i = 0; i < V; i++) logits[i] = Math.fround(3 - 0.13 * i + 0.05 * Math.sin(i));
  const settings = { temperature: 1.5, top_k: 0, top_p: 1, min_p: 0, repetition_penalty: 1, order_preset: 'hf' as const };
  const chosenStep = (id: number, draw: number | null) => ({ step: 2, draw, chosen: { id, prob: 0.01 } }) as unknown as Step;
  const branch = (steps: Step[]): Branch =>
    ({
      id: 1,
      header: {
        prompt_token_ids: [0, 1, 2],
        order_preset: 'hf',
        settings: { repetition_penalty: { value: 3, source: 'request' }, temperature: { value: 1.5, source: 'request' }, top_k: { value: 20, source: 'generation_config.json' } },
      },
      steps,
      settings,
    }) as unknown as Branch;

  it('reads the effective settings from the header', () => {
    const s = recordedSettings(branch([]));
    expect(s).toMatchObject({ repetition_penalty: 3, temperature: 1.5, top_k: 20, top_p: 1, order_preset: 'hf' });
  });

  it('ranks by the penalised scores, as a sort of them does', () => {
    const history = [0, 1, 2, 3, 4];
    const penalised = Float32Array.from(logits);
    for (const t of new Set(history)) penalised[t] = penalised[t] < 0 ? penalised[t] * 3 : penalised[t] / 3;
    const b = branch([chosenStep(3, 0.5), chosenStep(4, 0.5)]);
    for (const id of [0, 3, 7, 15]) {
      const r = recordedRank(logits, b, chosenStep(id, 0.5));
      expect(r.rank).toBe(sortedRank(penalised, id));
    }
    expect(recordedRank(logits, b, chosenStep(3, 0.5)).rank).toBeGreaterThan(4); // raw rank 4, pushed down
    expect(recordedRank(logits, b, chosenStep(35, 0.5)).rank).toBeNull(); // beyond top_k 20: not in the final distribution
    const greedy = recordedRank(logits, b, chosenStep(5, null)); // the best token unpenalised: the greedy pick
    expect(greedy).toMatchObject({ rank: 1, agrees: true });
  });
});
