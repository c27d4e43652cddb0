// Structured output from the page (issue 44): the choice (none, JSON object, JSON schema, GBNF
// grammar), its check before sending (a schema must parse as JSON and be an object), the request
// fields it becomes (docs/server-api.md: OpenAI's response_format in chat, llama-server's
// json_schema / grammar for raw completions), and which field a server error's `param` names.
import { RawJson } from './json_big';

export type ConstraintKind = 'none' | 'json_object' | 'json_schema' | 'grammar';

/** What the user chose; both texts are kept while another kind is chosen. */
export interface Constraint {
  kind: ConstraintKind;
  schema: string;
  grammar: string;
}

export const NO_CONSTRAINT: Constraint = { kind: 'none', schema: '', grammar: '' };

export const CONSTRAINT_KINDS: { value: ConstraintKind; label: string }[] = [
  { value: 'none', label: 'none' },
  { value: 'json_object', label: 'JSON object' },
  { value: 'json_schema', label: 'JSON schema' },
  { value: 'grammar', label: 'GBNF grammar' },
];

/** The page's fields a problem can sit next to. */
export type ConstraintField = 'kind' | 'schema' | 'grammar';

export interface ConstraintProblem {
  field: ConstraintField;
  message: string;
}

/** Null when the choice can be sent; otherwise what is wrong, checked in the page. */
export function constraintProblem(c: Constraint): ConstraintProblem | null {
  if (c.kind === 'json_schema') {
    if (c.schema.trim() === '') return { field: 'schema', message: 'write a JSON Schema (a JSON object)' };
    let v: unknown;
    try {
      v = JSON.parse(c.schema);
    } catch (e) {
      return { field: 'schema', message: `not JSON: ${e instanceof Error ? e.message : String(e)}` };
    }
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return { field: 'schema', message: 'a JSON Schema must be a JSON object ({...})' };
  }
  if (c.kind === 'grammar' && c.grammar.trim() === '') return { field: 'grammar', message: 'write a GBNF grammar (its start rule is root)' };
  return null;
}

/**
 * The request fields of a checked choice. Chat: `response_format` (json_object, or json_schema
 * named "page", strict); raw completions take no response_format, so there a JSON object is
 * llama-server's `json_schema: {"type": "object"}` and a schema its `json_schema`. A schema is sent
 * as typed (RawJson): the server generates properties in their written order.
 */
export function constraintFields(c: Constraint, endpoint: 'chat' | 'completion'): Record<string, unknown> {
  const schema = () => new RawJson(c.schema.trim());
  switch (c.kind) {
    case 'none':
      return {};
    case 'json_object':
      return endpoint === 'chat' ? { response_format: { type: 'json_object' } } : { json_schema: { type: 'object' } };
    case 'json_schema':
      return endpoint === 'chat'
        ? { response_format: { type: 'json_schema', json_schema: { name: 'page', schema: schema(), strict: true } } }
        : { json_schema: schema() };
    case 'grammar':
      return { grammar: c.grammar };
  }
}

/** A short name for a branch's label and notes; null for none. */
export function constraintLabel(c: Constraint): string | null {
  return c.kind === 'none' ? null : CONSTRAINT_KINDS.find((k) => k.value === c.kind)!.label;
}

/** The page's field a server error's `param` names (null: not a structured-output field). */
export function paramField(param: string | null | undefined): ConstraintField | null {
  if (!param) return null;
  if (param === 'grammar' || param.startsWith('grammar.')) return 'grammar';
  if (param === 'json_schema' || param.startsWith('json_schema.') || param.startsWith('response_format.json_schema')) return 'schema';
  if (param === 'response_format' || param.startsWith('response_format.')) return 'kind';
  return null;
}

/** Said once near the output of a constrained generation (after "Constrained generation (KIND):"). */
export const CONSTRAINED_NOTE =
  'what-if re-scoring, forks, the logit lens, attribution, the continuation tree and the decision boundaries are off. ' +
  'They need a generation the server keeps, and the page re-scores kept steps without the grammar stage, so the server does not keep a constrained one. ' +
  'The tokens and their recorded traces (the grammar stage included) are all here; “G” marks a step where the grammar removed the raw best token.';
