// Structured output's request side: the page's check before sending (a schema must be a JSON
// object, a grammar non-empty), the fields each choice becomes for chat and raw completions (a
// schema sent as typed, key order and big numbers kept), keep left out with a constraint, and
// which field a server error's param names.
import { describe, expect, it } from 'vitest';
import { stringifyJson } from '../src/json_big';
import { requestBody } from '../src/stream';
import { constraintFields, constraintLabel, constraintProblem, NO_CONSTRAINT, paramField, type Constraint } from '../src/structured';
import type { Settings } from '../src/types';

const c = (o: Partial<Constraint>): Constraint => ({ ...NO_CONSTRAINT, ...o });
const settings: Settings = { temperature: 1, top_k: 0, top_p: 1, min_p: 0, repetition_penalty: 3, order_preset: 'hf' };
const body = (k: 'chat' | 'completion', constraint?: Constraint) =>
  JSON.parse(stringifyJson(requestBody({ kind: k, messages: [{ role: 'user', content: 'x' }], prompt: 'x', settings, maxTokens: 8, seed: '7', constraint })));

describe('constraintProblem', () => {
  it('passes none, a JSON object and a non-empty grammar; ignores the text of a kind not chosen', () => {
    expect(constraintProblem(NO_CONSTRAINT)).toBeNull();
    expect(constraintProblem(c({ kind: 'json_object', schema: '{bad' }))).toBeNull();
    expect(constraintProblem(c({ kind: 'grammar', grammar: 'root ::= "a"', schema: '{bad' }))).toBeNull();
    expect(constraintProblem(c({ kind: 'json_schema', schema: ' {"type": "object"} ' }))).toBeNull();
  });

  it('refuses a schema that is empty, not JSON, or not an object, next to the schema field', () => {
    expect(constraintProblem(c({ kind: 'json_schema', schema: '  ' }))).toEqual({ field: 'schema', message: 'write a JSON Schema (a JSON object)' });
    const bad = constraintProblem(c({ kind: 'json_schema', schema: '{"type": "object",}' }));
    expect(bad?.field).toBe('schema');
    expect(bad?.message).toMatch(/^not JSON: /);
    for (const s of ['[1]', '"object"', 'null', '3', 'true'])
      expect(constraintProblem(c({ kind: 'json_schema', schema: s }))?.message).toBe('a JSON Schema must be a JSON object ({...})');
  });

  it('refuses an empty grammar next to the grammar field', () => {
    expect(constraintProblem(c({ kind: 'grammar', grammar: '\n' }))?.field).toBe('grammar');
  });
});

describe('constraintFields and requestBody', () => {
  it('chat: OpenAI response_format; the schema named "page", strict, sent as typed', () => {
    expect(constraintFields(c({ kind: 'json_object' }), 'chat')).toEqual({ response_format: { type: 'json_object' } });
    const schema = '{"properties": {"2": {"type": "integer", "maximum": 12345678901234567890}, "1": {}}}';
    const b = stringifyJson(constraintFields(c({ kind: 'json_schema', schema }), 'chat'));
    expect(b).toBe(`{"response_format":{"type":"json_schema","json_schema":{"name":"page","schema":${schema},"strict":true}}}`);
  });

  it('raw completions: llama-server json_schema ({"type": "object"} for a JSON object); grammar either way', () => {
    expect(constraintFields(c({ kind: 'json_object' }), 'completion')).toEqual({ json_schema: { type: 'object' } });
    expect(stringifyJson(constraintFields(c({ kind: 'json_schema', schema: '{"type":"array"}' }), 'completion'))).toBe('{"json_schema":{"type":"array"}}');
    for (const k of ['chat', 'completion'] as const) expect(constraintFields(c({ kind: 'grammar', grammar: 'root ::= "a"' }), k)).toEqual({ grammar: 'root ::= "a"' });
    expect(constraintFields(NO_CONSTRAINT, 'chat')).toEqual({});
  });

  it('keeps the generation only without a constraint', () => {
    expect(body('chat').logitscope).toEqual({ trace: 10, keep: true, order_preset: 'hf' });
    expect(body('chat', NO_CONSTRAINT).logitscope.keep).toBe(true);
    const constrained = body('chat', c({ kind: 'json_object' }));
    expect(constrained.logitscope).toEqual({ trace: 10, order_preset: 'hf' });
    expect(constrained.response_format).toEqual({ type: 'json_object' });
    const raw = body('completion', c({ kind: 'grammar', grammar: 'root ::= "a"' }));
    expect(raw.grammar).toBe('root ::= "a"');
    expect('keep' in raw.logitscope).toBe(false);
    expect(raw.seed).toBe(7);
  });

  it('labels', () => {
    expect(constraintLabel(NO_CONSTRAINT)).toBeNull();
    expect(constraintLabel(c({ kind: 'json_schema' }))).toBe('JSON schema');
  });
});

describe('paramField', () => {
  it('maps the server params of each constraint to the page field', () => {
    expect(paramField('grammar')).toBe('grammar');
    expect(paramField('json_schema')).toBe('schema');
    expect(paramField('response_format.json_schema.schema')).toBe('schema');
    expect(paramField('response_format.json_schema.strict')).toBe('schema');
    expect(paramField('response_format')).toBe('kind');
    expect(paramField('response_format.type')).toBe('kind');
    for (const p of ['temperature', 'logitscope.keep', 'messages[0].content', null, undefined, '']) expect(paramField(p)).toBeNull();
  });
});
