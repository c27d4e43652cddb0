// The strip chart over a generation's steps as SVG markup: entropy in nats (after the chain and
// raw) above, the chosen token's probability below, axes with units and a legend. Styling is
// SVG presentation attributes only, so the same markup renders on the page (under the server's
// `default-src 'self'` CSP, which blocks style attributes) and as a standalone .svg file.
import type { Step } from './types';
import { showWhitespace } from './utf8';

export interface ChartOptions {
  selected?: number | null;
  changed?: ReadonlySet<number>;
  title?: string;
  /** With the XML declaration and a background: a file of its own. */
  standalone?: boolean;
}

const W = 620;
const H = 290;
const M = { left: 58, right: 14, top: 46, bottom: 40 };
const GAP = 30;
const FONT = "system-ui, 'Noto Sans', 'DejaVu Sans', 'Noto Sans CJK SC', sans-serif";
const COLORS = { after: '#1f5fbf', raw: '#8a8a8a', prob: '#3f9b52', axis: '#444', grid: '#e3e3e3', changed: '#e07b00', selected: '#ffd54f' };

/** Text safe in XML 1.0 content and attributes (control characters are not allowed there). */
export function escapeXml(text: string): string {
  return text
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const fmt = (x: number, d = 1) => (Number.isFinite(x) ? Number(x.toFixed(d)).toString() : '0');

function ticks(max: number, count: number): number[] {
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v <= max + 1e-9; v += step) out.push(Number(v.toFixed(6)));
  return out;
}

export function chartSvg(steps: readonly Step[], opts: ChartOptions = {}): string {
  const n = Math.max(steps.length, 1);
  const plotW = W - M.left - M.right;
  const panel = (H - M.top - M.bottom - GAP) / 2;
  const eTop = M.top;
  const pTop = M.top + panel + GAP;
  const bw = plotW / n;
  const x = (i: number) => M.left + (i + 0.5) * bw;
  const hMax = Math.max(1, Math.ceil(Math.max(0, ...steps.map((s) => Math.max(s.entropy_after ?? 0, s.entropy_before ?? 0)))));
  const yE = (h: number) => eTop + panel - (Math.max(0, h) / hMax) * panel;
  const yP = (p: number) => pTop + panel - Math.min(1, Math.max(0, p)) * panel;
  const o: string[] = [];
  if (opts.standalone) o.push('<?xml version="1.0" encoding="UTF-8"?>');
  o.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="${FONT}" font-size="11" role="img" aria-label="${escapeXml(opts.title ?? 'entropy and chosen probability per step')}">`,
  );
  o.push(`<title>${escapeXml(opts.title ?? 'logitscope: entropy and chosen probability per step')}</title>`);
  o.push(`<rect x="0" y="0" width="${W}" height="${H}" fill="#ffffff"/>`);
  // legend: a swatch then its label, laid out left to right (about 6 px per character)
  const ly = 16;
  const items: [string, string][] = [
    [`<line x1="0" y1="0" x2="20" y2="0" stroke="${COLORS.after}" stroke-width="2"/>`, 'final entropy (nats)'],
    [`<line x1="0" y1="0" x2="20" y2="0" stroke="${COLORS.raw}" stroke-width="1.5" stroke-dasharray="4 3"/>`, 'raw entropy (nats)'],
    [`<rect x="4" y="-6" width="12" height="12" fill="${COLORS.prob}"/>`, 'p(chosen token)'],
    [`<path d="M 5 -6 l 5 8 l 5 -8 z" fill="${COLORS.changed}"/>`, 'would change'],
  ];
  o.push(`<g class="legend" fill="${COLORS.axis}">`);
  let lx = M.left - 30;
  for (const [swatch, label] of items) {
    o.push(`<g transform="translate(${fmt(lx, 1)} ${ly})">${swatch}<text x="25" y="4">${label}</text></g>`);
    lx += 25 + label.length * 5.9 + 14;
  }
  o.push('</g>');
  // selection highlight
  if (opts.selected != null && opts.selected >= 0 && opts.selected < steps.length) {
    o.push(`<rect x="${fmt(M.left + opts.selected * bw, 2)}" y="${eTop}" width="${fmt(bw, 2)}" height="${fmt(pTop + panel - eTop, 2)}" fill="${COLORS.selected}" fill-opacity="0.45"/>`);
  }
  // grids and axes
  const axis = (top: number, label: string, tickValues: number[], y: (v: number) => number) => {
    for (const t of tickValues) {
      o.push(`<line x1="${M.left}" y1="${fmt(y(t), 2)}" x2="${M.left + plotW}" y2="${fmt(y(t), 2)}" stroke="${COLORS.grid}" stroke-width="1"/>`);
      o.push(`<text x="${M.left - 6}" y="${fmt(y(t) + 4, 2)}" text-anchor="end" fill="${COLORS.axis}">${fmt(t, 2)}</text>`);
    }
    o.push(`<line x1="${M.left}" y1="${top}" x2="${M.left}" y2="${fmt(top + panel, 2)}" stroke="${COLORS.axis}" stroke-width="1"/>`);
    o.push(`<line x1="${M.left}" y1="${fmt(top + panel, 2)}" x2="${M.left + plotW}" y2="${fmt(top + panel, 2)}" stroke="${COLORS.axis}" stroke-width="1"/>`);
    const cy = top + panel / 2;
    o.push(`<text x="14" y="${fmt(cy, 2)}" transform="rotate(-90 14 ${fmt(cy, 2)})" text-anchor="middle" fill="${COLORS.axis}">${label}</text>`);
  };
  axis(eTop, 'entropy (nats)', ticks(hMax, 4), yE);
  axis(pTop, 'probability', [0, 0.5, 1], yP);
  // x ticks
  const every = Math.max(1, Math.ceil(n / 12));
  for (let i = 0; i < steps.length; i += every) {
    o.push(`<text x="${fmt(x(i), 2)}" y="${fmt(pTop + panel + 14, 2)}" text-anchor="middle" fill="${COLORS.axis}">${i}</text>`);
  }
  o.push(`<text x="${M.left + plotW / 2}" y="${H - 6}" text-anchor="middle" fill="${COLORS.axis}">step (generated token index)</text>`);
  // probability bars
  steps.forEach((s, i) => {
    const y = yP(s.chosen.prob);
    o.push(`<rect x="${fmt(x(i) - bw * 0.35, 2)}" y="${fmt(y, 2)}" width="${fmt(bw * 0.7, 2)}" height="${fmt(pTop + panel - y, 2)}" fill="${COLORS.prob}"/>`);
  });
  // entropy lines
  const line = (get: (s: Step) => number) => steps.map((s, i) => `${i === 0 ? 'M' : 'L'} ${fmt(x(i), 2)} ${fmt(yE(get(s) ?? 0), 2)}`).join(' ');
  if (steps.length > 0) {
    o.push(`<path d="${line((s) => s.entropy_before)}" fill="none" stroke="${COLORS.raw}" stroke-width="1.5" stroke-dasharray="4 3"/>`);
    o.push(`<path d="${line((s) => s.entropy_after)}" fill="none" stroke="${COLORS.after}" stroke-width="2"/>`);
    steps.forEach((s, i) => o.push(`<circle cx="${fmt(x(i), 2)}" cy="${fmt(yE(s.entropy_after ?? 0), 2)}" r="2.5" fill="${COLORS.after}"/>`));
  }
  // steps that would change under the what-if settings
  for (const k of opts.changed ?? []) {
    if (k < 0 || k >= steps.length) continue;
    o.push(`<path d="M ${fmt(x(k) - 5, 2)} ${eTop - 9} l 5 8 l 5 -8 z" fill="${COLORS.changed}"/>`);
  }
  // click targets with a tooltip per step
  steps.forEach((s, i) => {
    const tip = `step ${i}: ${showWhitespace(s.chosen.text)} · p = ${fmt(s.chosen.prob, 4)} · entropy ${fmt(s.entropy_after, 3)} nats (raw ${fmt(s.entropy_before, 3)})`;
    o.push(`<rect data-step="${i}" x="${fmt(M.left + i * bw, 2)}" y="${eTop}" width="${fmt(bw, 2)}" height="${fmt(pTop + panel - eTop, 2)}" fill="#000000" fill-opacity="0"><title>${escapeXml(tip)}</title></rect>`);
  });
  o.push('</svg>');
  return o.join('\n') + '\n';
}
