// The sampling controls: a slider with a number input beside it for temperature, top_k, top_p,
// min_p and repetition_penalty (the next request uses them, and moving one re-scores the
// selected step at once), plus max tokens, seed and the stage order preset.
import { useEffect, useState } from 'preact/hooks';
import { PRESETS, type Preset, type Settings } from './types';

type NumericKey = 'temperature' | 'top_k' | 'top_p' | 'min_p' | 'repetition_penalty';

export const FIELDS: { key: NumericKey; label: string; min: number; max: number; step: number; hint: string }[] = [
  { key: 'temperature', label: 'temperature', min: 0, max: 2, step: 0.01, hint: '0 = greedy' },
  { key: 'top_k', label: 'top_k', min: 0, max: 200, step: 1, hint: '0 = off' },
  { key: 'top_p', label: 'top_p', min: 0.01, max: 1, step: 0.01, hint: '1 = off' },
  { key: 'min_p', label: 'min_p', min: 0, max: 1, step: 0.01, hint: '0 = off' },
  { key: 'repetition_penalty', label: 'repetition_penalty', min: 0.5, max: 3, step: 0.01, hint: '1 = off' },
];

/** The API's ranges (docs/server-api.md); null when the value is one the server accepts. */
export function settingsProblem(s: Settings): string | null {
  const bad = (ok: boolean, what: string) => (ok ? null : what);
  return (
    bad(Number.isFinite(s.temperature) && s.temperature >= 0 && s.temperature <= 2, 'temperature must be 0..2') ??
    bad(Number.isInteger(s.top_k) && s.top_k >= -1, 'top_k must be an integer >= -1') ??
    bad(Number.isFinite(s.top_p) && s.top_p > 0 && s.top_p <= 1, 'top_p must be in (0, 1]') ??
    bad(Number.isFinite(s.min_p) && s.min_p >= 0 && s.min_p <= 1, 'min_p must be 0..1') ??
    bad(Number.isFinite(s.repetition_penalty) && s.repetition_penalty > 0 && s.repetition_penalty <= 10, 'repetition_penalty must be in (0, 10]')
  );
}

export const sameSettings = (a: Settings, b: Settings) =>
  FIELDS.every((f) => a[f.key] === b[f.key]) && a.order_preset === b.order_preset;

function NumberSlider(props: {
  field: (typeof FIELDS)[number];
  value: number;
  source?: string;
  onChange: (v: number) => void;
}) {
  const { field, value } = props;
  const [text, setText] = useState(String(value));
  // Follow outside changes (the slider, a reset) unless the text already means this value.
  useEffect(() => {
    if (Number(text) !== value || text.trim() === '') setText(Number.isNaN(value) ? text : String(value));
  }, [value]);
  const id = `setting-${field.key}`;
  const fromText = (t: string) => {
    setText(t);
    props.onChange(t.trim() === '' ? Number.NaN : Number(t));
  };
  const sliderValue = Number.isFinite(value) ? Math.min(field.max, Math.max(field.min, value)) : field.min;
  return (
    <div class="setting slider">
      <label for={id} title={props.source ? `the model's default comes from ${props.source}` : undefined}>
        {field.label} <span class="hint">{field.hint}</span>
      </label>
      <input
        type="range"
        aria-label={`${field.label} slider`}
        data-testid={`${field.key}-slider`}
        min={field.min}
        max={field.max}
        step={field.step}
        value={sliderValue}
        onInput={(e) => {
          const v = Number((e.currentTarget as HTMLInputElement).value);
          setText(String(v));
          props.onChange(v);
        }}
      />
      <input
        id={id}
        type="number"
        data-testid={field.key}
        step={field.step}
        value={text}
        onInput={(e) => fromText((e.currentTarget as HTMLInputElement).value)}
        onChange={(e) => fromText((e.currentTarget as HTMLInputElement).value)}
      />
    </div>
  );
}

export function SettingsPanel(props: {
  settings: Settings;
  defaults: Settings;
  sources: Partial<Record<keyof Settings, string>>;
  maxTokens: string;
  seed: string;
  lastSeed: string | null;
  onSettings: (s: Settings) => void;
  onMaxTokens: (v: string) => void;
  onSeed: (v: string) => void;
}) {
  const s = props.settings;
  return (
    <fieldset class="settings">
      <legend>Sampling settings</legend>
      <p class="hint">Used by the next generation; moving one re-scores the selected step.</p>
      {FIELDS.map((f) => (
        <NumberSlider key={f.key} field={f} value={s[f.key]} source={props.sources[f.key]} onChange={(v) => props.onSettings({ ...s, [f.key]: v })} />
      ))}
      <div class="setting row">
        <label for="setting-order">stage order</label>
        <select
          id="setting-order"
          data-testid="order_preset"
          value={s.order_preset}
          onChange={(e) => props.onSettings({ ...s, order_preset: (e.currentTarget as HTMLSelectElement).value as Preset })}
        >
          {PRESETS.map((p) => (
            <option key={p} value={p}>
              {p}
            </option>
          ))}
        </select>
      </div>
      <div class="setting row">
        <label for="setting-max">max tokens</label>
        <input id="setting-max" type="number" min={1} step={1} data-testid="max_tokens" value={props.maxTokens} onInput={(e) => props.onMaxTokens((e.currentTarget as HTMLInputElement).value)} />
      </div>
      <div class="setting row">
        <label for="setting-seed">seed</label>
        <input id="setting-seed" type="text" inputMode="numeric" placeholder="random" data-testid="seed" value={props.seed} onInput={(e) => props.onSeed((e.currentTarget as HTMLInputElement).value)} />
        {props.lastSeed !== null && (
          <button type="button" class="small" title="put the last generation's seed in the field" onClick={() => props.onSeed(props.lastSeed ?? '')}>
            use {props.lastSeed}
          </button>
        )}
      </div>
      <button type="button" class="small" onClick={() => props.onSettings({ ...props.defaults })}>
        Reset to the model's defaults
      </button>
    </fieldset>
  );
}
