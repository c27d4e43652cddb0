// What the official-client tests of `logitscope serve` (openai_client, anthropic_client,
// responses_client .test.mjs) share: their arguments and the SDK loaded from tests/oracle, checks
// that print what they got, the tiny model made with `synth`, a server started on a free port and
// stopped with SIGTERM, plain POSTs to routes the SDKs do not call, and the main() that runs the
// sections against one server and prints the summary.
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isDeepStrictEqual } from "node:util";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const KEY = "k";
export const MODEL = "tiny";
// The tiny model mostly repeats its last input token (tied embeddings, two layers), so
// unpenalised output is "\n" over and over; repetition_penalty 3 (the chat route's extension
// field, which the other routes take too) makes it produce varied tokens.
export const LIVELY = { repetition_penalty: 3 };
export const USER = [{ role: "user", content: "Hello" }];

// ---------------------------------------------------------------------------------------------
// Arguments (or environment variables), and the npm package `pkg` from tests/oracle/node_modules.
export function setup(script, pkg) {
  const args = {
    logitscope: process.env.LS_LOGITSCOPE,
    "tokenizer-from": process.env.LS_TOKENIZER_FROM,
    "oracle-dir": process.env.LS_ORACLE_NPM_DIR ?? path.resolve(HERE, "../oracle"),
  };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) args[argv[i].replace(/^--/, "")] = argv[i + 1];
  if (!args.logitscope || !args["tokenizer-from"]) {
    console.error(`usage: node ${script} --logitscope BIN --tokenizer-from DIR [--oracle-dir DIR]`);
    process.exit(2);
  }
  try {
    // ESM imports ignore NODE_PATH: resolve the package as seen from tests/oracle instead.
    const sdk = createRequire(path.join(path.resolve(args["oracle-dir"]), "package.json"))(pkg);
    return { args, sdk };
  } catch (e) {
    console.error(`cannot load the npm package ${pkg} from ${args["oracle-dir"]}/node_modules ` +
                  `(run \`npm ci --prefix tests/oracle\`): ${e.message}`);
    process.exit(1);
  }
}

// ---------------------------------------------------------------------------------------------
// Checks: each prints ok/FAIL, its name and what it got.
const failures = [];
let checks = 0;

export function show(v, limit = 400) {
  let s;
  try {
    s = typeof v === "string" ? v : JSON.stringify(v, (k, x) => (typeof x === "bigint" ? String(x) : x));
  } catch {
    s = String(v);
  }
  s = String(s).replace(/\n/g, "\\n");
  return s.length <= limit ? s : `${s.slice(0, limit)}... (${s.length} chars)`;
}

export function check(name, ok, got) {
  checks++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${got === undefined ? "" : ` -- got: ${show(got)}`}`);
  if (!ok) failures.push(name);
  return ok;
}

export function equal(name, got, want) {
  const ok = isDeepStrictEqual(got, want);
  return check(name, ok, ok ? got : { got, want });
}

export async function section(name, fn) {
  console.log(`\n== ${name}`);
  try {
    await fn();
  } catch (e) {
    console.log(e?.stack ?? e);
    check(`${name}: ran without an exception`, false, {
      error: String(e?.message ?? e), status: e?.status, param: e?.param, body: e?.error,
    });
  }
}

// ---------------------------------------------------------------------------------------------
// The server.
export function synth(bin, tokenizerDir, parent, name = MODEL, shape = "tiny") {
  const out = path.join(parent, name);
  const r = spawnSync(bin, ["synth", "--shape", shape, "--dtype", "bf16", "--seed", "3", "--out", out,
                            "--tokenizer-from", tokenizerDir], { encoding: "utf8", timeout: 300000 });
  if (r.status !== 0) throw new Error(`synth failed (${r.status}): ${r.stdout}${r.stderr}${r.error ?? ""}`);
  return out;
}

export function startServer(bin, modelDir, extra) {
  const args = ["serve", "--model", modelDir, "--port", "0", "--parallel", "16", "--threads", "2",
                ...extra];
  console.log(`starting: ${bin} ${args.join(" ")}`);
  const proc = spawn(bin, args, { stdio: ["ignore", "pipe", "pipe"] });
  const log = [];
  const srv = { proc, log, host: null, port: null, tail: () => log.join("").slice(-4000) };
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (d) => log.push(d));
  proc.stdout.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line in 120 s:\n${srv.tail()}`)),
                             120000);
    proc.stdout.on("data", (d) => {
      log.push(d);
      if (srv.port) return;
      seen += d;
      const m = seen.match(/listening on http:\/\/([0-9.]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        srv.host = m[1];
        srv.port = Number(m[2]);
        console.log(`server pid ${proc.pid} listening on ${srv.host}:${srv.port}`);
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

// SIGTERM; resolves {code, signal, ms}; kills it after timeoutMs.
export function stopServer(srv, timeoutMs = 15000) {
  return new Promise((resolve) => {
    const p = srv.proc;
    if (p.exitCode !== null || p.signalCode !== null) {
      resolve({ code: p.exitCode, signal: p.signalCode, ms: 0, note: "had already exited" });
      return;
    }
    const t0 = Date.now();
    const timer = setTimeout(() => {
      p.kill("SIGKILL");
      resolve({ code: null, signal: "still running after the timeout: killed", ms: Date.now() - t0 });
    }, timeoutMs);
    p.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, ms: Date.now() - t0 });
    });
    p.kill("SIGTERM");
  });
}

// Routes the SDK does not call (/tokenize, the chat route), or calls with other headers:
// {status, json, text}. `headers` replace the default Authorization.
export async function postJSON(srv, route, body, headers = { Authorization: `Bearer ${KEY}` }) {
  const r = await fetch(`http://${srv.host}:${srv.port}${route}`, {
    method: "POST",
    headers: { "Content-Type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text };
}

// ---------------------------------------------------------------------------------------------
// main(): the tiny model in a temporary directory (`tmpPrefix`), a server with the API key, the
// client makeClient(srv) builds, then run(client, srv, tmp), which runs the sections; SIGTERM
// must end the server with status 0; the summary, and the exit status.
export async function runClientTest(args, { tmpPrefix, makeClient, run }) {
  const main = async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
    const modelDir = synth(args.logitscope, args["tokenizer-from"], tmp);
    let srv;
    try {
      srv = await startServer(args.logitscope, modelDir, ["--api-key", KEY]);
    } catch (e) {
      check("the server started", false, String(e.message ?? e));
      process.exit(1);
    }
    try {
      await run(makeClient(srv), srv, tmp);
    } finally {
      console.log("\n== SIGTERM");
      const r = await stopServer(srv);
      check("SIGTERM: exit status 0 within 15 s", r.code === 0, r);
      if (failures.length) console.log(`\n--- server log tail ---\n${srv.tail()}`);
      fs.rmSync(tmp, { recursive: true, force: true });
    }
    console.log(`\n${checks - failures.length}/${checks} checks passed`);
    for (const f of failures) console.log(`  FAILED: ${f}`);
    process.exit(failures.length ? 1 : 0);
  };
  await main().catch((e) => {
    console.log(e?.stack ?? e);
    process.exit(1);
  });
}
