// Runs `logitscope tokenize --tokenizer FILE --jsonl corpus.jsonl` (bulk mode of the CLI) and
// compares every output line with the JavaScript oracle's ids from make_corpus.js.
//   node check_cli_jsonl.js LOGITSCOPE TOKENIZER_JSON CORPUS_DIR
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const [exe, tokenizer, dir] = process.argv.slice(2);
const oracle = fs.readFileSync(path.join(dir, "oracle.jsonl"), "utf8").trimEnd().split("\n").map((l) => JSON.parse(l));
for (const [flags, key] of [[[], "ids"], [["--split-special"], "split"]]) {
  const out = execFileSync(exe, ["tokenize", "--tokenizer", tokenizer, "--jsonl", path.join(dir, "corpus.jsonl"), ...flags],
    { maxBuffer: 1 << 30, encoding: "utf8" });
  const lines = out.trimEnd().split("\n");
  let mismatches = 0;
  if (lines.length !== oracle.length) {
    console.log(`line count: logitscope ${lines.length}, oracle ${oracle.length}`);
    mismatches++;
  }
  for (let i = 0; i < Math.min(lines.length, oracle.length); ++i) {
    if (lines[i] !== JSON.stringify(oracle[i][key])) {
      if (++mismatches <= 5) console.log(`line ${i + 1}: logitscope ${lines[i].slice(0, 200)}\n  oracle ${JSON.stringify(oracle[i][key]).slice(0, 200)}`);
    }
  }
  const label = flags.length ? "tokenize --jsonl --split-special" : "tokenize --jsonl";
  console.log(`${label}: ${oracle.length} strings, ${mismatches} mismatches against the JavaScript oracle`);
  if (mismatches) process.exit(1);
}
