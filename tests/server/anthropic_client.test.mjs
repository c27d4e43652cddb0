// End-to-end test of Anthropic's Messages API on `logitscope serve` (docs/server-api.md) through
// the official client (npm @anthropic-ai/sdk, installed in tests/oracle): a message and its
// usage against count_tokens and the chat route's own counts, determinism, streaming (the events'
// order, text_delta joined = the message, the SDK's accumulated final message), a system prompt,
// stop sequences, a forced tool call and its tool_result round trip, count_tokens against
// /tokenize, the errors the SDK raises, and x-api-key. Every check prints what it got.
//
//   node anthropic_client.test.mjs --logitscope BIN --tokenizer-from DIR [--oracle-dir tests/oracle]
import { isDeepStrictEqual } from "node:util";

import { KEY, LIVELY, MODEL, USER, check, equal, postJSON, runClientTest, section, setup, show }
  from "./harness.mjs";

const { args: ARGS, sdk } = setup("anthropic_client.test.mjs", "@anthropic-ai/sdk");
const { Anthropic, AuthenticationError, BadRequestError, NotFoundError } = sdk;

// ---------------------------------------------------------------------------------------------
// Helpers.
const msgReq = (extra) => ({ model: MODEL, max_tokens: 8, messages: USER, ...extra });
const textOf = (m) => (m.content ?? []).filter((b) => b.type === "text").map((b) => b.text).join("");

// The raw events of a streamed request (create with stream: true).
async function streamEvents(client, body) {
  const stream = await client.messages.create({ ...body, stream: true });
  const events = [];
  for await (const ev of stream) events.push(ev);
  return events;
}

// Checks the events' grammar: message_start, then blocks (start, deltas of the block's kind with
// its index, stop) with indexes 0, 1, ..., then message_delta and message_stop. Returns the
// blocks rebuilt from the deltas, the text, and the message_delta.
function checkEventOrder(name, events) {
  const types = events.map((e) => e.type);
  const problems = [];
  if (types[0] !== "message_start") problems.push("the first event is not message_start");
  if (types.at(-1) !== "message_stop") problems.push("the last event is not message_stop");
  if (types.at(-2) !== "message_delta") problems.push("message_delta is not before message_stop");
  const blocks = [];
  let open = null;
  for (const e of events.slice(1, -2)) {
    if (e.type === "content_block_start") {
      if (open !== null) problems.push(`block ${e.index} starts while ${open} is open`);
      if (e.index !== blocks.length) problems.push(`block index ${e.index}, want ${blocks.length}`);
      open = e.index;
      blocks.push({ ...e.content_block, partial: "" });
    } else if (e.type === "content_block_delta") {
      const b = blocks[e.index];
      if (e.index !== open || !b) { problems.push(`a delta for block ${e.index}, open ${open}`); continue; }
      if (e.delta.type === "text_delta" && b.type === "text") b.text += e.delta.text;
      else if (e.delta.type === "input_json_delta" && b.type === "tool_use") b.partial += e.delta.partial_json;
      else problems.push(`a ${e.delta.type} in a ${b.type} block`);
    } else if (e.type === "content_block_stop") {
      if (e.index !== open) problems.push(`stop of block ${e.index}, open ${open}`);
      open = null;
    } else if (e.type !== "ping") {
      problems.push(`unexpected event ${e.type} between the blocks`);
    }
  }
  if (open !== null) problems.push(`block ${open} never stopped`);
  for (const b of blocks) {
    if (b.type === "tool_use") {
      try {
        b.input = JSON.parse(b.partial || "{}");
      } catch {
        problems.push(`tool_use input_json_delta is not JSON: ${b.partial}`);
      }
    }
    delete b.partial;
  }
  check(`${name}: events in Anthropic's order (${types.length} events)`, problems.length === 0,
        problems.length ? problems : types.join(" "));
  return { blocks, text: blocks.filter((b) => b.type === "text").map((b) => b.text).join(""),
           start: events[0]?.message, delta: events.at(-2) };
}

// ---------------------------------------------------------------------------------------------
async function testBasics(client, srv) {
  const body = msgReq({ temperature: 0, ...LIVELY });
  const m = await client.messages.create(body);
  check("message: id msg_..., type message, role assistant, model",
        typeof m.id === "string" && m.id.startsWith("msg_") && m.type === "message" && m.role === "assistant" &&
        m.model === MODEL, { id: m.id, type: m.type, role: m.role, model: m.model });
  check("message: content is a list of text blocks with string text",
        Array.isArray(m.content) && m.content.every((b) => b.type === "text" && typeof b.text === "string"),
        m.content);
  check("message: stop_reason end_turn or max_tokens, stop_sequence null",
        ["end_turn", "max_tokens"].includes(m.stop_reason) && m.stop_sequence === null,
        { stop_reason: m.stop_reason, stop_sequence: m.stop_sequence });
  const u = m.usage ?? {};
  check("message: usage input_tokens, output_tokens (<= max_tokens 8), cache_read_input_tokens integers",
        Number.isInteger(u.input_tokens) && Number.isInteger(u.output_tokens) && u.output_tokens >= 1 &&
        u.output_tokens <= 8 && Number.isInteger(u.cache_read_input_tokens), u);

  // The prompt: count_tokens = /tokenize of the same messages through the chat template =
  // input_tokens + cache_read_input_tokens (Anthropic counts cache reads apart).
  const counted = await client.messages.countTokens({ model: MODEL, messages: USER });
  const tok = await postJSON(srv, "/tokenize", { messages: USER, add_generation_prompt: true });
  equal("count_tokens = /tokenize's count of the chat template's prompt", counted.input_tokens, tok.json?.count);
  equal("usage: input_tokens + cache_read_input_tokens = count_tokens",
        u.input_tokens + u.cache_read_input_tokens, counted.input_tokens);

  // The chat route with the same messages and settings: the same prompt, tokens and text.
  const chat = await postJSON(srv, "/v1/chat/completions", { model: MODEL, messages: USER, max_tokens: 8,
                                                             temperature: 0, ...LIVELY });
  equal("the chat route's usage.prompt_tokens = count_tokens", chat.json?.usage?.prompt_tokens, counted.input_tokens);
  equal("usage.output_tokens = the chat route's completion_tokens", u.output_tokens,
        chat.json?.usage?.completion_tokens);
  equal("greedy: the text = the chat route's content", textOf(m), chat.json?.choices?.[0]?.message?.content);
  const finish = chat.json?.choices?.[0]?.finish_reason;
  equal("stop_reason matches the chat route's finish_reason",
        m.stop_reason, finish === "length" ? "max_tokens" : "end_turn");
  check("the logitscope extension: header.chain", typeof m.logitscope?.header?.chain === "string",
        m.logitscope?.header?.chain);

  const l = await client.messages.create(msgReq({ temperature: 0, ignore_eos: true }));
  check("ignore_eos, max_tokens 8: stop_reason max_tokens, output_tokens 8",
        l.stop_reason === "max_tokens" && l.usage?.output_tokens === 8, { stop_reason: l.stop_reason, usage: l.usage });
}

async function testDeterminism(client) {
  const greedy = msgReq({ max_tokens: 16, temperature: 0, ignore_eos: true, ...LIVELY });
  const g1 = await client.messages.create(greedy);
  const g2 = await client.messages.create(greedy);
  equal("temperature 0 twice: the same text", textOf(g2), textOf(g1));
  check("temperature 0: header mode greedy", g1.logitscope?.header?.mode === "greedy", g1.logitscope?.header?.mode);
  const sampled = (seed) => msgReq({ max_tokens: 16, temperature: 1, seed, ignore_eos: true, ...LIVELY });
  const s1 = await client.messages.create(sampled(5));
  const s2 = await client.messages.create(sampled(5));
  const s6 = await client.messages.create(sampled(6));
  equal("seed 5, temperature 1 twice: the same text", textOf(s2), textOf(s1));
  check("seed 6 samples another text than seed 5", textOf(s6) !== textOf(s1), { seed5: textOf(s1), seed6: textOf(s6) });
  const k = await client.messages.create(msgReq({ max_tokens: 16, temperature: 1, top_k: 1, seed: 9,
                                                  ignore_eos: true, ...LIVELY }));
  equal("top_k 1 at temperature 1 = greedy", textOf(k), textOf(g1));
}

async function testStreaming(client) {
  const body = msgReq({ max_tokens: 16, temperature: 0, ignore_eos: true, ...LIVELY });
  const whole = await client.messages.create(body);
  const events = await streamEvents(client, body);
  const got = checkEventOrder("stream", events);
  check("stream: text_delta joined = the non-streamed text (greedy), one text block",
        got.text === textOf(whole) && got.blocks.length === 1, { stream: got.text, whole: textOf(whole) });
  check("stream: message_start has the id, role, model, empty content, null stop_reason",
        got.start?.id?.startsWith("msg_") && got.start?.role === "assistant" && got.start?.model === MODEL &&
        Array.isArray(got.start?.content) && got.start.content.length === 0 && got.start?.stop_reason === null,
        got.start);
  equal("stream: message_start input_tokens + cache reads = the non-streamed",
        got.start?.usage?.input_tokens + got.start?.usage?.cache_read_input_tokens,
        whole.usage.input_tokens + whole.usage.cache_read_input_tokens);
  check("stream: message_delta stop_reason max_tokens and output_tokens 16",
        got.delta?.delta?.stop_reason === "max_tokens" && got.delta?.usage?.output_tokens === 16, got.delta);
  // The SDK's own accumulation of the events (MessageStream) gives the non-streamed message.
  const final = await client.messages.stream(body).finalMessage();
  equal("messages.stream().finalMessage(): the same content", final.content, whole.content);
  equal("messages.stream().finalMessage(): the same stop_reason and output_tokens",
        [final.stop_reason, final.usage?.output_tokens], [whole.stop_reason, whole.usage.output_tokens]);
}

async function testSystem(client, srv) {
  const system = "You are terse.";
  const body = msgReq({ system, temperature: 0, ...LIVELY });
  const m = await client.messages.create(body);
  const plain = await client.messages.countTokens({ model: MODEL, messages: USER });
  const counted = await client.messages.countTokens({ model: MODEL, system, messages: USER });
  const chatMessages = [{ role: "system", content: system }, ...USER];
  const tok = await postJSON(srv, "/tokenize", { messages: chatMessages, add_generation_prompt: true });
  equal("system: count_tokens = /tokenize with a system message", counted.input_tokens, tok.json?.count);
  // Qwen2.5's template writes its default system prompt when there is none, so the count
  // differs either way; the rendered prompt holds the given one and not the default.
  check("system: another count than without it", counted.input_tokens !== plain.input_tokens,
        [counted.input_tokens, plain.input_tokens]);
  const rendered = await postJSON(srv, "/apply-template", { messages: chatMessages });
  check("system: the chat template's prompt holds it as the system message",
        rendered.json?.prompt?.startsWith(`<|im_start|>system\n${system}<|im_end|>`), rendered.json?.prompt ?? rendered.text);
  equal("system: input_tokens + cache reads = count_tokens",
        m.usage.input_tokens + m.usage.cache_read_input_tokens, counted.input_tokens);
  const blocks = await client.messages.countTokens({ model: MODEL, messages: USER,
                                                     system: [{ type: "text", text: system }] });
  equal("system as a list of text blocks: the same count", blocks.input_tokens, counted.input_tokens);
  const chat = await postJSON(srv, "/v1/chat/completions", { model: MODEL, messages: chatMessages, max_tokens: 8,
                                                             temperature: 0, ...LIVELY });
  equal("system, greedy: the text = the chat route's", textOf(m), chat.json?.choices?.[0]?.message?.content);
}

async function testStop(client) {
  const body = msgReq({ max_tokens: 16, temperature: 0, ignore_eos: true, ...LIVELY });
  const text = textOf(await client.messages.create(body));
  const cps = Array.from(text);
  let at = -1;
  for (let k = 2; k + 3 <= cps.length && at < 0; k++) if (!cps.slice(k, k + 3).includes("\uFFFD")) at = k;
  if (!check("the greedy text has 3 characters from the 3rd on to stop at", at >= 0, text)) return;
  const stop = cps.slice(at, at + 3).join("");
  const want = text.slice(0, text.indexOf(stop));
  const s = await client.messages.create({ ...body, stop_sequences: ["never here", stop] });
  check(`stop_sequences [.., ${show(stop)}]: the text before it, stop_reason stop_sequence, stop_sequence named`,
        textOf(s) === want && s.stop_reason === "stop_sequence" && s.stop_sequence === stop,
        { text: textOf(s), want, stop_reason: s.stop_reason, stop_sequence: s.stop_sequence });
  const got = checkEventOrder("stop, streamed", await streamEvents(client, { ...body, stop_sequences: [stop] }));
  check("stop, streamed: the stop sequence is never sent; message_delta names it",
        got.text === want && got.delta?.delta?.stop_reason === "stop_sequence" &&
        got.delta?.delta?.stop_sequence === stop, { text: got.text, delta: got.delta });
}

// ---------------------------------------------------------------------------------------------
// Tools: tool_choice forces the call through the chat route's grammar; the schema keeps it short.
const TOOLS = [{ name: "get_weather", description: "The weather of a city",
                 input_schema: { type: "object", properties: { city: { type: "string", maxLength: 8 } },
                                 required: ["city"], additionalProperties: false } }];
const TOOL_USER = [{ role: "user", content: "What is the weather in Paris?" }];
const asChatTools = (tools) => tools.map((t) => ({ type: "function", function: {
  name: t.name, description: t.description, parameters: t.input_schema } }));

function matchesSchema(input) {
  return input !== null && typeof input === "object" && !Array.isArray(input) &&
    isDeepStrictEqual(Object.keys(input), ["city"]) && typeof input.city === "string" &&
    Array.from(input.city).length <= 8;
}

async function testTools(client, srv) {
  const body = { model: MODEL, max_tokens: 64, temperature: 0, messages: TOOL_USER, tools: TOOLS,
                 tool_choice: { type: "tool", name: "get_weather", disable_parallel_tool_use: true } };
  const m = await client.messages.create(body);
  const uses = m.content.filter((b) => b.type === "tool_use");
  const use = uses[0] ?? {};
  check("forced tool_choice: stop_reason tool_use, one tool_use block of get_weather, id toolu_...",
        m.stop_reason === "tool_use" && uses.length === 1 && use.name === "get_weather" &&
        typeof use.id === "string" && use.id.startsWith("toolu_"), m.content);
  check("forced tool_choice: the input is an object matching input_schema ({city: string of <= 8})",
        matchesSchema(use.input), use.input);
  // (disable_parallel_tool_use: one call, else the grammar allows more until max_tokens.)
  const any = await client.messages.create({ ...body, tool_choice: { type: "any", disable_parallel_tool_use: true } });
  check("tool_choice any: a tool_use block, stop_reason tool_use",
        any.stop_reason === "tool_use" && any.content.some((b) => b.type === "tool_use" && matchesSchema(b.input)),
        { stop_reason: any.stop_reason, content: any.content });

  // Streamed: a tool_use block whose input_json_delta joins into the same input.
  const got = checkEventOrder("forced tool call, streamed", await streamEvents(client, body));
  const su = got.blocks.find((b) => b.type === "tool_use") ?? {};
  check("streamed tool call: the same name and input, stop_reason tool_use",
        su.name === "get_weather" && isDeepStrictEqual(su.input, use.input) &&
        got.delta?.delta?.stop_reason === "tool_use", { block: su, delta: got.delta });
  // Each request gets its own ids: compared apart.
  const final = await client.messages.stream(body).finalMessage();
  const withoutIds = (content) => content.map(({ id, ...rest }) => rest);
  equal("messages.stream().finalMessage() of the tool call: the same content but the ids",
        withoutIds(final.content), withoutIds(m.content));
  check("messages.stream().finalMessage() of the tool call: tool_use ids toolu_...",
        final.content.every((b) => b.type !== "tool_use" || /^toolu_\w+$/.test(b.id)), final.content);

  // count_tokens with tools = /tokenize with the OpenAI form of the same tools.
  const counted = await client.messages.countTokens({ model: MODEL, messages: TOOL_USER, tools: TOOLS });
  const tok = await postJSON(srv, "/tokenize", { messages: TOOL_USER, tools: asChatTools(TOOLS),
                                                 add_generation_prompt: true });
  equal("tools: count_tokens = /tokenize with the tools", counted.input_tokens, tok.json?.count);
  equal("tools: input_tokens + cache reads of the forced call = count_tokens",
        m.usage.input_tokens + m.usage.cache_read_input_tokens, counted.input_tokens);
  const none = await client.messages.countTokens({ model: MODEL, messages: TOOL_USER, tools: TOOLS,
                                                   tool_choice: { type: "none" } });
  const bare = await postJSON(srv, "/tokenize", { messages: TOOL_USER, add_generation_prompt: true });
  equal("tool_choice none: the tools are left out of the prompt (= /tokenize without tools)",
        none.input_tokens, bare.json?.count);

  // The round trip: the call and its result go back.
  if (!use.id) return;
  const result = '{"temp": 20}';
  const messages = [...TOOL_USER, { role: "assistant", content: m.content },
                    { role: "user", content: [{ type: "tool_result", tool_use_id: use.id, content: result }] }];
  const r2 = await client.messages.create({ model: MODEL, max_tokens: 8, temperature: 0, messages, tools: TOOLS });
  check("tool_result sent back: answered, a longer prompt",
        r2.role === "assistant" && r2.usage.input_tokens + r2.usage.cache_read_input_tokens >
          m.usage.input_tokens + m.usage.cache_read_input_tokens, { content: r2.content, usage: [m.usage, r2.usage] });
  const chatMessages = [...TOOL_USER,
    { role: "assistant", content: textOf(m), tool_calls: [{ id: use.id, type: "function",
      function: { name: use.name, arguments: JSON.stringify(use.input) } }] },
    { role: "tool", tool_call_id: use.id, content: result }];
  const c2 = await client.messages.countTokens({ model: MODEL, messages, tools: TOOLS });
  const t2 = await postJSON(srv, "/tokenize", { messages: chatMessages, tools: asChatTools(TOOLS),
                                                add_generation_prompt: true });
  equal("round trip: count_tokens = /tokenize of the chat messages (tool_calls, a tool message)",
        c2.input_tokens, t2.json?.count);
  equal("round trip: input_tokens + cache reads = count_tokens",
        r2.usage.input_tokens + r2.usage.cache_read_input_tokens, c2.input_tokens);
  const p = await postJSON(srv, "/apply-template", { messages: chatMessages, tools: asChatTools(TOOLS) });
  check("round trip, the chat template: the call and <tool_response> with the result",
        p.json?.prompt?.includes("<tool_call>") && p.json.prompt.includes(`<tool_response>\n${result}\n</tool_response>`),
        p.json?.prompt?.slice(-300) ?? p.text);
}

// ---------------------------------------------------------------------------------------------
async function expectError(name, fn, { cls, status, type, names }) {
  try {
    const r = await fn();
    check(name, false, { resolved: r });
  } catch (e) {
    const message = e?.error?.error?.message ?? "";
    const ok = e instanceof cls && e.status === status && e.error?.type === "error" && e.type === type &&
      (names === undefined || message.includes(names));
    check(name, ok, { class: e?.constructor?.name, status: e?.status, body: e?.error, message: e?.message });
  }
}

async function testErrors(client, srv) {
  const bad = (extra, without) => () => {
    const body = msgReq(extra);
    if (without) delete body[without];
    return client.messages.create(body);
  };
  const invalid = (names) => ({ cls: BadRequestError, status: 400, type: "invalid_request_error", names });
  await expectError("no max_tokens: BadRequestError 400 invalid_request_error naming max_tokens",
                    bad({}, "max_tokens"), invalid("max_tokens"));
  await expectError("temperature 1.5 (Anthropic's range is 0..1): 400 naming temperature",
                    bad({ temperature: 1.5 }), invalid("temperature"));
  await expectError("an image block: 400 naming messages[0].content[0].type",
                    bad({ messages: [{ role: "user", content: [{ type: "image", source: { type: "base64",
                      media_type: "image/png", data: "" } }] }] }), invalid("messages[0].content[0].type"));
  await expectError("an unknown block type: 400 naming it",
                    bad({ messages: [{ role: "user", content: [{ type: "wizard" }] }] }),
                    invalid("messages[0].content[0].type"));
  await expectError("a tool_result without a tool_use before it: 400 naming tool_use_id",
                    bad({ messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_x",
                                                                  content: "r" }] }] }),
                    invalid("messages[0].content[0].tool_use_id"));
  await expectError("role system in messages: 400 naming messages[0].role",
                    bad({ messages: [{ role: "system", content: "x" }] }), invalid("messages[0].role"));
  await expectError("thinking enabled: 400 naming thinking",
                    bad({ thinking: { type: "enabled", budget_tokens: 1024 } }), invalid("thinking"));
  await expectError("tool_choice naming a tool not in tools: 400 naming tool_choice.name",
                    bad({ tools: TOOLS, tool_choice: { type: "tool", name: "nope" } }), invalid("tool_choice.name"));
  await expectError("a tool without input_schema: 400 naming tools[0].input_schema",
                    bad({ tools: [{ name: "f" }] }), invalid("tools[0].input_schema"));
  await expectError("max_tokens beyond the context: 400 naming max_tokens",
                    bad({ max_tokens: 1000000 }), invalid("max_tokens"));
  await expectError("stream with a bad field: 400 before any event",
                    async () => {
                      const s = await client.messages.create(msgReq({ stream: true, temperature: "hot" }));
                      for await (const _ of s);
                    }, invalid("temperature"));
  await expectError("count_tokens with an unknown block: 400 naming it",
                    () => client.messages.countTokens({ model: MODEL, messages: [{ role: "user",
                      content: [{ type: "document" }] }] }), invalid("messages[0].content[0].type"));
  await expectError("model 'nope': NotFoundError 404 not_found_error", bad({ model: "nope" }),
                    { cls: NotFoundError, status: 404, type: "not_found_error", names: "nope" });

  // The key: x-api-key (the SDK's header) or Authorization: Bearer; nothing or a wrong key is 401.
  const wrong = new Anthropic({ baseURL: `http://${srv.host}:${srv.port}`, apiKey: "wrong", maxRetries: 0 });
  await expectError("a wrong x-api-key: AuthenticationError 401 authentication_error",
                    () => wrong.messages.create(msgReq({})),
                    { cls: AuthenticationError, status: 401, type: "authentication_error" });
  await expectError("a wrong x-api-key, count_tokens: 401",
                    () => wrong.messages.countTokens({ model: MODEL, messages: USER }),
                    { cls: AuthenticationError, status: 401, type: "authentication_error" });
  const none = await postJSON(srv, "/v1/messages", msgReq({}), {});
  check("no key at all: 401 in Anthropic's error shape",
        none.status === 401 && none.json?.type === "error" && none.json?.error?.type === "authentication_error",
        { status: none.status, body: none.json ?? none.text });
  const bearer = await postJSON(srv, "/v1/messages/count_tokens", { model: MODEL, messages: USER });
  check("Authorization: Bearer KEY is accepted too", bearer.status === 200 && Number.isInteger(bearer.json?.input_tokens),
        { status: bearer.status, body: bearer.json ?? bearer.text });
  const viaHeader = await postJSON(srv, "/v1/messages/count_tokens", { model: MODEL, messages: USER },
                                   { "x-api-key": KEY });
  equal("x-api-key KEY on count_tokens: 200", viaHeader.status, 200);
  const get = await fetch(`http://${srv.host}:${srv.port}/v1/messages`, { headers: { "x-api-key": KEY } });
  const getBody = await get.json().catch(() => null);
  check("GET /v1/messages: 405 in Anthropic's error shape",
        get.status === 405 && getBody?.type === "error" && getBody?.error?.type === "invalid_request_error",
        { status: get.status, body: getBody });
}

// ---------------------------------------------------------------------------------------------
runClientTest(ARGS, {
  tmpPrefix: "ls_server_anthropic_",
  makeClient: (srv) => new Anthropic({ baseURL: `http://${srv.host}:${srv.port}`, apiKey: KEY,
                                   maxRetries: 0, timeout: 300000 }),
  run: async (client, srv, tmp) => {
    await section("a message", () => testBasics(client, srv));
    await section("determinism", () => testDeterminism(client));
    await section("streaming", () => testStreaming(client));
    await section("system", () => testSystem(client, srv));
    await section("stop sequences", () => testStop(client));
    await section("tools", () => testTools(client, srv));
    await section("errors and the key", () => testErrors(client, srv));
  },
});
