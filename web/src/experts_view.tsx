// The step panel's "Experts" section (a mixture-of-experts model whose trace carries the
// router's choice): one row per layer with the chosen experts, best first, each shaded by its
// share of the layer's weight (experts.ts shapes the data).
import { expertsView, shareColor } from './experts';
import { fmtNum } from './format';
import type { Step } from './types';

export function ExpertsSection(props: { step: Step }) {
  const view = expertsView(props.step);
  if (view === null) return null;
  const top = view.mostUsed.slice(0, 5);
  return (
    <details class="experts" data-testid="experts" open={view.rows.length <= 8}>
      <summary>
        <strong>Experts</strong> · the router's top {view.k} per layer for this step's input token · most used:{' '}
        {top.map((u) => `#${u.expert} (${u.layers})`).join(', ')}
      </summary>
      <table class="mini experts-table">
        <thead>
          <tr>
            <th scope="col">layer</th>
            <th scope="col" class="expert-cells">experts (weight), best first</th>
            <th scope="col">sum</th>
          </tr>
        </thead>
        <tbody>
          {view.rows.map((r) => (
            <tr key={r.layer} data-layer={r.layer}>
              <td>{r.layer}</td>
              <td class="expert-cells">
                {r.dense ? (
                  <span class="muted">dense (no router)</span>
                ) : (
                  r.cells.map((c) => (
                    <span key={c.expert} class="expert-cell" data-expert={c.expert} style={{ background: shareColor(c.share) }} title={`expert ${c.expert}: weight ${c.weight}`}>
                      #{c.expert} {fmtNum(c.weight, 3)}
                    </span>
                  ))
                )}
              </td>
              <td>{r.dense ? '' : fmtNum(r.total, 3)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}
