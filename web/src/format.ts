// Number formatting for tables and titles: probabilities as 0.1234 or 1.2e-5, logits and
// entropies with a fixed number of decimals, null (a non-finite number in the trace) as "—".

export function fmtProb(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return '—';
  if (p === 0) return '0';
  if (Math.abs(p) < 1e-3) return p.toExponential(1);
  return p.toFixed(4);
}

export function fmtNum(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined) return '—';
  if (x === Number.POSITIVE_INFINITY) return '∞';
  if (x === Number.NEGATIVE_INFINITY) return '−∞';
  if (!Number.isFinite(x)) return '—';
  return x.toFixed(digits);
}

export function fmtPercent(p: number | null | undefined): string {
  if (p === null || p === undefined || !Number.isFinite(p)) return '—';
  return `${(100 * p).toFixed(p < 0.01 ? 2 : 1)}%`;
}
