#!/usr/bin/env python3
"""End-to-end HTTP tests of `logitscope serve` under load and over its lifetime: step 0 equals
`logitscope next --chat`, a request's tokens and logprobs are bit-identical alone and among 15
others (batch invariance), rounds of 16 concurrent streams with flat RSS, a client disconnect
frees its sequence, a full queue answers 503, and SIGTERM (idle, and while streaming) exits 0."""
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from server_util import (CHAT, CHAT_BASE, COMP, CTX, LIVELY, METRIC_NAMES, PARALLEL, Checker,  # noqa: E402
                         Server, answer_complete, choice0, collect_stream, idle, obj, parse_answer,
                         run_main, usage, wait_for, with_fields)

c = Checker()


def cli_token_text(bs):
    """A token's bytes as `logitscope next --json` prints them (Tokenizer::token_text): valid
    UTF-8 kept, every byte of an ill-formed sequence written as \\xNN."""
    text = bytes(bs).decode("utf-8", errors="surrogateescape")
    return "".join(f"\\x{ord(ch) - 0xDC00:02X}" if 0xDC80 <= ord(ch) <= 0xDCFF else ch for ch in text)


def test_next_equality(s, binary, model):
    cli = subprocess.run([binary, "next", "--model", model, "--chat", "--prompt", "Hello",
                          "--top", "10", "--json", "--threads", "2"],
                         capture_output=True, text=True, timeout=300)
    if not c.check("logitscope next --chat --json ran", cli.returncode == 0,
                   {"rc": cli.returncode, "stderr": cli.stderr[-500:]}):
        return
    want = json.loads(cli.stdout)
    r = s.post(CHAT, {"messages": [{"role": "user", "content": "Hello"}], "max_tokens": 1,
                      "temperature": 0, "repetition_penalty": 1, "logprobs": True,
                      "top_logprobs": 10, "logprobs_mode": "raw"})
    if not c.check("server step-0 request: 200", r.status == 200, r):
        return
    entries = (choice0(r).get("logprobs") or {}).get("content") or []
    c.equal("prompt_tokens = next's n_input_tokens", usage(r).get("prompt_tokens"),
            want.get("n_input_tokens"))
    if not c.check("one logprobs entry with 10 top_logprobs",
                   len(entries) == 1 and len(entries[0].get("top_logprobs") or []) == 10, entries):
        return
    top = entries[0]["top_logprobs"]
    got_tokens = [cli_token_text(t.get("bytes") or []) for t in top]
    want_tokens = [t["text"] for t in want["top"]]
    c.equal("the top 10 tokens in next's order", got_tokens, want_tokens)
    diffs = [abs(a.get("logprob") - b["logprob"]) for a, b in zip(top, want["top"])]
    c.check("their logprobs equal next's within 1e-6", max(diffs) <= 1e-6,
            {"max_diff": max(diffs), "server": [t.get("logprob") for t in top],
             "next": [t["logprob"] for t in want["top"]]})
    c.equal("greedy chose next's top token", cli_token_text(entries[0].get("bytes") or []),
            want_tokens[0])


# ---------------------------------------------------------------------------------------------
WORDS = ("apple river stone cloud lamp orbit maple signal copper garden violet harbor "
         "thunder pixel canyon velvet").split()


def background_request(i):
    """The i-th of the different requests run next to the batch-invariance one."""
    # At most ~25 template + 80 prompt + 96 generated tokens: within --ctx 256.
    words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3 + 5 * i))
    body = {"messages": [{"role": "user", "content": f"Request {i}: {words}"}],
            "max_tokens": 40 + 4 * i, "ignore_eos": True}
    if i % 3 == 0:
        body["temperature"] = 0
    else:
        body.update(temperature=1, seed=100 + i)
    if i % 2:
        body.update(LIVELY)
    if i in (4, 8):
        body["n"] = 2
    if i % 4 == 1:
        body.update(logprobs=True, top_logprobs=2)
    return body


def first_difference(a, b):
    a, b = a or [], b or []
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else None
        y = b[k] if k < len(b) else None
        if x != y:
            return {"index": k, "alone": x, "under_load": y}
    return None


def test_batch_invariance(s):
    target = {"messages": [{"role": "user", "content": "Tell me a story about a lighthouse."}],
              "temperature": 1, "seed": 11, "max_tokens": 24, "ignore_eos": True, "logprobs": True,
              "top_logprobs": 3, **LIVELY}
    alone = s.post(CHAT, target)
    if not c.check("the request alone: 200", alone.status == 200, alone):
        return
    results, ends = {}, {}

    def run(i):
        r = s.post(CHAT, background_request(i), timeout=300)
        ends[i] = time.monotonic()
        results[i] = r

    threads = [threading.Thread(target=run, args=(i,)) for i in range(15)]
    for t in threads:
        t.start()
    running = wait_for(lambda: s.metrics().get("logitscope_requests_running", 0) >= 8, 20)
    c.check("the 15 other requests are running before the repeat is sent", running,
            s.metrics().get("logitscope_requests_running"))
    again = s.post(CHAT, target, timeout=300)
    t_end = time.monotonic()
    for t in threads:
        t.join(timeout=300)
    bad = {i: repr(r) for i, r in results.items() if r.status != 200}
    c.check("all 15 other requests: 200", len(results) == 15 and not bad, bad or len(results))
    later = sorted(round(ends[i] - t_end, 2) for i in ends if ends[i] > t_end)
    c.check("at least 3 other requests were still running when the repeat finished",
            len(later) >= 3, {"seconds_after": later})
    if not c.check("the repeat under load: 200", again.status == 200, again):
        return
    a, b = choice0(alone), choice0(again)
    c.equal("the same text alone and under load", b.get("message", {}).get("content"),
            a.get("message", {}).get("content"))
    la = (a.get("logprobs") or {}).get("content")
    lb = (b.get("logprobs") or {}).get("content")
    c.check("24 logprobs entries", isinstance(la, list) and len(la) == 24, len(la or []))
    c.check("tokens, logprobs and top_logprobs bit-identical alone and under load", la == lb,
            first_difference(la, lb) or f"identical ({len(la or [])} entries)")
    c.equal("the seed is echoed", ((obj(again).get("logitscope") or {}).get("header") or {}).get("seed"), 11)


def read_stream_usage(s, body):
    """Runs one streaming request; returns a dict describing how it went."""
    sse = s.stream(CHAT, body, timeout=300)
    if sse.status != 200 or sse.response is not None:
        return {"status": sse.status, "body": repr(sse.response)}
    chunks, done, errors = collect_stream(sse)
    sse.close()
    last = chunks[-1] if chunks else {}
    return {"status": 200, "done": done, "errors": errors, "chunks": len(chunks),
            "final_choices": last.get("choices"),
            "completion_tokens": (last.get("usage") or {}).get("completion_tokens")}


def stream_ok(res, tokens):
    return (res.get("status") == 200 and res.get("done") and not res.get("errors")
            and res.get("final_choices") == [] and res.get("completion_tokens") == tokens)


QUEUE = 64  # --queue of the main server


def warm_handler_threads(s, count):
    """Makes each HTTP handler thread tokenize once: `count` /tokenize requests are sent but for
    the last byte of their bodies, so that each thread waits in one of them, then completed. A
    thread's first tokenization allocates its word cache (bounded, ~1.5 MiB: src/tokenizer/bpe.h),
    which would otherwise show as growth over the load rounds as they reach unused threads.
    Returns the statuses (0: no answer)."""
    body = json.dumps({"prompt": "Warm up the tokenizer cache of this thread."}).encode()
    head = (f"POST /tokenize HTTP/1.1\r\nHost: {s.host}:{s.port}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    socks = []
    try:
        for _ in range(count):  # a connect may wait for a SYN retransmit (the listen backlog is 5)
            sock = socket.create_connection((s.host, s.port), timeout=20)
            sock.sendall(head + body[:-1])
            socks.append(sock)
        time.sleep(0.5)  # every handler thread now waits for the rest of one body
        for sock in socks:
            sock.sendall(body[-1:])
        statuses = []
        for sock in socks:
            data = b""
            while not answer_complete(data):
                part = sock.recv(65536)
                if not part:
                    break
                data += part
            statuses.append(parse_answer(data).status if data else 0)
        return statuses
    finally:
        for sock in socks:
            sock.close()


def test_load(s):
    threads = PARALLEL + QUEUE + 8
    before = s.rss_kib()
    statuses = warm_handler_threads(s, threads)
    c.check(f"warm-up: {threads} /tokenize requests held at once (one per handler thread): all 200",
            statuses == [200] * threads, {"statuses": sorted(set(statuses)), "count": len(statuses),
                                          "rss_mib": [round(before / 1024, 1),
                                                      round(s.rss_kib() / 1024, 1)]})
    rss = []
    for rnd in range(1, 4):
        results = {}

        def run(i):
            try:
                results[i] = read_stream_usage(s, {
                    "messages": [{"role": "user", "content": f"Load round {rnd}, stream {i}."}],
                    "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 64,
                    "ignore_eos": True, "temperature": 1, "seed": 1000 * rnd + i, **LIVELY})
            except Exception as e:  # noqa: BLE001
                results[i] = {"exception": f"{type(e).__name__}: {e}"}

        t0 = time.monotonic()
        threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        secs = time.monotonic() - t0
        bad = {i: r for i, r in results.items() if not stream_ok(r, 64)}
        c.check(f"load round {rnd}: 16 streams x 64 tokens, all complete with usage 64 "
                f"({secs:.1f} s, {16 * 64 / secs:.0f} tok/s)", len(results) == 16 and not bad,
                bad or "16 ok")
        rss.append(s.rss_kib())
        print(f"   RSS after round {rnd}: {rss[-1] / 1024:.1f} MiB", flush=True)
    c.check("RSS flat: round 3 <= round 1 x 1.10 + 8 MiB", rss[2] <= rss[0] * 1.10 + 8 * 1024,
            {"rss_mib": [round(x / 1024, 1) for x in rss]})
    m = wait_for(lambda: idle(s), 10)
    c.check("after the load: nothing running or waiting, KV blocks only the prefix cache's", bool(m),
            {k: s.metrics().get(k) for k in METRIC_NAMES[3:6]})


# ---------------------------------------------------------------------------------------------
LONG_STREAM = {"messages": [{"role": "user", "content": "Write a very long essay."}], "stream": True,
               "max_tokens": 3000, "ignore_eos": True, "temperature": 1, "seed": 1, **LIVELY}


def first_events(sse, n):
    got = []
    for ev in sse.events():
        got.append(ev)
        if len(got) >= n:
            break
    return got


def test_disconnect(s):
    before = s.metrics()
    sse = s.stream(CHAT, LONG_STREAM)
    if not c.check("long stream started: 200", sse.status == 200 and sse.response is None,
                   sse.response or sse.status):
        return
    evs = first_events(sse, 2)
    c.check("read the first two SSE events", len(evs) == 2 and all(isinstance(e, dict) for e in evs), evs)
    # The gauges are published once per scheduler step: poll briefly rather than race the step
    # that produced the events just read.
    def streaming():
        m = s.metrics()
        ok = m.get("logitscope_requests_running", 0) >= 1 and m.get("logitscope_kv_blocks_in_use", 0) > 0
        return m if ok else None
    m = wait_for(streaming, 2) or s.metrics()
    c.check("while streaming: requests_running >= 1, kv_blocks_in_use > 0",
            m.get("logitscope_requests_running", 0) >= 1 and m.get("logitscope_kv_blocks_in_use", 0) > 0,
            {k: m.get(k) for k in METRIC_NAMES[3:6]})
    sse.abort()
    t0 = time.monotonic()
    m = wait_for(lambda: idle(s), 10)
    c.check("after the client went away: requests_running 0, KV blocks only the prefix cache's, within 10 s",
            bool(m), {"seconds": round(time.monotonic() - t0, 2),
                      **{k: s.metrics().get(k) for k in METRIC_NAMES[3:6]}})
    gen = "logitscope_generation_tokens_total"
    g1 = s.metrics().get(gen, 0)
    time.sleep(1.0)
    g2 = s.metrics().get(gen, 0)
    c.check("the cancelled request stopped generating (counter still, far below 3000)",
            g2 == g1 and g2 - before.get(gen, 0) < 3000,
            {"grew_during_1s": g2 - g1, "total_since_start": g2 - before.get(gen, 0)})


def test_queue(s):
    """--parallel 1 --queue 1: of three concurrent long streams, one runs, one waits, and the
    rest are refused with 503 and Retry-After."""
    results = {}
    barrier = threading.Barrier(3)

    def run(i):
        body = {**LONG_STREAM, "max_tokens": 300, "seed": i, "stream_options": {"include_usage": True}}
        barrier.wait()
        sse = s.stream(CHAT, body, timeout=300)
        if sse.response is not None:
            results[i] = {"status": sse.status, "retry_after": sse.headers.get("retry-after"),
                          "error": sse.response.error() or sse.response.text}
            return
        chunks, done, errors = collect_stream(sse)
        sse.close()
        last = chunks[-1] if chunks else {}
        results[i] = {"status": 200, "done": done, "errors": errors,
                      "completion_tokens": (last.get("usage") or {}).get("completion_tokens")}

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    max_waiting = 0
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and any(t.is_alive() for t in threads):
        max_waiting = max(max_waiting, s.metrics().get("logitscope_requests_waiting", 0))
        time.sleep(0.05)
    for t in threads:
        t.join(timeout=300)
    refused = [r for r in results.values() if r["status"] == 503]
    served = [r for r in results.values() if r["status"] != 503]
    c.check("at least one of 3 is refused: 503, Retry-After: 1, server_error/overloaded",
            len(refused) >= 1 and all(r["retry_after"] == "1" and isinstance(r["error"], dict)
                                      and r["error"].get("type") == "server_error"
                                      and r["error"].get("code") == "overloaded" for r in refused),
            results)
    c.check("the others stream all 300 tokens", len(served) >= 1 and all(
        r["status"] == 200 and r["done"] and not r["errors"] and r["completion_tokens"] == 300
        for r in served), served)
    if len(served) >= 2:
        c.check("requests_waiting was 1 while the second request waited", max_waiting >= 1, max_waiting)
    r = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=2))
    c.check("after the queue drained: a new request is served", r.status == 200, r)


def test_sigterm_while_streaming(s):
    sse = s.stream(CHAT, LONG_STREAM)
    if not c.check("stream before SIGTERM: 200", sse.status == 200 and sse.response is None,
                   sse.response or sse.status):
        return
    first_events(sse, 2)
    ended = {}

    def drain():
        try:
            chunks, done, errors = collect_stream(sse)
            ended.update(chunks=len(chunks), done=done, errors=errors,
                         finish=[ch["choices"][0].get("finish_reason") for ch in chunks
                                 if ch.get("choices") and ch["choices"][0].get("finish_reason")])
        except Exception as e:  # noqa: BLE001 - a reset connection is an acceptable ending
            ended.update(exception=f"{type(e).__name__}: {e}")
        ended["at"] = time.monotonic()

    reader = threading.Thread(target=drain)
    reader.start()
    t0 = time.monotonic()
    rc = s.stop(timeout=15)
    c.check("SIGTERM while a stream runs: exit status 0 within 15 s", rc == 0,
            {"rc": rc, "seconds": s.exit_seconds})
    reader.join(timeout=20)
    c.check("the running stream ended (it was cancelled or finished)", "at" in ended,
            {**ended, "at": round(ended["at"] - t0, 2) if "at" in ended else None})
    # API.md: each choice ends with a chunk carrying its finish_reason; an error after the start
    # is an error event. Either way a client must be able to tell the answer was cut short.
    c.check("the cut stream ends with a finish_reason chunk or an error event, not silently",
            bool(ended.get("finish") or ended.get("errors")),
            {k: ended.get(k) for k in ("finish", "errors", "done", "exception")})


def test_no_queue(s):
    """--parallel 4 --queue 0: whatever fits the running slots is served; only the rest is 503."""
    results = {}
    barrier = threading.Barrier(4)

    def run(i):
        barrier.wait()
        results[i] = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=8, seed=i)).status

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    c.equal("4 concurrent requests on 4 slots with no queue: all 200", sorted(results.values()), [200] * 4)
    r = s.post(COMP, {"prompt": ["a", "b"], "max_tokens": 2})
    c.equal("2 prompts on an idle server with no queue: 200", r.status, 200)
    r = s.post(COMP, {"prompt": ["a", "b"], "max_tokens": 2, "n": 2})
    c.equal("2 prompts x n 2 = 4 sequences on 4 slots: 200", r.status, 200)


def test_slow_clients(s):
    """100 connections that send a header line every 0.5 s (slowloris) tie up no thread that
    others need: /health and a 1-token chat answer within 3 s while they trickle; the server
    closes them once --header-timeout-ms (1500 here) has passed without a complete request."""
    socks = []
    try:
        for _ in range(100):
            sock = socket.create_connection((s.host, s.port), timeout=20)
            sock.sendall(f"GET /health HTTP/1.1\r\nHost: {s.host}\r\n".encode())
            socks.append(sock)
        stop = threading.Event()

        def trickle():
            while not stop.is_set():
                for sock in socks:
                    try:
                        sock.sendall(b"X-Slow: 1\r\n")
                    except OSError:
                        pass
                stop.wait(0.5)
        t = threading.Thread(target=trickle, daemon=True)
        t.start()
        time.sleep(0.3)
        t0 = time.monotonic()
        h = s.get("/health", timeout=10)
        t_health = time.monotonic() - t0
        c.check("/health answers within 3 s with 100 slow clients connected",
                h.status == 200 and t_health < 3.0, {"status": h.status, "seconds": round(t_health, 2)})
        t0 = time.monotonic()
        r = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=1), timeout=10)
        t_chat = time.monotonic() - t0
        c.check("a 1-token chat answers within 3 s with 100 slow clients connected",
                r.status == 200 and t_chat < 3.0, {"status": r.status, "seconds": round(t_chat, 2)})
        # Past the deadline every slow connection is closed by the server: a read gives EOF.
        time.sleep(2.0)
        stop.set()
        t.join()
        closed = 0
        for sock in socks:
            sock.settimeout(3)
            try:
                closed += 1 if sock.recv(4096) == b"" else 0
            except OSError:
                closed += 1  # reset by the server
        c.check("every slow connection closed by the server after the header deadline",
                closed == len(socks), {"closed": closed, "of": len(socks)})
        m = s.metrics()
        c.check("/metrics counts them: logitscope_connections_timed_out_total >= 100",
                m.get("logitscope_connections_timed_out_total", 0) >= 100,
                {k: m.get(k) for k in ("logitscope_connections_timed_out_total",
                                       "logitscope_connections_open")})
    finally:
        for sock in socks:
            sock.close()


def test_abandoned_requests(s):
    """16 non-streaming requests whose clients leave are cancelled within a step or two: a new
    request answers within 5 s, and /metrics counts the abandoned ones."""
    body = json.dumps(with_fields(CHAT_BASE, max_tokens=3000, ignore_eos=True, **LIVELY)).encode()
    head = (f"POST {CHAT} HTTP/1.1\r\nHost: {s.host}:{s.port}\r\nContent-Type: application/json"
            f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    socks = []
    for _ in range(16):
        sock = socket.create_connection((s.host, s.port), timeout=20)
        sock.sendall(head + body)
        socks.append(sock)
    time.sleep(0.5)
    for sock in socks:
        sock.close()
    t0 = time.monotonic()
    r = s.post(CHAT, with_fields(CHAT_BASE, max_tokens=1), timeout=60)
    seconds = time.monotonic() - t0
    c.check("after 16 abandoned requests a 1-token chat answers within 5 s",
            r.status == 200 and seconds < 5.0, {"status": r.status, "seconds": round(seconds, 2)})
    m = wait_for(lambda: idle(s), 10)
    c.check("the abandoned requests freed their sequences (nothing running within 10 s)", bool(m),
            {k: s.metrics().get(k) for k in METRIC_NAMES[3:6]})
    ab = s.metrics().get("logitscope_requests_abandoned_total", 0)
    c.check("/metrics: logitscope_requests_abandoned_total == 16", ab == 16, ab)


# ---------------------------------------------------------------------------------------------
def run(binary, model, servers):
    s1 = Server(binary, model, ["--parallel", str(PARALLEL), "--queue", str(QUEUE), "--threads", "2",
                                "--ctx", str(CTX)])
    servers.append(s1)
    c.section("step 0 equals `logitscope next --chat`", test_next_equality, s1, binary, model)
    c.section("batch invariance", test_batch_invariance, s1)
    c.section("load: 3 rounds of 16 streams, flat RSS", test_load, s1)
    print("\n== SIGTERM (idle server)")
    rc = s1.stop(timeout=15)
    c.check("SIGTERM: exit status 0 within 15 s", rc == 0, {"rc": rc, "seconds": s1.exit_seconds})

    s2 = Server(binary, model, ["--parallel", "1", "--queue", "1", "--threads", "2", "--ctx", "4096"])
    servers.append(s2)
    c.section("client disconnect frees the sequence", test_disconnect, s2)
    c.section("queue full: 503", test_queue, s2)
    c.section("SIGTERM while streaming", test_sigterm_while_streaming, s2)

    s3 = Server(binary, model, ["--parallel", "4", "--queue", "0", "--threads", "2", "--ctx", "256"])
    servers.append(s3)
    c.section("no queue: the running slots still serve", test_no_queue, s3)

    s4 = Server(binary, model, ["--parallel", "4", "--queue", "16", "--threads", "2", "--ctx", "4096",
                                "--header-timeout-ms", "1500"])
    servers.append(s4)
    c.section("slow clients stall nothing and are closed", test_slow_clients, s4)
    c.section("abandoned non-streaming requests are cancelled", test_abandoned_requests, s4)


if __name__ == "__main__":
    run_main(c, "ls_server_http_load_", run)
