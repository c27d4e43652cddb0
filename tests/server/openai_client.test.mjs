// End-to-end test of `logitscope serve` (docs/server-api.md) through the official OpenAI client
// (npm `openai`, installed in tests/oracle): chat and completions, determinism, logprobs,
// streaming, n, stop strings, a tool call forced with logitscope.sequence_bias and its round
// trip, the errors the client raises, and models.list. Every check prints what it got.
//
//   node openai_client.test.mjs --logitscope BIN --tokenizer-from DIR [--oracle-dir tests/oracle]
import { isDeepStrictEqual } from "node:util";

import { KEY, LIVELY, MODEL, USER, check, equal, postJSON, runClientTest, section, setup, show }
  from "./harness.mjs";

const { args: ARGS, sdk } = setup("openai_client.test.mjs", "openai");
const { OpenAI, AuthenticationError, BadRequestError, NotFoundError } = sdk;
const EOS = 151645; // <|im_end|>

// ---------------------------------------------------------------------------------------------
// Helpers on responses.
const chatReq = (extra) => ({ model: MODEL, messages: USER, ...extra });

async function streamChat(client, body) {
  const stream = await client.chat.completions.create({ ...body, stream: true,
                                                        stream_options: { include_usage: true } });
  const chunks = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

// The concatenated UTF-8 of logprobs entries' bytes; `valid` false when it is not well-formed.
function bytesText(entries) {
  const buf = Uint8Array.from(entries.flatMap((e) => e.bytes ?? []));
  try {
    return { text: new TextDecoder("utf-8", { fatal: true }).decode(buf), valid: true };
  } catch {
    return { text: new TextDecoder("utf-8").decode(buf), valid: false };
  }
}

// Content equals the tokens' bytes; where those are ill-formed UTF-8 the server writes U+FFFD
// (its grouping may differ from TextDecoder's, or drop an incomplete tail), so compare without it.
function checkBytesMatchContent(name, entries, content) {
  const { text, valid } = bytesText(entries);
  if (valid) return equal(name, content, text);
  const strip = (s) => String(s ?? "").replaceAll("\uFFFD", "");
  return check(`${name} (ill-formed bytes: compared without U+FFFD)`, strip(content) === strip(text),
               { content, bytes_text: text });
}

function isByteArray(b) {
  return Array.isArray(b) && b.every((x) => Number.isInteger(x) && x >= 0 && x <= 255);
}

function sortedDescending(xs) {
  return xs.every((x, i) => i === 0 || xs[i - 1] >= x);
}

// ---------------------------------------------------------------------------------------------
async function testModels(client) {
  const page = await client.models.list();
  equal("models.list(): one model, named after the directory", page.data.map((m) => m.id), [MODEL]);
}

async function testChatBasics(client) {
  const r = await client.chat.completions.create(chatReq({ max_tokens: 8, temperature: 0 }));
  const ch = r.choices?.[0] ?? {};
  const u = r.usage ?? {};
  check("chat: id chatcmpl-..., object chat.completion, created, model",
        typeof r.id === "string" && r.id.startsWith("chatcmpl-") && r.object === "chat.completion" &&
        Number.isInteger(r.created) && r.model === MODEL,
        { id: r.id, object: r.object, created: r.created, model: r.model });
  check("chat: one choice, index 0, role assistant, string content",
        r.choices?.length === 1 && ch.index === 0 && ch.message?.role === "assistant" &&
        typeof ch.message?.content === "string", ch);
  check("chat: finish_reason stop or length", ["stop", "length"].includes(ch.finish_reason), ch.finish_reason);
  check("chat: usage total = prompt + completion, completion <= max_tokens 8",
        Number.isInteger(u.prompt_tokens) && u.prompt_tokens > 0 && Number.isInteger(u.completion_tokens) &&
        u.completion_tokens <= 8 && u.total_tokens === u.prompt_tokens + u.completion_tokens, u);

  const l = await client.chat.completions.create(chatReq({ max_tokens: 8, temperature: 0, ignore_eos: true }));
  check("ignore_eos + max_tokens 8: finish_reason length, 8 completion tokens",
        l.choices?.[0]?.finish_reason === "length" && l.usage?.completion_tokens === 8,
        { finish_reason: l.choices?.[0]?.finish_reason, usage: l.usage });
}

async function testDeterminism(client) {
  const greedy = chatReq({ max_tokens: 16, temperature: 0, ignore_eos: true, ...LIVELY });
  const g1 = await client.chat.completions.create(greedy);
  const g2 = await client.chat.completions.create(greedy);
  equal("temperature 0 twice: the same text", g2.choices[0].message.content, g1.choices[0].message.content);
  check("temperature 0: header mode greedy", g1.logitscope?.header?.mode === "greedy", g1.logitscope?.header?.mode);

  const sampled = (seed) => chatReq({ max_tokens: 16, temperature: 1, seed, ignore_eos: true, ...LIVELY });
  const s1 = await client.chat.completions.create(sampled(5));
  const s2 = await client.chat.completions.create(sampled(5));
  const s6 = await client.chat.completions.create(sampled(6));
  equal("seed 5, temperature 1 twice: the same text", s2.choices[0].message.content,
        s1.choices[0].message.content);
  equal("logitscope.header.seed echoes 5", s1.logitscope?.header?.seed, 5);
  check("seed 6 samples another text than seed 5",
        s6.choices[0].message.content !== s1.choices[0].message.content,
        { seed5: s1.choices[0].message.content, seed6: s6.choices[0].message.content });
}

async function testLogprobs(client) {
  // Greedy on the raw distribution (no penalty): the chosen token is the raw top-1.
  const r = await client.chat.completions.create(chatReq({
    max_tokens: 8, temperature: 0, ignore_eos: true, repetition_penalty: 1, logprobs: true,
    top_logprobs: 5, logprobs_mode: "raw" }));
  const entries = r.choices[0].logprobs?.content ?? [];
  equal("logprobs: one entry per generated token (8)", entries.length, 8);
  entries.forEach((e, k) => {
    const top = e.top_logprobs ?? [];
    check(`entry ${k}: token string, logprob <= 0, bytes 0..255, 5 top_logprobs sorted descending`,
          typeof e.token === "string" && typeof e.logprob === "number" && e.logprob <= 0 &&
          isByteArray(e.bytes) && top.length === 5 && sortedDescending(top.map((t) => t.logprob)) &&
          top.every((t) => typeof t.token === "string" && t.logprob <= 0 && isByteArray(t.bytes)), e);
    check(`entry ${k}: greedy (raw) chose top_logprobs[0], with its logprob`,
          e.token === top[0]?.token && e.logprob === top[0]?.logprob && isDeepStrictEqual(e.bytes, top[0]?.bytes),
          { chosen: [e.token, e.logprob], top0: top[0] && [top[0].token, top[0].logprob] });
  });

  // Varied tokens: the bytes of all entries spell the content.
  const v = await client.chat.completions.create(chatReq({
    max_tokens: 12, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 5, ...LIVELY }));
  const ve = v.choices[0].logprobs?.content ?? [];
  check("varied greedy run: finish_reason length, 12 entries",
        v.choices[0].finish_reason === "length" && ve.length === 12,
        { finish_reason: v.choices[0].finish_reason, entries: ve.length });
  checkBytesMatchContent("the entries' bytes, as UTF-8, equal message.content", ve, v.choices[0].message.content);

  // logprobs_mode processed: greedy picks the top of the processed distribution.
  const p = await client.chat.completions.create(chatReq({
    max_tokens: 6, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 3,
    logprobs_mode: "processed", ...LIVELY }));
  const pe = p.choices[0].logprobs?.content ?? [];
  check("logprobs_mode processed, greedy: every chosen token is its top_logprobs[0]",
        pe.length === 6 && pe.every((e) => e.token === e.top_logprobs?.[0]?.token &&
                                           e.logprob === e.top_logprobs?.[0]?.logprob),
        pe.map((e) => [e.token, e.logprob, e.top_logprobs?.[0]?.token, e.top_logprobs?.[0]?.logprob]));
  return { varied: v };
}

async function testStreaming(client, varied) {
  const body = chatReq({ max_tokens: 12, temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 5,
                         ...LIVELY });
  const chunks = await streamChat(client, body);
  check("stream: every chunk is chat.completion.chunk with one id",
        chunks.length > 2 && chunks.every((c) => c.object === "chat.completion.chunk" && c.id === chunks[0].id),
        { objects: [...new Set(chunks.map((c) => c.object))], ids: [...new Set(chunks.map((c) => c.id))] });
  const withChoices = chunks.filter((c) => c.choices?.length);
  const first = withChoices[0]?.choices?.[0]?.delta ?? {};
  check("stream: the first delta has role assistant", first.role === "assistant", first);
  check("stream: the first chunk carries logitscope.header", !!chunks[0]?.logitscope?.header,
        chunks[0]?.logitscope && Object.keys(chunks[0].logitscope));
  const text = withChoices.map((c) => c.choices[0].delta?.content ?? "").join("");
  equal("stream: joined deltas = the non-streaming content", text, varied.choices[0].message.content);
  const lps = withChoices.flatMap((c) => c.choices[0].logprobs?.content ?? []);
  const want = varied.choices[0].logprobs?.content ?? [];
  const diff = lps.findIndex((e, k) => !isDeepStrictEqual(e, want[k]));
  check("stream: the chunks' logprobs joined = the non-streaming logprobs (tokens, logprobs, tops)",
        lps.length === want.length && diff === -1,
        { lengths: [lps.length, want.length], first_diff: diff, stream: lps[diff], whole: want[diff] });
  const reasons = withChoices.map((c) => c.choices[0].finish_reason).filter((x) => x);
  equal("stream: one chunk has finish_reason length", reasons, ["length"]);
  const last = chunks[chunks.length - 1] ?? {};
  check("stream: the last chunk has choices [] and usage (12 completion tokens)",
        Array.isArray(last.choices) && last.choices.length === 0 && last.usage?.completion_tokens === 12 &&
        last.usage?.total_tokens === last.usage?.prompt_tokens + 12, last);
}

async function testCompletions(client) {
  const prompt = "Once upon a time";
  const base = { model: MODEL, prompt, max_tokens: 8, temperature: 0, ignore_eos: true, ...LIVELY };
  const r = await client.completions.create(base);
  check("completions: object text_completion, a text, finish_reason length",
        r.object === "text_completion" && typeof r.choices?.[0]?.text === "string" &&
        r.choices[0].text.length > 0 && r.choices[0].finish_reason === "length",
        { object: r.object, choice: r.choices?.[0] });
  const l = await client.completions.create({ ...base, logprobs: 3 });
  const lp = l.choices[0].logprobs ?? {};
  const n = lp.tokens?.length;
  check("logprobs 3: tokens/token_logprobs/top_logprobs/text_offset of equal length 8",
        n === 8 && lp.token_logprobs?.length === n && lp.top_logprobs?.length === n && lp.text_offset?.length === n,
        { tokens: lp.tokens, token_logprobs: lp.token_logprobs?.length, top_logprobs: lp.top_logprobs?.length,
          text_offset: lp.text_offset });
  check("logprobs 3: numbers <= 0, each top_logprobs an object of 1..3 {token: logprob}",
        (lp.token_logprobs ?? []).every((x) => typeof x === "number" && x <= 0) &&
        (lp.top_logprobs ?? []).every((t) => t && Object.keys(t).length >= 1 && Object.keys(t).length <= 3 &&
                                             Object.values(t).every((x) => x <= 0)), lp.top_logprobs);
  check("logprobs 3: text_offset never decreases",
        (lp.text_offset ?? []).every((x, k, a) => Number.isInteger(x) && (k === 0 || a[k - 1] <= x)), lp.text_offset);
  equal("the text with logprobs = the text without", l.choices[0].text, r.choices[0].text);
}

const ECHO_PROMPT = "Hello world, this is"; // ASCII: offsets in characters = in UTF-16 units

async function testEchoScoring(client) {
  // echo + max_tokens 0: the prompt scored, nothing generated.
  const p2 = ECHO_PROMPT;
  const e = await client.completions.create({ model: MODEL, prompt: p2, echo: true, logprobs: 1, max_tokens: 0 });
  const el = e.choices[0].logprobs ?? {};
  equal("echo, max_tokens 0: the text is the prompt", e.choices[0].text, p2);
  check("echo: one token per prompt token, joined they are the prompt",
        el.tokens?.length === e.usage?.prompt_tokens && el.tokens?.join("") === p2,
        { tokens: el.tokens, usage: e.usage });
  check("echo: the first token_logprobs and top_logprobs are null, the others numbers <= 0",
        el.token_logprobs?.[0] === null && el.top_logprobs?.[0] === null &&
        el.token_logprobs.slice(1).every((x) => typeof x === "number" && x <= 0),
        { token_logprobs: el.token_logprobs, top0: el.top_logprobs?.[0] });
  const offsets = [];
  (el.tokens ?? []).reduce((at, t) => (offsets.push(at), at + t.length), 0);
  equal("echo: text_offset starts at 0 and grows by each token's length", el.text_offset, offsets);
}

async function testEchoGenerate(client) {
  const p2 = ECHO_PROMPT;
  const base = { model: MODEL, max_tokens: 4, temperature: 0, ignore_eos: true, ...LIVELY };
  const e4 = await client.completions.create({ ...base, prompt: p2, echo: true, logprobs: 1, max_tokens: 4 });
  const plain = await client.completions.create({ ...base, prompt: p2, max_tokens: 4 });
  equal("echo + 4 tokens: the text is the prompt + the non-echo completion", e4.choices[0].text,
        p2 + plain.choices[0].text);
  const e4l = e4.choices[0].logprobs ?? {};
  check("echo + 4 tokens: prompt tokens + 4 entries; the first generated offset is the prompt's length",
        e4l.tokens?.length === e4.usage?.prompt_tokens + 4 &&
        e4l.text_offset?.[e4.usage?.prompt_tokens] === p2.length,
        { tokens: e4l.tokens, text_offset: e4l.text_offset, usage: e4.usage });
}

async function testN(client) {
  const r = await client.chat.completions.create(chatReq({ n: 3, seed: 7, temperature: 1, max_tokens: 12,
                                                           ignore_eos: true, ...LIVELY }));
  const idx = (r.choices ?? []).map((c) => c.index).sort((x, y) => x - y);
  equal("n 3: three choices, indexes 0, 1, 2", idx, [0, 1, 2]);
  const texts = (r.choices ?? []).map((c) => c.message.content);
  check("n 3: the choices are sampled independently (not all the same text)", new Set(texts).size > 1, texts);
  equal("n 3: usage.completion_tokens counts all choices (3 x 12)", r.usage?.completion_tokens, 36);
}

async function testStop(client) {
  const body = chatReq({ max_tokens: 16, temperature: 0, ignore_eos: true, ...LIVELY });
  const r = await client.chat.completions.create(body);
  const text = r.choices[0].message.content ?? "";
  const cps = Array.from(text);
  let at = -1;
  for (let k = 2; k + 3 <= cps.length && at < 0; k++) if (!cps.slice(k, k + 3).includes("\uFFFD")) at = k;
  if (!check("the greedy text has 3 characters from the 3rd on to stop at", at >= 0, text)) return;
  const stop = cps.slice(at, at + 3).join("");
  const want = text.slice(0, text.indexOf(stop));
  const s = await client.chat.completions.create({ ...body, stop: [stop] });
  const got = s.choices[0].message.content ?? "";
  check(`stop ${show(stop)}: content is the text before it, finish_reason stop`,
        got === want && s.choices[0].finish_reason === "stop" && !got.includes(stop),
        { content: got, want, finish_reason: s.choices[0].finish_reason, full: text });
  const chunks = await streamChat(client, { ...body, stop: [stop] });
  const streamed = chunks.filter((c) => c.choices?.length).map((c) => c.choices[0].delta?.content ?? "").join("");
  equal("stop, streamed: the stop string is never sent", streamed, want);
}

// ---------------------------------------------------------------------------------------------
// Tools: the random model is forced to write the tool call by sequence_bias.
const TOOLS = [{ type: "function", function: { name: "get_weather", parameters: {
  type: "object", properties: { city: { type: "string" } } } } }];
const TOOL_TEXT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
const TOOL_USER = [{ role: "user", content: "What is the weather in Paris?" }];

function endsWith(seq, ctx) {
  if (ctx.length > seq.length) return false;
  for (let k = 0; k < ctx.length; k++) if (seq[seq.length - ctx.length + k] !== ctx[k]) return false;
  return true;
}

// sequence_bias entries that make greedy decoding write `target` (ids, ending with EOS): +50 on
// target[0] always, +100 on target[i] after its context target[i-k..i-1]. Contexts start one
// token long and grow until, at every step, the wanted token leads every other by >= 50 (the
// model's logits span ~40), whether or not the server matches contexts against the prompt too.
function buildSequenceBias(promptIds, target) {
  const len = target.map((_, i) => (i === 0 ? 0 : 1));
  for (let round = 0; round < 1000; round++) {
    const byKey = new Map();
    target.forEach((tok, i) => {
      const ctx = target.slice(i - len[i], i);
      const key = JSON.stringify([ctx, tok]);
      if (!byKey.has(key)) byKey.set(key, { i, tok, ctx, bias: i === 0 ? 50 : 100 });
    });
    const entries = [...byKey.values()];
    const grow = new Set();
    const bad = [];
    for (const withPrompt of [true, false]) {
      for (let s = 0; s < target.length; s++) {
        const seen = withPrompt ? promptIds.concat(target.slice(0, s)) : target.slice(0, s);
        const sums = new Map();
        const fired = entries.filter((e) => endsWith(seen, e.ctx));
        for (const e of fired) sums.set(e.tok, (sums.get(e.tok) ?? 0) + e.bias);
        const want = sums.get(target[s]) ?? 0;
        const rival = Math.max(0, ...[...sums].filter(([t]) => t !== target[s]).map(([, b]) => b));
        if (want - rival < 50) {
          bad.push({ step: s, withPrompt, want, rival });
          for (const e of fired) if (e.tok !== target[s] && e.i > 0) grow.add(e.i);
        }
      }
    }
    if (bad.length === 0) return entries.map((e) => [[...e.ctx, e.tok], e.bias]);
    let grew = false;
    for (const i of grow) {
      if (len[i] < i) {
        len[i]++;
        grew = true;
      }
    }
    if (!grew) throw new Error(`no sequence_bias forces ${show(target)}: ${show(bad)}`);
  }
  throw new Error("sequence_bias construction did not converge");
}

async function testTools(client, srv) {
  const tok = await postJSON(srv, "/tokenize", { prompt: TOOL_TEXT });
  // The prompt's last tokens ("...<|im_start|>assistant\n") are all buildSequenceBias looks at.
  const prm = await postJSON(srv, "/tokenize", { messages: TOOL_USER, tools: TOOLS,
                                                 add_generation_prompt: true });
  if (!check("/tokenize the tool call text and the prompt", tok.status === 200 && prm.status === 200 &&
             Array.isArray(tok.json?.tokens) && Array.isArray(prm.json?.tokens),
             { target: tok.json ?? tok.text, prompt_count: prm.json?.count ?? prm.text })) return;
  const target = [...tok.json.tokens, EOS];
  const bias = buildSequenceBias(prm.json.tokens, target);
  console.log(`   target ids ${show(target)}\n   sequence_bias ${show(bias, 2000)}`);
  const body = { model: MODEL, messages: TOOL_USER, tools: TOOLS, temperature: 0, repetition_penalty: 1,
                 max_tokens: 64, logitscope: { sequence_bias: bias } };

  const r = await client.chat.completions.create(body);
  const ch = r.choices?.[0] ?? {};
  const call = ch.message?.tool_calls?.[0] ?? {};
  let args = null;
  try {
    args = JSON.parse(call.function?.arguments);
  } catch {}
  check("tool call: finish_reason tool_calls, one call of get_weather with {city: Paris}",
        ch.finish_reason === "tool_calls" && ch.message?.tool_calls?.length === 1 && call.type === "function" &&
        call.function?.name === "get_weather" && isDeepStrictEqual(args, { city: "Paris" }), ch);
  check("tool call: id call_..., content null or ''",
        typeof call.id === "string" && call.id.startsWith("call_") &&
        (ch.message?.content === null || ch.message?.content === ""), { id: call.id, content: ch.message?.content });

  const chunks = await streamChat(client, body);
  const calls = [];
  let content = "";
  for (const c of chunks) {
    const d = c.choices?.[0]?.delta ?? {};
    content += d.content ?? "";
    for (const t of d.tool_calls ?? []) {
      const acc = (calls[t.index] ??= { id: undefined, name: "", arguments: "", type: undefined });
      if (t.id) acc.id = t.id;
      if (t.type) acc.type = t.type;
      acc.name += t.function?.name ?? "";
      acc.arguments += t.function?.arguments ?? "";
    }
  }
  let sargs = null;
  try {
    sargs = JSON.parse(calls[0]?.arguments);
  } catch {}
  check("streamed tool call: the same name and arguments, an id call_...",
        calls.length === 1 && calls[0].name === "get_weather" && isDeepStrictEqual(sargs, { city: "Paris" }) &&
        calls[0].type === "function" && String(calls[0].id).startsWith("call_"), calls);
  check("streamed tool call: no content delta holds '<tool_call'", !content.includes("<tool_call"), content);
  const reasons = chunks.map((c) => c.choices?.[0]?.finish_reason).filter((x) => x);
  equal("streamed tool call: finish_reason tool_calls", reasons, ["tool_calls"]);

  // The result goes back to the model.
  if (!call.id) return;
  const messages = [...TOOL_USER, ch.message, { role: "tool", tool_call_id: call.id, content: '{"temp": 20}' }];
  const t = await postJSON(srv, "/apply-template", { messages, tools: TOOLS, add_generation_prompt: true });
  const p = t.json?.prompt ?? "";
  check("apply-template with the tool result: <tool_response> holds it, the call is rendered",
        t.status === 200 && p.includes("<tool_response>") && p.includes('{"temp": 20}') &&
        p.includes("<tool_call>") && p.includes("get_weather") && p.includes("Paris") &&
        p.endsWith("<|im_start|>assistant\n"), t.json?.prompt ? p.slice(-400) : t.text);
  const r2 = await client.chat.completions.create({ model: MODEL, messages, tools: TOOLS, max_tokens: 8 });
  check("chat with the tool result: answered, with a longer prompt",
        r2.choices?.[0]?.message?.role === "assistant" && r2.usage?.prompt_tokens > r.usage?.prompt_tokens,
        { choice: r2.choices?.[0], usage: [r.usage, r2.usage] });
}

// ---------------------------------------------------------------------------------------------
async function expectError(name, fn, { cls, status, param, code }) {
  try {
    const r = await fn();
    check(name, false, { resolved: r });
  } catch (e) {
    const ok = e instanceof cls && e.status === status && (param === undefined || e.param === param) &&
      (code === undefined || e.code === code) &&
      (status !== 400 || e.type === "invalid_request_error");
    check(name, ok, { class: e?.constructor?.name, status: e?.status, type: e?.type, param: e?.param,
                      code: e?.code, message: e?.message });
  }
}

async function testErrors(client, srv) {
  const chat = (extra) => () => client.chat.completions.create(chatReq({ max_tokens: 2, ...extra }));
  await expectError("temperature 'hot': BadRequestError 400, param temperature", chat({ temperature: "hot" }),
                    { cls: BadRequestError, status: 400, param: "temperature" });
  await expectError("top_p 2: 400, param top_p", chat({ top_p: 2 }), { cls: BadRequestError, status: 400,
                                                                     param: "top_p" });
  await expectError("logit_bias {5: 500}: 400, param logit_bias.5", chat({ logit_bias: { 5: 500 } }),
                    { cls: BadRequestError, status: 400, param: "logit_bias.5" });
  await expectError("top_logprobs 5 without logprobs: 400, param top_logprobs", chat({ top_logprobs: 5 }),
                    { cls: BadRequestError, status: 400, param: "top_logprobs" });
  await expectError("role 'wizard': 400, param messages[0].role",
                    chat({ messages: [{ role: "wizard", content: "hi" }] }),
                    { cls: BadRequestError, status: 400, param: "messages[0].role" });
  await expectError("stream with temperature 'hot': 400 before any chunk",
                    async () => {
                      const s = await client.chat.completions.create(chatReq({ stream: true, temperature: "hot" }));
                      for await (const _ of s);
                    }, { cls: BadRequestError, status: 400, param: "temperature" });
  await expectError("completions without a prompt: 400, param prompt",
                    () => client.completions.create({ model: MODEL, max_tokens: 2 }),
                    { cls: BadRequestError, status: 400, param: "prompt" });
  await expectError("model 'nope': NotFoundError 404", chat({ model: "nope" }),
                    { cls: NotFoundError, status: 404, code: "model_not_found" });
  const wrong = new OpenAI({ baseURL: `http://${srv.host}:${srv.port}/v1`, apiKey: "wrong", maxRetries: 0 });
  await expectError("a wrong API key: AuthenticationError 401", () => wrong.chat.completions.create(chatReq({})),
                    { cls: AuthenticationError, status: 401, code: "invalid_api_key" });
  await expectError("a wrong API key, models.list(): 401", () => wrong.models.list(),
                    { cls: AuthenticationError, status: 401 });
}

// ---------------------------------------------------------------------------------------------
runClientTest(ARGS, {
  tmpPrefix: "ls_server_openai_",
  makeClient: (srv) => new OpenAI({ baseURL: `http://${srv.host}:${srv.port}/v1`, apiKey: KEY,
                                   maxRetries: 0, timeout: 300000 }),
  run: async (client, srv, tmp) => {
    await section("models.list", () => testModels(client));
    await section("chat basics", () => testChatBasics(client));
    await section("determinism", () => testDeterminism(client));
    let varied = null;
    await section("logprobs", async () => ({ varied } = await testLogprobs(client)));
    await section("streaming", async () => {
      if (!varied) throw new Error("the logprobs section gave no non-streaming reference");
      await testStreaming(client, varied);
    });
    await section("completions", () => testCompletions(client));
    await section("completions: echo with max_tokens 0 scores the prompt", () => testEchoScoring(client));
    await section("completions: echo with generated tokens", () => testEchoGenerate(client));
    await section("n", () => testN(client));
    await section("stop strings", () => testStop(client));
    await section("tools", () => testTools(client, srv));
    await section("errors", () => testErrors(client, srv));
  },
});
