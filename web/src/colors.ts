// Chip colours. By probability: a hue from red (p = 0) to green (p = 1), monotonic in p. By
// raw rank, as GLTR: green top-1, yellow top-10, red top-100, purple beyond. By entropy of the
// final distribution: pale for a sure step, deep blue for a spread one (saturating at 4 nats).
import type { Step } from './types';

export type ColorMode = 'prob' | 'rank' | 'entropy';
export const COLOR_MODES: { value: ColorMode; label: string }[] = [
  { value: 'prob', label: 'probability of the chosen token' },
  { value: 'rank', label: 'raw rank (GLTR)' },
  { value: 'entropy', label: 'entropy after the chain' },
];

export type RankBucket = 'top1' | 'top10' | 'top100' | 'beyond';
export const RANK_COLORS: Record<RankBucket, string> = {
  top1: '#b7e4b0',
  top10: '#f6e58d',
  top100: '#f5a3a3',
  beyond: '#d6b4f0',
};
export const RANK_LABELS: Record<RankBucket, string> = {
  top1: 'rank 1',
  top10: 'rank 2–10',
  top100: 'rank 11–100',
  beyond: 'rank > 100',
};

export function rankBucket(rank: number): RankBucket {
  if (rank <= 1) return 'top1';
  if (rank <= 10) return 'top10';
  if (rank <= 100) return 'top100';
  return 'beyond';
}

const clamp01 = (x: number) => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

/** The hue (degrees) for a probability: 0 (red) at p = 0 up to 120 (green) at p = 1. */
export function probHue(p: number): number {
  return 120 * Math.sqrt(clamp01(p)); // sqrt spreads the low probabilities, where most tokens sit
}

export function probColor(p: number): string {
  return `hsl(${probHue(p).toFixed(1)}, 70%, 78%)`;
}

/** Lightness for an entropy in nats: 95% at 0 down to 55% at 4 nats and beyond. */
export function entropyLightness(h: number): number {
  return 95 - 40 * clamp01(h / 4);
}

export function entropyColor(h: number): string {
  return `hsl(215, 80%, ${entropyLightness(h).toFixed(1)}%)`;
}

export function chipColor(step: Step, mode: ColorMode): string {
  switch (mode) {
    case 'prob':
      return probColor(step.chosen.prob);
    case 'rank':
      return RANK_COLORS[rankBucket(step.chosen.raw_rank)];
    case 'entropy':
      return entropyColor(step.entropy_after);
  }
}

/** The legend's swatches for a mode. */
export function legend(mode: ColorMode): { color: string; label: string }[] {
  switch (mode) {
    case 'prob':
      return [0, 0.1, 0.5, 1].map((p) => ({ color: probColor(p), label: `p = ${p}` }));
    case 'rank':
      return (Object.keys(RANK_COLORS) as RankBucket[]).map((b) => ({ color: RANK_COLORS[b], label: RANK_LABELS[b] }));
    case 'entropy':
      return [0, 1, 2, 4].map((h) => ({ color: entropyColor(h), label: `${h}${h === 4 ? '+' : ''} nats` }));
  }
}
