// Decision boundaries' page logic: the requests for a kept generation (256 steps at most each),
// the scales (log for temperature, top_k and the penalty, linear for top_p and min_p), an
// interval's bar geometry (open ends, a minimum width, the slider's mark), which steps and
// settings are fragile, and the numbers and sentences shown.
import { describe, expect, it } from 'vitest';
import {
  barGeometry,
  boundariesByStep,
  boundaryRequests,
  boundaryTokenIds,
  costText,
  endText,
  fmtSetting,
  fragileSettings,
  fragileSteps,
  fragileSummary,
  fragileTitle,
  MIN_BAR_WIDTH,
  position,
  scaleOf,
  sliderValue,
  type Applies,
} from '../src/boundaries';
import type { ReplayResponse, Settings, StepBoundaries } from '../src/types';

const applies = (o: Partial<Applies>): Applies => ({
  applies: true,
  value: 1,
  lo: 0.5,
  hi: 2,
  min: 0.25,
  max: 4,
  below: 7,
  above: 8,
  fragile: false,
  note: 'n',
  ...o,
});

// Step 0 of a live answer (tiny model, temperature 1.2, top_k 20, top_p 0.95, penalty 3).
const STEP0: StepBoundaries = {
  greedy: false,
  fragile: true,
  settings: {
    temperature: applies({ value: 1.2, lo: 1.1258366967903561, hi: 1.2905396660829862, min: 0.3, max: 4.8, below: 128909, above: 102240, fragile: true }),
    top_k: applies({ value: 20, lo: 20, hi: 26, min: 1, max: 151936, below: 102240, above: 102240, fragile: true }),
    top_p: applies({ value: 0.95, lo: 0.9465914933483828, hi: 1, min: 1e-9, max: 1, below: 102240, above: null, fragile: true }),
    min_p: applies({ value: 0, lo: 0, hi: 0.12543796481986647, min: 0, max: 1, below: null, above: 102240 }),
    repetition_penalty: applies({ value: 3, lo: 1.2754332226625331, hi: 12, min: 0.75, max: 12, below: 102240, above: null }),
  },
};
const GREEDY: StepBoundaries = {
  greedy: true,
  fragile: false,
  settings: {
    temperature: { applies: false, note: 'greedy' },
    top_k: { applies: false, note: 'greedy' },
    top_p: { applies: false, note: 'greedy' },
    min_p: { applies: false, note: 'greedy' },
    repetition_penalty: applies({ value: 1.1, lo: 0.9, hi: 4.4, min: 0.275, max: 4.4, below: 5, above: null }),
  },
};
const summary = (step: number, boundaries?: StepBoundaries) => ({
  step, recorded: 1, chosen: 1, changed: false, pool: 3, entropy: 1, recorded_prob: 0.5, chosen_prob: 0.5, draw: 0.3, ...(boundaries ? { boundaries } : {}),
});
const answer = (steps: ReturnType<typeof summary>[]): ReplayResponse => ({ generation: 'gen-1', chain: 'c', steps, changed: [], focus: null });
const SETTINGS: Settings = { temperature: 1.2, top_k: 20, top_p: 0.95, min_p: 0, repetition_penalty: 3, order_preset: 'hf' };

describe('requests', () => {
  it('asks for every kept step at once up to 256, else in lists of at most 256', () => {
    expect(boundaryRequests(0)).toEqual([true]);
    expect(boundaryRequests(256)).toEqual([true]);
    const r = boundaryRequests(600) as number[][];
    expect(r.map((l) => l.length)).toEqual([256, 256, 88]);
    expect(r.flat()).toEqual(Array.from({ length: 600 }, (_, i) => i));
  });
  it('collects the steps that carry boundaries from every answer', () => {
    const m = boundariesByStep([answer([summary(0, STEP0), summary(1)]), answer([summary(2, GREEDY)])]);
    expect([...m.keys()]).toEqual([0, 2]);
    expect(m.get(2)).toBe(GREEDY);
  });
  it('announces the cost at 0.25 s a step', () => {
    expect(costText(1)).toBe('about 1 s for 1 step');
    expect(costText(12)).toBe('about 3 s for 12 steps');
    expect(costText(256)).toBe('about 65 s for 256 steps');
  });
});

describe('scales and bars', () => {
  it('uses log scales for temperature, top_k and the penalty, linear for top_p and min_p', () => {
    expect(['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty'].map((n) => scaleOf(n as never))).toEqual(['log', 'log', 'linear', 'linear', 'log']);
  });
  it('places values on a log or linear scale, clamped, an empty range at 0', () => {
    expect(position(1, 0.25, 4, 'log')).toBeCloseTo(0.5, 12);
    expect(position(2, 0.25, 4, 'log')).toBeCloseTo(0.75, 12);
    expect(position(0.5, 0, 1, 'linear')).toBe(0.5);
    expect(position(10, 0, 1, 'linear')).toBe(1);
    expect(position(-1, 0, 1, 'linear')).toBe(0);
    expect(position(0.5, 0, 1, 'log')).toBe(0.5); // min 0: no log scale
    expect(position(3, 3, 3, 'log')).toBe(0);
  });
  it('draws the kept interval, the recorded value and open range ends', () => {
    const bar = barGeometry('temperature', applies({ value: 1, lo: 0.5, hi: 2, min: 0.25, max: 4 }));
    expect(bar.lo).toBeCloseTo(0.25, 12);
    expect(bar.hi).toBeCloseTo(0.75, 12);
    expect(bar.value).toBeCloseTo(0.5, 12);
    expect([bar.openLo, bar.openHi, bar.slider]).toEqual([false, false, null]);
    const p = barGeometry('top_p', STEP0.settings.top_p as Applies);
    expect(p.hi).toBe(1);
    expect(p.lo).toBeCloseTo(0.9465914933483828, 6);
    expect([p.openLo, p.openHi]).toEqual([false, true]);
    const k = barGeometry('top_k', STEP0.settings.top_k as Applies);
    expect(k.value).toBeCloseTo(Math.log(20) / Math.log(151936), 12);
  });
  it('keeps a point interval visible and inside the bar', () => {
    const one = barGeometry('top_k', applies({ value: 1, lo: 1, hi: 1, min: 1, max: 151936 }));
    expect(one.hi - one.lo).toBeCloseTo(MIN_BAR_WIDTH, 12);
    expect(one.lo).toBe(0);
    const top = barGeometry('min_p', applies({ value: 1, lo: 1, hi: 1, min: 0, max: 1 }));
    expect(top.hi).toBeCloseTo(1, 12);
    const whole = barGeometry('top_k', applies({ value: 1, lo: 1, hi: 1, min: 1, max: 1, below: null, above: null }));
    expect([whole.lo, whole.hi, whole.openLo, whole.openHi]).toEqual([0, 1, true, true]);
  });
  it("marks the slider only where it differs from the recorded value; top_k off is the vocabulary", () => {
    const t = STEP0.settings.temperature as Applies;
    expect(barGeometry('temperature', t, sliderValue('temperature', SETTINGS, t)).slider).toBeNull();
    expect(barGeometry('temperature', t, 2.4).slider).toBeCloseTo(position(2.4, 0.3, 4.8, 'log'), 12);
    const k = STEP0.settings.top_k as Applies;
    expect(sliderValue('top_k', { ...SETTINGS, top_k: 0 }, k)).toBe(151936);
    expect(sliderValue('top_k', { ...SETTINGS, top_k: -1 }, k)).toBe(151936);
    expect(barGeometry('top_k', k, 151936).slider).toBe(1);
  });
});

describe('fragile steps and text', () => {
  it('names the fragile settings and steps', () => {
    expect(fragileSettings(STEP0)).toEqual(['temperature', 'top_k', 'top_p']);
    expect(fragileSettings(GREEDY)).toEqual([]);
    const m = new Map([[3, STEP0], [1, GREEDY], [0, { ...STEP0 }]]);
    expect(fragileSteps(m)).toEqual([0, 3]);
    expect(fragileSummary(m)).toBe('2 of 3 steps fragile');
    expect(fragileSummary(new Map([[0, GREEDY]]))).toBe('0 of 1 step fragile');
  });
  it('formats top_k as an integer and the rest to 4 significant digits', () => {
    expect(fmtSetting('top_k', 26)).toBe('26');
    expect(fmtSetting('top_k', 151936)).toBe('151936');
    expect(fmtSetting('temperature', 1.1258366967903561)).toBe('1.126');
    expect(fmtSetting('top_p', 0.9465914933483828)).toBe('0.9466');
    expect(fmtSetting('top_p', 1e-9)).toBe('1e-9');
    expect(fmtSetting('min_p', 0)).toBe('0');
    expect(fmtSetting('repetition_penalty', 12)).toBe('12');
    expect(fmtSetting('temperature', Number.NaN)).toBe('—');
  });
  it("writes the chip's tooltip line", () => {
    expect(fragileTitle(STEP0)).toBe(
      'fragile choice (within 10 % of an end, recorded settings): temperature 1.2 in [1.126, 1.291]; top_k 20 in [20, 26]; top_p 0.95 in [0.9466, 1]',
    );
    expect(fragileTitle(GREEDY)).toBeNull();
  });
  it('says what lies past each end', () => {
    const text = (id: number) => `t${id}`;
    const t = STEP0.settings.temperature as Applies;
    expect(endText('temperature', t, 'below', text)).toBe('below 1.126: “t128909”');
    expect(endText('temperature', t, 'above', text)).toBe('above 1.291: “t102240”');
    const p = STEP0.settings.top_p as Applies;
    expect(endText('top_p', p, 'above', text)).toBe('no change up to 1');
    expect(endText('min_p', STEP0.settings.min_p as Applies, 'below', text)).toBe('no change down to 0');
  });
  it('lists the tokens past the ends for the text lookup', () => {
    expect(boundaryTokenIds(GREEDY)).toEqual([5]);
    expect(new Set(boundaryTokenIds(STEP0))).toEqual(new Set([128909, 102240]));
    expect(boundaryTokenIds(undefined)).toEqual([]);
  });
});
