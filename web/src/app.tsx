// The logit microscope: the page's state and actions. Prompt panel left, generation rows and
// the strip chart in the centre, the selected step right. Generations stream from the
// OpenAI-compatible routes with the trace on and the logits kept; forks continue a row from a
// chosen token; every error lands in the banner; body[data-state] says idle/generating/error.
// A 401 (serve --api-key) shows the API key field; a key given there is kept for the tab
// (api.ts sends it) and /v1/logitscope/info is loaded again. A structured output choice is
// checked before sending (inline, next to its field, as a server 400 naming that field is too);
// a constrained generation is streamed without keep, and a note above its rows says what is off.
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, apiKeyProblem, getGeneration, getInfo, setApiKey } from './api';
import { chartSvg } from './chart';
import { ChartView } from './chart_view';
import { COLOR_MODES, legend, type ColorMode } from './colors';
import { download, traceJsonl } from './export';
import { ApiKeyForm, PromptPanel, type Mode, type Turn } from './prompt_panel';
import { SettingsPanel } from './settings';
import { StepPanel } from './step_panel';
import { requestBody, streamGeneration, type GenerateRequest } from './stream';
import { constraintLabel, constraintProblem, NO_CONSTRAINT, paramField, type Constraint } from './structured';
import { ConstrainedNote, StructuredPanel, type FieldError } from './structured_view';
import { BranchRow, type Selection } from './tokens';
import { PRESETS, type Branch, type InfoResponse, type Preset, type Settings, type TraceToken, type View } from './types';
import { useWhatIf } from './whatif';

const NONE: ReadonlySet<number> = new Set();
const FALLBACK: Settings = { temperature: 1, top_k: 0, top_p: 1, min_p: 0, repetition_penalty: 1, order_preset: 'hf' };

interface ErrorInfo {
  message: string;
  param: string | null;
  status: number | null;
}

function defaultsFrom(info: InfoResponse): { settings: Settings; sources: Partial<Record<keyof Settings, string>> } {
  const num = (k: keyof Settings, fallback: number) => {
    const v = info.settings?.[k]?.value;
    return typeof v === 'number' ? v : fallback;
  };
  const preset = info.settings?.order_preset?.value;
  const settings: Settings = {
    temperature: num('temperature', 1),
    top_k: num('top_k', 0),
    top_p: num('top_p', 1),
    min_p: num('min_p', 0),
    repetition_penalty: num('repetition_penalty', 1),
    order_preset: PRESETS.includes(preset as Preset) ? (preset as Preset) : 'hf',
  };
  const sources: Partial<Record<keyof Settings, string>> = {};
  for (const k of Object.keys(settings) as (keyof Settings)[]) {
    const src = info.settings?.[k]?.source;
    if (src) sources[k] = src;
  }
  return { settings, sources };
}

const tokenRef = (t: TraceToken): TraceToken => ({ id: t.id, text: t.text, bytes: t.bytes });

export function App() {
  const [info, setInfo] = useState<InfoResponse | null>(null);
  const [defaults, setDefaults] = useState<Settings>(FALLBACK);
  const [sources, setSources] = useState<Partial<Record<keyof Settings, string>>>({});
  const [settings, setSettings] = useState<Settings>(FALLBACK);
  const [maxTokens, setMaxTokens] = useState('64');
  const [seed, setSeed] = useState('');
  const [mode, setMode] = useState<Mode>('chat');
  const [system, setSystem] = useState('');
  const [user, setUser] = useState('');
  const [rawPrompt, setRawPrompt] = useState('');
  const [turns, setTurns] = useState<Turn[]>([]);
  const [views, setViews] = useState<View[]>([]);
  const [activeView, setActiveView] = useState<number | null>(null);
  const [selection, setSelection] = useState<Selection | null>(null);
  const [colorMode, setColorMode] = useState<ColorMode>('prob');
  const [generating, setGenerating] = useState(false);
  const [error, setError] = useState<ErrorInfo | null>(null);
  const [keyProblem, setKeyProblem] = useState<'missing' | 'rejected' | null>(null);
  const [constraint, setConstraint] = useState<Constraint>(NO_CONSTRAINT);
  const [fieldError, setFieldError] = useState<FieldError | null>(null);
  const abortRef = useRef<AbortController | null>(null);
  const nextId = useRef(1);
  const infoLoaded = useRef(false);

  const report = (e: unknown) => {
    if (e instanceof DOMException && e.name === 'AbortError') return;
    const key = apiKeyProblem(e);
    if (key) {
      setKeyProblem(key);
      const message =
        key === 'missing'
          ? 'the server wants an API key (it was started with --api-key): enter it in the “API key” field of the prompt panel'
          : 'the server did not accept the API key: enter the right one in the “API key” field of the prompt panel';
      setError({ message, param: null, status: 401 });
    } else if (e instanceof ApiError) {
      setError({ message: e.message, param: e.param, status: e.status });
      const field = paramField(e.param);
      if (field) setFieldError({ field, message: e.message, source: 'server' });
    } else setError({ message: e instanceof Error ? e.message : String(e), param: null, status: null });
  };

  /** GET /v1/logitscope/info; the model's defaults become the settings the first time only. */
  const loadInfo = () =>
    getInfo().then((i) => {
      setInfo(i);
      setKeyProblem(null);
      if (infoLoaded.current) return;
      infoLoaded.current = true;
      const d = defaultsFrom(i);
      setDefaults(d.settings);
      setSources(d.sources);
      setSettings(d.settings);
      if (!i.has_chat_template) setMode('raw');
    }, report);

  useEffect(() => {
    loadInfo();
  }, []);

  const saveKey = (key: string) => {
    setApiKey(key);
    setError(null);
    loadInfo();
  };

  // In the same task as the render, so the DOM and data-state never disagree.
  useLayoutEffect(() => {
    document.body.dataset.state = generating ? 'generating' : error ? 'error' : 'idle';
  }, [generating, error]);

  const view = views.find((v) => v.id === activeView) ?? null;
  const branches = view?.branches ?? [];
  const selBranch = branches.find((b) => b.id === selection?.branch) ?? null;
  const selStep = selBranch && selection ? selBranch.steps[selection.step] ?? null : null;
  const chartBranch = selBranch ?? branches[0] ?? null;
  const whatIf = useWhatIf(selStep ? selBranch : null, selStep ? selection!.step : null, settings, report);
  const changed = useMemo(() => new Set(whatIf.changed ?? []), [whatIf.changed]);

  const updateBranch = (id: number, fn: (b: Branch) => Branch) =>
    setViews((vs) => vs.map((v) => (v.branches.some((b) => b.id === id) ? { ...v, branches: v.branches.map((b) => (b.id === id ? fn(b) : b)) } : v)));

  /** Streams into branch `id`; resolves with what came and how it ended. */
  async function runStream(id: number, url: string, body: Record<string, unknown>) {
    const abort = new AbortController();
    abortRef.current = abort;
    setGenerating(true);
    let text = '';
    let gotHeader = false;
    try {
      await streamGeneration(url, body, abort.signal, {
        onHeader: (h) => {
          gotHeader = true;
          updateBranch(id, (b) => ({ ...b, header: h }));
        },
        onSteps: (steps) => updateBranch(id, (b) => ({ ...b, steps: b.steps.concat(steps.filter((s) => (s.sequence ?? 0) === 0)).sort((x, y) => x.step - y.step) })),
        onText: (t) => {
          text += t;
          updateBranch(id, (b) => ({ ...b, text: b.text + t }));
        },
        onFinish: (r) => updateBranch(id, (b) => ({ ...b, finishReason: r })),
      });
      updateBranch(id, (b) => ({ ...b, status: 'done' }));
      return { text, status: 'done' as const, gotHeader };
    } catch (e) {
      const aborted = e instanceof DOMException && e.name === 'AbortError';
      updateBranch(id, (b) => ({ ...b, status: aborted ? 'stopped' : 'error' }));
      if (!aborted) report(e);
      return { text, status: aborted ? ('stopped' as const) : ('error' as const), gotHeader };
    } finally {
      abortRef.current = null;
      setGenerating(false);
    }
  }

  async function generate() {
    if (generating) return;
    setError(null);
    const problem = constraintProblem(constraint);
    setFieldError(problem && { ...problem, source: 'page' });
    if (problem) return; // said next to the field; nothing is sent
    const s = { ...settings };
    const max = Number(maxTokens);
    const userText = user;
    const experts = (info?.experts_per_token ?? 0) > 0; // the router's choice, for an MoE model
    let req: GenerateRequest;
    if (mode === 'chat') {
      const messages = [
        ...(system.trim() ? [{ role: 'system' as const, content: system }] : []),
        ...turns.flatMap((t) => [
          { role: 'user' as const, content: t.user },
          { role: 'assistant' as const, content: t.assistant },
        ]),
        { role: 'user' as const, content: userText },
      ];
      req = { kind: 'chat', messages, settings: s, maxTokens: max, seed, constraint, experts };
    } else {
      req = { kind: 'completion', prompt: rawPrompt, settings: s, maxTokens: max, seed, constraint, experts };
    }
    const title = (mode === 'chat' ? userText : rawPrompt).slice(0, 60) || '(empty prompt)';
    const branch: Branch = { id: nextId.current++, label: 'original', fork: null, header: null, steps: [], text: '', finishReason: null, status: 'streaming', settings: s, maxTokens: max, constraint: constraintLabel(constraint) };
    const v: View = { id: nextId.current++, title, branches: [branch] };
    const previous = { view: activeView, selection };
    setViews((vs) => [...vs, v]);
    setActiveView(v.id);
    setSelection(null);
    const r = await runStream(branch.id, mode === 'chat' ? '/v1/chat/completions' : '/v1/completions', requestBody(req));
    if (r.status === 'error' && !r.gotHeader) {
      setViews((vs) => vs.filter((x) => x.id !== v.id)); // nothing came: the banner says why
      setActiveView(previous.view);
      setSelection(previous.selection);
      return;
    }
    // The conversation goes on with what was said (a stopped reply too, unless nothing came).
    if (mode === 'chat' && (r.status === 'done' || (r.status === 'stopped' && r.text !== ''))) {
      setTurns((ts) => [...ts, { user: userText, assistant: r.text, viewId: v.id }]);
      setUser('');
    }
  }

  async function fork(parentId: number, k: number, token: TraceToken) {
    const parent = branches.find((b) => b.id === parentId);
    const gen = parent?.header?.generation;
    if (!parent || gen === undefined || generating) {
      if (parent && gen === undefined) report(new Error('this row was not kept by the server (no generation id in its header): it cannot be forked'));
      return;
    }
    setError(null);
    setGenerating(true); // from now on: the fork is under way
    const local = parent.steps.slice(0, k).map((s) => s.chosen.id);
    let prompt: number[] | null = parent.header?.prompt_token_ids ? parent.header.prompt_token_ids.concat(local) : null;
    try {
      const g = await getGeneration(gen);
      prompt = g.prompt_token_ids.concat(g.tokens.length >= k ? g.tokens.slice(0, k) : local);
    } catch (e) {
      if (prompt === null) {
        setGenerating(false);
        return report(e); // no local copy of the prompt to fall back on
      }
    }
    prompt.push(token.id);
    const shared = [...(parent.fork ? [...parent.fork.sharedTokens, parent.fork.token] : []), ...parent.steps.slice(0, k).map((s) => tokenRef(s.chosen))];
    const max = Math.max(1, parent.maxTokens - k - 1);
    const s = { ...settings };
    const n = branches.filter((b) => b.fork).length + 1;
    const branch: Branch = {
      id: nextId.current++,
      label: `fork ${n} (token ${shared.length} → “${token.text}”)`,
      fork: { parent: parentId, step: k, token: tokenRef(token), sharedTokens: shared },
      header: null,
      steps: [],
      text: '',
      finishReason: null,
      status: 'streaming',
      settings: s,
      maxTokens: max,
      constraint: null, // forks continue kept rows only, which are never constrained
    };
    setViews((vs) => vs.map((v) => (v.branches.some((b) => b.id === parentId) ? { ...v, branches: [...v.branches, branch] } : v)));
    await runStream(branch.id, '/v1/completions', requestBody({ kind: 'completion', prompt, settings: s, maxTokens: max, seed, experts: (info?.experts_per_token ?? 0) > 0 }));
  }

  const select = (sel: Selection, focus: boolean) => {
    setSelection(sel);
    // The chip exists already (the row is rendered): focus it now, not after the next render.
    if (focus) document.querySelector<HTMLElement>(`[data-testid="token"][data-branch="${sel.branch}"][data-step="${sel.step}"]`)?.focus();
  };

  const move = (from: Selection, key: string) => {
    const bi = branches.findIndex((b) => b.id === from.branch);
    if (bi < 0) return;
    let target = bi;
    let step = from.step;
    if (key === 'ArrowLeft') step--;
    else if (key === 'ArrowRight') step++;
    else if (key === 'Home') step = 0;
    else if (key === 'End') step = branches[bi].steps.length - 1;
    else if (key === 'ArrowUp') target = bi - 1;
    else if (key === 'ArrowDown') target = bi + 1;
    const b = branches[target];
    if (!b || b.steps.length === 0) return;
    select({ branch: b.id, step: Math.min(Math.max(step, 0), b.steps.length - 1) }, true);
  };

  const lastSeed = chartBranch?.header ? String(chartBranch.header.seed) : null;
  const exportName = chartBranch ? `logitscope-${chartBranch.header?.generation ?? 'generation'}-${chartBranch.fork ? `fork${chartBranch.id}` : 'original'}` : '';

  return (
    <div class="app">
      <header class="top">
        <h1>
          logitscope <span class="muted">· the logit microscope</span>
        </h1>
        <p class="muted">{info ? `${info.model}${info.model_b ? ` (compare with ${info.model_b})` : ''} · vocabulary ${info.vocab_size} · context ${info.max_model_len}` : 'connecting…'}</p>
      </header>
      {error && (
        <div class="error" role="alert" data-testid="error">
          <strong>{error.status && error.status >= 400 ? `Error ${error.status}: ` : 'Error: '}</strong>
          <span class="error-message">{error.message}</span>
          {error.param && <span class="error-param"> (parameter: {error.param})</span>}
          <button type="button" class="small" onClick={() => setError(null)} aria-label="dismiss the error">
            Dismiss
          </button>
        </div>
      )}
      <main class="layout">
        <PromptPanel
          apiKey={keyProblem && <ApiKeyForm rejected={keyProblem === 'rejected'} onSave={saveKey} />}
          mode={mode}
          hasChatTemplate={info?.has_chat_template ?? true}
          system={system}
          user={user}
          rawPrompt={rawPrompt}
          turns={turns}
          activeView={activeView}
          generating={generating}
          onMode={setMode}
          onSystem={setSystem}
          onUser={setUser}
          onRawPrompt={setRawPrompt}
          onNewConversation={() => {
            setTurns([]);
            setUser('');
            setSelection(null);
          }}
          onShowView={(id) => {
            setActiveView(id);
            setSelection(null);
          }}
          onGenerate={generate}
          onStop={() => abortRef.current?.abort()}
          settings={
            <>
              <StructuredPanel
                value={constraint}
                error={fieldError}
                onChange={(c) => {
                  setConstraint(c);
                  setFieldError(null);
                }}
              />
              <SettingsPanel
                settings={settings}
                defaults={defaults}
                sources={sources}
                maxTokens={maxTokens}
                seed={seed}
                lastSeed={lastSeed}
                onSettings={setSettings}
                onMaxTokens={setMaxTokens}
                onSeed={setSeed}
              />
            </>
          }
        />
        <section class="centre" aria-label="generated tokens">
          <div class="toolbar">
            <label for="color-mode">colour chips by</label>
            <select id="color-mode" value={colorMode} onChange={(e) => setColorMode((e.currentTarget as HTMLSelectElement).value as ColorMode)}>
              {COLOR_MODES.map((m) => (
                <option key={m.value} value={m.value}>
                  {m.label}
                </option>
              ))}
            </select>
            <span class="legend" aria-label="colour legend">
              {legend(colorMode).map((l) => (
                <span key={l.label} class="swatch-item">
                  <span class="swatch" style={{ background: l.color }} /> {l.label}
                </span>
              ))}
            </span>
            {views.length > 1 && (
              <>
                <label for="view-select">generation</label>
                <select id="view-select" value={activeView ?? ''} onChange={(e) => {
                    setActiveView(Number((e.currentTarget as HTMLSelectElement).value));
                    setSelection(null);
                  }}>
                  {views.map((v, i) => (
                    <option key={v.id} value={v.id}>
                      {i + 1}. {v.title}
                    </option>
                  ))}
                </select>
              </>
            )}
          </div>
          {branches.length === 0 && <p class="muted empty">Write a prompt and press Generate: every token becomes a chip; click one to look inside the step.</p>}
          {branches[0]?.constraint && <ConstrainedNote constraint={branches[0].constraint} />}
          <div class="branches">
            {branches.map((b) => (
              <BranchRow
                key={b.id}
                branch={b}
                colorMode={colorMode}
                selection={selection}
                changed={selection?.branch === b.id ? changed : null}
                onSelect={select}
                onMove={move}
                report={report}
                modelB={info?.model_b ?? null}
              />
            ))}
          </div>
          {chartBranch && (
            <div class="chart-box">
              <h2>
                Entropy and probability per step <span class="muted">({chartBranch.label})</span>
              </h2>
              <ChartView
                steps={chartBranch.steps}
                selected={selBranch === chartBranch && selection ? selection.step : null}
                changed={selBranch === chartBranch ? changed : NONE}
                title={`${chartBranch.label}: entropy and chosen probability per step`}
                onSelect={(k) => select({ branch: chartBranch.id, step: k }, true)}
              />
              <div class="actions">
                <button type="button" data-testid="export-trace" disabled={chartBranch.steps.length === 0} onClick={() => download(`${exportName}.jsonl`, traceJsonl(chartBranch), 'application/x-ndjson')}>
                  Export trace (.jsonl)
                </button>
                <button
                  type="button"
                  data-testid="export-svg"
                  disabled={chartBranch.steps.length === 0}
                  onClick={() =>
                    download(`${exportName}.svg`, chartSvg(chartBranch.steps, { standalone: true, title: `logitscope ${chartBranch.label}: entropy and chosen probability per step` }), 'image/svg+xml')
                  }
                >
                  Export chart (.svg)
                </button>
              </div>
            </div>
          )}
        </section>
        <aside class="side" aria-label="the selected step">
          {selBranch && selStep ? (
            <StepPanel
              branch={selBranch}
              step={selStep}
              whatIf={whatIf}
              settings={settings}
              canFork={!generating && selBranch.header?.generation !== undefined}
              onFork={(t) => fork(selBranch.id, selStep.step, t)}
              report={report}
              modelB={info?.model_b ?? null}
            />
          ) : (
            <p class="muted">Select a token (click, or Tab to the row and use the arrow keys) to see its raw top candidates, the pool after every stage and the choice.</p>
          )}
        </aside>
      </main>
    </div>
  );
}
