// The strip chart on the page: chart.ts's SVG markup (the same the .svg export writes) with
// clicks on a step's column selecting that step's chip.
import { useMemo } from 'preact/hooks';
import { chartSvg } from './chart';
import type { Step } from './types';

export function ChartView(props: { steps: Step[]; selected: number | null; changed: ReadonlySet<number>; title: string; onSelect: (step: number) => void }) {
  const svg = useMemo(
    () => chartSvg(props.steps, { selected: props.selected, changed: props.changed, title: props.title }),
    [props.steps, props.steps.length, props.selected, props.changed, props.title],
  );
  return (
    <div
      class="chart"
      data-testid="chart"
      onClick={(e) => {
        const target = (e.target as Element).closest('[data-step]');
        if (target) props.onSelect(Number(target.getAttribute('data-step')));
      }}
      dangerouslySetInnerHTML={{ __html: svg }}
    />
  );
}
