// One streamed generation: the request body (chat messages, a prompt string or token ids, the
// settings, logprobs, a structured output constraint, and `"logitscope": {trace, keep,
// order_preset, experts}`: keep only without a constraint, which the server refuses to keep), then the
// SSE stream read chunk by chunk into header, trace steps, text and the finish reason. Errors
// (HTTP, network, an SSE error event, a stream cut before [DONE]) are thrown as ApiError.
import { ApiError, call } from './api';
import { stringifyJson } from './json_big';
import { classify, SseParser } from './sse';
import { constraintFields, type Constraint } from './structured';
import type { Header, Settings, Step } from './types';

export const TRACE_TOP_N = 10;

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface GenerateRequest {
  kind: 'chat' | 'completion';
  messages?: ChatMessage[];
  prompt?: string | number[];
  settings: Settings;
  maxTokens: number;
  /** Digits, or empty for a random seed. */
  seed: string;
  /** Structured output, checked by constraintProblem(); absent or kind none: unconstrained. */
  constraint?: Constraint;
  /** Ask for the router's choice in the trace (`logitscope.experts`; a mixture-of-experts model). */
  experts?: boolean;
}

export function requestBody(r: GenerateRequest): Record<string, unknown> {
  const s = r.settings;
  const body: Record<string, unknown> = r.kind === 'chat' ? { messages: r.messages } : { prompt: r.prompt };
  Object.assign(body, {
    stream: true,
    max_tokens: r.maxTokens,
    temperature: s.temperature,
    top_k: s.top_k,
    top_p: s.top_p,
    min_p: s.min_p,
    repetition_penalty: s.repetition_penalty,
  });
  const seed = r.seed.trim();
  if (seed !== '') body.seed = /^\d+$/.test(seed) ? BigInt(seed) : seed; // the server judges the rest
  if (r.kind === 'chat') Object.assign(body, { logprobs: true, top_logprobs: 5 });
  else body.logprobs = 5;
  const constrained = r.constraint !== undefined && r.constraint.kind !== 'none';
  if (constrained) Object.assign(body, constraintFields(r.constraint!, r.kind));
  body.logitscope = constrained ? { trace: TRACE_TOP_N, order_preset: s.order_preset } : { trace: TRACE_TOP_N, keep: true, order_preset: s.order_preset };
  if (r.experts) (body.logitscope as Record<string, unknown>).experts = true;
  return body;
}

export interface StreamHandlers {
  onHeader(header: Header): void;
  onSteps(steps: Step[]): void;
  onText(text: string): void;
  onFinish(reason: string): void;
}

/** Applies one chunk of either endpoint to the handlers. */
export function applyChunk(chunk: Record<string, unknown>, h: StreamHandlers): void {
  const ext = chunk.logitscope as { header?: Header; trace?: Step[] } | undefined;
  if (ext?.header) h.onHeader(ext.header);
  if (Array.isArray(ext?.trace) && ext.trace.length > 0) h.onSteps(ext.trace);
  const choices = Array.isArray(chunk.choices) ? (chunk.choices as Record<string, unknown>[]) : [];
  for (const c of choices) {
    if (typeof c.index === 'number' && c.index !== 0) continue;
    const delta = c.delta as { content?: string | null } | undefined;
    const text = typeof c.text === 'string' ? c.text : delta?.content;
    if (text) h.onText(text);
    if (typeof c.finish_reason === 'string') h.onFinish(c.finish_reason);
  }
}

/** POSTs `body` to `url` with stream: true and reads the events until [DONE]. */
export async function streamGeneration(url: string, body: Record<string, unknown>, signal: AbortSignal, h: StreamHandlers): Promise<void> {
  const res = await call(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: stringifyJson(body), signal }, `POST ${url}`);
  if (!res.body) throw new ApiError(`POST ${url}: the answer has no body`, res.status);
  const reader = res.body.getReader();
  const parser = new SseParser();
  const handle = (events: string[]): boolean => {
    for (const data of events) {
      const ev = classify(data);
      if (ev.kind === 'done') return true;
      if (ev.kind === 'error') {
        const e = ev.error;
        throw new ApiError(e.message, res.status, e.param ?? null, e.type ?? null, e.code ?? null);
      }
      applyChunk(ev.json, h);
    }
    return false;
  };
  for (;;) {
    let part: ReadableStreamReadResult<Uint8Array>;
    try {
      part = await reader.read();
    } catch (e) {
      if (e instanceof DOMException && e.name === 'AbortError') throw e;
      throw new ApiError(`POST ${url}: the stream broke (${e instanceof Error ? e.message : String(e)})`, null);
    }
    if (part.done) {
      if (handle(parser.end())) return;
      throw new ApiError(`POST ${url}: the stream ended before [DONE]`, null);
    }
    if (handle(parser.push(part.value))) {
      reader.cancel().catch(() => undefined);
      return;
    }
  }
}
