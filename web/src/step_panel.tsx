// The selected step in full: the choice (draw, entropies, margin to the runner-up), an MoE
// model's experts per layer for the step's input token (experts_view.tsx), the
// candidates under the current settings (recorded, or re-scored in the page after a slider
// moves; the step's own token always among them, with its rank) with a "continue from here"
// button per row, the decision boundaries (once the row's button asked for them), "Inside the
// model" (logit lens, attribution, continuation tree, on demand), the pool after every stage,
// the raw top-N. Where a grammar removed the raw best token(s), a line names them and the best kept.
// With a model B (serve --model-b): both models' candidate lists for the step, side by side.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { getLogits, tokenText } from './api';
import { boundaryTokenIds } from './boundaries';
import { BoundariesSection, useBoundaries } from './boundaries_view';
import { ExpertsSection } from './experts_view';
import { candidateRows, rankOf, recordedRank, type ExtraToken } from './candidates';
import { fmtNum, fmtProb } from './format';
import { InsidePanel } from './inside_panel';
import { SideBySideSection, useSideBySide } from './side_by_side_view';
import { GrammarLine } from './structured_view';
import type { Branch, Settings, Step, TopEntry, TraceToken } from './types';
import { showWhitespace } from './utf8';
import type { WhatIf } from './whatif';

type Rank = { rank: number | null; score: number | null; agrees: boolean; state: 'pending' | 'done' | 'unknown' };

/**
 * The recorded token's rank in the recorded final distribution when `needed` (it is not among
 * the recorded rows): the step's kept raw logits re-scored under the recorded settings.
 */
function useRecordedRank(branch: Branch, step: Step, needed: boolean): Rank {
  const generation = branch.header?.generation;
  const key = `${branch.id}/${generation}/${step.step}`;
  const [got, setGot] = useState<{ key: string; rank: Rank } | null>(null);
  useEffect(() => {
    if (!needed || generation === undefined || !branch.header?.prompt_token_ids) return;
    let live = true;
    getLogits(generation, step.step).then(
      (logits) => {
        if (!live) return;
        try {
          setGot({ key, rank: { ...recordedRank(logits, branch, step), state: 'done' } });
        } catch {
          setGot({ key, rank: { rank: null, score: null, agrees: false, state: 'unknown' } });
        }
      },
      () => live && setGot({ key, rank: { rank: null, score: null, agrees: false, state: 'unknown' } }),
    );
    return () => {
      live = false;
    };
  }, [key, needed]);
  if (got && got.key === key) return got.rank;
  return { rank: null, score: null, agrees: false, state: needed && generation !== undefined && branch.header?.prompt_token_ids ? 'pending' : 'unknown' };
}

/** Every token text the row's trace names, by id. */
function knownTokens(branch: Branch): Map<number, TraceToken> {
  const m = new Map<number, TraceToken>();
  const add = (t: TraceToken | null | undefined) => {
    if (t && !m.has(t.id)) m.set(t.id, { id: t.id, text: t.text, bytes: t.bytes });
  };
  for (const s of branch.steps) {
    add(s.chosen);
    add(s.runner_up);
    s.raw.top.forEach(add);
    s.stages.forEach((st) => st.top.forEach(add));
  }
  return m;
}

function useTexts(ids: number[], known: Map<number, TraceToken>): (id: number) => string {
  const [fetched, setFetched] = useState<Map<number, string>>(new Map());
  useEffect(() => {
    let live = true;
    for (const id of ids) {
      if (known.has(id) || fetched.has(id)) continue;
      tokenText(id).then(
        (t) => live && setFetched((f) => new Map(f).set(id, t)),
        () => undefined, // the row then shows the id only
      );
    }
    return () => {
      live = false;
    };
  }, [ids.join(',')]);
  return (id) => known.get(id)?.text ?? fetched.get(id) ?? `#${id}`;
}

function TopTable(props: { top: TopEntry[]; caption: string }) {
  return (
    <table class="mini">
      <caption>{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">rank</th>
          <th scope="col">id</th>
          <th scope="col">token</th>
          <th scope="col">logit</th>
          <th scope="col">prob</th>
          <th scope="col">logprob</th>
        </tr>
      </thead>
      <tbody>
        {props.top.map((t, i) => (
          <tr key={t.id}>
            <td>{i + 1}</td>
            <td>{t.id}</td>
            <td class="tok" title={`bytes ${t.bytes}`}>{showWhitespace(t.text)}</td>
            <td>{fmtNum(t.logit)}</td>
            <td>{fmtProb(t.prob)}</td>
            <td>{fmtNum(t.prob > 0 ? Math.log(t.prob) : null)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Choice(props: { step: Step }) {
  const s = props.step;
  const c = s.chosen;
  return (
    <dl class="facts">
      <dt>chosen</dt>
      <dd>
        <span class="tok">{showWhitespace(c.text)}</span> (id {c.id}, bytes {c.bytes || '—'})
      </dd>
      <dt>probability</dt>
      <dd>
        {fmtProb(c.prob)} final (logprob {fmtNum(c.logprob)}) · {fmtProb(c.raw_prob)} raw, raw rank {c.raw_rank}, logit {fmtNum(c.logit)}
      </dd>
      <dt>draw</dt>
      <dd>{s.draw === null ? 'none (greedy)' : fmtNum(s.draw, 6)}</dd>
      <dt>entropy</dt>
      <dd>
        {fmtNum(s.entropy_before)} nats raw → {fmtNum(s.entropy_after)} nats final · pool {s.final_candidates} · raw mass removed {fmtProb(s.mass_removed)}
      </dd>
      <dt>runner-up</dt>
      <dd>
        {s.runner_up ? (
          <>
            <span class="tok">{showWhitespace(s.runner_up.text)}</span> (id {s.runner_up.id}) · margin {fmtProb(s.margin_prob)} in prob, {fmtNum(s.margin_logit)} in score
          </>
        ) : (
          'none: one token was left'
        )}
      </dd>
    </dl>
  );
}

function extraTitle(r: { rank: number | null; removed: boolean; extra: string | null }, shown: number, rescored: boolean, rec: Rank): string {
  if (r.removed) return 'the recorded token: the chain under the current settings removes it';
  const who = r.extra === 'recorded' ? (rescored ? 'the recorded token' : 'the step’s own token') : 'the token chosen under the current settings';
  if (r.rank === null) return `${who}, not among the ${shown} rows shown (its rank needs the kept logits)`;
  const how = rescored ? 'under the current settings' : `in the recorded final distribution (the kept raw logits re-scored${rec.agrees ? '' : '; the page’s re-scoring picks another token, so the rank may be off'})`;
  return `${who}: rank ${r.rank} ${how}, beyond the ${shown} rows shown`;
}

export function StepPanel(props: {
  branch: Branch;
  step: Step;
  whatIf: WhatIf;
  settings: Settings;
  canFork: boolean;
  onFork: (token: TraceToken) => void;
  report: (e: unknown) => void;
  modelB: string | null;
}) {
  const { branch, step, whatIf } = props;
  const known = useMemo(() => knownTokens(branch), [branch.steps.length, branch.id]);
  const finalTop = step.stages.length > 0 ? step.stages[step.stages.length - 1].top : step.raw.top;
  const rescored = whatIf.source === 'rescored' && whatIf.result !== null;
  const top = rescored ? whatIf.result!.top.map((t) => ({ id: t.id, prob: t.prob, score: t.score })) : finalTop.map((t) => ({ id: t.id, prob: t.prob, score: t.logit }));
  const recordedOutside = !rescored && !top.some((t) => t.id === step.chosen.id);
  const recRank = useRecordedRank(branch, step, recordedOutside);
  const chosenNow = rescored ? whatIf.result!.chosen : step.chosen.id;
  const extras: ExtraToken[] = [];
  if (rescored) {
    const r = whatIf.result!;
    const extra = (id: number, why: ExtraToken['why']): ExtraToken => ({ id, prob: Math.exp(r.logprobs[id]), score: r.scores[id], rank: rankOf(r.scores, id), why });
    extras.push(extra(step.chosen.id, 'recorded'), extra(chosenNow, 'chosen'));
  } else {
    extras.push({ id: step.chosen.id, prob: step.chosen.prob, score: recRank.score, rank: recRank.rank, why: 'recorded' });
  }
  const rows = candidateRows(top, extras);
  const [boundaries] = useBoundaries(branch, props.report);
  const [side] = useSideBySide(branch, props.modelB, props.report);
  const stepBounds = boundaries.state === 'done' ? boundaries.value.get(step.step) : undefined;
  const text = useTexts(rows.map((r) => r.id).concat(boundaryTokenIds(stepBounds)), known);
  const shownTop = top.length;
  const tokenOf = (id: number): TraceToken => known.get(id) ?? { id, text: text(id), bytes: '' };

  return (
    <section class="step-panel" aria-label={`step ${step.step}`}>
      <h2>
        Step {step.step} <span class="muted">of {branch.label}</span>
      </h2>
      <Choice step={step} />
      <GrammarLine step={step} />
      <ExpertsSection step={step} />

      <h3>{rescored ? 'Re-scored under the current settings' : 'Candidates (the final distribution as recorded)'}</h3>
      {whatIf.pending && <p class="muted">re-scoring…</p>}
      {whatIf.note && <p class="note">{whatIf.note}</p>}
      {rescored && (
        <p class={chosenNow === step.chosen.id ? 'same' : 'differs'}>
          {whatIf.result!.mode === 'greedy' ? 'Greedy now chooses' : `The recorded draw ${fmtNum(step.draw, 4)} now chooses`}{' '}
          <span class="tok">{showWhitespace(text(chosenNow))}</span> (id {chosenNow}, p {fmtProb(whatIf.result!.chosenProb)})
          {chosenNow === step.chosen.id ? ': the same token.' : `: the recorded run chose “${showWhitespace(step.chosen.text)}”.`} Pool {whatIf.result!.pool}, entropy{' '}
          {fmtNum(whatIf.result!.entropy)} nats.
          {whatIf.serverChosen !== null && whatIf.serverChosen !== chosenNow && !whatIf.result!.drawMissing && (
            <strong class="warn"> The server's replay chooses id {whatIf.serverChosen}.</strong>
          )}
        </p>
      )}
      {whatIf.source === 'rescored' && whatIf.changed !== null && (
        <p data-testid="changed-count" class="changed-count">
          {whatIf.changed.length} later step{whatIf.changed.length === 1 ? '' : 's'} would choose differently
        </p>
      )}
      <table class="candidates" data-testid="candidates" data-source={rescored ? 'rescored' : 'recorded'}>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">id</th>
            <th scope="col">token</th>
            <th scope="col">prob</th>
            <th scope="col">score</th>
            <th scope="col">
              <span class="sr-only">continue</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr
              key={r.id}
              data-id={r.id}
              data-prob={String(r.prob)}
              data-rank={r.rank ?? ''}
              data-extra={r.extra ?? undefined}
              class={[r.id === chosenNow ? 'chosen-row' : '', r.extra ? 'extra-row' : ''].filter(Boolean).join(' ') || undefined}
              title={r.extra ? extraTitle(r, shownTop, rescored, recRank) : undefined}
            >
              <td data-testid="candidate-rank">{r.rank ?? (r.extra && !rescored && recRank.state === 'pending' ? '…' : '—')}</td>
              <td>{r.id}</td>
              <td class="tok">
                {showWhitespace(text(r.id))}
                {r.id === chosenNow && <span class="badge">chosen</span>}
                {rescored && r.id === step.chosen.id && r.id !== chosenNow && <span class="badge recorded">recorded</span>}
                {r.extra && <span class="badge beyond">{r.removed ? 'removed by the chain' : `beyond top ${shownTop}`}</span>}
              </td>
              <td>{fmtProb(r.prob)}</td>
              <td>{fmtNum(r.score)}</td>
              <td>
                <button
                  type="button"
                  class="small"
                  data-testid="fork"
                  disabled={!props.canFork}
                  title={`continue from step ${step.step} with this token instead, under the current settings`}
                  onClick={() => props.onFork(tokenOf(r.id))}
                >
                  Continue
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>

      {rescored && whatIf.result!.stages.length > 0 && (
        <table class="mini">
          <caption>Stages under the current settings</caption>
          <thead>
            <tr>
              <th scope="col">stage</th>
              <th scope="col">pool</th>
              <th scope="col">mass removed</th>
              <th scope="col">entropy</th>
            </tr>
          </thead>
          <tbody>
            {whatIf.result!.stages.map((st) => (
              <tr key={st.name}>
                <td title={st.description}>{st.description}</td>
                <td>{st.candidates}</td>
                <td>{fmtProb(st.mass_removed)}</td>
                <td>{fmtNum(st.entropy)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <BoundariesSection branch={branch} step={step.step} job={boundaries} settings={props.settings} text={text} />

      <SideBySideSection branch={branch} step={step.step} recorded={step.chosen.id} modelB={props.modelB} rowJob={side} report={props.report} />

      <InsidePanel branch={branch} step={step} report={props.report} />

      <h3>The pool after every stage (recorded)</h3>
      {step.stages.length === 0 && <p class="muted">No stage ran: the token was chosen from the raw logits.</p>}
      {step.stages.map((st) => (
        <details key={st.name} class="stage">
          <summary>
            <strong>{st.name}</strong> · {st.candidates} left · removed {fmtProb(st.mass_removed)} · entropy {fmtNum(st.entropy)} nats
          </summary>
          <p class="muted">{st.description}</p>
          <TopTable top={st.top} caption={`top ${st.top.length} after ${st.name}`} />
        </details>
      ))}

      <h3>Raw logits</h3>
      <p class="muted">
        {step.raw.candidates} candidates, entropy {fmtNum(step.raw.entropy)} nats
      </p>
      <TopTable top={step.raw.top} caption={`raw top ${step.raw.top.length}`} />
    </section>
  );
}
