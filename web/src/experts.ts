// The router's choice of a mixture-of-experts model as the step panel shows it: a step's
// `experts` field (per layer, [[expert, weight], ...] best first, [] for a dense layer; the
// experts that processed the step's input token, docs/trace-format.md) checked and shaped into
// one row per layer, with each chosen expert's weight as a share of the layer's chosen total
// (what the cell's shade shows) and the experts used most across the layers.
import type { Step } from './types';

export interface ExpertCell {
  expert: number;
  weight: number;
  /** weight / the layer's chosen total, in [0, 1] (1/k when the total is 0). */
  share: number;
}

export interface ExpertLayerRow {
  layer: number;
  /** A dense layer of the MoE model (mlp_only_layers, off the sparse step): no router. */
  dense: boolean;
  cells: ExpertCell[];
  /** Sum of the chosen weights: 1 when the model renormalises (norm_topk_prob), less when not. */
  total: number;
}

export interface ExpertsView {
  rows: ExpertLayerRow[];
  /** Experts per token (the widest layer). */
  k: number;
  /** Experts by how many layers chose them, most first (ties: lower id), with the layer count. */
  mostUsed: { expert: number; layers: number }[];
}

const isPair = (v: unknown): v is [number, number] =>
  Array.isArray(v) && v.length === 2 && Number.isInteger(v[0]) && (v[0] as number) >= 0 && typeof v[1] === 'number' && Number.isFinite(v[1]);

/** The step's router choice, or null when it has none (a dense model, experts not asked) or the field is malformed. */
export function expertsView(step: Pick<Step, 'experts'> | Record<string, unknown>): ExpertsView | null {
  const raw = (step as Record<string, unknown>).experts;
  if (!Array.isArray(raw) || raw.length === 0) return null;
  const rows: ExpertLayerRow[] = [];
  const used = new Map<number, number>();
  let k = 0;
  for (let layer = 0; layer < raw.length; ++layer) {
    const r = raw[layer];
    if (!Array.isArray(r) || !r.every(isPair)) return null;
    const total = r.reduce((s, [, w]) => s + w, 0);
    const cells = r.map(([expert, weight]) => ({ expert, weight, share: total > 0 ? weight / total : 1 / r.length }));
    for (const c of cells) used.set(c.expert, (used.get(c.expert) ?? 0) + 1);
    k = Math.max(k, cells.length);
    rows.push({ layer, dense: cells.length === 0, cells, total });
  }
  if (k === 0) return null; // every layer dense: nothing was routed
  const mostUsed = [...used.entries()].map(([expert, layers]) => ({ expert, layers })).sort((a, b) => b.layers - a.layers || a.expert - b.expert);
  return { rows, k, mostUsed };
}

/** The cell's shade: white at share 0 to a deep blue at share 1. */
export function shareColor(share: number): string {
  const s = Math.max(0, Math.min(1, Number.isFinite(share) ? share : 0));
  return `hsl(215, 70%, ${(96 - 50 * s).toFixed(1)}%)`;
}
