// The server's routes as the page calls them (docs/server-api.md): JSON requests whose non-2xx
// answers become ApiError (message, param, status), the kept generations' logits as
// Float32Array (little-endian, cached per step), replay and its decision boundaries, the logit
// lens, attribution, the continuation tree, side by side with model B and detokenize. Every request goes through call(),
// which adds `Authorization: Bearer KEY` to /v1/* requests when the user gave an API key
// (`serve --api-key`); the key lives in sessionStorage (this tab only), never in a URL.
import { parseJson, stringifyJson } from './json_big';
import type { AttributionResponse, GenerationInfo, InfoResponse, LensResponse, ReplayResponse, SideBySideResponse, TreeResponse } from './types';

export class ApiError extends Error {
  /** On a 401 from call(): whether the request went without a key ('missing') or with one the server refused ('rejected'). */
  apiKey: 'missing' | 'rejected' | null = null;

  constructor(
    message: string,
    readonly status: number | null,
    readonly param: string | null = null,
    readonly type: string | null = null,
    readonly code: string | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** An ApiError from a non-2xx response, reading `{"error": {message, param, ...}}` when it is there. */
export async function errorFrom(res: Response, what: string): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = parseJson(text) as { error?: { message?: string; param?: string | null; type?: string; code?: string } };
    if (body && body.error) {
      return new ApiError(body.error.message ?? `${what}: HTTP ${res.status}`, res.status, body.error.param ?? null, body.error.type ?? null, body.error.code ?? null);
    }
  } catch {
    // not JSON: report the status and the start of the text
  }
  return new ApiError(`${what}: HTTP ${res.status} ${res.statusText}${text ? `: ${text.slice(0, 200)}` : ''}`, res.status);
}

const KEY_ITEM = 'logitscope.apiKey';
let memoryKey = ''; // when sessionStorage is missing or refuses (then the key lasts as long as the page)

function storage(): Storage | null {
  try {
    return typeof sessionStorage === 'undefined' ? null : sessionStorage;
  } catch {
    return null; // storage disabled: reading the property throws
  }
}

/** The API key the user gave in this tab, or '' for none. */
export function getApiKey(): string {
  try {
    const s = storage();
    if (s) return s.getItem(KEY_ITEM) ?? memoryKey;
  } catch {
    // fall back on the copy in memory
  }
  return memoryKey;
}

/** Keeps `key` (trimmed) for this tab's requests; '' forgets it. */
export function setApiKey(key: string): void {
  const k = key.trim();
  memoryKey = k;
  try {
    const s = storage();
    if (k) s?.setItem(KEY_ITEM, k);
    else s?.removeItem(KEY_ITEM);
  } catch {
    // kept in memory only
  }
}

/** Only the page's own /v1 routes (relative URLs) carry the key, never another host. */
const sendsKey = (url: string) => url.startsWith('/v1/');

/** `init` with `Authorization: Bearer KEY` when `url` is a /v1/ route and a key is set. */
export function withAuth(url: string, init: RequestInit): RequestInit {
  const key = sendsKey(url) ? getApiKey() : '';
  if (!key) return init;
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${key}`);
  return { ...init, headers };
}

/** What a failed call says about the API key: the server wants one, refused the one given, or neither. */
export function apiKeyProblem(e: unknown): 'missing' | 'rejected' | null {
  return e instanceof ApiError ? e.apiKey : null;
}

/** fetch() (with the API key, see withAuth) whose network failures say which request failed. */
export async function call(url: string, init: RequestInit, what: string): Promise<Response> {
  let res: Response;
  const keySent = sendsKey(url) && getApiKey() !== '';
  try {
    res = await fetch(url, withAuth(url, init));
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') throw e;
    throw new ApiError(`${what}: the server cannot be reached (${e instanceof Error ? e.message : String(e)})`, null);
  }
  if (!res.ok) {
    const err = await errorFrom(res, what);
    if (res.status === 401) err.apiKey = keySent ? 'rejected' : 'missing';
    throw err;
  }
  return res;
}

async function json<T>(url: string, init: RequestInit, what: string): Promise<T> {
  const res = await call(url, init, what);
  return parseJson(await res.text()) as T;
}

const post = (body: unknown, signal?: AbortSignal): RequestInit => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: stringifyJson(body),
  signal,
});

export const getInfo = () => json<InfoResponse>('/v1/logitscope/info', {}, 'GET /v1/logitscope/info');

export const getGeneration = (id: string | number) =>
  json<GenerationInfo>(`/v1/logitscope/generations/${encodeURIComponent(String(id))}`, {}, `GET generation ${id}`);

export function replay(body: Record<string, unknown>, signal?: AbortSignal): Promise<ReplayResponse> {
  return json<ReplayResponse>('/v1/logitscope/replay', post(body, signal), 'POST /v1/logitscope/replay');
}

/**
 * Decision boundaries of a kept generation's steps under its recorded settings: replay with
 * `"boundaries": true` (every kept step, at most 256) or a list of steps; 0.3-0.6 s a step.
 */
export function replayBoundaries(generation: string | number, steps: true | number[], signal?: AbortSignal): Promise<ReplayResponse> {
  return replay({ generation: String(generation), boundaries: steps, top_n: 1 }, signal);
}

/** The logit lens of a kept generation's step: `{generation, step, top?, settings?, track?, layers?}`. */
export function lens(body: Record<string, unknown>, signal?: AbortSignal): Promise<LensResponse> {
  return json<LensResponse>('/v1/logitscope/lens', post(body, signal), 'POST /v1/logitscope/lens');
}

/** Leave-one-out attribution of a kept generation's step: `{generation, step, max_prompt?}` (slow: quadratic in the context). */
export function attribute(body: Record<string, unknown>, signal?: AbortSignal): Promise<AttributionResponse> {
  return json<AttributionResponse>('/v1/logitscope/attribute', post(body, signal), 'POST /v1/logitscope/attribute');
}

/** The continuation tree of a kept generation's step: `{generation, step, k?, depth?, min_prob?, max_nodes?, settings?}`. */
export function tree(body: Record<string, unknown>, signal?: AbortSignal): Promise<TreeResponse> {
  return json<TreeResponse>('/v1/logitscope/tree', post(body, signal), 'POST /v1/logitscope/tree');
}

/** Model B (`serve --model-b`) against the kept generation's logits: `{generation, step?, top?}`. */
export function sideBySide(body: Record<string, unknown>, signal?: AbortSignal): Promise<SideBySideResponse> {
  return json<SideBySideResponse>('/v1/logitscope/side_by_side', post(body, signal), 'POST /v1/logitscope/side_by_side');
}

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const logitsCache = new Map<string, Promise<Float32Array>>();
const CACHE_STEPS = 48; // about 29 MB of Qwen2.5 logits

/** Step `step`'s raw logits of a kept generation (V little-endian float32), cached. */
export function getLogits(generation: string | number, step: number): Promise<Float32Array> {
  const key = `${generation}/${step}`;
  const hit = logitsCache.get(key);
  if (hit) {
    logitsCache.delete(key); // least recently used goes first
    logitsCache.set(key, hit);
    return hit;
  }
  const url = `/v1/logitscope/generations/${encodeURIComponent(String(generation))}/logits/${step}`;
  const p = call(url, {}, `GET logits of step ${step}`).then(async (res) => {
    const buf = await res.arrayBuffer();
    if (buf.byteLength % 4 !== 0) throw new ApiError(`GET logits of step ${step}: ${buf.byteLength} bytes is not a float32 array`, res.status);
    if (littleEndian) return new Float32Array(buf);
    const view = new DataView(buf);
    const out = new Float32Array(buf.byteLength / 4);
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
    return out;
  });
  p.catch(() => logitsCache.delete(key));
  logitsCache.set(key, p);
  while (logitsCache.size > CACHE_STEPS) logitsCache.delete(logitsCache.keys().next().value as string);
  return p;
}

const textCache = new Map<number, Promise<string>>();

/** One token's text (POST /detokenize), for candidates no trace list named. */
export function tokenText(id: number): Promise<string> {
  let p = textCache.get(id);
  if (!p) {
    p = json<{ prompt: string }>('/detokenize', post({ tokens: [id] }), 'POST /detokenize').then((r) => r.prompt);
    p.catch(() => textCache.delete(id));
    textCache.set(id, p);
  }
  return p;
}
