// Decision boundaries in the page (docs/lab.md, replay --boundaries): which requests to send for
// a kept generation, each setting's scale (log for temperature, top_k and repetition_penalty,
// linear for top_p and min_p), an interval as bar geometry over its range [min, max], the
// fragile steps of an answer, and the numbers and sentences the bars, chips and tooltips show.
// Pure: boundaries_view.tsx draws the bars, tokens.tsx marks the chips.
import type { BoundaryName, BoundarySetting, ReplayResponse, Settings, StepBoundaries } from './types';

export const BOUNDARY_NAMES: readonly BoundaryName[] = ['temperature', 'top_k', 'top_p', 'min_p', 'repetition_penalty'];
/** The most steps one request may ask for, and the server's cost of one step at Qwen's vocabulary. */
export const MAX_BOUNDARY_STEPS = 256;
export const SECONDS_PER_STEP = 0.25;
/** The narrowest kept interval drawn, as a share of the bar (a single top_k value stays visible). */
export const MIN_BAR_WIDTH = 0.012;

export type Applies = Extract<BoundarySetting, { applies: true }>;
export type Scale = 'log' | 'linear';

export const scaleOf = (name: BoundaryName): Scale => (name === 'top_p' || name === 'min_p' ? 'linear' : 'log');

/** `"boundaries"` of each request for `kept` steps: `true` up to 256, else lists of at most 256 steps. */
export function boundaryRequests(kept: number): (true | number[])[] {
  if (kept <= MAX_BOUNDARY_STEPS) return [true];
  const out: number[][] = [];
  for (let a = 0; a < kept; a += MAX_BOUNDARY_STEPS) out.push(Array.from({ length: Math.min(MAX_BOUNDARY_STEPS, kept - a) }, (_, i) => a + i));
  return out;
}

/** Each answered step's boundaries, by step (the answers of boundaryRequests' requests). */
export function boundariesByStep(answers: ReplayResponse[]): Map<number, StepBoundaries> {
  const m = new Map<number, StepBoundaries>();
  for (const r of answers) for (const s of r.steps) if (s.boundaries) m.set(s.step, s.boundaries);
  return m;
}

/** x's place in [min, max] as 0..1, clamped; a log scale needs min > 0 (else linear); an empty range: 0. */
export function position(x: number, min: number, max: number, scale: Scale): number {
  if (!(max > min)) return 0;
  const log = scale === 'log' && min > 0;
  const f = log ? (Math.log(Math.max(x, min)) - Math.log(min)) / (Math.log(max) - Math.log(min)) : (x - min) / (max - min);
  return Math.min(1, Math.max(0, f));
}

export interface Bar {
  /** The kept interval as shares of the bar (at least MIN_BAR_WIDTH wide). */
  lo: number;
  hi: number;
  /** The recorded value. */
  value: number;
  /** No change found down to min / up to max: the interval goes on past the bar's end. */
  openLo: boolean;
  openHi: boolean;
  /** The slider's value when it differs from the recorded one, else null. */
  slider: number | null;
}

/** `b`'s interval drawn over [min, max] on `name`'s scale; `slider`: the slider's value (in the setting's own terms). */
export function barGeometry(name: BoundaryName, b: Applies, slider: number | null = null): Bar {
  const scale = scaleOf(name);
  const at = (x: number) => position(x, b.min, b.max, scale);
  let lo = at(b.lo);
  let hi = at(b.hi);
  if (b.max > b.min && hi - lo < MIN_BAR_WIDTH) {
    const mid = Math.min(1 - MIN_BAR_WIDTH / 2, Math.max(MIN_BAR_WIDTH / 2, (lo + hi) / 2));
    lo = mid - MIN_BAR_WIDTH / 2;
    hi = mid + MIN_BAR_WIDTH / 2;
  } else if (!(b.max > b.min)) {
    hi = 1; // one value only: the whole bar
  }
  const differs = slider !== null && Number.isFinite(slider) && Math.abs(slider - b.value) > 1e-9 * Math.max(1, Math.abs(b.value));
  return { lo, hi, value: at(b.value), openLo: b.below === null, openHi: b.above === null, slider: differs ? at(slider) : null };
}

/** The slider's value in the boundary's terms: top_k off (0 or -1) is the whole vocabulary (the range's max). */
export function sliderValue(name: BoundaryName, settings: Settings, b: Applies): number {
  const v = settings[name];
  return name === 'top_k' && v <= 0 ? b.max : v;
}

/** A setting's value as the page shows it: top_k an integer, the others 4 significant digits. */
export function fmtSetting(name: BoundaryName, x: number): string {
  if (!Number.isFinite(x)) return '—';
  if (name === 'top_k') return String(Math.round(x));
  return String(Number(x.toPrecision(4)));
}

/** "[lo, hi]" as the page shows it. */
export const intervalText = (name: BoundaryName, b: Applies) => `[${fmtSetting(name, b.lo)}, ${fmtSetting(name, b.hi)}]`;

/** The settings that apply and are fragile, in BOUNDARY_NAMES order. */
export function fragileSettings(sb: StepBoundaries): BoundaryName[] {
  return BOUNDARY_NAMES.filter((n) => {
    const b = sb.settings[n];
    return b !== undefined && b.applies && b.fragile;
  });
}

/** The steps whose choice is fragile (some setting's value within 10 % of an end), ascending. */
export function fragileSteps(m: Map<number, StepBoundaries>): number[] {
  return [...m].filter(([, b]) => b.fragile).map(([k]) => k).sort((a, b) => a - b);
}

/** The chip tooltip's line: "fragile choice: top_p 0.95 in [0.9466, 1]; temperature 1.2 in [1.126, 1.291]", or null. */
export function fragileTitle(sb: StepBoundaries): string | null {
  const parts = fragileSettings(sb).map((n) => {
    const b = sb.settings[n] as Applies;
    return `${n} ${fmtSetting(n, b.value)} in ${intervalText(n, b)}`;
  });
  if (parts.length === 0) return sb.fragile ? 'fragile choice' : null;
  return `fragile choice (within 10 % of an end, recorded settings): ${parts.join('; ')}`;
}

/**
 * What lies past one end: "below 1.126: “x”" (the token chosen just past it), or for a range
 * end "no change down to 0.3" / "up to 4.8" (the range searched).
 */
export function endText(name: BoundaryName, b: Applies, side: 'below' | 'above', text: (id: number) => string): string {
  const id = side === 'below' ? b.below : b.above;
  if (id === null) return side === 'below' ? `no change down to ${fmtSetting(name, b.min)}` : `no change up to ${fmtSetting(name, b.max)}`;
  return `${side} ${fmtSetting(name, side === 'below' ? b.lo : b.hi)}: “${text(id)}”`;
}

/** The row's summary once computed: "3 of 10 steps fragile". */
export function fragileSummary(m: Map<number, StepBoundaries>): string {
  const n = fragileSteps(m).length;
  return `${n} of ${m.size} step${m.size === 1 ? '' : 's'} fragile`;
}

/** The cost the button's tooltip announces: "about 3 s for 12 steps" (at Qwen's vocabulary). */
export function costText(steps: number): string {
  const s = steps * SECONDS_PER_STEP;
  return `about ${s < 10 ? Math.max(1, Math.round(s)) : Math.round(s / 5) * 5} s for ${steps} step${steps === 1 ? '' : 's'}`;
}

/** The token ids a step's boundaries name (past each end), for the panel's text lookup. */
export function boundaryTokenIds(sb: StepBoundaries | undefined): number[] {
  if (!sb) return [];
  const ids: number[] = [];
  for (const name of BOUNDARY_NAMES) {
    const b = sb.settings[name];
    if (b?.applies) for (const id of [b.below, b.above]) if (id !== null) ids.push(id);
  }
  return ids;
}
