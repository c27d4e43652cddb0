// The SSE reader: events survive chunks split at any byte (inside "data:", inside a multi-byte
// character, between \r and \n), [DONE] and error events are told apart, and a whole streamed
// generation (a stubbed fetch) reaches the handlers or fails with the server's message.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../src/api';
import { classify, SseParser } from '../src/sse';
import { streamGeneration } from '../src/stream';

const enc = new TextEncoder();

function feed(bytes: Uint8Array, cuts: number[]): string[] {
  const p = new SseParser();
  const out: string[] = [];
  let at = 0;
  for (const c of [...cuts, bytes.length]) {
    out.push(...p.push(bytes.slice(at, c)));
    at = c;
  }
  out.push(...p.end());
  return out;
}

const STREAM =
  ': keep-alive comment\n\n' +
  'data: {"choices":[{"delta":{"content":"北京"}}]}\n\n' +
  'data: {"text":"😀 ok"}\r\n\r\n' +
  'data:{"no":"space"}\n\n' +
  'data: line one\ndata: line two\n\n' +
  'data: [DONE]\n\n';
const WANT = ['{"choices":[{"delta":{"content":"北京"}}]}', '{"text":"😀 ok"}', '{"no":"space"}', 'line one\nline two', '[DONE]'];

describe('SseParser', () => {
  const bytes = enc.encode(STREAM);

  it('parses a stream given whole', () => {
    expect(feed(bytes, [])).toEqual(WANT);
  });

  it('parses the stream split at every single byte boundary', () => {
    for (let i = 1; i < bytes.length; i++) expect(feed(bytes, [i]), `cut at ${i}`).toEqual(WANT);
  });

  it('parses the stream one byte at a time', () => {
    expect(feed(bytes, Array.from({ length: bytes.length - 1 }, (_, i) => i + 1))).toEqual(WANT);
  });

  it('keeps a multi-byte character split across chunks intact', () => {
    const b = enc.encode('data: 中\n\n');
    const mid = b.indexOf(0xe4) + 1; // inside the three bytes of 中
    expect(feed(b, [mid, mid + 1])).toEqual(['中']);
  });

  it('delivers a last event that lacks its blank line', () => {
    expect(feed(enc.encode('data: [DONE]'), [])).toEqual(['[DONE]']);
  });
});

describe('classify', () => {
  it('tells [DONE], errors and chunks apart', () => {
    expect(classify('[DONE]')).toEqual({ kind: 'done' });
    expect(classify('{"error": {"message": "cancelled", "type": "server_error", "param": null}}')).toEqual({
      kind: 'error',
      error: { message: 'cancelled', type: 'server_error', param: null },
    });
    expect(classify('{"choices": []}')).toEqual({ kind: 'chunk', json: { choices: [] } });
    expect(classify('not json').kind).toBe('error');
  });

  it('keeps a 64-bit seed exact', () => {
    const ev = classify('{"logitscope": {"header": {"seed": 18446744073709551557, "x": 0.25}}}');
    expect(ev.kind).toBe('chunk');
    const header = (ev as unknown as { json: { logitscope: { header: { seed: unknown; x: number } } } }).json.logitscope.header;
    expect(header.seed).toBe(18446744073709551557n);
    expect(header.x).toBe(0.25);
  });
});

describe('streamGeneration', () => {
  afterEach(() => vi.unstubAllGlobals());

  function serveBytes(status: number, chunks: Uint8Array[], type = 'text/event-stream') {
    vi.stubGlobal('fetch', async () => {
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (const b of chunks) c.enqueue(b);
          c.close();
        },
      });
      return new Response(body, { status, headers: { 'Content-Type': type } });
    });
  }
  const serve = (status: number, chunks: string[], type?: string) => serveBytes(status, chunks.map((s) => enc.encode(s)), type);

  const handlers = () => {
    const got = { header: null as unknown, steps: [] as unknown[], text: '', finish: '' };
    return {
      got,
      h: {
        onHeader: (x: unknown) => (got.header = x),
        onSteps: (s: unknown[]) => got.steps.push(...s),
        onText: (t: string) => (got.text += t),
        onFinish: (r: string) => (got.finish = r),
      },
    };
  };

  it('reads header, trace steps, text and the finish reason', async () => {
    const first = 'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"logitscope":{"header":{"generation":"g1","seed":7,"prompt_token_ids":[1,2]}}}\n\n';
    const second = 'data: {"choices":[{"index":0,"delta":{"content":"北"},"finish_reason":null}],"logitscope":{"trace":[{"step":0},{"step":1}]}}\n\n';
    const last = 'data: {"choices":[{"index":0,"delta":{"content":"京"},"finish_reason":"length"}]}\n\ndata: [DONE]\n\n';
    const all = enc.encode(first + second + last);
    const cut = all.indexOf(0xe5) + 1; // inside 北, on purpose
    serveBytes(200, [all.slice(0, cut), all.slice(cut)]);
    const { got, h } = handlers();
    await streamGeneration('/v1/chat/completions', {}, new AbortController().signal, h as never);
    expect(got.header).toEqual({ generation: 'g1', seed: 7, prompt_token_ids: [1, 2] });
    expect(got.steps).toHaveLength(2);
    expect(got.text).toBe('北京');
    expect(got.finish).toBe('length');
  });

  it('throws the error event of a stream that broke off', async () => {
    serve(200, ['data: {"choices":[]}\n\n', 'data: {"error": {"message": "the server is shutting down", "type": "server_error", "param": null, "code": "overloaded"}}\n\n']);
    const { h } = handlers();
    const err = await streamGeneration('/v1/completions', {}, new AbortController().signal, h as never).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toBe('the server is shutting down');
    expect(err.code).toBe('overloaded');
  });

  it('throws the message and param of a 400', async () => {
    serve(400, ['{"error": {"message": "temperature must be in 0..2", "type": "invalid_request_error", "param": "temperature", "code": "invalid_value"}}'], 'application/json');
    const { h } = handlers();
    const err = await streamGeneration('/v1/completions', {}, new AbortController().signal, h as never).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(err.message).toBe('temperature must be in 0..2');
    expect(err.param).toBe('temperature');
  });

  it('says so when the stream ends before [DONE]', async () => {
    serve(200, ['data: {"choices":[]}\n\n']);
    const { h } = handlers();
    const err = await streamGeneration('/v1/completions', {}, new AbortController().signal, h as never).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toMatch(/ended before \[DONE\]/);
  });

  it('reports a network failure', async () => {
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('Failed to fetch');
    });
    const { h } = handlers();
    const err = await streamGeneration('/v1/completions', {}, new AbortController().signal, h as never).catch((e) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err.message).toMatch(/cannot be reached.*Failed to fetch/);
  });
});
