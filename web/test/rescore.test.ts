// rescore.ts against numpy: the cases come from web/test/oracle/make_rescore_fixtures.py (the
// formulas of tests/decode/hf_formulas.py), in the file named by $LS_RESCORE_FIXTURES. Each
// case must give the same choice, pool and per-stage candidates, and the final logprobs and
// entropies within 1e-6.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rescore, type RescoreSettings } from '../src/rescore';

interface FixtureCase {
  name: string;
  logits: number[];
  history: number[];
  prompt_len: number;
  settings: RescoreSettings;
  draw: number | null;
  expected: {
    stages: { name: string; candidates: number; mass_removed: number; entropy: number }[];
    final_logprobs: (number | null)[];
    pool: number;
    entropy: number;
    chosen: number;
  };
}

const path = process.env.LS_RESCORE_FIXTURES;

function loadCases(): FixtureCase[] {
  if (!path) {
    throw new Error(
      'LS_RESCORE_FIXTURES is not set. Make the fixtures from the repository root with\n' +
        '  /usr/bin/python3 web/test/oracle/make_rescore_fixtures.py --out F\n' +
        'then run LS_RESCORE_FIXTURES=F npm test (F: any file path, e.g. /tmp/rescore_fixtures.json)',
    );
  }
  const data = JSON.parse(readFileSync(resolve(process.cwd(), path), 'utf8')) as { cases: FixtureCase[] };
  if (!Array.isArray(data.cases) || data.cases.length === 0) throw new Error(`${path}: no cases`);
  return data.cases;
}

describe('rescore against the numpy fixtures', () => {
  it('has fixtures', () => {
    expect(loadCases().length).toBeGreaterThan(0);
  });

  const cases = path ? loadCases() : [];
  for (const c of cases) {
    it(c.name, () => {
      const got = rescore({
        logits: Float32Array.from(c.logits),
        history: c.history,
        promptLen: c.prompt_len,
        settings: c.settings,
        draw: c.draw,
      });
      const want = c.expected;
      expect(got.chosen, 'chosen').toBe(want.chosen);
      expect(got.pool, 'pool').toBe(want.pool);
      expect(got.stages.map((s) => s.name), 'stage names').toEqual(want.stages.map((s) => s.name));
      want.stages.forEach((w, i) => {
        expect(got.stages[i].candidates, `${w.name} candidates`).toBe(w.candidates);
        expect(Math.abs(got.stages[i].mass_removed - w.mass_removed), `${w.name} mass_removed`).toBeLessThanOrEqual(1e-6);
        expect(Math.abs(got.stages[i].entropy - w.entropy), `${w.name} entropy`).toBeLessThanOrEqual(1e-6);
      });
      expect(got.logprobs.length).toBe(want.final_logprobs.length);
      want.final_logprobs.forEach((lp, id) => {
        if (lp === null) {
          expect(got.logprobs[id], `token ${id} removed`).toBe(Number.NEGATIVE_INFINITY);
        } else {
          expect(Number.isFinite(got.logprobs[id]), `token ${id} kept`).toBe(true);
          expect(Math.abs(got.logprobs[id] - lp), `token ${id} logprob`).toBeLessThanOrEqual(1e-6);
        }
      });
      expect(Math.abs(got.entropy - want.entropy), 'entropy').toBeLessThanOrEqual(1e-6);
    });
  }
});
