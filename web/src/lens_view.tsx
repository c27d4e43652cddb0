// The logit lens of one step: a heat strip with one cell per layer (the chosen token's
// probability after the chain, or its raw rank; the first layer choosing it and the settled
// layer marked; a tooltip with the layer's entropy and the chain's pick) and a compact table
// of each layer's top candidates.
import { useMemo, useState } from 'preact/hooks';
import { fmtNum, fmtProb } from './format';
import { LENS_COLOR_MODES, layerName, lensSummary, stripCells, type LensColorMode } from './lens';
import type { LensResponse } from './types';
import { showWhitespace } from './utf8';

function Strip(props: { lens: LensResponse; mode: LensColorMode }) {
  const { lens } = props;
  const cells = useMemo(() => stripCells(lens, props.mode), [lens, props.mode]);
  return (
    <>
      <div class="lens-strip" data-testid="lens-strip" role="list" aria-label={`“${showWhitespace(lens.chosen.token)}” layer by layer`} style={{ gridTemplateColumns: `repeat(${cells.length}, minmax(0, 1fr))` }}>
        {cells.map((c) => (
          <span
            key={c.layer}
            role="listitem"
            class={['lens-cell', c.first ? 'first' : '', c.settled ? 'settled' : ''].filter(Boolean).join(' ')}
            style={{ background: c.color }}
            data-testid="lens-cell"
            data-layer={c.layer}
            data-prob={String(c.prob)}
            data-rank={c.rank ?? ''}
            title={c.title}
            aria-label={c.title.replace(/\n/g, '; ')}
          >
            {c.picksChosen ? '✓' : ''}
          </span>
        ))}
      </div>
      <div class="lens-axis muted">
        <span>0 embedding</span>
        <span>{lens.n_layers} output</span>
      </div>
      <p class="hint">
        ▾ first layer whose chain chooses it · ▎ every layer from there on does · ✓ the chain picks it from that layer
      </p>
    </>
  );
}

function TopTable(props: { lens: LensResponse }) {
  const { lens } = props;
  const chosen = String(lens.chosen.id);
  const rows = [...lens.layers].sort((a, b) => a.layer - b.layer);
  return (
    <table class="mini lens-table" data-testid="lens-table">
      <caption>Each layer read as the next token (raw top {rows[0]?.top.length ?? 0}, probabilities)</caption>
      <thead>
        <tr>
          <th scope="col">layer</th>
          <th scope="col" title="entropy of the layer's raw distribution, nats">H</th>
          <th scope="col" title="the chosen token's raw rank">rank</th>
          <th scope="col" title="the chosen token's probability after the chain">p</th>
          <th scope="col">top candidates</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((l) => (
          <tr
            key={l.layer}
            data-testid="lens-row"
            data-layer={l.layer}
            class={l.layer === lens.settled_layer ? 'settled-row' : l.layer === lens.first_chosen_layer ? 'first-row' : undefined}
          >
            <td title={layerName(l.layer, lens.n_layers)}>{l.layer}</td>
            <td data-testid="lens-entropy">{fmtNum(l.entropy)}</td>
            <td data-testid="lens-rank">{l.rank_of[chosen] ?? '—'}</td>
            <td data-testid="lens-prob">{fmtProb(l.chosen_prob)}</td>
            <td class="lens-cands">
              {l.top.map((t) => (
                <span key={t.id} class={t.id === lens.chosen.id ? 'lens-cand is-chosen' : 'lens-cand'} title={`id ${t.id} · logprob ${fmtNum(t.logprob)}`}>
                  <span class="tok">{showWhitespace(t.token)}</span> <span class="muted">{fmtProb(Math.exp(t.logprob))}</span>
                </span>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function LensView(props: { lens: LensResponse }) {
  const { lens } = props;
  const [mode, setMode] = useState<LensColorMode>('prob');
  return (
    <div class="lens" data-testid="lens">
      <p class="lens-head">
        <span class="tok">“{showWhitespace(lens.chosen.token)}”</span> (id {lens.chosen.id}) over {lens.n_layers + 1} readings of the residual stream, the recorded draw{' '}
        {lens.draw === null ? '(none: greedy)' : fmtNum(lens.draw, 4)} through <span class="muted">{lens.chain || 'no stage'}</span>
      </p>
      <label class="lens-mode">
        colour cells by{' '}
        <select data-testid="lens-color" value={mode} onChange={(e) => setMode((e.currentTarget as HTMLSelectElement).value as LensColorMode)}>
          {LENS_COLOR_MODES.map((m) => (
            <option key={m.value} value={m.value}>
              {m.label}
            </option>
          ))}
        </select>
      </label>
      <Strip lens={lens} mode={mode} />
      <p class="lens-summary">{lensSummary(lens)}</p>
      <TopTable lens={lens} />
    </div>
  );
}
