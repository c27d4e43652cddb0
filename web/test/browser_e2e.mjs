// The logit microscope in a real browser: `logitscope serve` on 127.0.0.1 with the tiny model,
// Debian's chromium driven by playwright-core (tests/oracle/node_modules; no browser download).
// The page at / generates from a Chinese prompt (repetition_penalty 3 so the tiny model varies),
// shows one chip per token, the candidates of a step against the server's record, re-scores
// them in the page when the temperature changes (checked against POST /v1/logitscope/replay),
// and forks a second branch from a token the run did not choose. Before that, "Inside the model"
// of the selected step: the logit lens strip and table, and the attribution heat map, each
// checked against the server's POST /v1/logitscope/lens and /attribute, and the continuation
// tree (one row per node of POST /v1/logitscope/tree, its probabilities, the recorded branch).
// Then the row's "Decision boundaries" button: every kept step's fragile marking in the strip and
// the selected step's intervals (lo/hi as the page rounds them) against the route's JSON
// (replay with "boundaries": true), asked once, and not again when a slider moves.
// Then a generation at temperature 2 with no truncation: a clicked token ranked beyond its
// step's 10 rows gets an extra row with the rank the test computes from the kept raw logits.
// Last, structured output: a schema that is not JSON is refused next to its field before
// anything is sent, one the server refuses (400, param response_format.json_schema.schema) is
// shown there too, then a JSON object generation (sampling, repetition_penalty 3) asks for no
// keep, says once what is off, and marks with a "G" exactly the steps whose grammar stage, in
// the trace the page received, has best_kept_rank > 1 (the same request from the test gives the
// same trace); the selected marked step's line names the rank kept.
// Nothing may load from another host (every other host is aborted and counted), and no console
// or page error may occur.
// On that dense model the page asks for no experts and the step panel has no Experts section.
// Then short phases against other servers. `serve --model-b`: "Compare with B"'s flip marks and
// lists against POST side_by_side. A mixture-of-experts model (synth --shape qwen3-moe-tiny):
// /info's experts_per_token > 0 makes the page (and a fork) ask for logitscope.experts; every
// chip's Experts section shows its step's layers, expert ids, weights (3 decimals; the tooltip
// in full), sums and most used exactly as in the trace the page received, whose rows the test
// checks (num_experts_per_tok distinct ids per layer, best first, summing to 1) and gets again
// by sending the same request itself. Last, `serve --api-key`: the first load's 401
// shows the banner and the "API key" field, the key typed there (sessionStorage) is sent as
// `Authorization: Bearer KEY` on every /v1 request, and a 4-token generation shows its chips.
// Screenshots: ARTIFACTS/web-generated.png, web-tree.png, web-boundaries.png, web-after-fork.png,
// web-grammar.png, web-experts.png, web-api-key.png.
//
//   node browser_e2e.mjs --logitscope BIN --tokenizer-from DIR [--oracle-dir tests/oracle]
//                     [--artifacts DIR] [--model DIR] [--chromium /usr/bin/chromium]
//
// The page's test hooks (web/): body[data-state="idle"|...]; data-testid="prompt", "generate",
// "temperature", "repetition_penalty" (inputs); data-testid="token" chips with data-step and
// data-prob; data-testid="candidates" (data-source="recorded"|"rescored") whose rows carry
// data-id and data-prob, each with a data-testid="fork" button; data-testid="branch" per branch;
// "lens-open", "lens-cell" (data-layer, data-prob), "lens-row" with "lens-entropy" and "lens-rank",
// "attribution-compute", "attr-token" (data-position, data-delta), "attribution-top" rows;
// "tree-k", "tree-depth", "tree-compute", "tree-problem", "tree-node" (data-index, data-prob,
// data-recorded; "tree-prob", "tree-path-prob"), "tree-chain"; candidate rows' data-extra, data-rank;
// "boundaries-compute" (data-branch), chips' data-fragile, "boundaries" (data-step) with one
// "boundary" per setting (data-setting, data-applies, data-fragile; "boundary-lo", "boundary-hi"),
// "boundaries-greedy", "boundaries-sliders-differ";
// data-testid="experts" (a <details>; rows tr[data-layer], cells .expert-cell[data-expert]);
// data-testid="api-key" (the password field labelled "API key") and "api-key-save"; "max_tokens";
// "structured" (a select), "structured-schema", "structured-error" (data-field, data-source
// page|server), "constrained-note", chips' data-grammar-pressed, "grammar-press" (data-kept-rank).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WAIT = 30000; // every wait is bounded
const TOTAL = 270000; // the whole run, under ctest's TIMEOUT 300
const PROMPT = "中国的首都是";
const STEP = 2;
const NEW_TEMPERATURE = "1.5";
const TOL = 1e-6;
const SEED = "7"; // the same tokens on every run
const API_KEY = "test-key-123";
const KEY_TOKENS = 4; // max_tokens of the API-key phase's generation

// ---------------------------------------------------------------------------------------------
function parseArgs() {
  const a = {
    "oracle-dir": path.resolve(HERE, "../../tests/oracle"),
    artifacts: path.resolve(process.cwd(), "test-artifacts"),
    chromium: "/usr/bin/chromium",
  };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) a[argv[i].replace(/^--/, "")] = argv[i + 1];
  if (!a.logitscope || (!a["tokenizer-from"] && !a.model)) {
    console.error("usage: node browser_e2e.mjs --logitscope BIN --tokenizer-from DIR [--oracle-dir DIR] " +
                  "[--artifacts DIR] [--model DIR] [--chromium PATH]");
    process.exit(2);
  }
  return a;
}

const ARGS = parseArgs();
let chromium;
try {
  ({ chromium } = createRequire(path.join(path.resolve(ARGS["oracle-dir"]), "package.json"))("playwright-core"));
} catch (e) {
  console.error(`cannot load the npm package playwright-core from ${ARGS["oracle-dir"]}/node_modules ` +
                `(run \`PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --prefix tests/oracle\`): ${e.message}`);
  process.exit(1);
}

// ---------------------------------------------------------------------------------------------
// Checks: each prints ok/FAIL, its name and what it got.
const failures = [];
let checks = 0;

function show(v, limit = 400) {
  let s;
  try {
    s = typeof v === "string" ? v : JSON.stringify(v);
  } catch {
    s = String(v);
  }
  s = String(s).replace(/\n/g, "\\n");
  return s.length <= limit ? s : `${s.slice(0, limit)}... (${s.length} chars)`;
}

function check(name, ok, got) {
  checks++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${got === undefined ? "" : ` -- got: ${show(got)}`}`);
  if (!ok) failures.push(name);
  return ok;
}

function close(a, b, tol = TOL) {
  return Number.isFinite(a) && Number.isFinite(b) && Math.abs(a - b) <= tol;
}

// ---------------------------------------------------------------------------------------------
// The server.
function synth(bin, tokenizerDir, parent) {
  const out = path.join(parent, "tiny");
  const r = spawnSync(bin, ["synth", "--shape", "tiny", "--dtype", "bf16", "--seed", "3", "--out", out,
                            "--tokenizer-from", tokenizerDir], { encoding: "utf8", timeout: 120000 });
  if (r.status !== 0) throw new Error(`synth failed (${r.status}): ${r.stdout}${r.stderr}${r.error ?? ""}`);
  return out;
}

function startServer(bin, modelDir, extra = []) {
  const args = ["serve", "--model", modelDir, "--host", "127.0.0.1", "--port", "0", "--parallel", "4",
                "--threads", "2", "--ctx", "512", ...extra];
  console.log(`starting: ${bin} ${args.join(" ").replace(API_KEY, "<key>")}`);
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  const log = [];
  const srv = { proc, log, host: null, port: null, tail: () => log.join("").slice(-4000) };
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (d) => log.push(d));
  proc.stdout.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line in 60 s:\n${srv.tail()}`)), 60000);
    proc.stdout.on("data", (d) => {
      log.push(d);
      if (srv.port) return;
      seen += d;
      const m = seen.match(/listening on http:\/\/([0-9.]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        srv.host = m[1];
        srv.port = Number(m[2]);
        srv.origin = `http://${srv.host}:${srv.port}`;
        console.log(`server pid ${proc.pid} listening on ${srv.origin}`);
        resolve(srv);
      }
    });
    proc.on("error", (e) => reject(e));
    proc.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}, ${signal}) before listening:\n${srv.tail()}`));
    });
  });
}

function stopServer(srv, timeoutMs = 10000) {
  return new Promise((resolve) => {
    const p = srv.proc;
    if (p.exitCode !== null || p.signalCode !== null) return resolve();
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      resolve();
    }, timeoutMs);
    p.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    p.kill("SIGTERM");
  });
}

async function api(srv, method, route, body, headers = {}) {
  const r = await fetch(srv.origin + route, {
    method,
    headers: body === undefined ? headers : { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(WAIT),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: r.status, json, text };
}

// ---------------------------------------------------------------------------------------------
// The page.
async function setValue(page, testid, value) {
  const el = page.locator(`[data-testid="${testid}"]`).first();
  await el.waitFor({ state: "visible", timeout: WAIT });
  const tag = await el.evaluate((e) => e.tagName.toLowerCase());
  if (tag === "select") {
    await el.selectOption(String(value), { timeout: WAIT });
  } else {
    await el.fill(String(value), { timeout: WAIT });
  }
  await el.evaluate((e) => {
    e.dispatchEvent(new Event("input", { bubbles: true }));
    e.dispatchEvent(new Event("change", { bubbles: true }));
  });
}

// Before a click that starts a generation: window.__lsSawGenerating turns true once
// body[data-state] has been "generating" (the attribute is set after the first render, so
// "idle" right after the click does not mean done).
async function armStateWatch(page) {
  await page.evaluate(() => {
    window.__lsSawGenerating = document.body.dataset.state === "generating";
    window.__lsStateObserver?.disconnect();
    window.__lsStateObserver = new MutationObserver(() => {
      if (document.body.dataset.state === "generating") window.__lsSawGenerating = true;
    });
    window.__lsStateObserver.observe(document.body, { attributes: true, attributeFilter: ["data-state"] });
  });
}

async function stateNotError(page, what) {
  const state = await page.evaluate(() => document.body.dataset.state);
  if (state === "error") {
    const text = await page.evaluate(() => document.body.innerText.slice(0, 600));
    throw new Error(`${what}: body[data-state] is "error": ${text}`);
  }
}

// Clicks Generate and waits until the generation has run and ended (idle again, with at least
// minChips token chips) or failed; a failure throws, naming `what`.
async function generateAndWait(page, minChips, what) {
  await armStateWatch(page);
  await page.locator('[data-testid="generate"]').first().click({ timeout: WAIT });
  await page.waitForFunction(
    (n) => document.body.dataset.state === "error" || (window.__lsSawGenerating && document.body.dataset.state === "idle"
      && document.querySelectorAll('[data-testid="token"]').length >= n),
    minChips, { timeout: WAIT });
  await stateNotError(page, what);
}

// pred()'s first truthy value, polled for up to WAIT ms (undefined after that).
async function poll(pred, ms = WAIT) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > end) return undefined;
    await new Promise((r) => setTimeout(r, 100));
  }
}

// The rows of the candidates panel: [{id, prob, source}].
function readRows(page) {
  return page.evaluate(() => {
    const table = document.querySelector('[data-testid="candidates"]');
    if (!table) return { source: null, rows: [] };
    const rows = [...table.querySelectorAll("[data-id]")].map((r) => ({
      id: Number(r.getAttribute("data-id")),
      prob: Number(r.getAttribute("data-prob")),
    }));
    return { source: table.getAttribute("data-source"), rows };
  });
}

// The generation ids in the answers the page received (the header's "generation").
function generationIds(bodies) {
  const ids = [];
  for (const b of bodies) {
    for (const m of b.text.matchAll(/"generation"\s*:\s*("([^"\\]+)"|\d+)/g)) {
      const id = m[2] ?? m[1];
      if (!ids.includes(id)) ids.push(id);
    }
  }
  return ids;
}

// Final probabilities of a replay focus step: {id: prob} over its last stage's top list.
function finalProbs(focus) {
  const last = focus.stages?.length ? focus.stages[focus.stages.length - 1].top : focus.raw.top;
  const out = new Map();
  for (const t of last ?? []) out.set(t.id, t.prob);
  const pool = focus.final_candidates;
  return { probs: out, complete: out.size >= pool };
}

function rawProbs(focus) {
  return new Map((focus.raw?.top ?? []).map((t) => [t.id, t.prob]));
}

// Rows against a distribution; tokens beyond a complete list have probability 0.
function compareRows(rows, dist) {
  const bad = [];
  let compared = 0;
  for (const r of rows) {
    let want = dist.probs.get(r.id);
    if (want === undefined) {
      if (!dist.complete) continue;
      want = 0;
    }
    compared++;
    if (!close(r.prob, want)) bad.push({ id: r.id, page: r.prob, server: want });
  }
  return { bad, compared };
}

// "Inside the model" of the selected step (docs/lens.md): nothing is asked before its buttons
// are pressed; the lens strip has n_layers + 1 cells whose probabilities, marks, tooltips and
// table numbers are the server's POST /v1/logitscope/lens; the attribution heat map has one
// token per context position and shows the server's deltas.
const fmt3 = (x) => x.toFixed(3);
const fmtDelta = (d) => (d > 0 ? `+${fmt3(d)}` : fmt3(d));

async function checkInside(page, srv, gid, gen, requests) {
  const start = Date.now();
  const asked = (route) => requests.filter((u) => u === srv.origin + route).length;
  check("no lens or attribution request before a button asks for one",
        asked("/v1/logitscope/lens") === 0 && asked("/v1/logitscope/attribute") === 0,
        { lens: asked("/v1/logitscope/lens"), attribute: asked("/v1/logitscope/attribute") });
  let t0 = Date.now();
  await page.locator('[data-testid="lens-open"]').click({ timeout: WAIT });
  await page.waitForSelector('[data-testid="lens-strip"], [data-testid="lens-error"]', { timeout: WAIT });
  const lensMs = Date.now() - t0;
  const err = await page.locator('[data-testid="lens-error"]').textContent({ timeout: 1 }).catch(() => null);
  check(`the lens panel opens (${lensMs} ms)`, err === null, err);
  const want = await api(srv, "POST", "/v1/logitscope/lens", { generation: gid, step: STEP, top: 5 });
  check(`POST /v1/logitscope/lens step ${STEP}: 200`, want.status === 200, want.text.slice(0, 300));
  const L = want.json;
  if (err === null && L) {
    const cells = await page.$$eval('[data-testid="lens-cell"]', (els) => els.map((e) => ({
      layer: Number(e.getAttribute("data-layer")), prob: Number(e.getAttribute("data-prob")), title: e.title,
      first: e.classList.contains("first"), settled: e.classList.contains("settled"),
    })));
    check(`the strip has n_layers + 1 = ${L.n_layers + 1} cells`, cells.length === L.n_layers + 1, cells.length);
    const byLayer = new Map(L.layers.map((l) => [l.layer, l]));
    const badProb = cells.filter((c) => !close(c.prob, byLayer.get(c.layer)?.chosen_prob, 1e-12));
    check("every cell's data-prob is the server's chosen_prob of its layer", badProb.length === 0, badProb);
    const marked = (k) => cells.filter((c) => c[k]).map((c) => c.layer);
    check(`the marked cells are first_chosen_layer ${L.first_chosen_layer} and settled_layer ${L.settled_layer}`,
          JSON.stringify(marked("first")) === JSON.stringify(L.first_chosen_layer === null ? [] : [L.first_chosen_layer])
          && JSON.stringify(marked("settled")) === JSON.stringify(L.settled_layer === null ? [] : [L.settled_layer]),
          { first: marked("first"), settled: marked("settled") });
    const badTitle = cells.filter((c) => {
      const l = byLayer.get(c.layer);
      return !l || !c.title.includes(`entropy ${fmt3(l.entropy)} nats`) || !c.title.includes(`(id ${l.sampler_choice.id})`);
    });
    check("every cell's tooltip gives the layer's entropy and the chain's pick", badTitle.length === 0, badTitle);
    const rows = await page.$$eval('[data-testid="lens-row"]', (els) => els.map((e) => ({
      layer: Number(e.getAttribute("data-layer")),
      entropy: e.querySelector('[data-testid="lens-entropy"]')?.textContent,
      rank: e.querySelector('[data-testid="lens-rank"]')?.textContent,
    })));
    const chosen = String(L.chosen.id);
    const badRows = rows.filter((r) => {
      const l = byLayer.get(r.layer);
      return !l || r.entropy !== fmt3(l.entropy) || r.rank !== String(l.rank_of[chosen]);
    });
    check(`the table's entropy and chosen rank of every layer are the server's (${rows.length} rows)`,
          rows.length === L.n_layers + 1 && badRows.length === 0, badRows.length ? { badRows, server: L.layers } : undefined);
    check(`the lens's chosen token is the recorded one (${gen.tokens[STEP]})`, L.chosen.id === gen.tokens[STEP], L.chosen);
  }

  t0 = Date.now();
  await page.locator('[data-testid="attribution-compute"]').click({ timeout: WAIT });
  await page.waitForSelector('[data-testid="attribution-map"], [data-testid="attribution-error"]', { timeout: WAIT });
  const attrMs = Date.now() - t0;
  const aerr = await page.locator('[data-testid="attribution-error"]').textContent({ timeout: 1 }).catch(() => null);
  check(`the attribution heat map appears (${attrMs} ms)`, aerr === null, aerr);
  const wa = await api(srv, "POST", "/v1/logitscope/attribute", { generation: gid, step: STEP });
  check(`POST /v1/logitscope/attribute step ${STEP}: 200`, wa.status === 200, wa.text.slice(0, 300));
  const A = wa.json;
  if (aerr === null && A) {
    const toks = await page.$$eval('[data-testid="attr-token"]', (els) => els.map((e) => ({
      position: Number(e.getAttribute("data-position")), delta: Number(e.getAttribute("data-delta")), title: e.title,
    })));
    const n = gen.prompt_token_ids.length + STEP;
    check(`one heat-map token per context position (prompt + ${STEP} generated = ${n})`,
          toks.length === n && A.context_tokens === n && toks.every((t, i) => t.position === i),
          { shown: toks.length, server: A.context_tokens, want: n });
    const byPos = new Map(A.attributions.map((a) => [a.position, a]));
    const badDelta = toks.filter((t) => !close(t.delta, byPos.get(t.position)?.delta, 1e-12)
                                       || !t.title.includes(`delta ${fmtDelta(byPos.get(t.position).delta)}`));
    check("every token's data-delta and tooltip delta are the server's", badDelta.length === 0, badDelta.slice(0, 3));
    const top = await page.$eval('[data-testid="attribution-top"] tbody tr', (r) => ({
      position: Number(r.getAttribute("data-position")), delta: r.querySelector('[data-testid="attr-delta"]')?.textContent,
    })).catch(() => null);
    const strongest = [...A.attributions].sort((a, b) => Math.abs(b.delta) - Math.abs(a.delta) || a.position - b.position)[0];
    check(`the largest effect shown is position ${strongest?.position} with delta ${strongest ? fmtDelta(strongest.delta) : "?"}`,
          top !== null && strongest !== undefined && top.position === strongest.position && top.delta === fmtDelta(strongest.delta),
          top);
    check(`the attribution's target is the recorded token (${gen.tokens[STEP]})`, A.target.id === gen.tokens[STEP], A.target);
  }
  console.log(`inside the model: lens ${lensMs} ms, attribution ${attrMs} ms in the page, ${Date.now() - start} ms in all`);
}

// The continuation tree of the selected step (docs/lab.md): nothing is asked before its button;
// k 3, depth 3 renders one row per node of the server's POST /v1/logitscope/tree, each with the
// server's probability (shown as the page formats it) and path probability, the recorded branch
// (tokens[STEP], tokens[STEP + 1], ...) marked as far as the tree holds it, the chain named; a
// tree too large for the page is refused before any request; a toggle hides a node's children.
const fmtProb = (p) => (!Number.isFinite(p) ? "—" : p === 0 ? "0" : Math.abs(p) < 1e-3 ? p.toExponential(1) : p.toFixed(4));

async function checkTree(page, srv, gid, gen, requests, artifacts) {
  const start = Date.now();
  const asked = () => requests.filter((u) => u === srv.origin + "/v1/logitscope/tree").length;
  check("no tree request before its button is pressed", asked() === 0, asked());
  await setValue(page, "tree-k", "10");
  await setValue(page, "tree-depth", "4");
  const refused = await page.locator('[data-testid="tree-problem"]').textContent({ timeout: WAIT }).catch(() => null);
  const disabled = await page.locator('[data-testid="tree-compute"]').isDisabled();
  check("k 10, depth 4 (11110 nodes) is refused in the page, the button disabled",
        /11110 nodes/.test(refused ?? "") && disabled && asked() === 0, { refused, disabled });
  await setValue(page, "tree-k", "3");
  await setValue(page, "tree-depth", "3");
  const t0 = Date.now();
  await page.locator('[data-testid="tree-compute"]').click({ timeout: WAIT });
  await page.waitForSelector('[data-testid="tree"], [data-testid="tree-error"]', { timeout: WAIT });
  const treeMs = Date.now() - t0;
  const err = await page.locator('[data-testid="tree-error"]').textContent({ timeout: 1 }).catch(() => null);
  check(`the tree appears (${treeMs} ms)`, err === null, err);
  const want = await api(srv, "POST", "/v1/logitscope/tree", { generation: gid, step: STEP, k: 3, depth: 3, min_prob: 0 });
  check(`POST /v1/logitscope/tree step ${STEP} k 3 depth 3: 200`, want.status === 200, want.text.slice(0, 300));
  const T = want.json;
  if (err !== null || !T) return;
  const nodes = await page.$$eval('[data-testid="tree-node"]', (els) => els.map((e) => ({
    index: Number(e.getAttribute("data-index")), id: Number(e.getAttribute("data-id")),
    prob: Number(e.getAttribute("data-prob")), recorded: e.getAttribute("data-recorded") === "true",
    shown: e.querySelector(':scope > .tree-row [data-testid="tree-prob"]')?.textContent,
    path: e.querySelector(':scope > .tree-row [data-testid="tree-path-prob"]')?.textContent,
    parent: Number(e.parentElement?.closest('[data-testid="tree-node"]')?.getAttribute("data-index") ?? -1),
  })));
  check(`one rendered node per server node (${T.nodes.length})`, nodes.length === T.nodes.length && T.nodes.length > 0,
        { page: nodes.length, server: T.nodes.length });
  const bad = nodes.filter((n) => {
    const w = T.nodes[n.index];
    return !w || w.id !== n.id || w.parent !== n.parent || !close(n.prob, w.prob, 1e-12)
      || n.shown !== fmtProb(w.prob) || n.path !== fmtProb(Math.exp(w.path_logprob));
  });
  check("every node sits under its parent with the server's token, probability and path probability", bad.length === 0,
        bad.slice(0, 3));
  const first = nodes.find((n) => n.index === 0);
  check(`node 0 shows p ${fmtProb(T.nodes[0].prob)} (server prob ${T.nodes[0].prob})`, first?.shown === fmtProb(T.nodes[0].prob), first);
  const branch = [];
  for (let d = 0, parent = -1; STEP + d < gen.tokens.length; d++) {
    const i = T.nodes.findIndex((n) => n.parent === parent && n.id === gen.tokens[STEP + d]);
    if (i < 0) break;
    branch.push(i);
    parent = i;
  }
  const marked = nodes.filter((n) => n.recorded).map((n) => n.index);
  check(`the recorded branch (tokens ${gen.tokens.slice(STEP, STEP + 3).join(", ")}) is marked: nodes ${JSON.stringify(branch)}`,
        JSON.stringify(marked) === JSON.stringify(branch), marked);
  const head = await page.locator('[data-testid="tree-chain"]').textContent({ timeout: WAIT });
  check("the tree names the chain it used", head.includes(T.chain) && T.chain.length > 0, head);
  await page.setViewportSize({ width: 1280, height: 1600 }); // the side panel scrolls: make room for the whole tree
  await page.locator('[data-testid="tree-part"]').evaluate((e) => e.scrollIntoView());
  await page.locator('[data-testid="tree-part"]').screenshot({ path: path.join(artifacts, "web-tree.png") });
  await page.setViewportSize({ width: 1280, height: 800 });
  check(`screenshot ${path.join(artifacts, "web-tree.png")}`, true);
  const toggle = page.locator('[data-testid="tree-node"][data-index="0"] > .tree-row .tree-toggle');
  if (await toggle.count()) {
    await toggle.click({ timeout: WAIT });
    const hidden = await page.$$eval('[data-testid="tree-node"]', (els) => els.filter((e) => e.offsetParent === null).length);
    const under = T.nodes.filter((n, i) => { for (let p = n.parent; p >= 0; p = T.nodes[p].parent) if (p === 0) return true; return false; }).length;
    check(`closing node 0 hides its ${under} descendants`, hidden === under, hidden);
    await toggle.click({ timeout: WAIT });
  }
  console.log(`continuation tree: ${treeMs} ms in the page, ${Date.now() - start} ms in all`);
}

// Decision boundaries (docs/lab.md, replay --boundaries): nothing is asked before the row's
// button; pressed, the page asks once for every kept step under the recorded settings; every
// chip's data-fragile (and its dotted mark) is the route's JSON of that step, and the selected
// step's bars show each setting's lo and hi as the page rounds them (top_k an integer, the
// others 4 significant digits), the ends' tokens or "no change", greedy steps' warpers left out.
const fmtSetting = (name, x) => (name === "top_k" ? String(Math.round(x)) : String(Number(x.toPrecision(4))));
const boundaryAsks = (replays) => replays.filter((b) => b && b.boundaries !== undefined && b.boundaries !== false);

async function checkBoundaries(page, srv, gid, gen, replays, artifacts) {
  const start = Date.now();
  check("no decision boundaries were asked before the button", boundaryAsks(replays).length === 0, boundaryAsks(replays));
  const branch = await page.locator('[data-testid="branch"]').first().getAttribute("data-branch");
  const t0 = Date.now();
  const [want] = await Promise.all([
    api(srv, "POST", "/v1/logitscope/replay", { generation: gid, boundaries: true }),
    page.locator(`[data-testid="boundaries-compute"][data-branch="${branch}"]`).click({ timeout: WAIT }),
  ]);
  check("POST replay {boundaries: true}: 200", want.status === 200, want.text.slice(0, 300));
  await page.waitForSelector(`[data-testid="boundaries"][data-step="${STEP}"]`, { timeout: WAIT }).catch(() => null);
  const pageMs = Date.now() - t0;
  const asks = boundaryAsks(replays);
  check(`the page asked once, for every kept step of its generation under the recorded settings (${pageMs} ms)`,
        asks.length === 1 && asks[0].boundaries === true && String(asks[0].generation) === String(gid) && asks[0].settings === undefined,
        asks);
  const W = want.json;
  if (!W) return;
  const byStep = new Map(W.steps.filter((s) => s.boundaries).map((s) => [s.step, s.boundaries]));
  check(`the route gave boundaries for every kept step (${gen.kept_steps})`, byStep.size === gen.kept_steps && gen.kept_steps > 0,
        { boundaries: byStep.size, kept: gen.kept_steps });
  const chips = await page.$$eval(`[data-testid="token"][data-branch="${branch}"]`, (els) => els.map((e) => ({
    step: Number(e.getAttribute("data-step")), fragile: e.getAttribute("data-fragile"),
    marked: e.classList.contains("fragile"), title: e.title,
  })));
  const bad = [...byStep].filter(([k, b]) => {
    const c = chips.find((x) => x.step === k);
    return !c || c.fragile !== String(b.fragile) || c.marked !== b.fragile || /fragile choice/.test(c.title) !== b.fragile;
  });
  const fragile = [...byStep].filter(([, b]) => b.fragile).map(([k]) => k);
  check(`every kept step's fragile mark in the strip is the route's (fragile: ${JSON.stringify(fragile)} of ${byStep.size})`,
        bad.length === 0 && chips.length === gen.tokens.length, { bad: bad.map(([k]) => k), chips: chips.length });
  const B = byStep.get(STEP);
  const rows = await page.$$eval('[data-testid="boundaries"] [data-testid="boundary"]', (els) => els.map((e) => ({
    name: e.getAttribute("data-setting"), applies: e.getAttribute("data-applies"), fragile: e.getAttribute("data-fragile"),
    lo: e.querySelector('[data-testid="boundary-lo"]')?.textContent ?? null,
    hi: e.querySelector('[data-testid="boundary-hi"]')?.textContent ?? null,
    below: e.querySelector('[data-testid="boundary-below"]')?.textContent ?? null,
    above: e.querySelector('[data-testid="boundary-above"]')?.textContent ?? null,
    bars: e.querySelectorAll('[data-testid="boundary-bar"]').length,
  })));
  if (B) {
    const names = ["temperature", "top_k", "top_p", "min_p", "repetition_penalty"];
    const shown = names.filter((n) => B.settings[n]?.applies);
    const badRows = shown.filter((n) => {
      const b = B.settings[n];
      const r = rows.find((x) => x.name === n);
      return !r || r.applies !== "true" || r.bars !== 1 || r.lo !== fmtSetting(n, b.lo) || r.hi !== fmtSetting(n, b.hi)
        || r.fragile !== String(b.fragile) || /^no change/.test(r.below ?? "") !== (b.below === null)
        || /^no change/.test(r.above ?? "") !== (b.above === null);
    });
    check(`step ${STEP}: one bar per setting that applies (${shown.join(", ")}), lo/hi as the page rounds the route's ` +
          `(${shown.map((n) => `${n} ${fmtSetting(n, B.settings[n].lo)}..${fmtSetting(n, B.settings[n].hi)}`).join("; ")})`,
          badRows.length === 0 && rows.filter((r) => r.applies === "true").length === shown.length,
          { badRows, rows, want: B.settings });
    const greedy = await page.locator('[data-testid="boundaries-greedy"]').count();
    check(`step ${STEP} is ${B.greedy ? "greedy: the line about the warpers" : "sampled: no greedy line"}`, (greedy === 1) === B.greedy, greedy);
  }
  await page.setViewportSize({ width: 1280, height: 1400 }); // room for the whole section
  await page.locator('[data-testid="boundaries"]').evaluate((e) => e.scrollIntoView());
  await page.locator('[data-testid="boundaries"]').screenshot({ path: path.join(artifacts, "web-boundaries.png") });
  await page.setViewportSize({ width: 1280, height: 800 });
  check(`screenshot ${path.join(artifacts, "web-boundaries.png")}`, true);
  console.log(`decision boundaries: ${pageMs} ms in the page (the test's own request alongside), ${Date.now() - start} ms in all`);
  return rows;
}

// A step whose token lies beyond its candidate rows (issue 49): a new generation at temperature
// 2 with no truncation, so tokens come from deep in the distribution; the test ranks the chosen
// token of each step itself from the kept raw logits (repetition penalty over prompt + earlier
// tokens, then temperature, float32 like the chain; score descending, ties by lower id), and the
// row the page adds for the clicked token must carry that rank.
async function rawLogits(srv, gid, k) {
  const r = await fetch(`${srv.origin}/v1/logitscope/generations/${gid}/logits/${k}`, { signal: AbortSignal.timeout(WAIT) });
  if (!r.ok) throw new Error(`GET logits ${gid}/${k}: ${r.status}`);
  return new Float32Array(await r.arrayBuffer());
}

function finalRank(logits, history, penalty, temperature, id) {
  const s = Float32Array.from(logits);
  for (const t of new Set(history)) s[t] = s[t] < 0 ? s[t] * penalty : s[t] / penalty;
  for (let i = 0; i < s.length; i++) s[i] = s[i] / temperature;
  const ids = Array.from(s.keys());
  ids.sort((a, b) => s[b] - s[a] || a - b);
  return ids.indexOf(id) + 1;
}

async function checkRankRow(page, srv, ids, known) {
  const start = Date.now();
  await setValue(page, "temperature", "2");
  await setValue(page, "top_k", "0");
  await setValue(page, "top_p", "1");
  await setValue(page, "max_tokens", "4");
  await setValue(page, "prompt", "北京");
  await generateAndWait(page, 0, "generate at temperature 2");
  const hid = await poll(async () => (await ids()).find((x) => !known.includes(x)));
  const g = hid === undefined ? null : await api(srv, "GET", `/v1/logitscope/generations/${hid}`);
  check("the temperature-2 generation was kept", g?.status === 200, g?.text?.slice(0, 200));
  if (!g?.json) return;
  const G = g.json;
  const s = G.header.settings;
  check("it ran at temperature 2 with no top_k or top_p", s.temperature.value === 2 && s.top_k.value === 0 && s.top_p.value === 1,
        G.header.chain);
  let step = -1;
  let rank = 0;
  for (let k = 0; k < G.tokens.length && step < 0; k++) {
    const history = [...G.prompt_token_ids, ...G.tokens.slice(0, k)];
    const r = finalRank(await rawLogits(srv, hid, k), history, s.repetition_penalty.value, s.temperature.value, G.tokens[k]);
    if (r > 10) [step, rank] = [k, r];
  }
  check("a step whose token ranks beyond the 10 rows the trace lists", step >= 0, { step, rank });
  if (step < 0) return;
  await page.locator(`[data-testid="token"][data-step="${step}"]`).first().click({ timeout: WAIT });
  const sel = '[data-testid="candidates"][data-source="recorded"] [data-extra="recorded"]';
  await page.waitForFunction((q) => {
    const r = document.querySelector(q);
    return r && /^\d+$/.test(r.getAttribute("data-rank") ?? "");
  }, sel, { timeout: WAIT }).catch(() => null);
  const row = await page.$eval(sel, (r) => ({
    id: Number(r.getAttribute("data-id")), rank: r.getAttribute("data-rank"), prob: Number(r.getAttribute("data-prob")),
    shown: r.querySelector('[data-testid="candidate-rank"]')?.textContent, text: r.textContent,
  })).catch(() => null);
  const rows = await page.$$eval('[data-testid="candidates"] tbody tr', (els) => els.length);
  check(`step ${step}'s token ${G.tokens[step]} has an extra row after the 10 shown, with rank ${rank} (from the raw logits)`,
        row !== null && row.id === G.tokens[step] && row.rank === String(rank) && row.shown === String(rank) && rows === 11
        && /beyond top 10/.test(row.text), { row, rows });
  const chip = await page.locator(`[data-testid="token"][data-step="${step}"]`).first().getAttribute("data-prob");
  check("the extra row's probability is the chip's (the recorded final probability)", row !== null && close(row.prob, Number(chip)),
        { row: row?.prob, chip });
  console.log(`the clicked token's own row: ${Date.now() - start} ms`);
}

// The trace steps (sequence 0) in an SSE answer's text, by step.
function sseTrace(text) {
  const steps = [];
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const trace = JSON.parse(line.slice(6))?.logitscope?.trace;
    if (Array.isArray(trace)) steps.push(...trace.filter((t) => (t.sequence ?? 0) === 0));
  }
  return steps.sort((a, b) => a.step - b.step);
}

const grammarRank = (step) => step.stages?.find((st) => st.name === "grammar")?.best_kept_rank;

async function checkStructured(page, srv, posts, artifacts, allow400) {
  const start = Date.now();
  const generated = async (what) => {
    await page.waitForFunction(
      () => document.body.dataset.state === "error" || (window.__lsSawGenerating && document.body.dataset.state === "idle"),
      null, { timeout: WAIT });
    await stateNotError(page, what);
  };
  await setValue(page, "structured", "json_schema");
  await setValue(page, "structured-schema", '{"type": "object",}');
  let before = posts.length;
  await page.locator('[data-testid="generate"]').first().click({ timeout: WAIT });
  const pageErr = await page.locator('[data-testid="structured-error"]').first()
    .evaluate((e) => ({ field: e.dataset.field, source: e.dataset.source, text: e.textContent })).catch(() => null);
  check("a schema that is not JSON is refused next to the schema field, before sending",
        pageErr?.field === "schema" && pageErr.source === "page" && /not JSON/.test(pageErr.text) && posts.length === before,
        { pageErr, sent: posts.length - before });

  await setValue(page, "structured-schema", '{"type": "object", "patternProperties": {"a": {}}}');
  check("editing the schema clears the inline error", await page.locator('[data-testid="structured-error"]').count() === 0);
  allow400(true);
  await armStateWatch(page);
  await page.locator('[data-testid="generate"]').first().click({ timeout: WAIT });
  await page.waitForSelector('[data-testid="structured-error"][data-source="server"]', { state: "visible", timeout: WAIT }).catch(() => null);
  allow400(false);
  const srvErr = await page.locator('[data-testid="structured-error"]').first()
    .evaluate((e) => ({ field: e.dataset.field, source: e.dataset.source, text: e.textContent })).catch(() => null);
  check("the server's 400 on the schema (unsupported keyword) is shown next to the schema field",
        srvErr?.field === "schema" && srvErr.source === "server" && /patternProperties/.test(srvErr.text), srvErr);

  console.log("\n== structured output: a JSON object");
  await setValue(page, "structured", "json_object");
  await setValue(page, "temperature", "1");
  await setValue(page, "repetition_penalty", "3");
  await setValue(page, "max_tokens", "12");
  await setValue(page, "seed", SEED);
  await setValue(page, "prompt", PROMPT);
  before = posts.length;
  const answersBefore = await page.evaluate(() => window.__lsAnswers.length);
  await armStateWatch(page);
  await page.locator('[data-testid="generate"]').first().click({ timeout: WAIT });
  await generated("the constrained generation");
  const post = posts.slice(before).find((p) => /\/v1\/(chat\/)?completions$/.test(p.url))?.body ?? null;
  check("it sent response_format json_object and did not ask to keep the generation",
        post?.response_format?.type === "json_object" && post?.logitscope && !("keep" in post.logitscope), post && {
          response_format: post.response_format, logitscope: post.logitscope });
  const answer = await poll(async () => {
    const a = await page.evaluate((n) => window.__lsAnswers[n], answersBefore);
    return a && a.text.includes("[DONE]") ? a : undefined;
  });
  const trace = answer ? sseTrace(answer.text) : [];
  const header = answer ? /"header":\{[^]*?"chain":"([^"]*)"/.exec(answer.text)?.[1] : null;
  check("the trace the page received has a grammar stage at every step (chain grammar(json_object) -> ...)",
        trace.length > 0 && trace.every((t) => typeof grammarRank(t) === "number") && /^grammar\(json_object\)/.test(header ?? ""),
        { steps: trace.length, chain: header });
  check("the answer's header names no kept generation", answer !== undefined && !/"generation"\s*:/.test(answer.text));
  const chips = await page.$$eval('[data-testid="token"]', (els) => els.map((e) => ({
    step: Number(e.dataset.step), id: Number(e.dataset.id), pressed: e.dataset.grammarPressed ?? null,
  })));
  const want = trace.filter((t) => grammarRank(t) > 1).map((t) => ({ step: t.step, pressed: String(grammarRank(t) - 1) }));
  const got = chips.filter((c) => c.pressed !== null).map((c) => ({ step: c.step, pressed: c.pressed }));
  check(`one chip per traced step (${trace.length}), the same tokens`,
        chips.length === trace.length && chips.every((c, i) => c.id === trace[i].chosen.id), { chips: chips.length, trace: trace.length });
  check(`the chips marked grammar-pressed are exactly the steps with best_kept_rank > 1 (${want.length} of ${trace.length})`,
        want.length > 0 && JSON.stringify(got) === JSON.stringify(want), { got, want });
  const own = await api(srv, "POST", "/v1/chat/completions", { ...post, stream: false });
  const ownTrace = own.json?.logitscope?.trace ?? [];
  check("the same request from the test (seed " + SEED + ") gives the same tokens and grammar ranks",
        own.status === 200 && JSON.stringify(ownTrace.map((t) => [t.chosen.id, grammarRank(t)]))
          === JSON.stringify(trace.map((t) => [t.chosen.id, grammarRank(t)])), own.status === 200 ? undefined : own.text.slice(0, 300));
  const notes = await page.locator('[data-testid="constrained-note"]').allTextContents();
  check("one note near the output says what-if re-scoring, forks, the lens and the boundaries are off",
        notes.length === 1 && /^Constrained generation \(JSON object\): what-if re-scoring, forks, the logit lens.*decision boundaries are off/.test(notes[0]), notes);
  if (want.length > 0) {
    const k = want[0].step;
    await page.locator(`[data-testid="token"][data-step="${k}"]`).first().click({ timeout: WAIT });
    const line = await page.locator('[data-testid="grammar-press"]').first()
      .evaluate((e) => ({ kept: e.dataset.keptRank, text: e.textContent })).catch(() => null);
    const t = trace.find((x) => x.step === k);
    check(`step ${k}'s panel line names the best kept (raw #${grammarRank(t)}) and the raw best removed`,
          line?.kept === String(grammarRank(t)) && line.text.includes(`raw #${grammarRank(t)}`)
          && line.text.includes(`(id ${t.stages[0].top[0].id})`), line);
    const forks = await page.$$eval('[data-testid="fork"]', (els) => els.map((e) => e.disabled));
    check("no fork button is enabled on a constrained row", forks.every(Boolean), forks);
    await page.screenshot({ path: path.join(artifacts, "web-grammar.png"), fullPage: false });
    check(`screenshot ${path.join(artifacts, "web-grammar.png")}`, true);
  }
  console.log(`structured output: ${Date.now() - start} ms`);
}

// Chromium keeps no body of a text/event-stream answer for the test to read, so the page's
// fetch is teed: the page reads its stream as before, the copy's text goes to __lsAnswers.
async function teeAnswers(page) {
  await page.addInitScript(() => {
    const orig = window.fetch.bind(window);
    window.__lsAnswers = [];
    window.fetch = async (input, init) => {
      const r = await orig(input, init);
      const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url, location.href);
      if (!/\/v1\/(chat\/)?completions$/.test(url.pathname) || !r.body) return r;
      const [mine, copy] = r.body.tee();
      const entry = { url: url.href, status: r.status, text: "" };
      window.__lsAnswers.push(entry);
      (async () => {
        const reader = copy.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          entry.text += dec.decode(value, { stream: true });
        }
      })().catch(() => {});
      return new Response(mine, { status: r.status, statusText: r.statusText, headers: r.headers });
    };
  });
}

async function runPage(srv, browser, artifacts) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const consoleErrors = [];
  const requests = [];
  const foreign = [];
  const answers = []; // {url, method, text} of the generation requests
  const posts = []; // {url, body} of POSTs to the completions routes
  const replays = []; // the bodies of POST /v1/logitscope/replay
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(srv.origin + "/")) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  let allow400 = false; // while the page sends a schema the server refuses
  const expected400 = [];
  page.on("console", (m) => {
    if (m.type() !== "error") return;
    if (allow400 && /status of 400\b/.test(m.text()) && /\/v1\/chat\/completions$/.test(m.location()?.url ?? "")) {
      expected400.push(m.text());
      return;
    }
    consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(`page error: ${e.message}`));
  const failed = []; // answers of 400 and above, to name what a console error is about
  page.on("response", (r) => {
    if (r.status() >= 400) failed.push(`${r.request().method()} ${r.url()} -> ${r.status()}`);
  });
  page.on("request", (r) => {
    requests.push(r.url());
    if (r.method() === "POST" && r.url() === srv.origin + "/v1/logitscope/replay") {
      try {
        replays.push(r.postDataJSON());
      } catch {
        replays.push(null);
      }
    }
    if (r.method() === "POST" && /\/v1\/(chat\/)?completions$/.test(r.url())) {
      let body = null;
      try {
        body = r.postDataJSON();
      } catch {
        /* not JSON */
      }
      posts.push({ url: r.url(), body });
    }
  });
  await teeAnswers(page);
  // The generation ids: a data-generation hook on a branch when the page has one, else the
  // headers of the answers it received.
  const ids = async () => {
    const dom = await page.$$eval("[data-generation]", (els) => els.map((e) => e.getAttribute("data-generation")));
    const got = await page.evaluate(() => window.__lsAnswers ?? []);
    answers.splice(0, answers.length, ...got);
    return [...new Set([...dom.filter(Boolean), ...generationIds(got)])];
  };

  try {
    console.log("\n== the page loads");
    const resp = await page.goto(srv.origin + "/", { waitUntil: "load", timeout: WAIT });
    check("GET / answered 200", resp?.status() === 200, resp?.status());
    await page.waitForSelector('body[data-state="idle"]', { state: "attached", timeout: WAIT });
    check("body[data-state=idle] after loading", true);
    await page.locator('[data-testid="prompt"]').first().waitFor({ state: "visible", timeout: WAIT });
    check("the prompt box is visible", true);

    console.log("\n== generate");
    await setValue(page, "repetition_penalty", "3");
    if (await page.locator('[data-testid="max_tokens"]').count()) await setValue(page, "max_tokens", "10");
    if (await page.locator('[data-testid="seed"]').count()) await setValue(page, "seed", SEED);
    await setValue(page, "prompt", PROMPT);
    const promptValue = await page.locator('[data-testid="prompt"]').first().inputValue().catch(() => null);
    check("the prompt box holds the Chinese prompt", promptValue === PROMPT, promptValue);
    await generateAndWait(page, 4, "generate");
    const chips = await page.$$eval('[data-testid="token"]', (els) => els.map((e) => ({
      step: e.getAttribute("data-step"), prob: e.getAttribute("data-prob"), id: e.getAttribute("data-id"),
      text: e.textContent,
    })));
    check("at least 4 token chips after generating", chips.length >= 4, chips.length);
    check("every chip's data-prob is a probability in (0, 1]",
          chips.every((c) => c.prob !== null && Number(c.prob) > 0 && Number(c.prob) <= 1),
          chips.map((c) => c.prob));
    check("the chips' data-step are 0, 1, 2, ...", chips.every((c, i) => Number(c.step) === i),
          chips.map((c) => c.step));
    await page.screenshot({ path: path.join(artifacts, "web-generated.png"), fullPage: false });
    check(`screenshot ${path.join(artifacts, "web-generated.png")}`, true);

    // The page's generation: the header of the answer it streamed.
    const gid = await poll(async () => (await ids())[0]);
    check("the page's generation request kept its generation (a header with generation)", gid !== undefined,
          answers.map((a) => ({ url: a.url, status: a.status, start: a.text.slice(0, 200) })));
    const post = posts[0]?.body ?? {};
    check("the page asked to keep the generation (logitscope.keep true)", post?.logitscope?.keep === true,
          post?.logitscope);
    check("the page sent repetition_penalty 3", Number(post?.repetition_penalty) === 3, post?.repetition_penalty);
    check(`the page sent seed ${SEED}`, String(post?.seed) === SEED, post?.seed);
    const g = gid === undefined ? null : await api(srv, "GET", `/v1/logitscope/generations/${gid}`);
    check("GET /v1/logitscope/generations/ID of the page's generation: 200", g?.status === 200, g?.text);
    const gen = g?.json ?? { tokens: [], draws: [], prompt_token_ids: [] };
    check("one chip per generated token", chips.length === gen.tokens.length,
          { chips: chips.length, tokens: gen.tokens.length });

    console.log(`\n== step ${STEP}: its candidates`);
    await page.locator(`[data-testid="token"][data-step="${STEP}"]`).first().click({ timeout: WAIT });
    await page.waitForFunction(
      () => document.querySelectorAll('[data-testid="candidates"] [data-id]').length > 0, null, { timeout: WAIT });
    const recorded = await readRows(page);
    check("the candidates panel has rows with data-id and data-prob",
          recorded.rows.length > 0 && recorded.rows.every((r) => Number.isInteger(r.id) && r.prob >= 0 && r.prob <= 1),
          recorded);
    check("the panel is not marked rescored before any setting changed", recorded.source !== "rescored",
          recorded.source);
    const expertsShown = await page.locator('[data-testid="experts"]').count();
    check("a dense model (experts_per_token 0): the page asked for no experts and shows no Experts section",
          expertsShown === 0 && post?.logitscope?.experts === undefined, { expertsShown, asked: post?.logitscope?.experts });
    const chosenId = gen.tokens[STEP];
    const chip = chips[STEP];
    const chosenRow = recorded.rows.find((r) => r.id === chosenId);
    // The server's record of that step: replay with the recorded settings reproduces it.
    const rec = await api(srv, "POST", "/v1/logitscope/replay", { generation: gid, step: STEP, top_n: 50 });
    check("POST replay (recorded settings, focus step 2): 200", rec.status === 200, rec.text.slice(0, 300));
    const recFocus = rec.json?.focus;
    // The step's own token always has a row: an extra one (data-extra) when it ranks beyond the list.
    check(`the recorded token of step ${STEP} (${chosenId}) has a row`, chosenRow !== undefined, recorded.rows.map((r) => r.id));
    if (chosenRow !== undefined) {
      check("the chip's data-prob equals the chosen row's data-prob", close(Number(chip.prob), chosenRow.prob),
            { chip: chip.prob, row: chosenRow });
    }
    if (recFocus) {
      const fin = compareRows(recorded.rows, finalProbs(recFocus));
      const raw = compareRows(recorded.rows, { probs: rawProbs(recFocus), complete: false });
      const asFinal = fin.bad.length === 0 && fin.compared > 0;
      const asRaw = raw.bad.length === 0 && raw.compared === recorded.rows.length;
      check(`the recorded rows' probabilities are the server's for step ${STEP} ` +
            `(${asFinal ? "final distribution" : asRaw ? "raw distribution" : "neither"}, within ${TOL})`,
            asFinal || asRaw, { final_mismatch: fin.bad.slice(0, 3), raw_mismatch: raw.bad.slice(0, 3) });
      check("the chip's probability is the server's chosen.prob or chosen.raw_prob",
            close(Number(chip.prob), recFocus.chosen.prob) || close(Number(chip.prob), recFocus.chosen.raw_prob),
            { chip: chip.prob, prob: recFocus.chosen.prob, raw_prob: recFocus.chosen.raw_prob });
    }

    console.log(`\n== step ${STEP}: inside the model`);
    await checkInside(page, srv, gid, gen, requests);

    console.log(`\n== step ${STEP}: the continuation tree`);
    await checkTree(page, srv, gid, gen, requests, artifacts);

    console.log(`\n== decision boundaries`);
    const boundaryRows = await checkBoundaries(page, srv, gid, gen, replays, artifacts);

    console.log(`\n== temperature ${NEW_TEMPERATURE}: re-scored in the page`);
    await setValue(page, "temperature", NEW_TEMPERATURE);
    await page.waitForSelector('[data-testid="candidates"][data-source="rescored"]',
                                { state: "attached", timeout: WAIT });
    check('the candidates panel turns data-source="rescored"', true);
    await page.waitForFunction(
      (before) => {
        const rows = [...document.querySelectorAll('[data-testid="candidates"] [data-id]')];
        return rows.length > 0 && rows.map((r) => r.getAttribute("data-prob")).join() !== before;
      }, recorded.rows.map((r) => String(r.prob)).join(), { timeout: WAIT }).catch(() => null);
    const rescored = await readRows(page);
    const before = new Map(recorded.rows.map((r) => [r.id, r.prob]));
    check("the rescored probabilities differ from the recorded ones",
          rescored.rows.some((r) => before.has(r.id) && Math.abs(before.get(r.id) - r.prob) > 1e-9),
          rescored.rows.slice(0, 5));
    const rep = await api(srv, "POST", "/v1/logitscope/replay", {
      generation: gid, settings: { temperature: Number(NEW_TEMPERATURE) }, step: STEP, top_n: 50,
    });
    check(`POST replay {temperature: ${NEW_TEMPERATURE}} step ${STEP}: 200`, rep.status === 200,
          rep.text.slice(0, 300));
    if (rep.json?.focus) {
      const cmp = compareRows(rescored.rows, finalProbs(rep.json.focus));
      check(`the rescored rows equal the server's replay of step ${STEP} under temperature ${NEW_TEMPERATURE} ` +
            `(${cmp.compared} rows within ${TOL})`, cmp.bad.length === 0 && cmp.compared > 0,
            cmp.bad.length ? cmp.bad.slice(0, 5) : undefined);
    }
    if (boundaryRows) {
      const differ = await page.locator('[data-testid="boundaries-sliders-differ"]').count();
      const los = await page.$$eval('[data-testid="boundaries"] [data-testid="boundary-lo"]', (els) => els.map((e) => e.textContent));
      check("with the temperature slider moved, the boundaries say they are the recorded settings' and stay as they were",
            differ === 1 && JSON.stringify(los) === JSON.stringify(boundaryRows.filter((r) => r.lo !== null).map((r) => r.lo)),
            { differ, los });
    }

    console.log(`\n== fork at step ${STEP}`);
    const alt = rescored.rows.find((r) => r.id !== chosenId);
    check("a row other than the recorded token to fork from", alt !== undefined, rescored.rows.map((r) => r.id));
    const branchesBefore = await page.locator('[data-testid="branch"]').count();
    const postsBefore = posts.length;
    await armStateWatch(page);
    await page.locator(`[data-testid="candidates"] [data-id="${alt.id}"] [data-testid="fork"]`).first()
      .click({ timeout: WAIT });
    await page.waitForFunction(
      (n) => document.body.dataset.state === "error" || (window.__lsSawGenerating
        && document.querySelectorAll('[data-testid="branch"]').length >= Math.max(2, n + 1)
        && document.body.dataset.state === "idle"), branchesBefore, { timeout: WAIT });
    await stateNotError(page, "fork");
    const branches = await page.locator('[data-testid="branch"]').count();
    check("a second branch appears", branches >= 2, { before: branchesBefore, after: branches });
    const forkPost = posts.slice(postsBefore).find((p) => p.url.endsWith("/v1/completions"))?.body;
    const wantPrompt = [...gen.prompt_token_ids, ...gen.tokens.slice(0, STEP), alt.id];
    check("the fork is a completions request with prompt = prompt_token_ids + tokens[:2] + [token]",
          JSON.stringify(forkPost?.prompt) === JSON.stringify(wantPrompt),
          { sent: forkPost?.prompt, want: wantPrompt });
    const fid = await poll(async () => (await ids()).find((x) => x !== gid));
    const fg = fid === undefined ? null : await api(srv, "GET", `/v1/logitscope/generations/${fid}`);
    check("the fork was kept and its prompt_token_ids are that list",
          fg?.status === 200 && JSON.stringify(fg.json.prompt_token_ids) === JSON.stringify(wantPrompt),
          fg ? { status: fg.status, prompt_token_ids: fg.json?.prompt_token_ids } : "no fork generation id");
    check("the boundaries were asked once only (not again for the slider or the fork)", boundaryAsks(replays).length === 1,
          boundaryAsks(replays));
    await page.screenshot({ path: path.join(artifacts, "web-after-fork.png"), fullPage: false });
    check(`screenshot ${path.join(artifacts, "web-after-fork.png")}`, true);

    console.log("\n== a token beyond its step's candidate rows");
    await checkRankRow(page, srv, ids, [gid, fid]);

    console.log("\n== structured output: problems shown next to the field");
    await checkStructured(page, srv, posts, artifacts, (on) => {
      allow400 = on;
    });
  } finally {
    console.log("\n== what the page loaded");
    const offOrigin = requests.filter((u) => !u.startsWith(srv.origin + "/") && !/^(data|blob|about):/.test(u));
    check(`every request went to ${srv.origin} (${requests.length} requests)`,
          offOrigin.length === 0 && foreign.length === 0,
          { offOrigin, aborted: foreign });
    check("no console error and no page error", consoleErrors.length === 0,
          failed.length ? { consoleErrors, failed } : consoleErrors);
    await context.close().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
// The API-key phase: `serve --api-key API_KEY`. The only console errors allowed are Chromium's
// "Failed to load resource: ... 401" for /v1/ URLs that answered 401 before the key was saved.
async function runKeyPage(srv, browser, artifacts) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const consoleAll = []; // every console message's text, to show the key is never logged
  const consoleErrors = [];
  const expected401 = []; // the filtered ones: URLs of 401 console errors before the key was saved
  const answered401 = []; // URLs of 401 answers to /v1/ before the key was saved
  const late401 = []; // 401 answers after it
  const requests = []; // {url, method, phase, headers: Promise}
  const foreign = [];
  let keySaved = false;
  await context.route("**/*", (route) => {
    const url = route.request().url();
    if (url.startsWith(srv.origin + "/")) return route.continue();
    foreign.push(url);
    return route.abort();
  });
  const page = await context.newPage();
  page.on("console", (m) => {
    consoleAll.push(m.text());
    if (m.type() !== "error") return;
    const url = m.location()?.url ?? "";
    if (!keySaved && /^Failed to load resource: the server responded with a status of 401\b/.test(m.text())
        && url.startsWith(srv.origin + "/v1/")) {
      expected401.push(url);
      return;
    }
    consoleErrors.push(`${m.text()} (${url})`);
  });
  page.on("pageerror", (e) => consoleErrors.push(`page error: ${e.message}`));
  page.on("request", (r) => {
    requests.push({ url: r.url(), method: r.method(), saved: keySaved, headers: r.allHeaders().catch(() => ({})) });
  });
  page.on("response", (r) => {
    if (r.status() !== 401) return;
    if (keySaved) late401.push(`${r.request().method()} ${r.url()}`);
    else if (r.url().startsWith(srv.origin + "/v1/")) answered401.push(r.url());
  });
  const authOf = async (r) => (await r.headers).authorization ?? null;
  const v1 = (r) => r.url.startsWith(srv.origin + "/v1/");

  try {
    console.log("\n== the page loads without a key");
    await page.goto(srv.origin + "/", { waitUntil: "load", timeout: WAIT });
    const keyInput = page.locator('[data-testid="api-key"]');
    await keyInput.waitFor({ state: "visible", timeout: WAIT });
    check('the 401 shows the data-testid="api-key" field', true);
    const banner = await page.locator('[data-testid="error"]').first().textContent({ timeout: WAIT }).catch(() => null);
    check("the error banner says the server wants an API key", /wants an API key/.test(banner ?? ""), banner);
    const first = requests.find((r) => r.url === srv.origin + "/v1/logitscope/info");
    check("the first GET /v1/logitscope/info went without Authorization and answered 401",
          first !== undefined && (await authOf(first)) === null && answered401.includes(first.url),
          { sent: first ? await authOf(first) : "no request", answered401 });
    const field = await keyInput.evaluate((e) => ({
      type: e.type, label: e.labels?.[0]?.textContent ?? null, tabIndex: e.tabIndex,
    }));
    check('the field is a password input labelled "API key"', field.type === "password" && field.label === "API key", field);
    const byLabel = await page.getByLabel("API key", { exact: true }).getAttribute("data-testid", { timeout: WAIT }).catch(() => null);
    check('getByLabel("API key") finds it', byLabel === "api-key", byLabel);
    await page.screenshot({ path: path.join(artifacts, "web-api-key.png"), fullPage: false });
    check(`screenshot ${path.join(artifacts, "web-api-key.png")}`, true);

    console.log("\n== Tab to the field, type the key, Use key");
    let tabs = 0;
    for (; tabs < 20; tabs++) {
      if (await page.evaluate(() => document.activeElement?.getAttribute("data-testid") === "api-key")) break;
      await page.keyboard.press("Tab");
    }
    const focused = await page.evaluate(() => document.activeElement?.getAttribute("data-testid"));
    check("the field is reached with the Tab key", focused === "api-key", { focused, tabs });
    if (focused !== "api-key") await keyInput.focus({ timeout: WAIT });
    await page.keyboard.type(API_KEY);
    keySaved = true;
    await page.locator('[data-testid="api-key-save"]').click({ timeout: WAIT });
    await keyInput.waitFor({ state: "detached", timeout: WAIT });
    await page.waitForSelector('body[data-state="idle"]', { state: "attached", timeout: WAIT });
    check("after Use key the field goes away and body[data-state] is idle", true);
    const stored = await page.evaluate(() => ({
      session: sessionStorage.getItem("logitscope.apiKey"), localItems: localStorage.length,
    }));
    check("the key is in sessionStorage and nothing is in localStorage",
          stored.session === API_KEY && stored.localItems === 0, { session: stored.session === API_KEY ? "<key>" : stored.session, localItems: stored.localItems });
    const retry = requests.filter((r) => r.saved && r.url === srv.origin + "/v1/logitscope/info");
    check("the info was loaded again with Authorization: Bearer <key>",
          retry.length > 0 && (await authOf(retry[0])) === `Bearer ${API_KEY}`, retry.length);

    console.log(`\n== generate ${KEY_TOKENS} tokens with the key`);
    await setValue(page, "repetition_penalty", "3");
    await setValue(page, "max_tokens", String(KEY_TOKENS));
    await setValue(page, "seed", SEED);
    await setValue(page, "prompt", PROMPT);
    await generateAndWait(page, 1, "generate with the API key");
    const chips = await page.locator('[data-testid="token"]').count();
    check(`1..${KEY_TOKENS} token chips after generating with max_tokens ${KEY_TOKENS}`, chips >= 1 && chips <= KEY_TOKENS, chips);
    const gen = requests.find((r) => r.saved && r.method === "POST" && /\/v1\/(chat\/)?completions$/.test(r.url));
    check("the generation request carried Authorization: Bearer <key>",
          gen !== undefined && (await authOf(gen)) === `Bearer ${API_KEY}`, gen?.url ?? "no generation request");
  } finally {
    console.log("\n== what the API-key page sent and logged");
    const before = await Promise.all(requests.filter((r) => v1(r) && !r.saved).map(authOf));
    const after = await Promise.all(requests.filter((r) => v1(r) && r.saved).map(authOf));
    check(`no /v1 request before the key was saved had Authorization (${before.length} requests)`,
          before.every((a) => a === null), before.map((a) => (a ? "<set>" : null)));
    check(`every /v1 request after it had Authorization: Bearer <key> (${after.length} requests)`,
          after.length > 0 && after.every((a) => a === `Bearer ${API_KEY}`), after.map((a) => (a === `Bearer ${API_KEY}` ? "ok" : a)));
    check("no 401 after the key was saved", late401.length === 0, late401);
    check("the key is in no URL and no console message",
          requests.every((r) => !r.url.includes(API_KEY)) && consoleAll.every((t) => !t.includes(API_KEY)));
    const offOrigin = requests.map((r) => r.url).filter((u) => !u.startsWith(srv.origin + "/") && !/^(data|blob|about):/.test(u));
    check(`every request went to ${srv.origin} (${requests.length} requests)`, offOrigin.length === 0 && foreign.length === 0,
          { offOrigin, aborted: foreign });
    check(`every ignored console error is a 401 of a /v1 URL that answered 401 before the key (${expected401.length} ignored)`,
          expected401.every((u) => answered401.includes(u)), { ignored: expected401, answered401 });
    check("no other console error and no page error", consoleErrors.length === 0, consoleErrors);
    await context.close().catch(() => {});
  }
}

// serve --model-b: the row's "Compare with B" button marks the flip chips as POST
// /v1/logitscope/side_by_side says, and the step panel's lists start with the route's focus ids
// (a raw prompt: the two tiny models' top-1s differ at some of its steps).
async function runSidePage(srv, browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const sideAsks = [];
  page.on("request", (r) => {
    if (r.url().endsWith("/v1/logitscope/side_by_side")) sideAsks.push(JSON.parse(r.postData() ?? "null"));
  });
  try {
    const start = Date.now();
    await page.goto(srv.origin + "/", { waitUntil: "load", timeout: WAIT });
    await setValue(page, "repetition_penalty", "3");
    await setValue(page, "max_tokens", "6");
    await setValue(page, "seed", SEED);
    await setValue(page, "mode", "raw");
    await setValue(page, "prompt", "Hello"); // the two tiny models' top-1s differ at 3 of its 6 steps
    await generateAndWait(page, 1, "generate with a model B");
    check("nothing was compared before the button", sideAsks.length === 0, sideAsks);
    await page.locator('[data-testid="side-compare"]').first().click({ timeout: WAIT });
    await page.waitForSelector('[data-testid="side-summary"]', { timeout: WAIT });
    const gid = sideAsks[0]?.generation;
    const want = await api(srv, "POST", "/v1/logitscope/side_by_side", { generation: gid });
    check(`POST side_by_side {generation: ${gid}}: 200`, want.status === 200, want.text.slice(0, 300));
    const flips = await page.$$eval('[data-testid="token"][data-flip]', (els) => els.map((e) => [Number(e.dataset.step), e.dataset.flip === "true"]));
    const expected = (want.json?.steps ?? []).map((s) => [s.step, s.flip]);
    check(`the chips' flip marks equal the route's (${expected.filter((f) => f[1]).length} flips of ${expected.length})`,
          expected.some((f) => f[1]) && JSON.stringify(flips) === JSON.stringify(expected), { flips, expected });
    const badges = await page.locator('[data-testid="token"][data-flip="true"] .flip-badge').count();
    check("every flip chip has its B badge", badges === expected.filter((f) => f[1]).length, badges);
    const k = expected.find((f) => f[1])?.[0] ?? 0; // a flip step
    await page.locator(`[data-testid="token"][data-step="${k}"]`).first().click({ timeout: WAIT });
    await page.waitForSelector(`[data-testid="side-by-side"][data-step="${k}"]`, { timeout: WAIT });
    const focus = await api(srv, "POST", "/v1/logitscope/side_by_side", { generation: gid, step: k, top: 10 });
    const first = await page.$eval('[data-testid="side-row"][data-rank="1"]', (e) => [Number(e.dataset.a), Number(e.dataset.b)]);
    const f = focus.json?.focus;
    const panelFlip = await page.$eval('[data-testid="side-by-side"]', (e) => e.dataset.flip);
    check(`step ${k}: the lists' first ids equal the route's focus, and differ (a flip)`,
          f && first[0] === f.a[0].id && first[1] === f.b[0].id && first[0] !== first[1] && panelFlip === "true",
          { first, a: f?.a?.[0]?.id, b: f?.b?.[0]?.id, panelFlip });
    check("the page asked once for the row and once for the step",
          sideAsks.length === 2 && sideAsks[0].step === undefined && sideAsks[1].step === k, sideAsks);
    console.log(`side by side: ${Date.now() - start} ms`);
  } finally {
    await context.close().catch(() => {});
  }
}

// The selected step's Experts section against that step's trace `experts` (null when they agree).
async function expertsMismatch(page, t, K) {
  await page.waitForSelector(`section.step-panel[aria-label="step ${t.step}"] [data-testid="experts"]`, { timeout: WAIT });
  const shown = await page.$eval('[data-testid="experts"]', (d) => ({
    open: d.open, summary: d.querySelector("summary")?.textContent ?? "",
    rows: [...d.querySelectorAll("tbody tr")].map((r) => ({
      layer: Number(r.dataset.layer), first: r.cells[0]?.textContent, sum: r.cells[2]?.textContent,
      cells: [...r.querySelectorAll(".expert-cell")].map((c) => ({ expert: Number(c.dataset.expert), text: c.textContent, title: c.title })),
    })),
  }));
  const want = t.experts.map((row, layer) => ({
    layer, first: String(layer), sum: row.reduce((a, [, w]) => a + w, 0).toFixed(3),
    cells: row.map(([x, w]) => ({ expert: x, text: `#${x} ${w.toFixed(3)}`, title: `expert ${x}: weight ${w}` })),
  }));
  const used = new Map();
  for (const row of t.experts) for (const [x] of row) used.set(x, (used.get(x) ?? 0) + 1);
  const most = [...used].sort((a, b) => b[1] - a[1] || a[0] - b[0]).slice(0, 5).map(([x, n]) => `#${x} (${n})`).join(", ");
  const wantSummary = `Experts · the router's top ${K} per layer for this step's input token · most used: ${most}`;
  const ok = JSON.stringify(shown.rows) === JSON.stringify(want) && shown.summary === wantSummary && shown.open;
  return ok ? null : { step: t.step, shown, want, wantSummary };
}

// A mixture-of-experts model (synth --shape qwen3-moe-tiny): /info's experts_per_token > 0 makes
// the page ask for logitscope.experts; the trace it received has, at every step, one row per
// layer of config.json's num_experts_per_tok distinct expert ids below num_experts, best first,
// summing to 1 (norm_topk_prob); the same request sent again by the test (non-streamed, the same
// seed) gives the same tokens and experts; and for every chip the step panel's Experts section
// shows that step's layers, ids (exactly), weights (to the page's 3 decimals; the tooltip's in
// full) and sums, and the summary's top-k and most used experts.
async function runMoePage(srv, browser, artifacts, modelDir) {
  const start = Date.now();
  const cfg = JSON.parse(fs.readFileSync(path.join(modelDir, "config.json"), "utf8"));
  const info = await api(srv, "GET", "/v1/logitscope/info");
  const K = info.json?.experts_per_token;
  check(`GET /v1/logitscope/info: experts_per_token ${K} = config.json's num_experts_per_tok`,
        info.status === 200 && K > 0 && K === cfg.num_experts_per_tok, { status: info.status, K, cfg: cfg.num_experts_per_tok });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const errors = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(`page error: ${e.message}`));
  const posts = [];
  page.on("request", (r) => {
    if (r.method() === "POST" && /\/v1\/(chat\/)?completions$/.test(r.url())) posts.push({ url: r.url(), body: r.postDataJSON() });
  });
  await teeAnswers(page);
  try {
    await page.goto(srv.origin + "/", { waitUntil: "load", timeout: WAIT });
    await page.waitForSelector('body[data-state="idle"]', { state: "attached", timeout: WAIT });
    await setValue(page, "repetition_penalty", "3");
    await setValue(page, "max_tokens", "5");
    await setValue(page, "seed", SEED);
    await setValue(page, "mode", "raw");
    await setValue(page, "prompt", PROMPT);
    await generateAndWait(page, 1, "generate on the MoE model");
    const post = posts[0];
    check("the page asked for the router's choice (logitscope.experts true, with trace and keep)",
          post?.body?.logitscope?.experts === true && post.body.logitscope.trace > 0 && post.body.logitscope.keep === true,
          post?.body?.logitscope);
    const answer = await poll(async () => {
      const a = await page.evaluate(() => window.__lsAnswers[0]);
      return a && a.text.includes("[DONE]") ? a : undefined;
    });
    const trace = answer ? sseTrace(answer.text) : [];
    const chips = await page.$$eval('[data-testid="token"]', (els) => els.map((e) => ({ step: Number(e.dataset.step), id: Number(e.dataset.id) })));
    check(`one chip per traced step (${trace.length}), the same tokens`,
          trace.length > 0 && chips.length === trace.length && chips.every((c, i) => c.step === i && c.id === trace[i].chosen.id),
          { chips, trace: trace.map((t) => t.chosen.id) });
    const badShape = trace.filter((t) => {
      const e = t.experts;
      return !Array.isArray(e) || e.length !== cfg.num_hidden_layers || !e.every((row) => Array.isArray(row) && row.length === K
        && new Set(row.map(([x]) => x)).size === K
        && row.every(([x, w], i) => Number.isInteger(x) && x >= 0 && x < cfg.num_experts && w > 0 && (i === 0 || w <= row[i - 1][1]))
        && (!cfg.norm_topk_prob || close(row.reduce((a, [, w]) => a + w, 0), 1, 1e-5)));
    });
    check(`every traced step has ${cfg.num_hidden_layers} layers of ${K} distinct experts (< ${cfg.num_experts}), best first, ` +
          "weights summing to 1", trace.length > 0 && badShape.length === 0, badShape.slice(0, 2).map((t) => ({ step: t.step, experts: t.experts })));
    const own = await api(srv, "POST", new URL(post.url).pathname, { ...post.body, stream: false });
    const ownTrace = own.json?.logitscope?.trace ?? [];
    const sameRouting = ownTrace.length === trace.length && ownTrace.every((t, i) => t.chosen.id === trace[i].chosen.id
      && t.experts?.length === trace[i].experts.length && t.experts.every((row, l) => row.length === trace[i].experts[l].length
        && row.every(([x, w], j) => x === trace[i].experts[l][j][0] && close(w, trace[i].experts[l][j][1]))));
    check(`the same request from the test (seed ${SEED}, not streamed) gives the same tokens and experts`, own.status === 200 && sameRouting,
          own.status === 200 ? ownTrace.map((t) => ({ id: t.chosen.id, experts: t.experts })) : own.text.slice(0, 300));

    const bad = [];
    for (const t of trace) {
      await page.locator(`[data-testid="token"][data-step="${t.step}"]`).first().click({ timeout: WAIT });
      const m = await expertsMismatch(page, t, K);
      if (m) bad.push(m);
    }
    check(`every step's Experts section (${trace.length} steps, ${cfg.num_hidden_layers} layer rows each) shows the trace's ` +
          "expert ids, weights (3 decimals, the tooltip in full), sums and most used", trace.length > 0 && bad.length === 0, bad.slice(0, 1));

    // A fork (app.tsx's second request path) asks for the experts too: its first step's section.
    await page.locator('[data-testid="token"][data-step="1"]').first().click({ timeout: WAIT });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="candidates"] [data-id]').length > 1, null, { timeout: WAIT });
    const alt = (await readRows(page)).rows.find((r) => trace[1] && r.id !== trace[1].chosen.id);
    await armStateWatch(page);
    await page.locator(`[data-testid="candidates"] [data-id="${alt?.id}"] [data-testid="fork"]`).first().click({ timeout: WAIT });
    await page.waitForFunction(
      () => document.body.dataset.state === "error" || (window.__lsSawGenerating && document.body.dataset.state === "idle"
        && document.querySelectorAll('[data-testid="branch"]').length === 2), null, { timeout: WAIT });
    await stateNotError(page, "fork on the MoE model");
    const forkAnswer = await poll(async () => {
      const a = await page.evaluate(() => window.__lsAnswers[1]);
      return a && a.text.includes("[DONE]") ? a : undefined;
    });
    const forkTrace = forkAnswer ? sseTrace(forkAnswer.text) : [];
    check(`the fork asked for the experts and its trace has them (${forkTrace.length} steps)`,
          posts[1]?.body?.logitscope?.experts === true && forkTrace.length > 0
          && forkTrace.every((t) => t.experts?.length === cfg.num_hidden_layers), posts[1]?.body?.logitscope);
    if (forkTrace.length > 0) {
      await page.locator('[data-testid="branch"]').nth(1).locator('[data-testid="token"][data-step="0"]').click({ timeout: WAIT });
      const m = await expertsMismatch(page, forkTrace[0], K);
      check("the fork's step 0 shows its own trace's experts", m === null, m);
    }
    await page.screenshot({ path: path.join(artifacts, "web-experts.png"), fullPage: false });
    check(`screenshot ${path.join(artifacts, "web-experts.png")}`, true);
    check("no console error and no page error on the MoE model", errors.length === 0, errors);
    console.log(`experts: ${Date.now() - start} ms`);
  } finally {
    await context.close().catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------
async function main() {
  const artifacts = path.resolve(ARGS.artifacts);
  fs.mkdirSync(artifacts, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "ls_web_e2e_"));
  let srv = null;
  let browser = null;
  const watchdog = setTimeout(async () => {
    check(`the run finished within ${TOTAL / 1000} s`, false);
    if (browser) await Promise.race([browser.close().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
    if (srv) srv.proc.kill("SIGKILL");
    fs.rmSync(tmp, { recursive: true, force: true });
    console.log(`\n${checks - failures.length}/${checks} checks passed`);
    process.exit(1);
  }, TOTAL);
  try {
    const model = ARGS.model ?? synth(ARGS.logitscope, ARGS["tokenizer-from"], tmp);
    srv = await startServer(ARGS.logitscope, model);
    const info = await api(srv, "GET", "/v1/logitscope/info");
    check("GET /v1/logitscope/info: 200, experts_per_token 0 (a dense model)", info.status === 200 && info.json?.experts_per_token === 0,
          info.text.slice(0, 200));
    browser = await chromium.launch({
      executablePath: ARGS.chromium,
      timeout: WAIT,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run"],
    });
    console.log(`chromium ${browser.version()}`);
    await runPage(srv, browser, artifacts);
    await stopServer(srv);

    console.log("\n== serve --model-b");
    const modelB = path.join(tmp, "tiny_b");
    const made = spawnSync(ARGS.logitscope, ["synth", "--shape", "tiny", "--seed", "5", "--out", modelB, "--tokenizer-from", model],
                           { encoding: "utf8", timeout: 120000 });
    check("synth a second tiny model (seed 5)", made.status === 0, `${made.stdout}${made.stderr}`);
    srv = await startServer(ARGS.logitscope, model, ["--model-b", modelB]);
    await runSidePage(srv, browser);
    await stopServer(srv);

    console.log("\n== a mixture-of-experts model (synth --shape qwen3-moe-tiny)");
    const moe = path.join(tmp, "moe");
    const madeMoe = spawnSync(ARGS.logitscope, ["synth", "--shape", "qwen3-moe-tiny", "--out", moe, "--tokenizer-from", model],
                              { encoding: "utf8", timeout: 120000 });
    check("synth a tiny MoE model", madeMoe.status === 0, `${madeMoe.stdout}${madeMoe.stderr}`);
    srv = await startServer(ARGS.logitscope, moe);
    await runMoePage(srv, browser, artifacts, moe);
    await stopServer(srv);

    console.log("\n== serve --api-key");
    srv = await startServer(ARGS.logitscope, model, ["--api-key", API_KEY]);
    const denied = await api(srv, "GET", "/v1/logitscope/info");
    check("GET /v1/logitscope/info without the key: 401 invalid_api_key",
          denied.status === 401 && denied.json?.error?.code === "invalid_api_key", denied.text.slice(0, 200));
    const allowed = await api(srv, "GET", "/v1/logitscope/info", undefined, { Authorization: `Bearer ${API_KEY}` });
    check("GET /v1/logitscope/info with Authorization: Bearer <key>: 200", allowed.status === 200, allowed.text.slice(0, 200));
    const pageOk = await api(srv, "GET", "/");
    check("GET / without the key: 200 (the page itself needs none)", pageOk.status === 200, pageOk.status);
    await runKeyPage(srv, browser, artifacts);
  } catch (e) {
    console.log(e?.stack ?? e);
    check("the run completed without an exception", false, String(e?.message ?? e));
  } finally {
    if (browser) await Promise.race([browser.close().catch(() => {}), new Promise((r) => setTimeout(r, 10000))]);
    if (srv) {
      if (failures.length) console.log(`\n--- server log tail ---\n${srv.tail()}`);
      await stopServer(srv);
    }
    fs.rmSync(tmp, { recursive: true, force: true });
    clearTimeout(watchdog);
  }
  console.log(`\n${checks - failures.length}/${checks} checks passed`);
  for (const f of failures) console.log(`  FAILED: ${f}`);
  process.exit(failures.length ? 1 : 0);
}

main().catch((e) => {
  console.log(e?.stack ?? e);
  process.exit(1);
});
