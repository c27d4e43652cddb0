// Where the grammar pressed (issue 44): a step's `grammar` stage entry (docs/trace-format.md)
// has best_kept_rank, the rank under the stage's input of the best token it left; above 1 it
// removed every better one. The grammar is the chain's first stage, so its input is the raw
// logits and the ranks are raw ranks. Here: reading that, the chip's marker and the texts.
import { showWhitespace } from './utf8';
import type { Step, TopEntry } from './types';

export interface GrammarPress {
  /** How many better tokens the grammar removed: best_kept_rank - 1 (>= 1). */
  removed: number;
  /** best_kept_rank: the best allowed token's rank under the stage's input. */
  keptRank: number;
  /** The removed tokens the trace lists (its top-N of the stage's input), best first. */
  removedTokens: TopEntry[];
  /** The best token the grammar allowed (the stage's own top 1); null if the trace has none. */
  kept: TopEntry | null;
  /** True when the grammar ran first (its ranks are raw ranks). */
  raw: boolean;
}

/** The step's grammar stage and its index, or null (an unconstrained step). */
export function grammarStage(step: Step): { index: number; stage: Step['stages'][number] } | null {
  const index = step.stages.findIndex((s) => s.name === 'grammar');
  return index < 0 ? null : { index, stage: step.stages[index] };
}

/** Non-null when the grammar removed the best token of its input. */
export function grammarPress(step: Step): GrammarPress | null {
  const g = grammarStage(step);
  const k = g?.stage.best_kept_rank;
  if (!g || typeof k !== 'number' || !(k > 1)) return null;
  const input = g.index === 0 ? step.raw.top : step.stages[g.index - 1].top;
  return { removed: k - 1, keptRank: k, removedTokens: input.slice(0, k - 1), kept: g.stage.top[0] ?? null, raw: g.index === 0 };
}

/** The steps (their `step` numbers) where the grammar pressed, in order. */
export function pressedSteps(steps: Step[]): number[] {
  return steps.filter((s) => grammarPress(s) !== null).map((s) => s.step);
}

const where = (p: GrammarPress) => (p.raw ? 'raw' : 'pre-grammar');

/** The chip's tooltip line. */
export function pressTitle(p: GrammarPress): string {
  return `the grammar removed the ${where(p)} top ${p.removed}; the best it allowed was ${where(p)} #${p.keptRank}`;
}

const quoted = (t: { text: string }) => `“${showWhitespace(t.text)}”`;

/** The step panel's line: the removed token(s) by name, then the best one kept. */
export function pressLine(p: GrammarPress): string {
  const shown = p.removedTokens.map(quoted).join(', ');
  const beyond = p.removed - p.removedTokens.length;
  const removed =
    p.removed === 1
      ? `the ${where(p)} best token${shown ? `, ${shown}` : ''}`
      : `the ${where(p)} top ${p.removed}${shown ? ` (${shown}${beyond > 0 ? `, and ${beyond} more beyond the trace’s top ${p.removedTokens.length}` : ''})` : ''}`;
  const kept = p.kept ? `${quoted(p.kept)} (id ${p.kept.id}), ${where(p)} #${p.keptRank}` : `${where(p)} #${p.keptRank}`;
  return `The grammar removed ${removed}; the best it allowed was ${kept}.`;
}
