// @vitest-environment jsdom
// The chart export is a well-formed standalone SVG (an XML parse, not a regex): the XML
// declaration, the SVG namespace, the legend, axes with their units, one click target per step,
// and token text with markup or control characters escaped.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { chartSvg } from '../src/chart';
import type { Step } from '../src/types';

const lines = readFileSync(resolve(__dirname, 'fixtures/sample_trace.jsonl'), 'utf8').trim().split('\n');
const steps = lines.slice(1, -1).map((l) => JSON.parse(l) as Step);

function parse(text: string): Document {
  return new DOMParser().parseFromString(text, 'image/svg+xml');
}
const parseError = (doc: Document) => doc.getElementsByTagName('parsererror').length > 0;

describe('chartSvg', () => {
  it('the parser used here does reject broken XML', () => {
    expect(parseError(parse('<svg xmlns="http://www.w3.org/2000/svg"><g></svg>'))).toBe(true);
  });

  const svg = chartSvg(steps, { standalone: true, selected: 2, changed: new Set([3, 4]) });
  const doc = parse(svg);

  it('is well-formed standalone SVG', () => {
    expect(svg.startsWith('<?xml version="1.0" encoding="UTF-8"?>')).toBe(true);
    expect(parseError(doc)).toBe(false);
    expect(doc.documentElement.localName).toBe('svg');
    expect(doc.documentElement.namespaceURI).toBe('http://www.w3.org/2000/svg');
    expect(doc.documentElement.getAttribute('viewBox')).toMatch(/^0 0 \d+ \d+$/);
  });

  it('has the legend and the axes with units', () => {
    const texts = Array.from(doc.getElementsByTagName('text'), (t) => t.textContent ?? '');
    for (const want of ['final entropy (nats)', 'raw entropy (nats)', 'p(chosen token)', 'would change', 'entropy (nats)', 'probability', 'step (generated token index)']) {
      expect(texts, want).toContain(want);
    }
  });

  it('has one click target per step', () => {
    const targets = Array.from(doc.querySelectorAll('rect[data-step]'), (r) => Number(r.getAttribute('data-step')));
    expect(targets).toEqual(steps.map((_, i) => i));
  });

  it('styles with presentation attributes only (no style attribute or element)', () => {
    expect(doc.querySelectorAll('[style], style').length).toBe(0);
  });

  it('escapes token text', () => {
    const odd = steps.map((s, i) => (i === 0 ? { ...s, chosen: { ...s.chosen, text: '<b>&"\u0001\'' } } : s));
    const d = parse(chartSvg(odd, { standalone: true }));
    expect(parseError(d)).toBe(false);
    expect(d.querySelector('rect[data-step="0"] title')?.textContent).toContain('<b>&"\ufffd\'');
  });

  it('draws an empty chart without steps', () => {
    expect(parseError(parse(chartSvg([], { standalone: true })))).toBe(false);
  });
});
