// "Inside the model" for the selected step of a kept generation: the logit lens, the
// leave-one-out attribution (docs/lens.md) and the continuation tree (docs/lab.md), each computed
// only when its button is pressed. A refused request shows the server's message here (a 401 also
// goes to the page's banner); an attribution refused for its length (param max_prompt) offers to
// raise the limit up to 1024.
import { useState } from 'preact/hooks';
import { apiKeyProblem, ApiError, attribute, lens, tree } from './api';
import { AttributionView } from './attribution_view';
import { useJob, type Job } from './inside';
import { LensView } from './lens_view';
import { readParams, TREE_DEPTH, TREE_K, treeRequest, type TreeParams } from './tree';
import { TreeControls, TreeView, type TreeInputs } from './tree_view';
import type { AttributionResponse, Branch, LensResponse, Step, TreeResponse } from './types';

const LENS_TOP = 5;
const MAX_PROMPT_DEFAULT = 256; // the server's default limit of the attribution's context
const MAX_PROMPT_LIMIT = 1024; // and the most a request may ask for

function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    const head = e.status && e.status >= 400 ? `Error ${e.status}: ` : 'Error: ';
    return `${head}${e.message}${e.param ? ` (parameter: ${e.param})` : ''}`;
  }
  return `Error: ${e instanceof Error ? e.message : String(e)}`;
}

function JobError(props: { job: Job<unknown>; testid: string }) {
  if (props.job.state !== 'error') return null;
  return (
    <p class="inside-error" role="alert" data-testid={props.testid}>
      {errorText(props.job.error)}
    </p>
  );
}

export function InsidePanel(props: { branch: Branch; step: Step; report: (e: unknown) => void }) {
  const generation = props.branch.header?.generation;
  const k = props.step.step;
  const promptLength = props.branch.header?.prompt_token_ids?.length ?? null;
  const contextTokens = promptLength === null ? null : promptLength + k;
  const at = generation === undefined ? null : `${generation}/${k}`;
  const surface = <T,>(p: Promise<T>) =>
    p.catch((e) => {
      if (apiKeyProblem(e)) props.report(e); // the banner asks for the key
      throw e;
    });
  const [lensJob, startLens] = useJob<LensResponse, void>(at && `lens:${at}`, () => surface(lens({ generation: String(generation), step: k, top: LENS_TOP })));
  const [attrJob, startAttr] = useJob<AttributionResponse, number | null>(at && `attribution:${at}`, (max) =>
    surface(attribute({ generation: String(generation), step: k, ...(max === null ? {} : { max_prompt: max }) })),
  );
  const [treeInputs, setTreeInputs] = useState<TreeInputs>({ k: String(TREE_K.initial), depth: String(TREE_DEPTH.initial), minProb: '0' });
  const [treeJob, startTree] = useJob<TreeResponse, TreeParams>(at && `tree:${at}`, (p) => surface(tree(treeRequest(generation!, k, p))), true);
  const treeParams = readParams(treeInputs.k, treeInputs.depth, treeInputs.minProb);

  if (generation === undefined) {
    return (
      <section class="inside" aria-label="inside the model">
        <h3>Inside the model</h3>
        <p class="muted">This row was not kept by the server: there is nothing to look inside.</p>
      </section>
    );
  }
  const tooLong = attrJob.state === 'error' && attrJob.error instanceof ApiError && attrJob.error.param === 'max_prompt';
  const canRaise = tooLong && contextTokens !== null && contextTokens > MAX_PROMPT_DEFAULT && contextTokens <= MAX_PROMPT_LIMIT;
  return (
    <section class="inside" aria-label="inside the model">
      <h3>Inside the model</h3>
      {lensJob.state === 'done' ? (
        <LensView lens={lensJob.value} />
      ) : (
        <p>
          <button type="button" data-testid="lens-open" disabled={lensJob.state === 'pending'} onClick={() => startLens()}>
            {lensJob.state === 'pending' ? 'Reading every layer…' : 'Show the logit lens'}
          </button>{' '}
          <span class="hint">each layer's residual stream read as the next token, through the recorded chain (one forward pass)</span>
        </p>
      )}
      <JobError job={lensJob} testid="lens-error" />

      <h4>Which context tokens it depends on</h4>
      {attrJob.state === 'done' ? (
        <AttributionView result={attrJob.value} promptLength={promptLength ?? 0} step={k} />
      ) : (
        <p>
          <button type="button" data-testid="attribution-compute" disabled={attrJob.state === 'pending'} onClick={() => startAttr(null)}>
            {attrJob.state === 'pending' ? 'Computing attribution…' : 'Compute attribution'}
          </button>{' '}
          <span class="hint">
            leave-one-out: the step again without each of the {contextTokens ?? 'context'} tokens (slower: the work grows with the square of the context)
          </span>
        </p>
      )}
      <JobError job={attrJob} testid="attribution-error" />
      {canRaise && (
        <p>
          <button type="button" data-testid="attribution-raise" onClick={() => startAttr(contextTokens)}>
            Compute anyway (max_prompt {contextTokens})
          </button>
        </p>
      )}

      <div class="tree-part" data-testid="tree-part">
        <h4>Continuation tree</h4>
        <TreeControls
          inputs={treeInputs}
          onInputs={setTreeInputs}
          onCompute={() => 'params' in treeParams && startTree(treeParams.params)}
          pending={treeJob.state === 'pending'}
          shown={treeJob.state === 'done'}
          problem={'params' in treeParams ? null : treeParams.message}
        />
        <JobError job={treeJob} testid="tree-error" />
        {treeJob.state === 'done' && <TreeView tree={treeJob.value} recorded={props.branch.steps.slice(k).map((s) => s.chosen)} />}
      </div>
    </section>
  );
}
