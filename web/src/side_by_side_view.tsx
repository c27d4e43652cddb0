// Side by side with model B on the page (only when /v1/logitscope/info names a `model_b`): the
// row's "Compare with B" button (one request per kept generation, kept by inside.ts's jobs) and its
// summary line; the step panel's section with both models' candidate lists for the selected step
// (one request per step, asked at once when the row was compared, else by its own button).
import { useEffect } from 'preact/hooks';
import { apiKeyProblem, sideBySide } from './api';
import { useJob, type Job } from './inside';
import { focusText, sidePairs, sideRequest, sideSteps, sideSummary } from './side_by_side';
import { fmtNum, fmtProb } from './format';
import type { Branch, SideBySideResponse, SideCandidate } from './types';
import { showWhitespace } from './utf8';

/** The row's comparison job (null key: no model B, or the row was not kept) and its start. */
export function useSideBySide(branch: Branch, modelB: string | null, report: (e: unknown) => void): [Job<SideBySideResponse>, () => void] {
  const generation = branch.header?.generation;
  const key = modelB === null || generation === undefined ? null : `side:${generation}`;
  return useJob<SideBySideResponse, void>(key, () =>
    sideBySide(sideRequest(generation!)).catch((e) => {
      report(e);
      throw e;
    }),
  );
}

/** The row's button, then what is under way, or the summary. */
export function CompareButton(props: { branch: Branch; modelB: string | null; job: Job<SideBySideResponse>; start: () => void }) {
  const { branch, modelB, job } = props;
  if (modelB === null || branch.header?.generation === undefined) return null;
  if (job.state === 'done') {
    return (
      <span class="side-summary" data-testid="side-summary" title={`model B (${modelB}) over this row's tokens, against the kept logits; chips where B's top-1 differs carry a “B”`}>
        {' '}
        · {sideSummary(job.value)}
      </span>
    );
  }
  const busy = job.state === 'pending';
  return (
    <>
      {' '}
      <button
        type="button"
        class="small"
        data-testid="side-compare"
        data-branch={branch.id}
        disabled={busy || branch.status === 'streaming' || branch.steps.length === 0}
        title={`the server runs ${modelB} over this row's prompt and tokens (one forward pass) and compares it with the kept logits at every kept step`}
        onClick={() => props.start()}
      >
        {busy ? `comparing with ${modelB}…` : job.state === 'error' ? `Compare with ${modelB} (failed: retry)` : `Compare with ${modelB}`}
      </button>
    </>
  );
}

function Cell(props: { c: SideCandidate | null; recorded: number }) {
  const { c } = props;
  if (!c) return <td colSpan={2} />;
  return (
    <>
      <td class={`tok${c.id === props.recorded ? ' side-recorded' : ''}`} data-side-id={c.id} title={`id ${c.id} · logprob ${fmtNum(c.logprob)}`}>
        {showWhitespace(c.token)}
      </td>
      <td>{fmtProb(c.prob)}</td>
    </>
  );
}

/** The step panel's section: both models' candidate lists for `step`, the KL, the flip and B's rank. */
export function SideBySideSection(props: { branch: Branch; step: number; recorded: number; modelB: string | null; rowJob: Job<SideBySideResponse>; report: (e: unknown) => void }) {
  const { branch, step, modelB } = props;
  const generation = branch.header?.generation;
  const key = modelB === null || generation === undefined ? null : `side:${generation}/${step}`;
  const [job, start] = useJob<SideBySideResponse, void>(key, () =>
    sideBySide(sideRequest(generation!, step)).catch((e) => {
      if (apiKeyProblem(e)) props.report(e); // the banner asks for the key
      throw e;
    }),
  );
  const rowDone = props.rowJob.state === 'done';
  useEffect(() => {
    if (rowDone) start();
  }, [key, rowDone]);
  if (key === null) return null;
  const head = <h3>Side by side with {modelB}</h3>;
  if (job.state !== 'done') {
    return (
      <section class="side-by-side" aria-label={`side by side with ${modelB}`}>
        {head}
        {job.state === 'error' && (
          <p class="inside-error" role="alert" data-testid="side-error">
            {job.error instanceof Error ? job.error.message : String(job.error)}
          </p>
        )}
        <p>
          <button type="button" data-testid="side-step" disabled={job.state === 'pending'} onClick={() => start()}>
            {job.state === 'pending' ? `Running ${modelB}…` : `Compare this step with ${modelB}`}
          </button>
        </p>
      </section>
    );
  }
  const r = job.value;
  const s = sideSteps(r).get(step);
  const pairs = sidePairs(r);
  return (
    <section class="side-by-side" aria-label={`side by side with ${modelB}`} data-testid="side-by-side" data-step={step} data-flip={s ? String(s.flip) : undefined}>
      {head}
      {s ? (
        <p class={s.flip ? 'differs' : 'same'} data-testid="side-line">
          {focusText(s, modelB!)}
        </p>
      ) : (
        <p class="muted">This step was not kept by the server: no comparison.</p>
      )}
      {pairs.length > 0 && (
        <table class="mini side-table">
          <thead>
            <tr>
              <th scope="col">#</th>
              <th scope="col">A: {r.model_a}</th>
              <th scope="col">prob</th>
              <th scope="col">B: {r.model_b}</th>
              <th scope="col">prob</th>
            </tr>
          </thead>
          <tbody>
            {pairs.map((p) => (
              <tr key={p.rank} data-testid="side-row" data-rank={p.rank} data-a={p.a?.id ?? ''} data-b={p.b?.id ?? ''}>
                <td>{p.rank}</td>
                <Cell c={p.a} recorded={props.recorded} />
                <Cell c={p.b} recorded={props.recorded} />
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
