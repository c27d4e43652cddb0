// Where the grammar pressed, on a real trace: `POST /v1/chat/completions` on the tiny model
// with response_format json_object and trace 5 (fixtures/grammar_trace.json). The marked steps
// are those whose grammar stage has best_kept_rank > 1; the texts name the raw top tokens it
// removed (the trace's top N, then a count) and the best one it allowed.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { grammarPress, grammarStage, pressedSteps, pressLine, pressTitle } from '../src/grammar_trace';
import type { Step } from '../src/types';

const fixture = JSON.parse(readFileSync(resolve(__dirname, 'fixtures/grammar_trace.json'), 'utf8')) as { chain: string; trace: Step[] };
const steps = fixture.trace;
const withRank = (s: Step, k: number): Step => ({ ...s, stages: s.stages.map((st, i) => (i === 0 ? { ...st, best_kept_rank: k } : st)) });

describe('the fixture', () => {
  it('is a constrained run whose grammar stage comes first', () => {
    expect(fixture.chain.startsWith('grammar(json_object) -> ')).toBe(true);
    expect(steps.length).toBe(8);
    for (const s of steps) expect(grammarStage(s)?.index).toBe(0);
  });
});

describe('grammarPress', () => {
  it('marks exactly the steps whose grammar stage has best_kept_rank > 1', () => {
    expect(steps.map((s) => s.stages[0].best_kept_rank)).toEqual([1, 2973, 1, 3685, 66793, 45, 1, 7070]);
    expect(pressedSteps(steps)).toEqual([1, 3, 4, 5, 7]);
  });

  it('reads the removed count, the raw tokens removed and the best one kept', () => {
    const p = grammarPress(steps[5])!;
    expect(p.removed).toBe(44);
    expect(p.keptRank).toBe(45);
    expect(p.raw).toBe(true);
    expect(p.removedTokens.map((t) => t.id)).toEqual(steps[5].raw.top.map((t) => t.id)); // all 5 listed are below #45
    expect(p.kept?.id).toBe(51370);
    expect(p.kept?.id).toBe(steps[5].chosen.id); // here the draw took the best allowed token
  });

  it('is null where the raw best was allowed, and on an unconstrained step', () => {
    expect(grammarPress(steps[0])).toBeNull();
    expect(grammarPress(steps[2])).toBeNull();
    const plain: Step = { ...steps[1], stages: steps[1].stages.slice(1) };
    expect(grammarStage(plain)).toBeNull();
    expect(grammarPress(plain)).toBeNull();
  });

  it('is null without the field (a trace from before it) or with 0 (nothing left)', () => {
    const { best_kept_rank: _drop, ...bare } = steps[1].stages[0];
    expect(grammarPress({ ...steps[1], stages: [bare, ...steps[1].stages.slice(1)] })).toBeNull();
    expect(grammarPress(withRank(steps[1], 0))).toBeNull();
  });

  it('ranks against the stage before when the grammar is not first', () => {
    const moved: Step = { ...steps[4], stages: [steps[4].stages[1], steps[4].stages[0]] };
    const p = grammarPress(moved)!;
    expect(p.raw).toBe(false);
    expect(p.removedTokens.map((t) => t.id)).toEqual(steps[4].stages[1].top.map((t) => t.id));
    expect(pressTitle(p)).toContain('pre-grammar top 66792');
  });
});

describe('texts', () => {
  it('the chip title says how many raw tokens went and the best rank allowed', () => {
    expect(pressTitle(grammarPress(steps[4])!)).toBe('the grammar removed the raw top 66792; the best it allowed was raw #66793');
  });

  it('the step line names the removed tokens the trace lists, counts the rest, and names the kept one', () => {
    expect(pressLine(grammarPress(steps[5])!)).toBe(
      'The grammar removed the raw top 44 (“{}↵”, “usting”, “𬘭”, “getParent”, “东部”, and 39 more beyond the trace’s top 5); ' +
        'the best it allowed was “······→” (id 51370), raw #45.',
    );
  });

  it('names every removed token when the trace lists them all, and the single best as such', () => {
    const two = pressLine(grammarPress(withRank(steps[1], 3))!);
    expect(two).toMatch(/^The grammar removed the raw top 2 \(“↵”, “voke”\); the best it allowed was “.+” \(id 70057\), raw #3\.$/);
    expect(pressLine(grammarPress(withRank(steps[1], 2))!)).toMatch(/^The grammar removed the raw best token, “↵”; the best it allowed was/);
  });
});
