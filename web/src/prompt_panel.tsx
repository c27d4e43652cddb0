// The prompt panel: chat (system + user, multi-turn, with the conversation so far and a "new
// conversation" button) or raw completion, the sampling settings, Generate and Stop.
// Ctrl+Enter (or Cmd+Enter) in the prompt generates. When the server wants an API key (a 401),
// an "API key" field heads the panel: Enter or "Use key" keeps it for this tab and retries.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

export type Mode = 'chat' | 'raw';

export interface Turn {
  user: string;
  assistant: string;
  viewId: number;
}

/** The API key field: a password input and "Use key" (Enter in the field does the same). */
export function ApiKeyForm(props: { rejected: boolean; onSave: (key: string) => void }) {
  const [draft, setDraft] = useState('');
  const save = (e: Event) => {
    e.preventDefault();
    if (!draft.trim()) return;
    props.onSave(draft);
    setDraft('');
  };
  return (
    <form class="api-key" onSubmit={save} aria-label="the server's API key">
      <label for="api-key">API key</label>
      <p class="hint" id="api-key-hint">
        {props.rejected ? 'The server refused that key: enter the right one.' : 'The server was started with --api-key.'} It is kept in this tab only (sessionStorage).
      </p>
      <div class="api-key-row">
        <input
          id="api-key"
          data-testid="api-key"
          type="password"
          autocomplete="off"
          spellcheck={false}
          aria-describedby="api-key-hint"
          value={draft}
          onInput={(e) => setDraft((e.currentTarget as HTMLInputElement).value)}
        />
        <button type="submit" data-testid="api-key-save" disabled={!draft.trim()}>
          Use key
        </button>
      </div>
    </form>
  );
}

export function PromptPanel(props: {
  apiKey?: ComponentChildren;
  mode: Mode;
  hasChatTemplate: boolean;
  system: string;
  user: string;
  rawPrompt: string;
  turns: Turn[];
  activeView: number | null;
  generating: boolean;
  settings: ComponentChildren;
  onMode: (m: Mode) => void;
  onSystem: (v: string) => void;
  onUser: (v: string) => void;
  onRawPrompt: (v: string) => void;
  onNewConversation: () => void;
  onShowView: (id: number) => void;
  onGenerate: () => void;
  onStop: () => void;
}) {
  const generateOnCtrlEnter = (e: KeyboardEvent) => {
    if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      props.onGenerate();
    }
  };
  const started = props.turns.length > 0;
  return (
    <section class="prompt-panel" aria-label="prompt">
      {props.apiKey}
      <div class="setting">
        <label for="mode">mode</label>
        <select id="mode" data-testid="mode" value={props.mode} onChange={(e) => props.onMode((e.currentTarget as HTMLSelectElement).value as Mode)}>
          <option value="chat" disabled={!props.hasChatTemplate}>
            chat{props.hasChatTemplate ? '' : ' (the model has no chat template)'}
          </option>
          <option value="raw">raw completion</option>
        </select>
      </div>

      {props.mode === 'chat' ? (
        <>
          <label for="system">system</label>
          <textarea
            id="system"
            rows={2}
            value={props.system}
            disabled={started}
            title={started ? 'start a new conversation to change the system prompt' : undefined}
            placeholder="(none: the template's default)"
            onInput={(e) => props.onSystem((e.currentTarget as HTMLTextAreaElement).value)}
          />
          {started && (
            <ol class="transcript" aria-label="the conversation so far">
              {props.turns.map((t, i) => (
                <li key={i} class={t.viewId === props.activeView ? 'active' : undefined}>
                  <div class="turn-user">
                    <span class="who">user</span> {t.user}
                  </div>
                  <div class="turn-assistant">
                    <span class="who">assistant</span> {t.assistant || <em>(nothing)</em>}{' '}
                    <button type="button" class="small" onClick={() => props.onShowView(t.viewId)} disabled={t.viewId === props.activeView}>
                      show tokens
                    </button>
                  </div>
                </li>
              ))}
            </ol>
          )}
          <label for="prompt">{started ? 'next user message' : 'user'}</label>
          <textarea
            id="prompt"
            data-testid="prompt"
            rows={4}
            value={props.user}
            onInput={(e) => props.onUser((e.currentTarget as HTMLTextAreaElement).value)}
            onKeyDown={generateOnCtrlEnter}
          />
          <button type="button" class="small" onClick={props.onNewConversation} disabled={props.generating || !started}>
            New conversation
          </button>
        </>
      ) : (
        <>
          <label for="prompt">prompt</label>
          <textarea
            id="prompt"
            data-testid="prompt"
            rows={6}
            value={props.rawPrompt}
            onInput={(e) => props.onRawPrompt((e.currentTarget as HTMLTextAreaElement).value)}
            onKeyDown={generateOnCtrlEnter}
          />
        </>
      )}

      <div class="actions">
        <button type="button" class="primary" data-testid="generate" onClick={props.onGenerate} disabled={props.generating}>
          Generate
        </button>
        <button type="button" data-testid="stop" onClick={props.onStop} disabled={!props.generating}>
          Stop
        </button>
      </div>
      {props.settings}
    </section>
  );
}
