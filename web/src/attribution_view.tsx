// The attribution of one step as a heat map over its context (the prompt, then the tokens
// generated before the step): each token coloured by how much removing it lowers the target's
// logprob (blue: it helped, orange: it hurt), a tooltip with both numbers, a legend, and the
// tokens with the largest effects in a small table.
import { useMemo } from 'preact/hooks';
import { attributionCells, deltaColor, deltaScale, fmtDelta, strongest } from './attribution';
import { fmtNum } from './format';
import type { AttributionResponse } from './types';
import { showWhitespace } from './utf8';

const STRONGEST = 5;

function Legend(props: { scale: number }) {
  const s = props.scale;
  if (!(s > 0)) return <p class="hint">Removing any one token leaves the target's logprob unchanged.</p>;
  return (
    <span class="legend" aria-label="colour legend">
      {[-1, -0.5, 0, 0.5, 1].map((f) => (
        <span key={f} class="swatch-item">
          <span class="swatch" style={{ background: deltaColor(f * s, s) }} /> {f === 0 ? '0' : fmtDelta(f * s)}
        </span>
      ))}
      <span class="muted">nats (blue: helped, orange: hurt)</span>
    </span>
  );
}

export function AttributionView(props: { result: AttributionResponse; promptLength: number; step: number }) {
  const r = props.result;
  const cells = useMemo(() => attributionCells(r, props.promptLength), [r, props.promptLength]);
  const scale = useMemo(() => deltaScale(r.attributions), [r]);
  const top = strongest(cells, STRONGEST);
  return (
    <div class="attribution" data-testid="attribution">
      <p>
        How much each of the {r.context_tokens} context tokens makes <span class="tok">“{showWhitespace(r.target.token)}”</span> (id {r.target.id}, the token of step{' '}
        {props.step}) likelier: its logprob is <span data-testid="attribution-base">{fmtNum(r.base_logprob)}</span> with the whole context; delta = that minus
        its logprob with the token removed.
      </p>
      <Legend scale={scale} />
      <div class="attr-map" data-testid="attribution-map">
        {cells.map((c) => [
          c.generated && c.position === props.promptLength && (
            <span key="split" class="attr-split" title="the tokens after this mark were generated before this step">
              generated:
            </span>
          ),
          <span
            key={c.position}
            class={c.generated ? 'attr-tok generated' : 'attr-tok'}
            style={{ background: c.color }}
            data-testid="attr-token"
            data-position={c.position}
            data-delta={String(c.delta)}
            title={c.title}
          >
            {c.text}
          </span>,
          c.newline && <span key={`b${c.position}`} class="break" />,
        ])}
      </div>
      <table class="mini" data-testid="attribution-top">
        <caption>The {top.length} largest effects</caption>
        <thead>
          <tr>
            <th scope="col">pos</th>
            <th scope="col">id</th>
            <th scope="col">token</th>
            <th scope="col">delta</th>
            <th scope="col" title="the target's logprob with this token removed">logprob without</th>
          </tr>
        </thead>
        <tbody>
          {top.map((c) => (
            <tr key={c.position} data-position={c.position}>
              <td>{c.position}</td>
              <td>{c.id}</td>
              <td class="tok">{c.text}</td>
              <td data-testid="attr-delta">{fmtDelta(c.delta)}</td>
              <td>{fmtNum(c.logprob)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
