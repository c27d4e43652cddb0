// The "Structured output" choice in the prompt panel (none / JSON object / JSON schema / GBNF
// grammar, with a textarea for the last two) and its problems inline next to the field they are
// about: the page's own check before sending, or a server 400 whose `param` names the field.
// Also the once-per-generation note on what is off for constrained rows, and the step panel's
// line on where the grammar pressed (grammar_trace.ts has the logic and texts).
import { grammarPress, pressLine } from './grammar_trace';
import { CONSTRAINED_NOTE, CONSTRAINT_KINDS, type Constraint, type ConstraintField, type ConstraintKind } from './structured';
import type { Step } from './types';

export interface FieldError {
  field: ConstraintField;
  message: string;
  /** page: refused before sending; server: the server's 400. */
  source: 'page' | 'server';
}

function Problem(props: { error: FieldError | null; field: ConstraintField; id: string }) {
  const e = props.error;
  if (!e || e.field !== props.field) return null;
  return (
    <p class="field-error" id={props.id} role="alert" data-testid="structured-error" data-field={e.field} data-source={e.source}>
      {e.source === 'server' ? 'The server refused it: ' : ''}
      {e.message}
    </p>
  );
}

export function StructuredPanel(props: { value: Constraint; error: FieldError | null; onChange: (c: Constraint) => void }) {
  const c = props.value;
  const err = (f: ConstraintField) => (props.error?.field === f ? `structured-error-${f}` : undefined);
  return (
    <fieldset class="settings structured">
      <legend>Structured output</legend>
      <div class="setting row">
        <label for="structured-kind">constrain to</label>
        <select
          id="structured-kind"
          data-testid="structured"
          value={c.kind}
          aria-describedby={err('kind')}
          aria-invalid={props.error?.field === 'kind' || undefined}
          onChange={(e) => props.onChange({ ...c, kind: (e.currentTarget as HTMLSelectElement).value as ConstraintKind })}
        >
          {CONSTRAINT_KINDS.map((k) => (
            <option key={k.value} value={k.value}>
              {k.label}
            </option>
          ))}
        </select>
      </div>
      <Problem error={props.error} field="kind" id="structured-error-kind" />
      {c.kind === 'json_schema' && (
        <>
          <label for="structured-schema">JSON Schema</label>
          <textarea
            id="structured-schema"
            data-testid="structured-schema"
            rows={5}
            spellcheck={false}
            placeholder={'{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}'}
            value={c.schema}
            aria-describedby={err('schema')}
            aria-invalid={props.error?.field === 'schema' || undefined}
            onInput={(e) => props.onChange({ ...c, schema: (e.currentTarget as HTMLTextAreaElement).value })}
          />
          <Problem error={props.error} field="schema" id="structured-error-schema" />
        </>
      )}
      {c.kind === 'grammar' && (
        <>
          <label for="structured-grammar">GBNF grammar (start rule root)</label>
          <textarea
            id="structured-grammar"
            data-testid="structured-grammar"
            rows={5}
            spellcheck={false}
            placeholder={'root ::= "yes" | "no"'}
            value={c.grammar}
            aria-describedby={err('grammar')}
            aria-invalid={props.error?.field === 'grammar' || undefined}
            onInput={(e) => props.onChange({ ...c, grammar: (e.currentTarget as HTMLTextAreaElement).value })}
          />
          <Problem error={props.error} field="grammar" id="structured-error-grammar" />
        </>
      )}
      {c.kind !== 'none' && <p class="hint">The grammar runs first in the chain. The server does not keep a constrained generation: its tokens and traces show, the what-if tools are off.</p>}
    </fieldset>
  );
}

/** Once above a generation's rows when one of them is constrained. */
export function ConstrainedNote(props: { constraint: string }) {
  return (
    <p class="note constrained-note" data-testid="constrained-note">
      <strong>Constrained generation ({props.constraint}):</strong> {CONSTRAINED_NOTE}
    </p>
  );
}

/** The step panel's line when the grammar removed the step's best token(s). */
export function GrammarLine(props: { step: Step }) {
  const p = grammarPress(props.step);
  if (!p) return null;
  return (
    <p class="grammar-press" data-testid="grammar-press" data-removed={p.removed} data-kept-rank={p.keptRank}>
      <span class="grammar-key" aria-hidden="true">
        G
      </span>{' '}
      {pressLine(p)}
    </p>
  );
}
