// @vitest-environment jsdom
// The API key (serve --api-key): every /v1 request the page makes carries
// `Authorization: Bearer KEY` once a key is set and none before; the key lives in
// sessionStorage, not localStorage, and never in a URL; a 401 says whether a key was missing or
// refused. Then the page itself (a stubbed fetch): the first load's 401 shows the banner and the
// "API key" field, and saving a key there retries /v1/logitscope/info with it.
import { h, render } from 'preact';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, apiKeyProblem, getApiKey, getInfo, getLogits, replay, setApiKey, tokenText } from '../src/api';
import { App } from '../src/app';
import { streamGeneration } from '../src/stream';

interface Seen {
  url: string;
  auth: string | null;
  contentType: string | null;
}

const INFO = {
  model: 'tiny-test',
  vocab_size: 8,
  max_model_len: 64,
  has_chat_template: true,
  order_presets: ['hf'],
  settings: {},
};

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });
const UNAUTHORIZED = () =>
  json(401, { error: { message: 'a valid API key is required: Authorization: Bearer KEY', type: 'invalid_request_error', param: null, code: 'invalid_api_key' } });

/** Stubs fetch: records each request and answers with `answer(url, auth)`. */
function stubFetch(answer: (url: string, auth: string | null) => Response): Seen[] {
  const seen: Seen[] = [];
  vi.stubGlobal('fetch', async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const headers = new Headers(init?.headers);
    seen.push({ url, auth: headers.get('Authorization'), contentType: headers.get('Content-Type') });
    return answer(url, headers.get('Authorization'));
  });
  return seen;
}

function okAnswer(url: string): Response {
  if (url.includes('/logits/')) return new Response(new Float32Array([0.5, -1]).buffer, { status: 200 });
  if (url === '/v1/completions') return new Response('data: {"choices":[{"index":0,"text":"x"}]}\n\ndata: [DONE]\n\n', { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
  if (url === '/detokenize') return json(200, { prompt: 'x' });
  if (url === '/v1/logitscope/replay') return json(200, { steps: [] });
  return json(200, INFO);
}

const handlers = { onHeader() {}, onSteps() {}, onText() {}, onFinish() {} };

/** Every request the page's api makes, once each (distinct cache keys, so none is served from a cache). */
async function everyRoute(tag: number) {
  await getInfo();
  await getLogits(`g${tag}`, 0);
  await replay({ generation: `g${tag}`, step: 0 });
  await streamGeneration('/v1/completions', { prompt: 'a' }, new AbortController().signal, handlers);
  await tokenText(1000 + tag);
}

beforeEach(() => {
  setApiKey('');
  sessionStorage.clear();
  localStorage.clear();
});

afterEach(() => {
  vi.unstubAllGlobals();
  setApiKey('');
  sessionStorage.clear();
});

describe('the Authorization header', () => {
  it('is absent from every request while no key is set', async () => {
    const seen = stubFetch((url) => okAnswer(url));
    await everyRoute(1);
    expect(seen.map((s) => s.url)).toEqual(['/v1/logitscope/info', '/v1/logitscope/generations/g1/logits/0', '/v1/logitscope/replay', '/v1/completions', '/detokenize']);
    expect(seen.map((s) => s.auth)).toEqual([null, null, null, null, null]);
  });

  it('is "Bearer KEY" on every /v1 request once a key is set, and the JSON Content-Type stays', async () => {
    setApiKey('  k-123  ');
    expect(getApiKey()).toBe('k-123');
    const seen = stubFetch((url) => okAnswer(url));
    await everyRoute(2);
    const v1 = seen.filter((s) => s.url.startsWith('/v1/'));
    expect(v1).toHaveLength(4);
    for (const s of v1) expect(s.auth, s.url).toBe('Bearer k-123');
    expect(seen.find((s) => s.url === '/v1/completions')?.contentType).toBe('application/json');
    expect(seen.find((s) => s.url === '/v1/logitscope/replay')?.contentType).toBe('application/json');
    expect(seen.find((s) => s.url === '/detokenize')?.auth).toBeNull(); // not a /v1 route
    expect(seen.some((s) => s.url.includes('k-123'))).toBe(false); // never in a URL
  });

  it('goes away when the key is cleared', async () => {
    setApiKey('k');
    setApiKey('');
    const seen = stubFetch((url) => okAnswer(url));
    await getInfo();
    expect(seen[0].auth).toBeNull();
  });

  it('keeps the key in sessionStorage, not localStorage', () => {
    setApiKey('k-session');
    expect(sessionStorage.getItem('logitscope.apiKey')).toBe('k-session');
    expect(localStorage.length).toBe(0);
    setApiKey('');
    expect(sessionStorage.getItem('logitscope.apiKey')).toBeNull();
  });

  it('reads a key an earlier page of this tab stored', async () => {
    sessionStorage.setItem('logitscope.apiKey', 'from-before');
    const seen = stubFetch((url) => okAnswer(url));
    await getInfo();
    expect(seen[0].auth).toBe('Bearer from-before');
  });
});

describe('a 401', () => {
  const failure = async (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e);

  it('without a key is the "needs a key" state', async () => {
    stubFetch(() => UNAUTHORIZED());
    const e = await failure(getInfo());
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).status).toBe(401);
    expect(apiKeyProblem(e)).toBe('missing');
  });

  it('with a key is the "key refused" state', async () => {
    setApiKey('wrong');
    stubFetch(() => UNAUTHORIZED());
    expect(apiKeyProblem(await failure(getInfo()))).toBe('rejected');
    expect(apiKeyProblem(await failure(streamGeneration('/v1/completions', {}, new AbortController().signal, handlers)))).toBe('rejected');
  });

  it('and nothing else is about the key', async () => {
    stubFetch(() => json(500, { error: { message: 'boom' } }));
    expect(apiKeyProblem(await failure(getInfo()))).toBeNull();
    vi.stubGlobal('fetch', async () => {
      throw new TypeError('Failed to fetch');
    });
    expect(apiKeyProblem(await failure(getInfo()))).toBeNull();
    expect(apiKeyProblem(new Error('x'))).toBeNull();
  });
});

describe('the page', () => {
  let root: HTMLElement;
  beforeEach(() => {
    root = document.createElement('div');
    document.body.appendChild(root);
  });
  afterEach(() => {
    render(null, root);
    root.remove();
  });
  const q = (testid: string) => root.querySelector<HTMLElement>(`[data-testid="${testid}"]`);

  it('asks for a key after a 401 and retries the info with it', async () => {
    const seen = stubFetch((url, auth) => (auth === 'Bearer sekret' ? okAnswer(url) : UNAUTHORIZED()));
    render(h(App, null), root);

    await vi.waitFor(() => expect(q('api-key')).not.toBeNull());
    expect(q('error')?.textContent).toMatch(/wants an API key/);
    expect(document.body.dataset.state).toBe('error');
    const input = q('api-key') as HTMLInputElement;
    expect(input.type).toBe('password');
    expect(root.querySelector('label[for="api-key"]')?.textContent).toBe('API key');
    expect(input.id).toBe('api-key');
    expect(input.tabIndex).toBe(0);
    const save = q('api-key-save') as HTMLButtonElement;
    expect(save.disabled).toBe(true); // nothing typed yet

    // A wrong key first: the field stays, the banner says the key was refused.
    input.value = 'nope';
    input.dispatchEvent(new Event('input', { bubbles: true }));
    await vi.waitFor(() => expect(save.disabled).toBe(false));
    save.click();
    await vi.waitFor(() => expect(q('error')?.textContent).toMatch(/did not accept the API key/));
    expect(q('api-key')).not.toBeNull();
    expect(seen.at(-1)).toMatchObject({ url: '/v1/logitscope/info', auth: 'Bearer nope' });

    // The right key: info loads, the field and the banner go away.
    const field = q('api-key') as HTMLInputElement;
    field.value = 'sekret';
    field.dispatchEvent(new Event('input', { bubbles: true }));
    await vi.waitFor(() => expect((q('api-key-save') as HTMLButtonElement).disabled).toBe(false));
    (q('api-key-save') as HTMLButtonElement).click();
    await vi.waitFor(() => expect(q('api-key')).toBeNull());
    expect(q('error')).toBeNull();
    expect(root.textContent).toContain('tiny-test');
    expect(seen.at(-1)).toMatchObject({ url: '/v1/logitscope/info', auth: 'Bearer sekret' });
    expect(sessionStorage.getItem('logitscope.apiKey')).toBe('sekret');
    expect(localStorage.length).toBe(0);
    expect(seen.every((s) => !s.url.includes('sekret') && !s.url.includes('nope'))).toBe(true);
  });
});
