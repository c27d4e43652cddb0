// The JSON Lines export in the CLI's schema (header, steps in order, result last, every line
// JSON; 64-bit seeds exact) from the sample `generate --json --trace 5` run, and the JSON
// helpers behind it.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliFinishReason, traceJsonl } from '../src/export';
import { parseJson, stringifyJson } from '../src/json_big';
import type { Header, Step } from '../src/types';

const lines = readFileSync(resolve(__dirname, 'fixtures/sample_trace.jsonl'), 'utf8').trim().split('\n');
const header = parseJson(lines[0]) as Header;
const steps = lines.slice(1, -1).map((l) => parseJson(l) as Step);
const result = parseJson(lines.at(-1)!) as { text: string; tokens: number[]; finish_reason: string };

describe('traceJsonl', () => {
  const out = traceJsonl({ header: { ...header, seed: 18446744073709551557n }, steps, text: result.text, finishReason: 'length' });
  const got = out.trim().split('\n');

  it('writes one valid JSON object per line', () => {
    expect(out.endsWith('\n')).toBe(true);
    for (const l of got) expect(() => JSON.parse(l)).not.toThrow();
  });

  it('starts with the header and ends with the result', () => {
    expect(got).toHaveLength(steps.length + 2);
    const first = JSON.parse(got[0]);
    expect(first.type).toBe('header');
    expect(first.stages).toEqual(header.stages);
    const last = JSON.parse(got.at(-1)!);
    expect(last.type).toBe('result');
    expect(last.sequence).toBe(0);
    expect(last.tokens).toEqual(result.tokens);
    expect(last.text).toBe(result.text);
    expect(last.finish_reason).toBe('length');
  });

  it('writes the steps in order, unchanged', () => {
    got.slice(1, -1).forEach((l, i) => {
      const s = JSON.parse(l);
      expect(s.type).toBe('step');
      expect(s.step).toBe(i);
      expect(s).toEqual(JSON.parse(lines[i + 1]));
    });
  });

  it('keeps a 64-bit seed exact', () => {
    expect(got[0]).toContain('"seed":18446744073709551557');
  });
});

describe('cliFinishReason', () => {
  const eosHeader = { settings: { eos_token_id: { value: [151645, 151643], source: 'generation_config.json' } } } as unknown as Header;
  const last = (id: number) => [{ chosen: { id } } as Step];
  it('maps the server reasons to the CLI words', () => {
    expect(cliFinishReason('length', eosHeader, last(1))).toBe('length');
    expect(cliFinishReason('stop', eosHeader, last(151645))).toBe('eos');
    expect(cliFinishReason('stop', eosHeader, last(42))).toBe('stop_string');
  });
});

describe('parseJson / stringifyJson', () => {
  it('round-trips big integers and leaves strings and floats alone', () => {
    const text = '{"a":18446744073709551615,"b":"12345678901234567890","c":[1.5,-9007199254740993,3],"d":1.25}';
    const v = parseJson(text) as { a: bigint; b: string; c: (number | bigint)[]; d: number };
    expect(v.a).toBe(18446744073709551615n);
    expect(v.b).toBe('12345678901234567890');
    expect(v.c).toEqual([1.5, -9007199254740993n, 3]);
    expect(v.d).toBe(1.25);
    expect(stringifyJson(v)).toBe(text);
  });
});
