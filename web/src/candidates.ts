// The step panel's candidate rows: the best tokens of the final distribution (as recorded, or
// re-scored in the page), then the step's own token (and a re-scored choice) when it lies
// beyond them, as an extra row with its true rank: 1 + the tokens whose final score beats it
// (equal scores: lower id first, as the lists order them), from the step's kept raw logits.
import { rescore, type RescoreSettings } from './rescore';
import type { Branch, Preset, Step } from './types';
import { PRESETS } from './types';

export interface CandidateRow {
  id: number;
  prob: number;
  score: number | null;
  /** 1-based rank in the final distribution; null when unknown, or the chain removed the token. */
  rank: number | null;
  /** Why an extra row was added below the best ones (null: one of them). */
  extra: 'recorded' | 'chosen' | null;
  /** The chain removed the token (an extra row of the recorded token under other settings). */
  removed: boolean;
}

export interface ExtraToken {
  id: number;
  prob: number;
  score: number | null;
  rank: number | null;
  why: 'recorded' | 'chosen';
}

/** 1 + the ids whose score beats `id`'s (ties: lower ids first); null when `id` was removed (-inf, NaN) or is out of range. */
export function rankOf(scores: ArrayLike<number>, id: number): number | null {
  if (!Number.isInteger(id) || id < 0 || id >= scores.length) return null;
  const v = scores[id];
  if (!(v > Number.NEGATIVE_INFINITY)) return null;
  let rank = 1;
  for (let i = 0; i < scores.length; i++) {
    const s = scores[i];
    if (s > v || (s === v && i < id)) rank++;
  }
  return rank;
}

/** The best rows ranked 1, 2, ... and each extra token not among them (at most once) after them. */
export function candidateRows(top: readonly { id: number; prob: number; score: number | null }[], extras: readonly ExtraToken[]): CandidateRow[] {
  const rows: CandidateRow[] = top.map((t, i) => ({ id: t.id, prob: t.prob, score: t.score, rank: i + 1, extra: null, removed: false }));
  const seen = new Set(rows.map((r) => r.id));
  for (const e of extras) {
    if (seen.has(e.id)) continue;
    seen.add(e.id);
    rows.push({ id: e.id, prob: e.prob, score: e.score, rank: e.rank, extra: e.why, removed: e.rank === null && !(e.prob > 0) });
  }
  return rows;
}

/** The settings a row was generated with: the header's effective values, else what the page sent. */
export function recordedSettings(branch: Branch): RescoreSettings {
  const s = branch.header?.settings ?? {};
  const num = (key: string, fallback: number) => {
    const v = s[key]?.value;
    return typeof v === 'number' ? v : fallback;
  };
  const preset = branch.header?.order_preset ?? s.order_preset?.value;
  return {
    temperature: num('temperature', branch.settings.temperature),
    top_k: num('top_k', branch.settings.top_k),
    top_p: num('top_p', branch.settings.top_p),
    min_p: num('min_p', branch.settings.min_p),
    repetition_penalty: num('repetition_penalty', branch.settings.repetition_penalty),
    presence_penalty: num('presence_penalty', 0),
    frequency_penalty: num('frequency_penalty', 0),
    order_preset: PRESETS.includes(preset as Preset) ? (preset as Preset) : branch.settings.order_preset,
  };
}

/**
 * The recorded token's rank in the step's final distribution, re-scoring its raw logits under
 * the recorded settings; `agrees` says whether that re-scoring picks the recorded token too
 * (it may not when the chain ran stages the page does not re-run).
 */
export function recordedRank(logits: Float32Array, branch: Branch, step: Step): { rank: number | null; score: number | null; agrees: boolean } {
  const prompt = branch.header?.prompt_token_ids ?? [];
  const history = prompt.concat(branch.steps.slice(0, step.step).map((s) => s.chosen.id));
  const result = rescore({
    logits,
    history,
    promptLen: prompt.length,
    settings: recordedSettings(branch),
    draw: step.draw,
    mode: step.draw === null ? 'greedy' : 'sample',
    topN: 0,
  });
  const id = step.chosen.id;
  const score = result.scores[id];
  return { rank: rankOf(result.scores, id), score: score > Number.NEGATIVE_INFINITY ? score : null, agrees: result.chosen === id };
}
