// The logit lens strip: one cell per layer in layer order, the chosen token's rank and logprob
// read from rank_of/logprob_of by id, the first-chosen and settled layers marked, colours by
// probability (the chips' scale) or by -log rank (monotonic, floored at RANK_FLOOR).
import { describe, expect, it } from 'vitest';
import { probColor } from '../src/colors';
import { layerName, lensSummary, RANK_FLOOR, rankColor, rankScore, stripCells } from '../src/lens';
import type { LensLayer, LensResponse } from '../src/types';

const CHOSEN = 42;
const RUNNER = 7;

function layer(l: number, rank: number, prob: number, pick: number): LensLayer {
  return {
    layer: l,
    top: [{ id: pick, token: `t${pick}`, logprob: -0.1 }],
    entropy: 0.5 * l,
    rank_of: { [String(CHOSEN)]: rank, [String(RUNNER)]: 2 },
    logprob_of: { [String(CHOSEN)]: -rank, [String(RUNNER)]: -1 },
    sampler_choice: { id: pick, token: pick === CHOSEN ? ' the' : 'x' },
    chosen_prob: prob,
  };
}

function response(): LensResponse {
  return {
    object: 'logitscope.lens',
    n_layers: 3,
    position: 4,
    context_tokens: 5,
    chain: 'temperature(t=0.7)',
    draw: 0.25,
    chosen: { id: CHOSEN, token: ' the' },
    runner_up: { id: RUNNER, token: 'x' },
    first_chosen_layer: 1,
    settled_layer: 2,
    runner_up_lost_at: 0,
    // out of order on purpose: the strip sorts by layer
    layers: [layer(3, 1, 0.9, CHOSEN), layer(0, 500, 0, RUNNER), layer(2, 1, 0.6, CHOSEN), layer(1, 3, 0.1, CHOSEN)],
  };
}

describe('logit lens strip', () => {
  it('has one cell per layer, in layer order, with the chosen token tracked', () => {
    const cells = stripCells(response(), 'prob');
    expect(cells.map((c) => c.layer)).toEqual([0, 1, 2, 3]);
    expect(cells.map((c) => c.rank)).toEqual([500, 3, 1, 1]);
    expect(cells.map((c) => c.logprob)).toEqual([-500, -3, -1, -1]);
    expect(cells.map((c) => c.prob)).toEqual([0, 0.1, 0.6, 0.9]);
    expect(cells.map((c) => c.picksChosen)).toEqual([false, true, true, true]);
    expect(cells.map((c) => c.first)).toEqual([false, true, false, false]);
    expect(cells.map((c) => c.settled)).toEqual([false, false, true, false]);
  });

  it('colours by probability after the chain or by raw rank', () => {
    const byProb = stripCells(response(), 'prob');
    expect(byProb.map((c) => c.color)).toEqual([0, 0.1, 0.6, 0.9].map(probColor));
    const byRank = stripCells(response(), 'rank');
    expect(byRank.map((c) => c.color)).toEqual([500, 3, 1, 1].map(rankColor));
  });

  it('says the layer, its entropy and the chain’s pick in the tooltip', () => {
    const cells = stripCells(response(), 'prob');
    expect(cells[0].title).toContain('layer 0 (the embedding)');
    expect(cells[0].title).toContain('entropy 0.000 nats');
    expect(cells[0].title).toContain('the chain picks “x” (id 7)');
    expect(cells[1].title).toContain('first layer choosing it');
    expect(cells[2].title).toContain('settled from here');
    expect(cells[3].title).toContain('“·the”: raw rank 1'); // visible whitespace
    expect(cells[3].title).toContain('layer 3 (the output)');
  });

  it('tolerates an untracked chosen token', () => {
    const r = response();
    r.layers = [{ ...layer(0, 1, 0, RUNNER), rank_of: {}, logprob_of: {} }];
    const [c] = stripCells(r, 'rank');
    expect(c.rank).toBeNull();
    expect(c.logprob).toBeNull();
    expect(c.color).toBe(rankColor(null));
  });

  it('rank score: 1 at rank 1, falling with -log rank, 0 from RANK_FLOOR on', () => {
    expect(rankScore(1)).toBe(1);
    const ranks = [1, 2, 5, 10, 100, 999];
    for (let i = 1; i < ranks.length; i++) expect(rankScore(ranks[i])).toBeLessThan(rankScore(ranks[i - 1]));
    expect(rankScore(10)).toBeCloseTo(2 / 3, 12);
    expect(rankScore(RANK_FLOOR)).toBe(0);
    expect(rankScore(151936)).toBe(0);
    expect(rankScore(null)).toBe(0);
    expect(rankScore(0)).toBe(0);
    expect(rankColor(1)).toBe('hsl(120.0, 70%, 78%)');
  });

  it('names layers and summarises the lens', () => {
    expect(layerName(0, 24)).toMatch(/embedding/);
    expect(layerName(24, 24)).toMatch(/output/);
    expect(layerName(5, 24)).toBe('layer 5');
    expect(lensSummary(response())).toBe(
      'The chain would first choose it at layer 1; every layer from 2 on does; the runner-up “x” is last ahead of it at layer 0.',
    );
    const none = { ...response(), first_chosen_layer: null, settled_layer: null, runner_up: null };
    expect(lensSummary(none)).toBe('No layer’s chain chooses it with the recorded draw.');
  });
});
