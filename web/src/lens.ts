// The logit lens as the page draws it: one strip cell per layer of a lens response, coloured
// by the chosen token's probability after the chain (the chips' red-to-green scale) or by its
// raw rank (-log rank, green at rank 1 down to red at rank 1000 and beyond), with the first
// layer whose chain would choose it and the layer from which every later one does marked.
import { fmtNum, fmtProb } from './format';
import { probColor } from './colors';
import type { LensLayer, LensResponse } from './types';
import { showWhitespace } from './utf8';

export type LensColorMode = 'prob' | 'rank';
export const LENS_COLOR_MODES: { value: LensColorMode; label: string }[] = [
  { value: 'prob', label: 'probability after the chain' },
  { value: 'rank', label: 'raw rank' },
];

/** Ranks at or beyond this one get the bottom of the rank scale. */
export const RANK_FLOOR = 1000;

/** -log rank scaled to [0, 1]: 1 at rank 1, 0 at RANK_FLOOR and beyond (and for no rank). */
export function rankScore(rank: number | null | undefined): number {
  if (rank === null || rank === undefined || !Number.isFinite(rank) || rank < 1) return 0;
  return 1 - Math.min(1, Math.log(rank) / Math.log(RANK_FLOOR));
}

export function rankColor(rank: number | null | undefined): string {
  return `hsl(${(120 * rankScore(rank)).toFixed(1)}, 70%, 78%)`;
}

/** What a layer index means: 0 is the token embedding, n_layers the model's own logits. */
export function layerName(layer: number, nLayers: number): string {
  if (layer === 0) return 'layer 0 (the embedding)';
  if (layer === nLayers) return `layer ${layer} (the output)`;
  return `layer ${layer}`;
}

export interface StripCell {
  layer: number;
  /** The chosen token's raw rank and logprob at this layer (null when the server did not track it). */
  rank: number | null;
  logprob: number | null;
  /** Its probability after the chain (0: the chain removed it). */
  prob: number;
  entropy: number;
  /** Whether the chain with the recorded draw picks the chosen token from this layer. */
  picksChosen: boolean;
  first: boolean;
  settled: boolean;
  color: string;
  title: string;
}

const tracked = (m: Record<string, number>, id: number): number | null => {
  const v = m[String(id)];
  return typeof v === 'number' ? v : null;
};

function cellTitle(lens: LensResponse, l: LensLayer, rank: number | null, logprob: number | null): string {
  const marks = [l.layer === lens.first_chosen_layer ? 'first layer choosing it' : '', l.layer === lens.settled_layer ? 'settled from here' : ''].filter(Boolean);
  return [
    `${layerName(l.layer, lens.n_layers)}${marks.length ? ` (${marks.join(', ')})` : ''}`,
    `entropy ${fmtNum(l.entropy)} nats`,
    `the chain picks “${showWhitespace(l.sampler_choice.token)}” (id ${l.sampler_choice.id})`,
    `“${showWhitespace(lens.chosen.token)}”: raw rank ${rank ?? '—'}, logprob ${fmtNum(logprob)}, p ${fmtProb(l.chosen_prob)} after the chain`,
  ].join('\n');
}

/** One cell per layer the response carries (n_layers + 1 when it carries all), in layer order. */
export function stripCells(lens: LensResponse, mode: LensColorMode): StripCell[] {
  const id = lens.chosen.id;
  return [...lens.layers]
    .sort((a, b) => a.layer - b.layer)
    .map((l) => {
      const rank = tracked(l.rank_of, id);
      const logprob = tracked(l.logprob_of, id);
      return {
        layer: l.layer,
        rank,
        logprob,
        prob: l.chosen_prob,
        entropy: l.entropy,
        picksChosen: l.sampler_choice.id === id,
        first: l.layer === lens.first_chosen_layer,
        settled: l.layer === lens.settled_layer,
        color: mode === 'prob' ? probColor(l.chosen_prob) : rankColor(rank),
        title: cellTitle(lens, l, rank, logprob),
      };
    });
}

/** The sentence under the strip: where the choice appears, settles, and the runner-up falls behind. */
export function lensSummary(lens: LensResponse): string {
  const parts: string[] = [];
  parts.push(
    lens.first_chosen_layer === null
      ? 'No layer’s chain chooses it with the recorded draw'
      : `The chain would first choose it at layer ${lens.first_chosen_layer}`,
  );
  if (lens.settled_layer !== null) parts.push(`every layer from ${lens.settled_layer} on does`);
  if (lens.runner_up) {
    parts.push(
      lens.runner_up_lost_at === null
        ? `the runner-up “${showWhitespace(lens.runner_up.token)}” is never ahead of it in raw logit`
        : `the runner-up “${showWhitespace(lens.runner_up.token)}” is last ahead of it at layer ${lens.runner_up_lost_at}`,
    );
  }
  return `${parts.join('; ')}.`;
}
