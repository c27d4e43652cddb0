// The decoding chain in TypeScript: one step's raw logits re-scored under other settings, as
// src/decode (order.cpp, penalties.cpp, temperature.cpp, top_k.cpp, top_p.cpp, min_p.cpp,
// choose.cpp, sampler.cpp, trace.cpp) does it, bit for bit where the C++ stores float
// (Float32Array stores round like static_cast<float>) and with sums in the C++'s order.
// Greedy (temperature 0) runs the processors only: warpers need sampling, as in transformers.
import { sortIdsAscending, sortIdsDescending, topIds, kthLargest } from './select';
import type { Preset } from './types';

export interface RescoreSettings {
  temperature: number;
  top_k: number;
  top_p: number;
  min_p: number;
  repetition_penalty: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  order_preset: Preset;
}

export interface RescoreInput {
  logits: Float32Array | ArrayLike<number>;
  /** Prompt ids then the ids generated before this step. */
  history: ArrayLike<number>;
  promptLen: number;
  settings: RescoreSettings;
  /** The recorded uniform draw; null for a greedy recording. */
  draw: number | null;
  /** Default: sample when temperature > 0 and a draw is given, else greedy. */
  mode?: 'greedy' | 'sample';
  topN?: number;
}

export interface StageResult {
  name: string;
  description: string;
  candidates: number;
  mass_removed: number;
  entropy: number;
}

export interface Candidate {
  id: number;
  /** The final score (after every stage) and its probability in the final distribution. */
  score: number;
  prob: number;
}

export interface RescoreResult {
  mode: 'greedy' | 'sample';
  stages: StageResult[];
  scores: Float32Array;
  /** Per token id: the final log-probability, -Infinity for removed tokens. */
  logprobs: Float64Array;
  pool: number;
  entropy: number;
  chosen: number;
  chosenProb: number;
  /** True when sampling was asked for without a recorded draw: `chosen` is then the argmax. */
  drawMissing: boolean;
  top: Candidate[];
}

const NEG_INF = Number.NEGATIVE_INFINITY;
const WARPERS = new Set(['temperature', 'top_k', 'top_p', 'min_p']);

/** The stages of each preset that the page can run, in the preset's order (order.cpp). */
export const PRESET_ORDER: Record<Preset, readonly string[]> = {
  hf: ['repetition_penalty', 'presence_penalty', 'frequency_penalty', 'temperature', 'top_k', 'top_p', 'min_p'],
  vllm: ['repetition_penalty', 'frequency_penalty', 'presence_penalty', 'temperature', 'min_p', 'top_k', 'top_p'],
  llama_cpp: ['repetition_penalty', 'frequency_penalty', 'presence_penalty', 'top_k', 'top_p', 'min_p', 'temperature'],
};

/** The names and descriptions of the stages that run, in order (inactive ones left out). */
export function activeStages(s: RescoreSettings, mode: 'greedy' | 'sample'): { name: string; description: string }[] {
  const llama = s.order_preset === 'llama_cpp';
  const out: { name: string; description: string }[] = [];
  for (const name of PRESET_ORDER[s.order_preset] ?? PRESET_ORDER.hf) {
    if (WARPERS.has(name) && mode !== 'sample') continue;
    const d = describe(name, s, llama);
    if (d !== null) out.push({ name, description: d });
  }
  return out;
}

function describe(name: string, s: RescoreSettings, llama: boolean): string | null {
  switch (name) {
    case 'repetition_penalty':
      return s.repetition_penalty !== 1 ? `repetition_penalty(penalty=${s.repetition_penalty}, over prompt+generated)` : null;
    case 'presence_penalty':
      return (s.presence_penalty ?? 0) !== 0 ? `presence_penalty(penalty=${s.presence_penalty}, over generated)` : null;
    case 'frequency_penalty':
      return (s.frequency_penalty ?? 0) !== 0 ? `frequency_penalty(penalty=${s.frequency_penalty}, x count in generated)` : null;
    case 'temperature':
      return s.temperature !== 1 && s.temperature > 0 ? `temperature(t=${s.temperature})` : null;
    case 'top_k':
      return s.top_k > 0 ? `top_k(k=${Math.max(s.top_k, 1)}, ${llama ? 'exactly k' : 'keep ties'})` : null;
    case 'top_p':
      return s.top_p < 1 ? `top_p(p=${s.top_p}, min_keep=1, ${llama ? 'keep until cum>=p' : 'remove while cum<=1-p'})` : null;
    case 'min_p':
      return s.min_p > 0 ? `min_p(p=${s.min_p}, min_keep=1)` : null;
  }
  return null;
}

// --- distribution helpers (distribution.cpp) ---

function maxScore(s: Float32Array): number {
  let m = NEG_INF;
  for (let i = 0; i < s.length; i++) if (s[i] > m) m = s[i];
  return m;
}

export function countCandidates(s: Float32Array): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) if (s[i] > NEG_INF) n++;
  return n;
}

function requireSortable(s: Float32Array, stage: string): void {
  for (let i = 0; i < s.length; i++) {
    if (Number.isNaN(s[i]) || s[i] === Number.POSITIVE_INFINITY) {
      throw new Error(`${stage}: the score of token ${i} is ${s[i]}; remove invalid values first`);
    }
  }
}

/**
 * One exp pass over a score vector: exp(s - max) per token (0 for removed ones) and their sum
 * in index order, as softmax() and log_sum_exp() compute them; entropy, mass removed, top_p,
 * min_p and the sampling walk all read it instead of computing exp again.
 */
export interface Dist {
  max: number;
  total: number;
  e: Float64Array;
}

function dist(s: Float32Array, e: Float64Array): Dist {
  const max = maxScore(s);
  let total = 0;
  if (max === NEG_INF) {
    e.fill(0);
    return { max, total, e };
  }
  for (let i = 0; i < s.length; i++) {
    const w = Math.exp(s[i] - max); // exp(-inf) is 0: removed tokens weigh nothing
    e[i] = w;
    total += w;
  }
  return { max, total, e };
}

function distEntropy(s: Float32Array, d: Dist): number {
  if (d.max === NEG_INF) return 0;
  const lse = d.max + Math.log(d.total);
  let h = 0;
  for (let i = 0; i < s.length; i++) {
    const w = d.e[i];
    if (w > 0) h += (w / d.total) * (lse - s[i]);
  }
  return h;
}

/** The probability mass (under `before`) of the tokens `after` removed, summed in id order. */
function massRemoved(before: Float32Array, d: Dist, after: Float32Array): number {
  let mass = 0;
  for (let i = 0; i < before.length; i++) {
    if (before[i] > NEG_INF && !(after[i] > NEG_INF)) mass += d.e[i] / d.total;
  }
  return mass;
}

// --- the stages ---

function distinct(ids: ArrayLike<number>, from: number, vocab: number, stage: string): Map<number, number> {
  const counts = new Map<number, number>();
  for (let i = from; i < ids.length; i++) {
    const t = ids[i];
    if (!Number.isInteger(t) || t < 0 || t >= vocab) {
      throw new Error(`${stage}: token id ${t} in the history is outside the vocabulary of ${vocab} scores`);
    }
    counts.set(t, (counts.get(t) ?? 0) + 1);
  }
  return counts;
}

function repetitionPenalty(s: Float32Array, history: ArrayLike<number>, penalty: number): void {
  for (const t of distinct(history, 0, s.length, 'repetition_penalty').keys()) {
    const v = s[t];
    s[t] = v < 0 ? v * penalty : v / penalty;
  }
}

function presencePenalty(s: Float32Array, history: ArrayLike<number>, promptLen: number, penalty: number): void {
  for (const t of distinct(history, promptLen, s.length, 'presence_penalty').keys()) s[t] = s[t] - penalty;
}

function frequencyPenalty(s: Float32Array, history: ArrayLike<number>, promptLen: number, penalty: number): void {
  for (const [t, count] of distinct(history, promptLen, s.length, 'frequency_penalty')) s[t] = s[t] - penalty * count;
}

function temperature(s: Float32Array, t: number): void {
  for (let i = 0; i < s.length; i++) s[i] = s[i] / t; // double division, stored as float32
}

function topK(s: Float32Array, kIn: number, keepTies: boolean): void {
  const k = Math.max(kIn, 1);
  if (k >= s.length) return;
  requireSortable(s, 'top_k');
  const kth = kthLargest(s, k);
  if (keepTies) {
    for (let i = 0; i < s.length; i++) if (s[i] < kth) s[i] = NEG_INF;
    return;
  }
  // Exactly k: everything above the k-th score, then the lowest ids among those equal to it.
  let above = 0;
  for (let i = 0; i < s.length; i++) if (s[i] > kth) above++;
  let ties = k - above;
  for (let i = 0; i < s.length; i++) {
    if (s[i] > kth) continue;
    if (s[i] === kth && ties > 0) ties--;
    else s[i] = NEG_INF;
  }
}

function topP(s: Float32Array, p: number, llama: boolean, d: Dist): void {
  requireSortable(s, 'top_p');
  const prob = (id: number) => d.e[id] / d.total;
  if (!llama) {
    // Ascending by score, ties by ascending id; remove while the cumulative mass <= 1 - p.
    const order = sortIdsAscending(s);
    const n = order.length;
    let cumulative = 0;
    const limit = 1.0 - p;
    let removeCount = 0;
    for (let i = 0; i < n; i++) {
      cumulative += prob(order[i]);
      if (cumulative <= limit) removeCount = i + 1;
      else break; // the sum only grows: no later token is removed
    }
    removeCount = Math.min(removeCount, n - Math.min(1, n)); // keep at least min_keep = 1
    for (let i = 0; i < removeCount; i++) s[order[i]] = NEG_INF;
    return;
  }
  // llama.cpp: descending, keep up to the first token where the mass reaches p.
  const order = sortIdsDescending(s, p, prob);
  let cumulative = 0;
  let last = order.length;
  for (let i = 0; i < order.length; i++) {
    cumulative += prob(order[i]);
    if (cumulative >= p) { // min_keep = 1: i + 1 >= 1 always holds
      last = i + 1;
      break;
    }
  }
  const keep = new Uint8Array(s.length);
  for (let i = 0; i < last; i++) keep[order[i]] = 1;
  for (let i = 0; i < s.length; i++) if (!keep[i]) s[i] = NEG_INF;
}

function minP(s: Float32Array, minp: number, d: Dist): void {
  requireSortable(s, 'min_p');
  const { max, total } = d;
  if (max === NEG_INF) return;
  // softmax() computes exp(s - max) then divides by the total; the top probability is 1/total.
  const top = 1 / total;
  const threshold = minp * top;
  let protectedId = -1; // min_tokens_to_keep = 1: the best token (lowest id on ties) stays
  for (let i = 0; i < s.length; i++) {
    if (s[i] === max) {
      protectedId = i;
      break;
    }
  }
  for (let i = 0; i < s.length; i++) {
    if (i === protectedId || s[i] === NEG_INF) continue;
    if (d.e[i] / total < threshold) s[i] = NEG_INF;
  }
}

function runStage(name: string, s: Float32Array, input: RescoreInput, d: Dist): void {
  const c = input.settings;
  switch (name) {
    case 'repetition_penalty': return repetitionPenalty(s, input.history, c.repetition_penalty);
    case 'presence_penalty': return presencePenalty(s, input.history, input.promptLen, c.presence_penalty ?? 0);
    case 'frequency_penalty': return frequencyPenalty(s, input.history, input.promptLen, c.frequency_penalty ?? 0);
    case 'temperature': return temperature(s, c.temperature);
    case 'top_k': return topK(s, Math.trunc(c.top_k), c.order_preset !== 'llama_cpp');
    case 'top_p': return topP(s, c.top_p, c.order_preset === 'llama_cpp', d);
    case 'min_p': return minP(s, c.min_p, d);
  }
}

// --- the choice (choose.cpp) ---

function checkedMax(s: Float32Array, what: string): number {
  requireSortable(s, what);
  const m = maxScore(s);
  if (m === NEG_INF) throw new Error(`${what}: every token was removed (all ${s.length} scores are -inf)`);
  return m;
}

export function chooseGreedy(s: Float32Array): number {
  const m = checkedMax(s, 'greedy');
  for (let i = 0; i < s.length; i++) if (s[i] === m) return i;
  return 0;
}

/** The inverse-CDF walk: weights exp(s - max) in id order, the first past draw x total. */
export function chooseSample(s: Float32Array, draw: number, d?: Dist): number {
  checkedMax(s, 'sample');
  if (!(draw >= 0 && draw < 1)) throw new Error(`sample: the draw must be in [0, 1), got ${draw}`);
  const { e, total } = d ?? dist(s, new Float64Array(s.length));
  const target = draw * total; // the total of the weights > 0: adding the zeros changes nothing
  let cumulative = 0;
  let last = -1;
  for (let i = 0; i < s.length; i++) {
    const w = e[i];
    if (!(w > 0)) continue;
    cumulative += w;
    last = i;
    if (cumulative > target) return i;
  }
  return last; // rounding left the target at the very end
}

/** Re-scores one step: every active stage in the preset's order, then the choice. */
export function rescore(input: RescoreInput): RescoreResult {
  const s = input.settings;
  const mode = input.mode ?? (s.temperature > 0 && input.draw !== null ? 'sample' : 'greedy');
  const work = input.logits instanceof Float32Array ? new Float32Array(input.logits) : Float32Array.from(input.logits);
  const before = new Float32Array(work);
  let d: Dist = dist(work, new Float64Array(work.length));
  let spare: Float64Array = new Float64Array(work.length);
  const stages: StageResult[] = [];
  for (const { name, description } of activeStages(s, mode)) {
    runStage(name, work, input, d);
    const next = dist(work, spare);
    stages.push({
      name,
      description,
      candidates: countCandidates(work),
      mass_removed: massRemoved(before, d, work),
      entropy: distEntropy(work, next),
    });
    spare = d.e;
    d = next;
    before.set(work);
  }
  const drawMissing = mode === 'sample' && input.draw === null;
  const chosen = mode === 'sample' && input.draw !== null ? chooseSample(work, input.draw, d) : chooseGreedy(work);
  const lse = d.max + Math.log(d.total);
  const logprobs = new Float64Array(work.length);
  for (let i = 0; i < work.length; i++) logprobs[i] = work[i] === NEG_INF ? NEG_INF : work[i] - lse;
  const top = topIds(work, input.topN ?? 10).map((id) => ({ id, score: work[id], prob: d.e[id] / d.total }));
  return {
    mode,
    stages,
    scores: work,
    logprobs,
    pool: countCandidates(work),
    entropy: distEntropy(work, d),
    chosen,
    chosenProb: Math.exp(logprobs[chosen]),
    drawMissing,
    top,
  };
}
