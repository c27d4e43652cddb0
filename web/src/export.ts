// Exports of a generation row: its trace as JSON Lines in the CLI's schema (`generate --json`:
// a header line, one step line per token, a result line; docs/trace-format.md) and the
// strip chart as a standalone .svg; download() saves either through a Blob link.
import { stringifyJson } from './json_big';
import type { Branch, Header, Step } from './types';

/** The server's finish_reason in the CLI's words (eos, stop_string, length, context_limit). */
export function cliFinishReason(reason: string | null, header: Header | null, steps: readonly Step[]): string {
  if (reason === 'length') return 'length';
  if (reason === 'stop') {
    const eos = header?.settings?.eos_token_id?.value;
    const ids = Array.isArray(eos) ? eos.map(Number) : typeof eos === 'number' ? [eos] : [];
    const last = steps.at(-1)?.chosen.id;
    return last !== undefined && ids.includes(last) ? 'eos' : 'stop_string';
  }
  return reason ?? 'cancelled';
}

export function traceJsonl(branch: Pick<Branch, 'header' | 'steps' | 'text' | 'finishReason'>): string {
  const lines: string[] = [];
  lines.push(stringifyJson({ ...(branch.header ?? {}), type: 'header' }));
  for (const s of branch.steps) lines.push(stringifyJson({ ...s, type: 'step' }));
  const sequence = branch.steps[0]?.sequence ?? 0;
  const processed = branch.steps.reduce((sum, s) => sum + (s.chosen.logprob ?? 0), 0);
  lines.push(
    stringifyJson({
      type: 'result',
      sequence,
      tokens: branch.steps.map((s) => s.chosen.id),
      text: branch.text,
      finish_reason: cliFinishReason(branch.finishReason, branch.header, branch.steps),
      logprob: branch.steps.at(-1)?.sequence_logprob ?? 0,
      processed_logprob: processed,
    }),
  );
  return lines.join('\n') + '\n';
}

/** Saves `text` as a file named `name` (a Blob link, so nothing leaves the page). */
export function download(name: string, text: string, type: string): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
