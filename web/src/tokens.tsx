// The generation rows: one chip per step, coloured by the chosen mode, grouped where byte tokens
// split a character. Chips are buttons with a roving tabindex: Tab reaches the row, arrow keys
// (and Home/End) move between chips, Up/Down between rows, Enter/Space/click select. A fork row shows the
// shared prefix collapsed, the forced token, then its own chips. The row's "Decision boundaries"
// button (boundaries_view.tsx) asks for its kept steps' boundaries; fragile chips are then underlined.
// A constrained row marks the chips where the grammar removed the raw best token (a "G" badge).
// With a model B (serve --model-b), "Compare with B" marks the chips where B's top-1 differs (a "B" badge).
import { useMemo, useState } from 'preact/hooks';
import { fragileTitle } from './boundaries';
import { BoundaryButton, useBoundaries } from './boundaries_view';
import { chipColor, type ColorMode } from './colors';
import { fmtProb } from './format';
import { grammarPress, pressTitle } from './grammar_trace';
import { sideSteps, sideTitle } from './side_by_side';
import { CompareButton, useSideBySide } from './side_by_side_view';
import type { Branch, Step } from './types';
import { decodeBytes, groupTokens, hexToBytes, showWhitespace, visibleWhitespace } from './utf8';

export interface Selection {
  branch: number;
  step: number;
}

function Visible(props: { text: string }) {
  return (
    <>
      {visibleWhitespace(props.text).map((p, i) => (
        <span key={i} class={p.ws ? 'ws' : undefined}>
          {p.text}
        </span>
      ))}
    </>
  );
}

function chipTitle(s: Step): string {
  return `step ${s.step} · id ${s.chosen.id} · bytes ${s.chosen.bytes || '(none)'} · p ${fmtProb(s.chosen.prob)} · raw rank ${s.chosen.raw_rank} · entropy ${s.entropy_after?.toFixed(3)} nats`;
}

interface RowProps {
  branch: Branch;
  colorMode: ColorMode;
  selection: Selection | null;
  changed: ReadonlySet<number> | null;
  onSelect: (sel: Selection, focus: boolean) => void;
  onMove: (from: Selection, key: string) => void;
  report: (e: unknown) => void;
  /** The second model's name (info.model_b), or null: no comparison offered. */
  modelB: string | null;
}

export function BranchRow(props: RowProps) {
  const { branch, selection } = props;
  const [showShared, setShowShared] = useState(false);
  const groups = useMemo(() => groupTokens(branch.steps, (s) => hexToBytes(s.chosen.bytes)), [branch.steps]);
  const selectedHere = selection?.branch === branch.id ? selection.step : null;
  const tabStop = selectedHere ?? 0;
  const [boundaries, startBoundaries] = useBoundaries(branch, props.report);
  const bounds = boundaries.state === 'done' ? boundaries.value : null;
  const [side, startSide] = useSideBySide(branch, props.modelB, props.report);
  const sides = useMemo(() => (side.state === 'done' ? sideSteps(side.value) : null), [side]);

  const chip = (s: Step, label: preact.ComponentChildren, inGroup: boolean) => {
    const sel: Selection = { branch: branch.id, step: s.step };
    const sb = bounds?.get(s.step);
    const fragile = sb ? fragileTitle(sb) : null;
    const press = grammarPress(s);
    const pressed = press ? pressTitle(press) : null;
    const ss = sides?.get(s.step);
    const sideLine = ss && props.modelB !== null ? sideTitle(ss, props.modelB) : null;
    const flip = ss?.flip === true;
    const classes = ['chip', inGroup ? 'in-group' : '', selectedHere === s.step ? 'selected' : '', props.changed?.has(s.step) ? 'changed' : '', fragile ? 'fragile' : '', press ? 'grammar-pressed' : '', flip ? 'flip' : ''];
    return (
      <button
        type="button"
        key={s.step}
        class={classes.filter(Boolean).join(' ')}
        style={{ background: chipColor(s, props.colorMode) }}
        data-testid="token"
        data-id={s.chosen.id}
        data-prob={String(s.chosen.prob)}
        data-step={s.step}
        data-branch={branch.id}
        data-fragile={sb ? String(sb.fragile) : undefined}
        data-grammar-pressed={press ? String(press.removed) : undefined}
        data-flip={ss ? String(ss.flip) : undefined}
        tabIndex={s.step === tabStop ? 0 : -1}
        title={[chipTitle(s), fragile, pressed, sideLine].filter(Boolean).join('\n')}
        aria-pressed={selectedHere === s.step}
        aria-label={`step ${s.step}: ${showWhitespace(s.chosen.text)}, probability ${fmtProb(s.chosen.prob)}${props.changed?.has(s.step) ? ', would change' : ''}${fragile ? ', fragile choice' : ''}${pressed ? `, ${pressed}` : ''}${flip ? `, ${props.modelB} chooses another top-1` : ''}`}
        onClick={() => props.onSelect(sel, false)}
        onKeyDown={(e) => {
          if (['ArrowLeft', 'ArrowRight', 'ArrowUp', 'ArrowDown', 'Home', 'End'].includes(e.key)) {
            e.preventDefault();
            props.onMove(sel, e.key);
          }
        }}
      >
        {label}
        {flip && (
          <span class="flip-badge" aria-hidden="true">
            B
          </span>
        )}
      </button>
    );
  };

  const shared = branch.fork?.sharedTokens ?? [];
  const status = { streaming: 'generating…', done: branch.finishReason ? `finished: ${branch.finishReason}` : 'done', stopped: 'stopped', error: 'error' }[branch.status];
  return (
    <div class={`branch ${branch.fork ? 'fork' : 'original'}`} data-testid="branch" data-branch={branch.id}>
      <div class="branch-head">
        <strong>{branch.label}</strong>
        <span class="muted">
          {' '}
          · {branch.steps.length} tokens · {status}
          {branch.header ? ` · seed ${String(branch.header.seed)}` : ''}
          {branch.constraint ? ` · constrained: ${branch.constraint}` : ''}
        </span>
        <BoundaryButton branch={branch} job={boundaries} start={startBoundaries} />
        <CompareButton branch={branch} modelB={props.modelB} job={side} start={startSide} />
      </div>
      <div class="chips" role="group" aria-label={`${branch.label}: generated tokens`}>
        {branch.fork && (
          <>
            {shared.length > 0 && (
              <button type="button" class="shared-toggle" aria-expanded={showShared} onClick={() => setShowShared(!showShared)} title="the tokens this fork shares with the row it came from">
                {showShared ? '▾' : '▸'} {shared.length} shared
              </button>
            )}
            {showShared && (
              <span class="shared">
                <Visible text={decodeBytes(Uint8Array.from(shared.flatMap((t) => Array.from(hexToBytes(t.bytes)))))} />
              </span>
            )}
            <span class="forced" title={`forced token at step ${branch.fork.step}: id ${branch.fork.token.id}, bytes ${branch.fork.token.bytes}`}>
              <span class="forced-mark">forced</span>
              <Visible text={branch.fork.token.text} />
            </span>
          </>
        )}
        {groups.map((g) => {
          const last = g.items[g.items.length - 1];
          const brk = g.text.includes('\n') ? <span class="break" key={`b${last.step}`} /> : null;
          if (g.items.length === 1) {
            const s = g.items[0];
            return [chip(s, <Visible text={decodeBytes(hexToBytes(s.chosen.bytes)) || s.chosen.text} />, false), brk];
          }
          return [
            <span class="group" key={`g${g.items[0].step}`} title={`one character over ${g.items.length} tokens: bytes ${Array.from(g.bytes, (b) => b.toString(16).padStart(2, '0')).join(' ')}`}>
              <span class="group-text">
                <Visible text={g.text} />
              </span>
              <span class="group-chips">{g.items.map((s) => chip(s, s.chosen.bytes || '∅', true))}</span>
            </span>,
            brk,
          ];
        })}
        {branch.status === 'streaming' && <span class="cursor" aria-hidden="true">▍</span>}
      </div>
    </div>
  );
}
