// Side by side with model B: the request bodies, the flip steps and chip tooltips, the row's
// summary, the focus step's paired candidate rows and its line.
import { describe, expect, it } from 'vitest';
import { flipSteps, focusText, sidePairs, sideRequest, sideSteps, sideSummary, sideTitle, SIDE_TOP } from '../src/side_by_side';
import type { SideBySideResponse, SideStep } from '../src/types';

const step = (o: Partial<SideStep>): SideStep => ({ step: 0, token: 5, kl: 0.5, top_a: 5, top_b: 5, flip: false, prob_b: 0.25, rank_b: 1, ...o });

const answer = (o: Partial<SideBySideResponse> = {}): SideBySideResponse => ({
  object: 'logitscope.side_by_side',
  generation: 'gen-1',
  model_a: 'ta',
  model_b: 'tb',
  steps: [step({ step: 0 }), step({ step: 1, flip: true, top_b: 9, kl: 2.25, rank_b: 3, prob_b: 1e-5 }), step({ step: 2, flip: true, top_a: 7 })],
  kl_mean: 1.5,
  same_top1: 1 / 3,
  focus: null,
  ...o,
});

describe('side by side', () => {
  it('asks for every step, or a focus step too, with the same top', () => {
    expect(sideRequest('gen-1')).toEqual({ generation: 'gen-1', top: SIDE_TOP });
    expect(sideRequest(4, 3)).toEqual({ generation: '4', step: 3, top: SIDE_TOP });
  });

  it('finds the flip steps and indexes the steps', () => {
    const r = answer();
    expect(flipSteps(r)).toEqual([1, 2]);
    expect(sideSteps(r).get(1)?.top_b).toBe(9);
    expect(sideSteps(r).has(3)).toBe(false);
    expect(flipSteps(answer({ steps: [] }))).toEqual([]);
  });

  it('titles a chip with the KL and B’s rank and probability', () => {
    expect(sideTitle(step({ step: 1, flip: true, top_b: 9, kl: 2.25, rank_b: 3, prob_b: 1e-5 }), 'tb')).toBe(
      "tb's top-1 differs (id 9, A's id 5) · KL(A‖B) 2.250 nats · tb ranks the recorded token 3 (p 1.0e-5)",
    );
    expect(sideTitle(step({}), 'tb')).toBe("tb's top-1 is the same (id 5) · KL(A‖B) 0.500 nats · tb ranks the recorded token 1 (p 0.2500)");
    expect(sideTitle(step({ kl: null, prob_b: null }), 'tb')).toContain('KL(A‖B) — nats');
  });

  it('sums the row up in one line', () => {
    expect(sideSummary(answer())).toBe('vs tb: mean KL 1.500 nats · same top-1 at 33.3% of 3 steps · 2 flips');
    expect(sideSummary(answer({ steps: [step({ flip: true })], same_top1: 0, kl_mean: null }))).toBe('vs tb: mean KL — nats · same top-1 at 0.00% of 1 steps · 1 flip');
  });

  it('pairs the focus lists rank by rank', () => {
    expect(sidePairs(answer())).toEqual([]);
    const a = [
      { id: 1, token: 'x', logprob: -0.1, prob: 0.9 },
      { id: 2, token: 'y', logprob: -3, prob: 0.05 },
    ];
    const b = [{ id: 2, token: 'y', logprob: -0.5, prob: 0.6 }];
    const pairs = sidePairs(answer({ focus: { step: 1, a, b } }));
    expect(pairs).toEqual([
      { rank: 1, a: a[0], b: b[0] },
      { rank: 2, a: a[1], b: null },
    ]);
  });

  it('says the focus step’s KL, flip and rank', () => {
    expect(focusText(step({ flip: true, top_b: 9 }), 'tb')).toBe('KL(A‖B) 0.500 nats · the top-1 flips (A id 5, tb id 9) · tb ranks the recorded token 1 (p 0.2500)');
    expect(focusText(step({}), 'tb')).toContain('the same top-1');
  });
});
