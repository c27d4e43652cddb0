// The live what-if of the selected step: when the sliders differ from the settings the row was
// generated with, the step's raw logits (fetched once, cached) are re-scored in the page at the
// next animation frame, and ~150 ms after the last move the server's replay says which later
// steps would choose differently.
import { useEffect, useState } from 'preact/hooks';
import { getLogits, replay } from './api';
import { PRESET_ORDER, rescore, type RescoreResult } from './rescore';
import { sameSettings, settingsProblem } from './settings';
import type { Branch, Settings } from './types';

export interface WhatIf {
  source: 'recorded' | 'rescored';
  result: RescoreResult | null;
  pending: boolean;
  note: string | null;
  /** Later steps (> the selected one) whose choice would change; null until the replay answers. */
  changed: number[] | null;
  /** The token the server's replay chooses at the selected step, to cross-check the page. */
  serverChosen: number | null;
}

const IDLE: WhatIf = { source: 'recorded', result: null, pending: false, note: null, changed: null, serverChosen: null };
const isAbort = (e: unknown) => e instanceof DOMException && e.name === 'AbortError';

function recordedNumber(branch: Branch, key: string): number {
  const v = branch.header?.settings?.[key]?.value;
  return typeof v === 'number' ? v : 0;
}

export function useWhatIf(branch: Branch | null, step: number | null, settings: Settings, report: (e: unknown) => void): WhatIf {
  const [state, setState] = useState<WhatIf>(IDLE);
  const generation = branch?.header?.generation;
  const stepObj = branch && step !== null ? branch.steps[step] : undefined;
  const recorded = !branch || sameSettings(settings, branch.settings);
  const problem = settingsProblem(settings);
  const key = JSON.stringify(settings);

  // In-page re-score.
  useEffect(() => {
    if (!branch || !stepObj || step === null) return setState(IDLE);
    if (recorded) return setState(IDLE);
    if (problem) return setState({ ...IDLE, source: 'rescored', note: `${problem}: not re-scored` });
    if (generation === undefined || !branch.header?.prompt_token_ids) {
      return setState({ ...IDLE, source: 'rescored', note: 'this row was not kept by the server: nothing to re-score' });
    }
    let frame = 0;
    let live = true;
    setState((s) => ({ ...s, source: 'rescored', pending: true, note: null }));
    const prompt = branch.header.prompt_token_ids;
    const history = prompt.concat(branch.steps.slice(0, step).map((s) => s.chosen.id));
    getLogits(generation, step).then(
      (logits) => {
        if (!live) return;
        frame = requestAnimationFrame(() => {
          if (!live) return;
          try {
            const result = rescore({
              logits,
              history,
              promptLen: prompt.length,
              settings: { ...settings, presence_penalty: recordedNumber(branch, 'presence_penalty'), frequency_penalty: recordedNumber(branch, 'frequency_penalty') },
              draw: stepObj.draw,
              mode: settings.temperature > 0 ? 'sample' : 'greedy',
            });
            const notes: string[] = [];
            if (result.drawMissing) notes.push('the recorded step was greedy (no draw): the most likely token is shown; the server samples it afresh');
            const foreign = (branch.header?.stages ?? []).filter((name) => !PRESET_ORDER.hf.includes(name));
            if (foreign.length > 0) notes.push(`the recorded chain also ran ${foreign.join(', ')}, which the page does not re-run (the server's replay does)`);
            // llama.cpp's penalty window and min_keep change stages the page does re-run.
            const window = branch.header?.settings?.repeat_last_n?.value;
            if (typeof window === 'number' && window >= 0) notes.push(`the recorded penalties counted the last ${window} tokens only (repeat_last_n); the page counts them as transformers does (the server's replay counts them as recorded)`);
            if (recordedNumber(branch, 'min_keep') > 1) notes.push(`the recorded truncations kept at least ${recordedNumber(branch, 'min_keep')} tokens (min_keep); the page keeps one (the server's replay keeps them)`);
            const note = notes.length > 0 ? notes.join('; ') : null;
            setState((s) => ({ ...s, source: 'rescored', result, pending: false, note }));
          } catch (e) {
            setState((s) => ({ ...s, source: 'rescored', result: null, pending: false, note: e instanceof Error ? e.message : String(e) }));
          }
        });
      },
      (e) => {
        if (!live) return;
        setState((s) => ({ ...s, pending: false, result: null, note: 'the logits of this step could not be fetched' }));
        report(e);
      },
    );
    return () => {
      live = false;
      cancelAnimationFrame(frame);
    };
  }, [branch?.id, generation, step, key, recorded, problem]);

  // The server's replay of every step, debounced.
  useEffect(() => {
    setState((s) => ({ ...s, changed: null, serverChosen: null }));
    if (!branch || step === null || recorded || problem || generation === undefined) return;
    const abort = new AbortController();
    const timer = setTimeout(() => {
      const body = {
        generation,
        settings: {
          temperature: settings.temperature,
          top_k: settings.top_k,
          top_p: settings.top_p,
          min_p: settings.min_p,
          repetition_penalty: settings.repetition_penalty,
          order_preset: settings.order_preset,
        },
        step,
        top_n: 10,
      };
      replay(body, abort.signal).then(
        (r) => setState((s) => ({ ...s, changed: r.changed.filter((k) => k > step), serverChosen: r.focus?.chosen?.id ?? null })),
        (e) => {
          if (!isAbort(e)) report(e);
        },
      );
    }, 150);
    return () => {
      clearTimeout(timer);
      abort.abort();
    };
  }, [branch?.id, generation, step, key, recorded, problem, branch?.steps.length]);

  return state;
}
