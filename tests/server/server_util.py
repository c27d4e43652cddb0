"""Shared helpers of the `logitscope serve` end-to-end tests (see src/server/API.md): synthesise
the tiny model, start a server and wait for its `listening on` line, plain HTTP requests, an SSE
reader, /metrics parsing, RSS, and a checker that prints every result with what it got.
Standard library only."""
import http.client
import json
import os
import queue
import re
import select
import signal
import socket
import struct
import subprocess
import threading
import time
import traceback

LISTEN_RE = re.compile(r"listening on http://([0-9.]+):(\d+)")
EOS = 151645  # <|im_end|>


def short(value, limit=300):
    """A one-line rendering of `value` for messages, cut at `limit` characters."""
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


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
        head_part, _, rest = received.partition(b"\r\n\r\n")
        status_line = head_part.split(b"\r\n")[0].decode("latin-1")
        status = int(status_line.split()[1]) if len(status_line.split()) > 1 else 0
        headers = [tuple(h.decode("latin-1").split(":", 1)) for h in head_part.split(b"\r\n")[1:]
                   if b":" in h]
        m = re.search(rb"content-length:\s*(\d+)", head_part, re.I)
        if m:  # only the first answer (a server that keeps reading may answer the rest as well)
            rest = rest[:int(m.group(1))]
        return Response(status, [(k.strip(), v.strip()) for k, v in headers], rest)

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
