// Decision boundaries on the page: useBoundaries (one request set per kept generation, only when
// its row's "Decision boundaries" button is pressed, kept by generation as inside.ts keeps jobs;
// always under the settings the row was generated with, whatever the sliders say), the row's
// button and summary, and the step panel's bars: per setting its range [min, max], the kept
// interval shaded (open where it reaches the range's end), the recorded value, the tokens past each end.
import { getGeneration, replayBoundaries } from './api';
import { barGeometry, BOUNDARY_NAMES, boundariesByStep, boundaryRequests, costText, endText, fmtSetting, fragileSummary, intervalText, MAX_BOUNDARY_STEPS, scaleOf, sliderValue, type Applies } from './boundaries';
import { useJob, type Job } from './inside';
import { sameSettings } from './settings';
import type { BoundaryName, Branch, ReplayResponse, Settings, StepBoundaries } from './types';
import { showWhitespace } from './utf8';

export type BoundaryMap = Map<number, StepBoundaries>;

/** The boundaries job of `branch`'s kept generation (null key: not kept) and its start. */
export function useBoundaries(branch: Branch, report: (e: unknown) => void): [Job<BoundaryMap>, () => void] {
  const generation = branch.header?.generation;
  const key = generation === undefined ? null : `boundaries:${generation}`;
  return useJob<BoundaryMap, void>(key, async () => {
    try {
      // Up to 256 steps in one request; a longer generation asks for its kept steps in lists.
      const kept = branch.steps.length <= MAX_BOUNDARY_STEPS ? branch.steps.length : (await getGeneration(generation!)).kept_steps;
      const answers: ReplayResponse[] = [];
      for (const steps of boundaryRequests(kept)) answers.push(await replayBoundaries(generation!, steps));
      return boundariesByStep(answers);
    } catch (e) {
      report(e); // the banner, as the what-if's replay does
      throw e;
    }
  });
}

/** The row's button ("Decision boundaries"), then what is under way, or the count of fragile steps. */
export function BoundaryButton(props: { branch: Branch; job: Job<BoundaryMap>; start: () => void }) {
  const { branch, job } = props;
  if (branch.header?.generation === undefined) return null;
  if (job.state === 'done') {
    return (
      <span class="boundary-summary" data-testid="boundaries-summary" title="each step's decision boundaries under the settings this row was generated with">
        {' '}
        · decision boundaries (recorded settings): {fragileSummary(job.value)}, marked <span class="fragile-key">like this</span>
      </span>
    );
  }
  const n = branch.steps.length;
  const busy = job.state === 'pending';
  return (
    <>
      {' '}
      <button
        type="button"
        class="small"
        data-testid="boundaries-compute"
        data-branch={branch.id}
        disabled={busy || branch.status === 'streaming' || n === 0}
        title={`the server computes every kept step's decision boundaries under the settings this row was generated with (${costText(n)} at Qwen's vocabulary); the sliders do not change them`}
        onClick={() => props.start()}
      >
        {busy ? 'computing decision boundaries…' : job.state === 'error' ? 'Decision boundaries (failed: retry)' : 'Decision boundaries'}
      </button>
    </>
  );
}

function BoundaryRow(props: { name: BoundaryName; b: Applies; settings: Settings; text: (id: number) => string }) {
  const { name, b } = props;
  const bar = barGeometry(name, b, sliderValue(name, props.settings, b));
  const pct = (f: number) => `${(100 * f).toFixed(2)}%`;
  const scale = scaleOf(name);
  const lo = fmtSetting(name, b.lo);
  const hi = fmtSetting(name, b.hi);
  const shown = (id: number) => showWhitespace(props.text(id));
  return (
    <div class={`boundary${b.fragile ? ' is-fragile' : ''}`} data-testid="boundary" data-setting={name} data-applies="true" data-fragile={String(b.fragile)} title={b.note}>
      <div class="boundary-head">
        <span class="boundary-name">{name}</span>
        <span class="boundary-keeps" title="the interval that keeps this step's token">
          <span data-testid="boundary-lo">{lo}</span> – <span data-testid="boundary-hi">{hi}</span>
        </span>
        <span class="muted">
          {' '}
          · recorded <span data-testid="boundary-value">{fmtSetting(name, b.value)}</span>
        </span>
        {b.fragile && (
          <span class="badge fragile" title="the recorded value lies within 10 % of an end of the interval">
            fragile
          </span>
        )}
      </div>
      <div class="bbar-row">
        <span class="bbar-end">{fmtSetting(name, b.min)}</span>
        <div
          class="bbar"
          data-testid="boundary-bar"
          role="img"
          aria-label={`${name}: the choice stays over ${intervalText(name, b)} of ${fmtSetting(name, b.min)} to ${fmtSetting(name, b.max)} (${scale} scale), recorded ${fmtSetting(name, b.value)}`}
          title={`${scale} scale over the range searched, ${fmtSetting(name, b.min)} to ${fmtSetting(name, b.max)}`}
        >
          <div class={`bbar-kept${bar.openLo ? ' open-lo' : ''}${bar.openHi ? ' open-hi' : ''}`} style={{ left: pct(bar.lo), width: pct(bar.hi - bar.lo) }} />
          <div class="bbar-value" style={{ left: pct(bar.value) }} />
          {bar.slider !== null && <div class="bbar-slider" style={{ left: pct(bar.slider) }} title={`the slider: ${fmtSetting(name, sliderValue(name, props.settings, b))}`} />}
        </div>
        <span class="bbar-end">{fmtSetting(name, b.max)}</span>
      </div>
      <div class="boundary-past">
        <span data-testid="boundary-below" class={b.below === null ? 'muted' : undefined}>
          {b.below === null ? endText(name, b, 'below', shown) : `← ${endText(name, b, 'below', shown)}`}
        </span>
        <span data-testid="boundary-above" class={b.above === null ? 'muted' : undefined}>
          {b.above === null ? endText(name, b, 'above', shown) : `${endText(name, b, 'above', shown)} →`}
        </span>
      </div>
    </div>
  );
}

/** The selected step's boundaries in the step panel (or a line saying how to get them). */
export function BoundariesSection(props: { branch: Branch; step: number; job: Job<BoundaryMap>; settings: Settings; text: (id: number) => string }) {
  const { branch, job } = props;
  if (branch.header?.generation === undefined) return null;
  const head = <h3>Decision boundaries</h3>;
  if (job.state !== 'done') {
    return (
      <section class="boundaries" aria-label="decision boundaries">
        {head}
        <p class="muted">
          {job.state === 'pending'
            ? 'computing every kept step’s boundaries on the server…'
            : job.state === 'error'
              ? 'the request failed (the banner says why): press the row’s “Decision boundaries” again to retry.'
              : `not computed: press “Decision boundaries” above the row’s tokens (${costText(branch.steps.length)} at Qwen’s vocabulary).`}
        </p>
      </section>
    );
  }
  const sb = job.value.get(props.step);
  if (!sb) {
    return (
      <section class="boundaries" aria-label="decision boundaries">
        {head}
        <p class="muted">This step was not kept by the server (beyond the kept steps): no boundaries.</p>
      </section>
    );
  }
  const differs = !sameSettings(props.settings, branch.settings);
  return (
    <section class="boundaries" aria-label="decision boundaries" data-testid="boundaries" data-step={props.step} data-fragile={String(sb.fragile)}>
      {head}
      <p class="boundaries-basis">
        <strong>Under the recorded settings</strong>: each setting varied alone, {sb.greedy ? 'the others as recorded' : 'the others and the step’s draw as recorded'}. The shaded interval keeps this step’s
        token, the black line is the recorded value, a faded end reaches the end of the range searched; the tokens chosen just past each end are named below the bar.
      </p>
      {differs && (
        <p class="note" data-testid="boundaries-sliders-differ">
          The sliders differ from the settings this row was generated with: these intervals stay those of the recorded settings (the sliders do not re-compute them);
          <span class="slider-key" aria-hidden="true" /> marks a slider’s value on its bar.
        </p>
      )}
      {sb.greedy && (
        <p class="boundaries-greedy" data-testid="boundaries-greedy">
          A greedy step: the warpers (temperature, top_k, top_p, min_p) take no part in a greedy choice, the argmax after the processors; only repetition_penalty can change it.
        </p>
      )}
      {BOUNDARY_NAMES.map((name) => {
        const b = sb.settings[name];
        if (!b) return null;
        if (b.applies) return <BoundaryRow key={name} name={name} b={b} settings={props.settings} text={props.text} />;
        if (sb.greedy) return null; // said once above
        return (
          <div key={name} class="boundary" data-testid="boundary" data-setting={name} data-applies="false">
            <span class="boundary-name">{name}</span> <span class="muted">{b.note}</span>
          </div>
        );
      })}
    </section>
  );
}
