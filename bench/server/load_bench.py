#!/usr/bin/env python3
"""Load benchmark of OpenAI-compatible servers, side by side: for 1, 4, 16 and 32 concurrent
streaming chat requests of --tokens tokens each (ignore_eos), the aggregate generation rate
(completion tokens of the round / its wall time) and time to first token (request sent -> first
content delta, p50/p90), for each workload:

  t1        temperature 1, no truncation (top_k 0, top_p 1, min_p 0, typical_p 1, no penalty)
  top_p     temperature 0.8, top_p 0.95, the rest off as above
  qwen      Qwen2.5's generation_config (temperature 0.7, top_p 0.8, top_k 20, repetition
            penalty 1.05), min_p 0, with logprobs and top_logprobs 5
  defaults  the same request to each server, temperature 0.8 and top_p 0.95 and nothing else:
            each server's own defaults fill the rest (llama-server's: top_k 40, min_p 0.05)

Every sampling field is sent explicitly in the first three, so both servers do the same work;
the repetition penalty is sent to each server in its own spelling (logitscope refuses
llama-server's repeat_penalty with a 400, since its window differs; llama-server ignores
repetition_penalty). Starts `logitscope serve --model PATH` (ours); --url measures
another server beside it (e.g. a llama-server built outside this repository, on the same GGUF
file, with -np at least the largest level), alternating the two level by level, and prints the
ratio ours / theirs.

  python3 bench/server/load_bench.py --model FILE.gguf [--url http://127.0.0.1:8080]
      [--threads 2] [--rounds 1] [--tokens 64] [--streams 1,4,16,32] [--workloads t1,top_p,qwen,defaults]
"""
import argparse
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        for line in out.splitlines():
            if line.strip().startswith("Model name:"):
                return line.strip()
    except OSError:
        pass
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return "Model name: " + line.split(":", 1)[1].strip()
    return "Model name: unknown"


def start_server(a):
    """`logitscope serve` on a free port; returns (process, base URL)."""
    args = [a.logitscope, "serve", "--model", a.model, "--port", "0", "--threads", str(a.threads),
            "--parallel", str(a.parallel)] + (["--ctx", str(a.ctx)] if a.ctx else []) + a.server_arg
    print("server: " + " ".join(args), file=sys.stderr)
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 300
    for line in proc.stdout:
        m = re.search(r"listening on (http://[0-9.]+:\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
            return proc, m.group(1)
        if time.monotonic() > deadline:
            break
    proc.kill()
    sys.exit(f"the server did not start (exit status {proc.poll()})")


OFF = {"top_k": 0, "top_p": 1.0, "min_p": 0.0, "typical_p": 1.0, "repetition_penalty": 1.0,
       "repeat_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
WORKLOADS = {
    "t1": {**OFF, "temperature": 1.0},
    "top_p": {**OFF, "temperature": 0.8, "top_p": 0.95},
    "qwen": {**OFF, "temperature": 0.7, "top_p": 0.8, "top_k": 20, "repetition_penalty": 1.05,
             "repeat_penalty": 1.05, "logprobs": True, "top_logprobs": 5},
    "defaults": {"temperature": 0.8, "top_p": 0.95},
}


def one_stream(url, a, i, barrier, out, fields):
    """One streaming chat request; out[i] = {tokens, ttft, t_send, t_end, error}."""
    u = urllib.parse.urlparse(url)
    body = {"messages": [{"role": "user", "content": f"Tell me about the number {i}."}],
            "stream": True, "stream_options": {"include_usage": True}, "max_tokens": a.tokens,
            "ignore_eos": True, "seed": 1000 + i, **fields}
    headers = {"Content-Type": "application/json"}
    if a.api_key:
        headers["Authorization"] = f"Bearer {a.api_key}"
    res = {"tokens": 0, "ttft": None, "error": None}
    barrier.wait()
    res["t_send"] = time.perf_counter()
    content_chunks = 0
    try:
        conn = http.client.HTTPConnection(u.hostname, u.port or 80, timeout=600)
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers=headers)
        r = conn.getresponse()
        if r.status != 200:
            res["error"] = f"HTTP {r.status}: {r.read()[:200]!r}"
        else:
            for raw in iter(r.readline, b""):
                line = raw.decode("utf-8", errors="replace").strip()
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                ev = json.loads(data)
                if "error" in ev:
                    res["error"] = str(ev["error"])[:200]
                    break
                for ch in ev.get("choices") or []:
                    if (ch.get("delta") or {}).get("content"):
                        content_chunks += 1
                        if res["ttft"] is None:
                            res["ttft"] = time.perf_counter() - res["t_send"]
                if ev.get("usage"):
                    res["tokens"] = ev["usage"].get("completion_tokens") or 0
        conn.close()
    except (OSError, ValueError, http.client.HTTPException) as e:
        res["error"] = f"{type(e).__name__}: {e}"
    res["t_end"] = time.perf_counter()
    if not res["tokens"]:
        res["tokens"] = content_chunks  # no usage chunk: one content delta per token, roughly
    out[i] = res


def percentile(xs, q):
    """Linear interpolation between closest ranks (q in 0..100)."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = (len(xs) - 1) * q / 100
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


# Fields only the other server reads, left out of what logitscope is sent.
THEIRS_ONLY = {"repeat_penalty"}


def for_server(name, fields):
    return {k: v for k, v in fields.items() if name != "ours" or k not in THEIRS_ONLY}


def run_level(url, a, streams, fields):
    tokens, wall, ttfts, rates, errors = 0, 0.0, [], [], []
    for _ in range(a.rounds):
        out = {}
        barrier = threading.Barrier(streams)
        threads = [threading.Thread(target=one_stream, args=(url, a, i, barrier, out, fields))
                   for i in range(streams)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rs = list(out.values())
        wall += max(r["t_end"] for r in rs) - min(r["t_send"] for r in rs)
        tokens += sum(r["tokens"] for r in rs)
        errors += [r["error"] for r in rs if r["error"]]
        ttfts += [r["ttft"] for r in rs if r["ttft"] is not None]
        rates += [(r["tokens"] - 1) / (r["t_end"] - r["t_send"] - r["ttft"]) for r in rs
                  if r["ttft"] is not None and r["tokens"] > 1 and r["t_end"] - r["t_send"] > r["ttft"]]
    return {"streams": streams, "tok_s": tokens / wall if wall > 0 else 0.0,
            "per_stream": sum(rates) / len(rates) if rates else float("nan"),
            "p50": percentile(ttfts, 50) * 1000, "p90": percentile(ttfts, 90) * 1000,
            "tokens": tokens, "errors": errors}


def ratio(x, y):
    return f"{x / y:.2f}x" if y and y == y and x == x else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--logitscope", default=os.path.join(REPO, "build", "app", "logitscope"))
    ap.add_argument("--model", required=True, help="model directory or .gguf for logitscope serve")
    ap.add_argument("--url", help="another server to measure beside ours, e.g. http://127.0.0.1:8080")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--parallel", type=int, default=32, help="our server's --parallel")
    ap.add_argument("--ctx", type=int, default=0, help="our server's --ctx (0: its default)")
    ap.add_argument("--server-arg", action="append", default=[],
                    help="one more argument for our server, e.g. --server-arg=--prefix-cache=0")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--streams", default="1,4,16,32", help="comma-separated concurrency levels")
    ap.add_argument("--workloads", default="t1,top_p,qwen,defaults",
                    help="comma-separated, of: " + ", ".join(WORKLOADS))
    ap.add_argument("--api-key")
    a = ap.parse_args()
    levels = [int(x) for x in a.streams.split(",")]
    workloads = [w for w in a.workloads.split(",") if w]
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"--workloads: unknown workload {w!r} (expected one of {', '.join(WORKLOADS)})")
    a.parallel = max(a.parallel, max(levels))
    proc, ours = start_server(a)
    servers = [("ours", ours)] + ([("theirs", a.url.rstrip("/"))] if a.url else [])
    rows = []
    try:
        for name, url in servers:
            warm = {}
            one_stream(url, argparse.Namespace(**{**vars(a), "tokens": 4}), 0, threading.Barrier(1),
                       warm, for_server(name, WORKLOADS["t1"]))
            if warm[0]["error"]:
                sys.exit(f"warm-up request to {name} ({url}) failed: {warm[0]['error']}")
        for w in workloads:
            for n in levels:
                rows.append((w, n, {name: run_level(url, a, n, for_server(name, WORKLOADS[w]))
                                    for name, url in servers}))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
    print(cpu_model())
    print(f"ours: logitscope serve --model {a.model} --threads {a.threads} --parallel {a.parallel}"
          + (f"; theirs: {a.url}" if a.url else "")
          + f"; {a.tokens} tokens per stream, {a.rounds} round(s)\n")
    if a.url:
        print("| workload | streams | ours tok/s | theirs tok/s | ours / theirs | TTFT p50 ms ours / theirs "
              "| TTFT p90 ms ours / theirs | errors ours / theirs |")
        print("|---|---|---|---|---|---|---|---|")
        for w, n, r in rows:
            o, t = r["ours"], r["theirs"]
            print(f"| {w} | {n} | {o['tok_s']:.1f} | {t['tok_s']:.1f} | {ratio(o['tok_s'], t['tok_s'])} | "
                  f"{o['p50']:.0f} / {t['p50']:.0f} | {o['p90']:.0f} / {t['p90']:.0f} | "
                  f"{len(o['errors'])} / {len(t['errors'])} |")
    else:
        print("| workload | streams | generated tok/s (aggregate) | tok/s per stream | TTFT p50 ms "
              "| TTFT p90 ms | tokens | errors |")
        print("|---|---|---|---|---|---|---|---|")
        for w, n, r in rows:
            o = r["ours"]
            print(f"| {w} | {n} | {o['tok_s']:.1f} | {o['per_stream']:.1f} | {o['p50']:.0f} | "
                  f"{o['p90']:.0f} | {o['tokens']} | {len(o['errors'])} |")
    for w, n, r in rows:
        for name, res in r.items():
            for e in res["errors"][:3]:
                print(f"error ({name}, {w}, {n} streams): {e}", file=sys.stderr)


if __name__ == "__main__":
    main()
