// Side by side with model B (`serve --model-b`, POST /v1/logitscope/side_by_side): the request
// bodies (the whole kept generation, or one focus step), the steps by number, which chips carry
// the "B" flip mark and their tooltips, the row's one-line summary, and the step panel's pairs of
// candidate rows (A's i-th next to B's i-th) with B's rank of the recorded token.
import { fmtNum, fmtPercent, fmtProb } from './format';
import type { SideBySideResponse, SideCandidate, SideStep } from './types';

export const SIDE_TOP = 10;

/** The request body: every kept step, and with `step` that step's candidate lists too. */
export function sideRequest(generation: string | number, step?: number): Record<string, unknown> {
  return step === undefined ? { generation: String(generation), top: SIDE_TOP } : { generation: String(generation), step, top: SIDE_TOP };
}

/** The answer's steps by step number. */
export function sideSteps(r: SideBySideResponse): Map<number, SideStep> {
  return new Map(r.steps.map((s) => [s.step, s]));
}

/** The steps whose top-1 differs between the models, in order. */
export function flipSteps(r: SideBySideResponse): number[] {
  return r.steps.filter((s) => s.flip).map((s) => s.step);
}

/** A chip's tooltip line: the KL, both top-1s, and B's rank and probability of the recorded token. */
export function sideTitle(s: SideStep, modelB: string): string {
  const head = s.flip ? `${modelB}'s top-1 differs (id ${s.top_b}, A's id ${s.top_a})` : `${modelB}'s top-1 is the same (id ${s.top_b})`;
  return `${head} · KL(A‖B) ${fmtNum(s.kl)} nats · ${modelB} ranks the recorded token ${s.rank_b} (p ${fmtProb(s.prob_b)})`;
}

/** The row's summary line. */
export function sideSummary(r: SideBySideResponse): string {
  const flips = flipSteps(r).length;
  return `vs ${r.model_b}: mean KL ${fmtNum(r.kl_mean)} nats · same top-1 at ${fmtPercent(r.same_top1)} of ${r.steps.length} steps · ${flips} flip${flips === 1 ? '' : 's'}`;
}

export interface SidePair {
  rank: number;
  a: SideCandidate | null;
  b: SideCandidate | null;
}

/** The focus step's candidate lists as rows: rank i pairs A's i-th with B's i-th (either may be missing). */
export function sidePairs(r: SideBySideResponse): SidePair[] {
  const f = r.focus;
  if (!f) return [];
  const n = Math.max(f.a.length, f.b.length);
  return Array.from({ length: n }, (_, i) => ({ rank: i + 1, a: f.a[i] ?? null, b: f.b[i] ?? null }));
}

/** The focus step's line: KL, whether the top-1 flips, B's rank of the recorded token. */
export function focusText(s: SideStep, modelB: string): string {
  const flip = s.flip ? `the top-1 flips (A id ${s.top_a}, ${modelB} id ${s.top_b})` : 'the same top-1';
  return `KL(A‖B) ${fmtNum(s.kl)} nats · ${flip} · ${modelB} ranks the recorded token ${s.rank_b} (p ${fmtProb(s.prob_b)})`;
}
