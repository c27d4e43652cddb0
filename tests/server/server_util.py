"""Shared helpers of the `logitscope serve` end-to-end tests (see docs/server-api.md): synthesise
the tiny model, start a server and wait for its `listening on` line, plain HTTP requests, an SSE
reader, raw-socket exchanges, /metrics parsing, RSS, a checker that prints every result with what
it got, and what test_http.py and test_http_load.py share (request bases, the main() harness).
Standard library only."""
import argparse
import http.client
import json
import os
import queue
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

LISTEN_RE = re.compile(r"listening on http://([0-9.]+):(\d+)")
EOS = 151645  # <|im_end|>

# What the raw HTTP tests (test_http.py, test_http_load.py) share: routes, the main server's
# --ctx and --parallel, the model's name (its directory), and the smallest valid requests.
CHAT = "/v1/chat/completions"
COMP = "/v1/completions"
CTX = 256
PARALLEL = 16
MODEL_NAME = "tiny"
# The tiny model mostly repeats its last input token (tied embeddings, two layers), so
# unpenalised output is "\n" over and over; repetition_penalty 3 makes it produce varied tokens.
LIVELY = {"repetition_penalty": 3}
DEL = object()  # marks a field to remove in with_fields
CHAT_BASE = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
COMP_BASE = {"prompt": "Hi", "max_tokens": 2}
METRIC_NAMES = ["logitscope_prompt_tokens_total", "logitscope_generation_tokens_total",
                "logitscope_requests_total", "logitscope_requests_running",
                "logitscope_requests_waiting", "logitscope_kv_blocks_in_use",
                "logitscope_time_to_first_token_seconds_bucket",
                "logitscope_time_per_output_token_seconds_bucket",
                "logitscope_request_latency_seconds_bucket"]


def short(value, limit=300):
    """A one-line rendering of `value` for messages, cut at `limit` characters."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def with_fields(base, **changes):
    """A deep copy of the request `base` with fields set (or removed, with DEL)."""
    body = json.loads(json.dumps(base))
    for k, v in changes.items():
        if v is DEL:
            body.pop(k, None)
        else:
            body[k] = v
    return body


def obj(r):
    """The response's JSON object ({} when the body is not one)."""
    return r.json if isinstance(r.json, dict) else {}


def usage(r):
    return obj(r).get("usage") or {}


def choice0(r):
    choices = obj(r).get("choices") or [{}]
    return choices[0]


def wait_for(pred, timeout, interval=0.05):
    """Polls pred() until it returns a truthy value or timeout s pass; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


class Checker:
    """Records results; every check prints ok/FAIL, its name and what it got."""

    def __init__(self):
        self.failures = []
        self.count = 0

    def check(self, name, ok, got=None):
        self.count += 1
        print(("ok   " if ok else "FAIL ") + name + ("" if got is None else " -- got: " + short(got)),
              flush=True)
        if not ok:
            self.failures.append(name)
        return ok

    def equal(self, name, got, want):
        return self.check(name, got == want, got if got == want else {"got": got, "want": want})

    def section(self, name, fn, *args):
        """Runs fn(*args); an exception is one failure (with its traceback), not the end of the run."""
        print(f"\n== {name}", flush=True)
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - every error is reported, then the next section runs
            traceback.print_exc()
            self.check(f"{name}: ran without an exception", False, f"{type(e).__name__}: {e}")

    def summary(self):
        print(f"\n{self.count - len(self.failures)}/{self.count} checks passed", flush=True)
        for f in self.failures:
            print("  FAILED: " + f)
        return 1 if self.failures else 0


def synth_tiny(binary, tokenizer_dir, parent, name="tiny"):
    """The tiny random Qwen2.5-shaped model with the real tokenizer, in parent/name."""
    out = os.path.join(parent, name)
    r = subprocess.run([binary, "synth", "--shape", "tiny", "--dtype", "bf16", "--seed", "3",
                        "--out", out, "--tokenizer-from", tokenizer_dir],
                       capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"synth failed ({r.returncode}): {r.stdout}{r.stderr}")
    return out


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = {k.lower(): v for k, v in headers}
        self.body = body
        self.text = body.decode("utf-8", errors="replace")
        try:
            self.json = json.loads(self.text)
        except ValueError:
            self.json = None

    def error(self):
        """The `error` object of an error answer ({} when there is none)."""
        if isinstance(self.json, dict) and isinstance(self.json.get("error"), dict):
            return self.json["error"]
        return {}

    def __repr__(self):
        return f"HTTP {self.status} {short(self.text, 400)}"


def answer_complete(received):
    """True once `received` holds one whole HTTP answer (by Content-Length, or a chunked body's
    last chunk)."""
    head, sep, rest = received.partition(b"\r\n\r\n")
    if not sep:
        return False
    m = re.search(rb"content-length:\s*(\d+)", head, re.I)
    if m:
        return len(rest) >= int(m.group(1))
    if re.search(rb"transfer-encoding:\s*chunked", head, re.I):
        return rest.startswith(b"0\r\n\r\n") or b"\r\n0\r\n\r\n" in rest
    return False


def parse_answer(received):
    """The first HTTP answer in the bytes `received` as a Response (status 0 without a status
    line). A chunked body is joined."""
    head_part, _, rest = received.partition(b"\r\n\r\n")
    status_line = head_part.split(b"\r\n")[0].decode("latin-1")
    fields = status_line.split()
    status = int(fields[1]) if len(fields) > 1 and fields[0].startswith("HTTP/") \
        and fields[1].isdigit() else 0
    headers = [tuple(h.decode("latin-1").split(":", 1)) for h in head_part.split(b"\r\n")[1:]
               if b":" in h]
    m = re.search(rb"content-length:\s*(\d+)", head_part, re.I)
    if m:  # only the first answer (a server that keeps reading may answer the rest as well)
        rest = rest[:int(m.group(1))]
    elif re.search(rb"transfer-encoding:\s*chunked", head_part, re.I):
        body = b""
        while True:
            size_line, sep, rest = rest.partition(b"\r\n")
            try:
                size = int(size_line.split(b";")[0], 16)
            except ValueError:
                break
            if not sep or size == 0:
                break
            body, rest = body + rest[:size], rest[size + 2:]
        rest = body
    return Response(status, [(k.strip(), v.strip()) for k, v in headers], rest)


class RawAnswer:
    """What came back on a raw socket: `data` (bytes), `ended` ('answered', 'closed', 'reset',
    'timeout' or an error), `seconds`, `send_error`; `status` and `response` (a Response) when
    a status line arrived, else None."""

    def __init__(self, data, ended, seconds, send_error=None):
        self.data, self.ended, self.seconds, self.send_error = data, ended, seconds, send_error
        self.response = parse_answer(data) if data.startswith(b"HTTP/") else None
        self.status = self.response.status if self.response is not None else None

    def describe(self):
        return {"status": self.status, "ended": self.ended, "seconds": round(self.seconds, 2),
                "bytes": len(self.data), "send_error": self.send_error,
                "answer": short(self.data.decode("latin-1"), 400) if self.data else None}


class SSEStream:
    """One streaming request. `status`/`response` are set on open; `events()` yields each
    `data:` payload parsed as JSON, or the string "[DONE]"; `abort()` closes the socket."""

    def __init__(self, host, port, path, body, headers, timeout=120):
        self.conn = http.client.HTTPConnection(host, port, timeout=timeout)
        data = json.dumps(body).encode()
        self.conn.request("POST", path, body=data,
                          headers={"Content-Type": "application/json", **headers})
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = {k.lower(): v for k, v in self.resp.getheaders()}
        self.response = None  # the whole answer when it is not a stream (an error)
        if self.status != 200 or "text/event-stream" not in self.headers.get("content-type", ""):
            self.response = Response(self.status, self.resp.getheaders(), self.resp.read())
            self.close()

    def events(self):
        if self.response is not None:
            return
        data_lines = []
        while True:
            line = self.resp.readline()
            if not line:  # the connection ended
                if data_lines:
                    yield self._parse(data_lines)
                return
            line = line.decode("utf-8").rstrip("\r\n")
            if line == "":
                if data_lines:
                    event = self._parse(data_lines)
                    data_lines = []
                    yield event
                    if event == "[DONE]":
                        return
            elif line.startswith("data:"):
                data_lines.append(line[6:] if line.startswith("data: ") else line[5:])
            # other fields (comments, event:, id:) are ignored

    @staticmethod
    def _parse(lines):
        payload = "\n".join(lines)
        if payload == "[DONE]":
            return payload
        return json.loads(payload)

    def abort(self):
        """Closes the connection abruptly, as a client that went away."""
        try:
            sock = self.conn.sock
            if sock is not None:
                # linger on, 0 s: close() resets the connection, as a killed client would
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close()

    def close(self):
        try:
            self.resp.close()
        except Exception:  # noqa: BLE001
            pass
        self.conn.close()


def collect_stream(sse):
    """Reads a whole stream: (chunks, done_seen, error_events)."""
    chunks, errors, done = [], [], False
    for ev in sse.events():
        if ev == "[DONE]":
            done = True
        elif isinstance(ev, dict) and "error" in ev:
            errors.append(ev["error"])
        else:
            chunks.append(ev)
    return chunks, done, errors


def parse_metrics(text):
    """Prometheus text -> {name: value}, summed over label sets (enough for totals and gauges)."""
    values = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
        if m:
            try:
                values[m.group(1)] = values.get(m.group(1), 0.0) + float(m.group(3))
            except ValueError:
                pass
    return values


class Server:
    """A `logitscope serve` process on a free port (--port 0)."""

    def __init__(self, binary, model, extra_args, api_key=None, start_timeout=120):
        self.api_key = api_key
        self.args = [binary, "serve", "--model", model, "--port", "0"] + list(extra_args)
        if api_key is not None:
            self.args += ["--api-key", api_key]
        print("starting: " + " ".join(self.args), flush=True)
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.log = []  # every stdout/stderr line, for the failure report
        self.host, self.port = None, None
        self.exit_seconds = None
        lines = queue.Queue()
        threading.Thread(target=self._drain, args=(self.proc.stdout, "out", lines), daemon=True).start()
        threading.Thread(target=self._drain, args=(self.proc.stderr, "err", None), daemon=True).start()
        deadline = time.monotonic() + start_timeout
        while self.port is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise RuntimeError(f"no 'listening on' line within {start_timeout} s:\n{self.log_tail()}")
            try:
                line = lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.proc.poll() is not None and lines.empty():
                    raise RuntimeError(f"server exited with {self.proc.returncode} before listening:\n"
                                       f"{self.log_tail()}")
                continue
            if line is None:
                continue
            m = LISTEN_RE.search(line)
            if m:
                self.host, self.port = m.group(1), int(m.group(2))
        print(f"server pid {self.proc.pid} listening on {self.host}:{self.port}", flush=True)

    def _drain(self, pipe, tag, lines):
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            self.log.append(f"[{tag}] {line}")
            if lines is not None:
                lines.put(line)
        if lines is not None:
            lines.put(None)

    def log_tail(self, n=40):
        return "\n".join(self.log[-n:])

    def _auth(self, auth):
        """auth=True: the server's key (if any); False/None: no header; a string: that key."""
        if auth is True:
            return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        if isinstance(auth, str):
            return {"Authorization": f"Bearer {auth}"}
        return {}

    def request(self, method, path, body=None, raw=None, auth=True, headers=None, timeout=120):
        """One request on a fresh connection. `body` is sent as JSON, `raw` as bytes."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        try:
            h = {**self._auth(auth), **(headers or {})}
            data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
            if data is not None:
                h.setdefault("Content-Type", "application/json")
            conn.request(method, path, body=data, headers=h)
            r = conn.getresponse()
            return Response(r.status, r.getheaders(), r.read())
        finally:
            conn.close()

    def post(self, path, body, **kw):
        return self.request("POST", path, body=body, **kw)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def stream(self, path, body, auth=True, timeout=120):
        return SSEStream(self.host, self.port, path, body, self._auth(auth), timeout)

    def send_oversized(self, path, total_bytes, chunk=16384):
        """POSTs a JSON body of total_bytes in chunks, stopping as soon as the server answers
        (a server may reject by Content-Length without reading the body). Returns the Response."""
        body = b'{"prompt": "' + b"a" * max(0, total_bytes - 15) + b'"}'
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in self._auth(True).items()) + "\r\n").encode()
        sock = socket.create_connection((self.host, self.port), timeout=30)
        received = b""
        try:
            sock.sendall(head)
            for i in range(0, len(body), chunk):
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    break
                try:
                    sock.sendall(body[i:i + chunk])
                except OSError:
                    break
            sock.settimeout(30)
            while True:
                try:
                    part = sock.recv(65536)
                except OSError:
                    break
                if not part:
                    break
                received += part
                if b"\r\n\r\n" in received:
                    head_part, _, rest = received.partition(b"\r\n\r\n")
                    m = re.search(rb"content-length:\s*(\d+)", head_part, re.I)
                    if m and len(rest) >= int(m.group(1)):
                        break
        finally:
            sock.close()
        if not received:
            return Response(0, [], b"(no answer: the connection closed before any byte arrived)")
        return parse_answer(received)

    def raw(self, data, timeout=5.0, shut_write=False):
        """Sends the bytes `data` as they are (no Host or key added) on a fresh socket, then
        (after shutting down its write side if `shut_write`) reads until the server closes, one
        whole answer has arrived, or `timeout` s pass without a byte. Returns a RawAnswer."""
        t0 = time.monotonic()
        received, ended, send_error = b"", None, None
        try:
            sock = socket.create_connection((self.host, self.port), timeout=timeout)
        except OSError as e:
            return RawAnswer(b"", "connect failed", time.monotonic() - t0, f"{type(e).__name__}: {e}")
        try:
            try:
                sock.sendall(data)
                if shut_write:
                    sock.shutdown(socket.SHUT_WR)
            except OSError as e:  # the server may answer and close before it read everything
                send_error = f"{type(e).__name__}: {e}"
            while ended is None:
                try:
                    part = sock.recv(65536)
                except socket.timeout:
                    ended = "timeout"
                    break
                except OSError as e:
                    ended = "reset" if isinstance(e, ConnectionResetError) else f"{type(e).__name__}: {e}"
                    break
                if not part:
                    ended = "closed"
                    break
                received += part
                if answer_complete(received):
                    ended = "answered"
        finally:
            sock.close()
        return RawAnswer(received, ended, time.monotonic() - t0, send_error)

    def metrics(self):
        r = self.get("/metrics")
        if r.status != 200:
            raise RuntimeError(f"/metrics: {r}")
        return parse_metrics(r.text)

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS line")

    def stop(self, timeout=15):
        """SIGTERM, then waits up to `timeout` s. Returns the exit status (None if still running,
        then it is killed). `exit_seconds` is how long the exit took."""
        if self.proc.poll() is not None:
            return self.proc.returncode
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=timeout)
            self.exit_seconds = time.monotonic() - t0
            return rc
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def idle(s):
    """The metrics once nothing runs and the only KV blocks in use are the prefix cache's."""
    m = s.metrics()
    return m if (m.get("logitscope_requests_running") == 0
                 and m.get("logitscope_requests_waiting") == 0
                 and m.get("logitscope_kv_blocks_in_use", -1)
                 <= m.get("logitscope_prefix_cache_blocks", 0)) else None


def run_main(checker, tmp_prefix, body):
    """The main() of an HTTP test file: parses --logitscope and --tokenizer-from, makes the tiny
    model (named MODEL_NAME) in a temporary directory and calls body(binary, model, servers).
    Every Server put in `servers` is killed at the end, with its log tail printed when a check
    failed. Exits with the checker's summary."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--logitscope", required=True)
    ap.add_argument("--tokenizer-from", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix=tmp_prefix)
    servers = []
    try:
        model = synth_tiny(a.logitscope, a.tokenizer_from, tmp, MODEL_NAME)
        body(a.logitscope, model, servers)
    except Exception as e:  # noqa: BLE001 - no model, or a server that did not start
        traceback.print_exc()
        checker.check("the model was made and the servers started", False, f"{type(e).__name__}: {e}")
    finally:
        for srv in servers:
            if checker.failures:
                print(f"\n--- server {' '.join(srv.args[2:])} log tail ---\n{srv.log_tail()}")
            srv.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(checker.summary())
