// End-to-end test of OpenAI's Responses API on `logitscope serve` (docs/server-api.md) through the
// official client (npm openai, installed in tests/oracle): a response's shape, echo fields and usage
// against /tokenize and the chat route's own counts, instructions, streaming (the events' order and
// sequence numbers, deltas joined = the response, the SDK's accumulated final response, the same
// items as not streamed under a seed), logprobs against the chat route's, a forced function call and
// its function_call_output round trip (with previous_response_id and without), a conversation
// continued by previous_response_id, input token counts, retrieve and delete, json_schema and
// json_object text formats producing valid JSON, the 400s naming the field, and a Qwen3 thinking
// template's reasoning item. Every check prints what it got.
//
//   node responses_client.test.mjs --logitscope BIN --tokenizer-from DIR [--oracle-dir tests/oracle]
import { isDeepStrictEqual } from "node:util";

import { KEY, LIVELY, MODEL, USER, check, equal, postJSON, runClientTest, section, setup,
         startServer, stopServer, synth } from "./harness.mjs";

const { args: ARGS, sdk } = setup("responses_client.test.mjs", "openai");
const { OpenAI, AuthenticationError, BadRequestError, NotFoundError } = sdk;

// ---------------------------------------------------------------------------------------------
// Helpers.
const req = (extra) => ({ model: MODEL, input: "Hello", max_output_tokens: 8, ...extra });
const items = (r, type) => (r.output ?? []).filter((o) => o.type === type);
const textOf = (r) => items(r, "message").flatMap((m) => m.content).filter((c) => c.type === "output_text")
  .map((c) => c.text).join("");
// The output without the ids each response gets.
const withoutIds = (output) => output.map(({ id, call_id, ...rest }) => rest);

// The raw events of a streamed request (create with stream: true).
async function streamEvents(client, body) {
  const stream = await client.responses.create({ ...body, stream: true });
  const events = [];
  for await (const ev of stream) events.push(ev);
  return events;
}

// Checks the events' grammar: response.created and response.in_progress, then items (added, their
// parts and deltas with the item's output_index and item_id, done) one at a time, then
// response.completed or response.incomplete; sequence_number 0, 1, ... Returns the items as
// rebuilt from the events, the text deltas joined, and the final response.
function checkEventOrder(name, events) {
  const types = events.map((e) => e.type);
  const problems = [];
  events.forEach((e, i) => { if (e.sequence_number !== i) problems.push(`event ${i} has sequence_number ${e.sequence_number}`); });
  if (types[0] !== "response.created") problems.push("the first event is not response.created");
  if (types[1] !== "response.in_progress") problems.push("the second event is not response.in_progress");
  const last = events.at(-1);
  if (!["response.completed", "response.incomplete"].includes(last?.type)) problems.push(`the last event is ${last?.type}`);
  const output = [];
  let open = null;
  let text = "";
  for (const e of events.slice(2, -1)) {
    if (e.type === "response.output_item.added") {
      if (open !== null) problems.push(`item ${e.output_index} added while ${open} is open`);
      if (e.output_index !== output.length) problems.push(`output_index ${e.output_index}, want ${output.length}`);
      open = e.output_index;
      output.push({ ...e.item });
    } else if (e.type === "response.output_item.done") {
      if (e.output_index !== open) problems.push(`item ${e.output_index} done, open ${open}`);
      output[e.output_index] = e.item;
      open = null;
    } else if (e.output_index !== open || e.item_id !== output[open]?.id) {
      problems.push(`${e.type} for item ${e.output_index} (${e.item_id}), open ${open}`);
    } else if (e.type === "response.output_text.delta") {
      text += e.delta;
    } else if (e.type === "response.function_call_arguments.delta") {
      output[open].arguments += e.delta;
    } else if (!["response.content_part.added", "response.content_part.done", "response.output_text.done",
                 "response.function_call_arguments.done", "response.reasoning_text.delta",
                 "response.reasoning_text.done"].includes(e.type)) {
      problems.push(`unexpected event ${e.type} between the items`);
    }
  }
  if (open !== null) problems.push(`item ${open} never done`);
  check(`${name}: events in the Responses order (${types.length} events)`, problems.length === 0,
        problems.length ? problems : types.join(" "));
  return { output, text, final: last?.response, created: events[0]?.response };
}

// ---------------------------------------------------------------------------------------------
async function testBasics(client, srv) {
  const body = req({ temperature: 0, metadata: { run: "basics" }, ...LIVELY });
  const r = await client.responses.create(body);
  check("response: id resp_..., object response, model, created_at",
        r.id?.startsWith("resp_") && r.object === "response" && r.model === MODEL && Number.isInteger(r.created_at),
        { id: r.id, object: r.object, model: r.model, created_at: r.created_at });
  const msgs = items(r, "message");
  check("response: one message item (id msg_..., role assistant) holding one output_text with annotations []",
        r.output.length === 1 && msgs.length === 1 && msgs[0].id.startsWith("msg_") && msgs[0].role === "assistant" &&
        msgs[0].content.length === 1 && msgs[0].content[0].type === "output_text" &&
        isDeepStrictEqual(msgs[0].content[0].annotations, []), r.output);
  equal("output_text (the SDK's) = the output_text parts joined", r.output_text, textOf(r));
  check("status completed or incomplete (max_output_tokens), error null",
        ["completed", "incomplete"].includes(r.status) && r.error === null, { status: r.status, error: r.error });
  equal("echoed: temperature, max_output_tokens, metadata, store, tool_choice, tools, text, previous_response_id",
        [r.temperature, r.max_output_tokens, r.metadata, r.store, r.tool_choice, r.tools, r.text, r.previous_response_id],
        [0, 8, { run: "basics" }, true, "auto", [], { format: { type: "text" } }, null]);
  const u = r.usage ?? {};
  check("usage: input_tokens, output_tokens (<= 8), total, cached_tokens, reasoning_tokens 0",
        Number.isInteger(u.input_tokens) && u.output_tokens >= 1 && u.output_tokens <= 8 &&
        u.total_tokens === u.input_tokens + u.output_tokens && Number.isInteger(u.input_tokens_details?.cached_tokens) &&
        u.output_tokens_details?.reasoning_tokens === 0, u);

  const tok = await postJSON(srv, "/tokenize", { messages: USER, add_generation_prompt: true });
  equal("usage.input_tokens = /tokenize's count of the chat template's prompt", u.input_tokens, tok.json?.count);
  const chat = await postJSON(srv, "/v1/chat/completions", { model: MODEL, messages: USER, max_tokens: 8,
                                                             temperature: 0, ...LIVELY });
  equal("usage.output_tokens = the chat route's completion_tokens", u.output_tokens, chat.json?.usage?.completion_tokens);
  equal("greedy: the text = the chat route's content", r.output_text, chat.json?.choices?.[0]?.message?.content);
  equal("status matches the chat route's finish_reason", r.status,
        chat.json?.choices?.[0]?.finish_reason === "length" ? "incomplete" : "completed");
  check("the logitscope extension: header.chain", typeof r.logitscope?.header?.chain === "string",
        r.logitscope?.header?.chain);

  const l = await client.responses.create(req({ temperature: 0, ignore_eos: true }));
  check("ignore_eos, max_output_tokens 8: status incomplete (max_output_tokens), output_tokens 8, message incomplete",
        l.status === "incomplete" && l.incomplete_details?.reason === "max_output_tokens" &&
        l.usage?.output_tokens === 8 && items(l, "message")[0]?.status === "incomplete",
        { status: l.status, incomplete_details: l.incomplete_details, usage: l.usage });

  const system = "You are terse.";
  const i = await client.responses.create(req({ instructions: system, temperature: 0, ...LIVELY }));
  const chatMessages = [{ role: "system", content: system }, ...USER];
  const ti = await postJSON(srv, "/tokenize", { messages: chatMessages, add_generation_prompt: true });
  equal("instructions: input_tokens = /tokenize with a system message first", i.usage.input_tokens, ti.json?.count);
  equal("instructions: echoed", i.instructions, system);
  const ci = await postJSON(srv, "/v1/chat/completions", { model: MODEL, messages: chatMessages, max_tokens: 8,
                                                           temperature: 0, ...LIVELY });
  equal("instructions, greedy: the text = the chat route's", i.output_text, ci.json?.choices?.[0]?.message?.content);
  const parts = await client.responses.create(req({ temperature: 0, ...LIVELY, input: [
    { role: "user", content: [{ type: "input_text", text: "Hel" }, { type: "input_text", text: "lo" }] }] }));
  equal("input as a message with input_text parts: the same prompt and text as the string",
        [parts.usage.input_tokens, parts.output_text], [u.input_tokens, r.output_text]);
}

async function testStreaming(client) {
  const body = req({ max_output_tokens: 16, temperature: 0, ignore_eos: true, ...LIVELY });
  const whole = await client.responses.create(body);
  const events = await streamEvents(client, body);
  const got = checkEventOrder("stream", events);
  equal("stream: output_text.delta joined = the non-streamed text (greedy)", got.text, whole.output_text);
  check("stream: response.created has the id, status in_progress, empty output, null usage",
        got.created?.id?.startsWith("resp_") && got.created?.status === "in_progress" &&
        isDeepStrictEqual(got.created?.output, []) && got.created?.usage === null, got.created);
  equal("stream: the final response's output = the items the events built", got.final?.output, got.output);
  equal("stream: the same items as not streamed (ids apart)", withoutIds(got.final?.output ?? []), withoutIds(whole.output));
  equal("stream: the same status and usage", [got.final?.status, got.final?.usage?.output_tokens, got.final?.usage?.input_tokens],
        [whole.status, whole.usage.output_tokens, whole.usage.input_tokens]);
  const done = events.find((e) => e.type === "response.output_text.done");
  equal("stream: output_text.done holds the whole text", done?.text, whole.output_text);
  // The SDK's own accumulation (ResponseStream) gives the non-streamed response.
  const final = await client.responses.stream(body).finalResponse();
  // (The helper adds each output_text's `parsed`, null without a json_schema format.)
  const unparsed = (output) => output.map((o) => o.type !== "message" ? o :
    { ...o, content: o.content.map(({ parsed, ...c }) => c) });
  equal("responses.stream().finalResponse(): the same output (ids apart) and output_text",
        [withoutIds(unparsed(final.output)), final.output_text], [withoutIds(whole.output), whole.output_text]);
  // Sampled with a seed: the same tokens streamed or not.
  const sampled = req({ max_output_tokens: 16, temperature: 1, seed: 5, ignore_eos: true, ...LIVELY });
  const s1 = await client.responses.create(sampled);
  const s2 = checkEventOrder("sampled stream", await streamEvents(client, sampled));
  equal("seed 5, temperature 1: the streamed text = the non-streamed", s2.text, s1.output_text);
  const s6 = await client.responses.create({ ...sampled, seed: 6 });
  check("seed 6 samples another text than seed 5", s6.output_text !== s1.output_text,
        { seed5: s1.output_text, seed6: s6.output_text });
}

async function testLogprobs(client, srv) {
  const body = req({ max_output_tokens: 6, temperature: 0, ignore_eos: true, ...LIVELY });
  const r = await client.responses.create({ ...body, include: ["message.output_text.logprobs"], top_logprobs: 2 });
  const lp = items(r, "message")[0]?.content?.[0]?.logprobs ?? [];
  check("include logprobs: one entry per token, each {token, bytes, logprob, top_logprobs of 2}",
        lp.length === 6 && lp.every((e) => typeof e.token === "string" && Array.isArray(e.bytes) &&
          typeof e.logprob === "number" && e.top_logprobs.length === 2), lp);
  const chat = await postJSON(srv, "/v1/chat/completions", { model: MODEL, messages: USER, max_tokens: 6,
    temperature: 0, ignore_eos: true, logprobs: true, top_logprobs: 2, ...LIVELY });
  const want = chat.json?.choices?.[0]?.logprobs?.content ?? [];
  equal("the logprobs = the chat route's for the same request", lp, want);
  const streamed = (await streamEvents(client, { ...body, include: ["message.output_text.logprobs"], top_logprobs: 2 }))
    .filter((e) => e.type === "response.output_text.delta").flatMap((e) => e.logprobs);
  equal("streamed: output_text.delta logprobs joined = the same", streamed, lp);
  const plain = await client.responses.create(body);
  equal("without include: output_text.logprobs is []", items(plain, "message")[0]?.content?.[0]?.logprobs, []);
}

// ---------------------------------------------------------------------------------------------
// Function calls: tool_choice forces the call through the chat route's grammar.
const TOOLS = [{ type: "function", name: "get_weather", description: "The weather of a city", strict: true,
                 parameters: { type: "object", properties: { city: { type: "string", maxLength: 8 } },
                               required: ["city"], additionalProperties: false } }];
const TOOL_USER = [{ role: "user", content: "What is the weather in Paris?" }];
const asChatTools = (tools) => tools.map((t) => ({ type: "function", function: {
  name: t.name, description: t.description, parameters: t.parameters } }));

function matchesSchema(args) {
  let a;
  try {
    a = JSON.parse(args);
  } catch {
    return false;
  }
  return a !== null && typeof a === "object" && isDeepStrictEqual(Object.keys(a), ["city"]) &&
    typeof a.city === "string" && Array.from(a.city).length <= 8;
}

async function testFunctionCalls(client, srv) {
  const body = { model: MODEL, input: TOOL_USER, max_output_tokens: 64, temperature: 0, tools: TOOLS,
                 tool_choice: { type: "function", name: "get_weather" }, parallel_tool_calls: false };
  const r = await client.responses.create(body);
  const calls = items(r, "function_call");
  const call = calls[0] ?? {};
  check("forced tool_choice: one function_call of get_weather (id fc_..., call_id call_..., completed)",
        calls.length === 1 && call.name === "get_weather" && call.id?.startsWith("fc_") &&
        call.call_id?.startsWith("call_") && call.status === "completed" && r.status === "completed", r.output);
  check("forced tool_choice: the arguments are JSON text matching the parameters ({city: <= 8})",
        matchesSchema(call.arguments), call.arguments);
  equal("echoed: tools in the flat form, tool_choice, parallel_tool_calls",
        [r.tools?.[0]?.name, r.tools?.[0]?.strict, r.tool_choice, r.parallel_tool_calls],
        ["get_weather", true, { type: "function", name: "get_weather" }, false]);
  const req2 = await client.responses.create({ ...body, tool_choice: "required" });
  check("tool_choice required: a function_call matching the parameters",
        items(req2, "function_call").length === 1 && matchesSchema(items(req2, "function_call")[0].arguments), req2.output);
  const tok = await postJSON(srv, "/tokenize", { messages: TOOL_USER, tools: asChatTools(TOOLS), add_generation_prompt: true });
  equal("tools: input_tokens = /tokenize with the tools", r.usage.input_tokens, tok.json?.count);

  // Streamed: a function_call item whose argument deltas join into the same arguments.
  const events = await streamEvents(client, body);
  const got = checkEventOrder("forced call, streamed", events);
  const sc = got.output.find((o) => o.type === "function_call") ?? {};
  equal("streamed call: the same name and arguments", [sc.name, sc.arguments], [call.name, call.arguments]);
  const argsDone = events.find((e) => e.type === "response.function_call_arguments.done");
  equal("function_call_arguments.done: the arguments and name", [argsDone?.arguments, argsDone?.name],
        [call.arguments, "get_weather"]);
  // The SDK's parse() parses a strict tool's arguments.
  const parsed = await client.responses.parse(body);
  const pc = items(parsed, "function_call")[0];
  check("responses.parse(): parsed_arguments of the strict tool = JSON.parse(arguments)",
        pc && isDeepStrictEqual(pc.parsed_arguments, JSON.parse(pc.arguments)), pc);

  // The round trip by previous_response_id: only the output goes back.
  if (!call.call_id) return;
  const result = '{"temp": 20}';
  const r2 = await client.responses.create({ model: MODEL, max_output_tokens: 8, temperature: 0, tools: TOOLS,
    previous_response_id: r.id, input: [{ type: "function_call_output", call_id: call.call_id, output: result }] });
  equal("round trip: previous_response_id echoed", r2.previous_response_id, r.id);
  const chatMessages = [...TOOL_USER,
    { role: "assistant", content: "", tool_calls: [{ id: call.call_id, type: "function",
      function: { name: call.name, arguments: call.arguments } }] },
    { role: "tool", tool_call_id: call.call_id, content: result }];
  const t2 = await postJSON(srv, "/tokenize", { messages: chatMessages, tools: asChatTools(TOOLS), add_generation_prompt: true });
  equal("round trip: input_tokens = /tokenize of the chat messages (tool_calls, a tool message)",
        r2.usage.input_tokens, t2.json?.count);
  // Stateless: the items sent back by the client give the same prompt.
  const r3 = await client.responses.create({ model: MODEL, max_output_tokens: 8, temperature: 0, tools: TOOLS,
    store: false, input: [...TOOL_USER, ...r.output, { type: "function_call_output", call_id: call.call_id, output: result }] });
  equal("round trip without previous_response_id (the output items sent back): the same input_tokens and text",
        [r3.usage.input_tokens, r3.output_text], [r2.usage.input_tokens, r2.output_text]);
  const p = await postJSON(srv, "/apply-template", { messages: chatMessages, tools: asChatTools(TOOLS) });
  check("round trip, the chat template: the call and <tool_response> with the result",
        p.json?.prompt?.includes("<tool_call>") && p.json.prompt.includes(`<tool_response>\n${result}\n</tool_response>`),
        p.json?.prompt?.slice(-300) ?? p.text);
}

async function testConversation(client, srv) {
  const r1 = await client.responses.create(req({ temperature: 0, ...LIVELY, instructions: "Be brief." }));
  const r2 = await client.responses.create(req({ temperature: 0, ...LIVELY, input: "More", previous_response_id: r1.id }));
  const chatMessages = [...USER, { role: "assistant", content: r1.output_text }, { role: "user", content: "More" }];
  const tok = await postJSON(srv, "/tokenize", { messages: chatMessages, add_generation_prompt: true });
  equal("previous_response_id: input_tokens = /tokenize of the turns so far (its instructions not carried over)",
        r2.usage.input_tokens, tok.json?.count);
  const chat = await postJSON(srv, "/v1/chat/completions", { model: MODEL, messages: chatMessages, max_tokens: 8,
                                                             temperature: 0, ...LIVELY });
  equal("previous_response_id, greedy: the text = the chat route's on those turns", r2.output_text,
        chat.json?.choices?.[0]?.message?.content);
  check("a continued conversation reuses the prefix: cached_tokens > 0",
        r2.usage.input_tokens_details.cached_tokens > 0, r2.usage);
  const counted = await client.responses.inputTokens.count({ model: MODEL, input: "More", previous_response_id: r1.id });
  equal("responses.inputTokens.count(): object response.input_tokens, = the continued response's input_tokens",
        [counted.object, counted.input_tokens], ["response.input_tokens", r2.usage.input_tokens]);
  const got = await client.responses.retrieve(r1.id);
  equal("responses.retrieve(): the stored response", got, r1);
  await client.responses.delete(r1.id);
  await expectError("responses.delete(), then retrieve: NotFoundError 404", () => client.responses.retrieve(r1.id),
                    { cls: NotFoundError, status: 404 });
  await expectError("previous_response_id of a deleted response: 400", () => client.responses.create(
    req({ previous_response_id: r1.id })), { cls: BadRequestError, status: 400, param: "previous_response_id" });
  const unstored = await client.responses.create(req({ store: false }));
  await expectError("previous_response_id of a store: false response: 400 naming previous_response_id",
                    () => client.responses.create(req({ previous_response_id: unstored.id })),
                    { cls: BadRequestError, status: 400, param: "previous_response_id", code: "previous_response_not_found" });
  await expectError("retrieve of an unknown id: NotFoundError 404", () => client.responses.retrieve("resp_nope"),
                    { cls: NotFoundError, status: 404 });
}

async function testTextFormat(client) {
  const schema = { type: "object", properties: { a: { type: "integer", minimum: 0, maximum: 99 },
                                                 b: { type: "string", maxLength: 5 } },
                   required: ["a", "b"], additionalProperties: false };
  const body = req({ max_output_tokens: 64, temperature: 0,
                     text: { format: { type: "json_schema", name: "answer", schema, strict: true } } });
  const r = await client.responses.parse(body);
  let value;
  try {
    value = JSON.parse(r.output_text);
  } catch {}
  check("text.format json_schema: status completed, the text is JSON of the schema's shape",
        r.status === "completed" && value && isDeepStrictEqual(Object.keys(value), ["a", "b"]) &&
        Number.isInteger(value.a) && value.a >= 0 && value.a <= 99 && typeof value.b === "string" &&
        Array.from(value.b).length <= 5, { status: r.status, text: r.output_text });
  equal("responses.parse(): output_parsed = JSON.parse(output_text)", r.output_parsed, value);
  equal("text echoed", r.text?.format?.name, "answer");
  const o = await client.responses.create(req({ max_output_tokens: 64, temperature: 0, ...LIVELY,
                                                text: { format: { type: "json_object" } } }));
  let obj;
  try {
    obj = JSON.parse(o.output_text);
  } catch {}
  check("text.format json_object: a JSON object (or a valid prefix when cut)",
        (o.status === "completed" && obj !== null && typeof obj === "object" && !Array.isArray(obj)) ||
        (o.status === "incomplete" && o.output_text.trimStart().startsWith("{")), { status: o.status, text: o.output_text });
}

// A thinking template (Qwen3's): the reply's <think> block becomes a reasoning item. The tiny
// model writes no <think> of itself, so a logit_bias makes every token one: the reply is an
// unclosed block, all reasoning.
async function testReasoning(bin, tokenizerDir, tmp) {
  const dir = synth(bin, tokenizerDir, tmp, "qwen3", "qwen3-tiny");
  const srv = await startServer(bin, dir, ["--api-key", KEY]);
  try {
    const client = new OpenAI({ baseURL: `http://${srv.host}:${srv.port}/v1`, apiKey: KEY, maxRetries: 0,
                                timeout: 300000 });
    const body = { model: "qwen3", input: "Hi", max_output_tokens: 4, temperature: 0, ignore_eos: true,
                   logit_bias: { 151667: 100 } };
    const r = await client.responses.create(body);
    const rs = items(r, "reasoning");
    check("a <think> block: one reasoning item (id rs_..., reasoning_text content, summary []) and no message",
          r.output.length === 1 && rs.length === 1 && rs[0].id.startsWith("rs_") &&
          rs[0].content?.[0]?.type === "reasoning_text" && isDeepStrictEqual(rs[0].summary, []), r.output);
    equal("reasoning_tokens = output_tokens (the block never closed)",
          r.usage?.output_tokens_details?.reasoning_tokens, r.usage?.output_tokens);
    const chat = await postJSON(srv, "/v1/chat/completions", { model: "qwen3", messages: [{ role: "user", content: "Hi" }],
      max_tokens: 4, temperature: 0, ignore_eos: true, logit_bias: { 151667: 100 } });
    equal("the reasoning text = the chat route's reasoning_content",
          rs[0]?.content?.[0]?.text, chat.json?.choices?.[0]?.message?.reasoning_content);
    const got = checkEventOrder("reasoning, streamed", await streamEvents(client, body));
    equal("streamed: the same items (ids apart)", withoutIds(got.final?.output ?? []), withoutIds(r.output));
  } finally {
    await stopServer(srv);
  }
}

// ---------------------------------------------------------------------------------------------
async function expectError(name, fn, { cls, status, param, code }) {
  try {
    const r = await fn();
    check(name, false, { resolved: r });
  } catch (e) {
    const ok = e instanceof cls && e.status === status && (param === undefined || e.param === param) &&
      (code === undefined || e.code === code) && (status !== 400 || e.type === "invalid_request_error");
    check(name, ok, { class: e?.constructor?.name, status: e?.status, type: e?.type, param: e?.param,
                      code: e?.code, message: e?.message });
  }
}

async function testErrors(client, srv) {
  const bad = (extra) => () => client.responses.create(req(extra));
  const invalid = (param, code) => ({ cls: BadRequestError, status: 400, param, code });
  const cases = [
    ["reasoning effort", { reasoning: { effort: "high" } }, "reasoning.effort", "unsupported_field"],
    ["a web_search tool", { tools: [{ type: "web_search" }] }, "tools[0].type", "unsupported_field"],
    ["include file_search_call.results", { include: ["file_search_call.results"] }, "include[0]", "unsupported_field"],
    ["background true", { background: true }, "background", "unsupported_field"],
    ["truncation auto", { truncation: "auto" }, "truncation", "unsupported_field"],
    ["an input_image part", { input: [{ role: "user", content: [{ type: "input_image", image_url: "x" }] }] },
     "input[0].content[0].type"],
    ["a function_call_output without its call", { input: [{ type: "function_call_output", call_id: "call_x", output: "r" }] },
     "input[0].call_id"],
    ["an item_reference", { input: [{ type: "item_reference", id: "msg_1" }] }, "input[0].type"],
    ["max_output_tokens beyond the context", { max_output_tokens: 1000000 }, "max_output_tokens"],
    ["temperature 3", { temperature: 3 }, "temperature"],
    ["json_schema without a schema", { text: { format: { type: "json_schema", name: "x" } } }, "text.format.schema"],
    ["an unenforceable schema keyword", { text: { format: { type: "json_schema", name: "x",
      schema: { type: "string", format: "email" } } } }, "text.format.schema"],
    ["tool_choice naming no tool", { tools: TOOLS, tool_choice: { type: "function", name: "nope" } }, "tool_choice.name"],
    ["an unknown previous_response_id", { previous_response_id: "resp_nope" }, "previous_response_id",
     "previous_response_not_found"],
  ];
  for (const [what, extra, param, code] of cases)
    await expectError(`${what}: BadRequestError 400, param ${param}`, bad(extra), invalid(param, code));
  await expectError("stream with a bad field: 400 before any event", async () => {
    const s = await client.responses.create(req({ stream: true, temperature: "hot" }));
    for await (const _ of s);
  }, invalid("temperature"));
  await expectError("model 'nope': NotFoundError 404", bad({ model: "nope" }),
                    { cls: NotFoundError, status: 404, code: "model_not_found" });
  const wrong = new OpenAI({ baseURL: `http://${srv.host}:${srv.port}/v1`, apiKey: "wrong", maxRetries: 0 });
  await expectError("a wrong API key: AuthenticationError 401", () => wrong.responses.create(req({})),
                    { cls: AuthenticationError, status: 401, code: "invalid_api_key" });
  const ignored = await client.responses.create(req({ user: "u", service_tier: "auto", prompt_cache_key: "k",
    safety_identifier: "s", stream_options: null, truncation: "disabled", reasoning: null }));
  check("fields with no effect on the text are accepted", ignored.status === "completed" || ignored.status === "incomplete",
        ignored.status);
}

// ---------------------------------------------------------------------------------------------
runClientTest(ARGS, {
  tmpPrefix: "ls_server_responses_",
  makeClient: (srv) => new OpenAI({ baseURL: `http://${srv.host}:${srv.port}/v1`, apiKey: KEY,
                                   maxRetries: 0, timeout: 300000 }),
  run: async (client, srv, tmp) => {
    await section("a response", () => testBasics(client, srv));
    await section("streaming", () => testStreaming(client));
    await section("logprobs", () => testLogprobs(client, srv));
    await section("function calls", () => testFunctionCalls(client, srv));
    await section("previous_response_id", () => testConversation(client, srv));
    await section("text.format", () => testTextFormat(client));
    await section("errors", () => testErrors(client, srv));
    await section("reasoning (a Qwen3 template)", () => testReasoning(ARGS.logitscope, ARGS["tokenizer-from"], tmp));
  },
});
