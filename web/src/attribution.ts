// Leave-one-out attribution as the page draws it: one cell per context token, coloured on a
// diverging scale by delta = base logprob - logprob without the token (blue: the token made the
// target likelier, orange: less likely; white at 0, full colour at the largest |delta| of the
// context), marked as prompt or generated, and the tokens with the largest effects.
import { fmtNum } from './format';
import type { Attribution, AttributionResponse } from './types';
import { showWhitespace } from './utf8';

export const HELPED_HUE = 215;
export const HURT_HUE = 25;

/** delta / scale clamped to [-1, 1] (0 when the scale or delta is not a positive finite number). */
export function deltaShare(delta: number, scale: number): number {
  if (!Number.isFinite(delta) || !Number.isFinite(scale) || scale <= 0) return 0;
  return Math.max(-1, Math.min(1, delta / scale));
}

/** Lightness 97% at delta 0 down to 52% at |delta| >= scale. */
export function deltaLightness(delta: number, scale: number): number {
  return 97 - 45 * Math.abs(deltaShare(delta, scale));
}

export function deltaColor(delta: number, scale: number): string {
  const hue = deltaShare(delta, scale) >= 0 ? HELPED_HUE : HURT_HUE;
  return `hsl(${hue}, 80%, ${deltaLightness(delta, scale).toFixed(1)}%)`;
}

/** The colour scale's end: the largest finite |delta| (0 when there is none). */
export function deltaScale(attributions: readonly Attribution[]): number {
  let m = 0;
  for (const a of attributions) if (Number.isFinite(a.delta)) m = Math.max(m, Math.abs(a.delta));
  return m;
}

export function fmtDelta(delta: number): string {
  return delta > 0 ? `+${fmtNum(delta)}` : fmtNum(delta);
}

export interface AttributionCell {
  position: number;
  id: number;
  text: string;
  delta: number;
  logprob: number;
  /** Generated before the step (after the prompt) rather than part of the prompt. */
  generated: boolean;
  /** The token's text ends a line (the map breaks the line after it). */
  newline: boolean;
  color: string;
  title: string;
}

/** The context in position order; positions >= promptLength are the generated tokens. */
export function attributionCells(r: AttributionResponse, promptLength: number): AttributionCell[] {
  const scale = deltaScale(r.attributions);
  return [...r.attributions]
    .sort((a, b) => a.position - b.position)
    .map((a) => ({
      position: a.position,
      id: a.id,
      text: showWhitespace(a.token),
      delta: a.delta,
      logprob: a.logprob,
      generated: a.position >= promptLength,
      newline: a.token.endsWith('\n'),
      color: deltaColor(a.delta, scale),
      title: `position ${a.position} · id ${a.id} · “${showWhitespace(a.token)}”${a.position >= promptLength ? ' (generated)' : ''}\nwithout it: logprob ${fmtNum(a.logprob)} (with it ${fmtNum(r.base_logprob)})\ndelta ${fmtDelta(a.delta)}`,
    }));
}

/** The `n` cells with the largest |delta|, largest first (ties: earlier position first). */
export function strongest(cells: readonly AttributionCell[], n: number): AttributionCell[] {
  const size = (c: AttributionCell) => (Number.isFinite(c.delta) ? Math.abs(c.delta) : -1);
  return [...cells].sort((a, b) => size(b) - size(a) || a.position - b.position).slice(0, n);
}
