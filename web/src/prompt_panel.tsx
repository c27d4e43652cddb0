// The prompt panel: chat (system + user, multi-turn, with the conversation so far and a "new
// conversation" button) or raw completion, the sampling settings, Generate and Stop.
// Ctrl+Enter (or Cmd+Enter) in the prompt generates.
import type { ComponentChildren } from 'preact';

export type Mode = 'chat' | 'raw';

export interface Turn {
  user: string;
  assistant: string;
  viewId: number;
}

export function PromptPanel(props: {
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
