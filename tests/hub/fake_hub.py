#!/usr/bin/env python3
"""A loopback fake of the Hugging Face Hub for the `logitscope pull` tests (no network).

Two HTTP servers on 127.0.0.1, ephemeral ports: the hub (API and resolve routes) and an LFS
store on another port, i.e. another origin, as the real Hub's CDN is another host:

  GET  /api/models/{org}/{name}/revision/{rev}[?blobs=true]   {"id", "sha", "siblings": [...]}
  HEAD|GET /{org}/{name}/resolve/{rev}/{path}   a regular file: 200 with ETag "<git blob sha1>";
       an LFS file (*.safetensors, *.gguf, tokenizer.json): 302 to the store with
       X-Linked-Etag "<sha256>" and X-Linked-Size; both with X-Repo-Commit
  GET  (store) /lfs/{sha256}                     the bytes, Range "bytes=N-" answered with 206

Faults are set per test in `hub.faults` (see Hub.__init__); every request is logged with its
method, server, path and headers in `hub.log`. Errors carry X-Error-Code as the Hub's do.
"""
import hashlib
import http.server
import json
import threading
import time
import urllib.parse

LFS_SUFFIXES = (".safetensors", ".gguf")


def is_lfs(path):
    return path.endswith(LFS_SUFFIXES) or path.split("/")[-1] == "tokenizer.json"


def git_blob_sha1(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def etag_of(path, data):
    """The blob name huggingface_hub uses: sha256 for LFS files, the git blob id otherwise."""
    return sha256(data) if is_lfs(path) else git_blob_sha1(data)


class Repo:
    def __init__(self):
        self.refs = {}     # branch or tag -> commit
        self.commits = {}  # commit -> {path: bytes}
        self.token = None  # set: a private repo readable only with this token

    def add_commit(self, files, branch="main"):
        digest = hashlib.sha1(repr(sorted((p, sha256(d)) for p, d in files.items())).encode())
        commit = hashlib.sha1(digest.digest() + str(len(self.commits)).encode()).hexdigest()
        self.commits[commit] = dict(files)
        self.refs[branch] = commit
        return commit

    def commit_for(self, rev):
        if rev in self.commits:
            return rev
        return self.refs.get(rev)


class Hub:
    def __init__(self):
        self.repos = {}
        self.blobs = {}  # sha256 -> bytes (the LFS store)
        self.log = []
        self.lock = threading.Lock()
        self.active_store_gets = 0
        self.max_active_store_gets = 0
        # Faults (tests set and reset them):
        #   drop_after: {sha256: n}  the next store GET of that blob sends n bytes, then closes
        #   corrupt: set of sha256   the store serves those blobs with one byte flipped
        #   expired: set of sha256   the store answers 403, as for a signed link that expired
        #   slow: set of sha256      the store sends the headers of those, then nothing for 60 s
        #   slow_api: bool           the API answers nothing for 60 s
        #   missing: set of paths    resolve answers 404 EntryNotFound for those
        #   linked_size: {path: n}   X-Linked-Size lies (a huge file: the disk-space check)
        #   store_delay: seconds     per 64 KiB chunk sent by the store (parallel downloads)
        self.faults = {}
        self.hub_server = self._server(self._hub_handler())
        self.store_server = self._server(self._store_handler())
        self.endpoint = "http://127.0.0.1:%d" % self.hub_server.server_address[1]
        self.store = "http://127.0.0.1:%d" % self.store_server.server_address[1]

    def _server(self, handler):
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    def stop(self):
        for s in (self.hub_server, self.store_server):
            s.shutdown()
            s.server_close()

    def repo(self, repo_id):
        return self.repos.setdefault(repo_id, Repo())

    def add_commit(self, repo_id, files, branch="main"):
        for path, data in files.items():
            if is_lfs(path):
                self.blobs[sha256(data)] = data
        return self.repo(repo_id).add_commit(files, branch)

    def requests(self, server=None, method=None):
        with self.lock:
            return [r for r in self.log if (server is None or r["server"] == server)
                    and (method is None or r["method"] == method)]

    def clear(self):
        with self.lock:
            self.log.clear()
        self.faults = {}
        self.max_active_store_gets = 0

    def _record(self, handler, server):
        with self.lock:
            self.log.append({"server": server, "method": handler.command, "path": handler.path,
                             "headers": {k.lower(): v for k, v in handler.headers.items()}})

    def _hub_handler(hub):
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def error(self, status, code, message):
                body = json.dumps({"error": message}).encode()
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            def authorized(self, repo):
                if repo.token is None:
                    return True
                return self.headers.get("Authorization") == "Bearer " + repo.token

            def do_HEAD(self):
                self.handle_any()

            def do_GET(self):
                self.handle_any()

            def handle_any(self):
                hub._record(self, "hub")
                url = urllib.parse.urlsplit(self.path)
                parts = url.path.split("/")
                if url.path.startswith("/api/models/") and len(parts) >= 7 and parts[5] == "revision":
                    return self.api(parts[3] + "/" + parts[4], urllib.parse.unquote(parts[6]),
                                    "blobs=true" in url.query)
                if len(parts) >= 6 and parts[3] == "resolve":
                    return self.resolve(parts[1] + "/" + parts[2], urllib.parse.unquote(parts[4]),
                                        urllib.parse.unquote("/".join(parts[5:])))
                self.error(404, "EntryNotFound", "no such route")

            def lookup(self, repo_id, rev):
                repo = hub.repos.get(repo_id)
                if repo is None or not self.authorized(repo):
                    # The real Hub answers 401 for both, so as not to reveal private repos.
                    if repo is not None:
                        self.error(401, "GatedRepo", "Access to model %s is restricted." % repo_id)
                    else:
                        self.error(404, "RepoNotFound", "Repository not found")
                    return None, None
                commit = repo.commit_for(rev)
                if commit is None:
                    self.error(404, "RevisionNotFound", "Invalid rev id: " + rev)
                    return None, None
                return repo, commit

            def api(self, repo_id, rev, blobs):
                if hub.faults.get("slow_api"):
                    time.sleep(60)
                    return
                repo, commit = self.lookup(repo_id, rev)
                if repo is None:
                    return
                siblings = []
                for path, data in repo.commits[commit].items():
                    s = {"rfilename": path}
                    if blobs:
                        s["size"] = len(data)
                        s["blobId"] = git_blob_sha1(data)
                        if is_lfs(path):
                            s["lfs"] = {"sha256": sha256(data), "size": len(data),
                                        "pointerSize": 134}
                    siblings.append(s)
                body = json.dumps({"id": repo_id, "modelId": repo_id, "sha": commit,
                                   "siblings": siblings}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def resolve(self, repo_id, rev, path):
                repo, commit = self.lookup(repo_id, rev)
                if repo is None:
                    return
                files = repo.commits[commit]
                if path not in files or path in hub.faults.get("missing", ()):
                    return self.error(404, "EntryNotFound", "%s does not exist" % path)
                data = files[path]
                if is_lfs(path):
                    digest = sha256(data)
                    size = hub.faults.get("linked_size", {}).get(path, len(data))
                    self.send_response(302)
                    self.send_header("Location", "%s/lfs/%s?signature=fake" % (hub.store, digest))
                    self.send_header("X-Repo-Commit", commit)
                    self.send_header("X-Linked-Etag", '"%s"' % digest)
                    self.send_header("X-Linked-Size", str(size))
                    self.send_header("ETag", '"%s"' % git_blob_sha1(b"pointer " + digest.encode()))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", '"%s"' % git_blob_sha1(data))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command == "GET":
                    self.wfile.write(data)

        return Handler

    def _store_handler(hub):
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                hub._record(self, "store")
                digest = urllib.parse.urlsplit(self.path).path.split("/")[-1]
                data = hub.blobs.get(digest)
                if data is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if digest in hub.faults.get("expired", ()):
                    body = b"Request has expired"
                    self.send_response(403)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                if digest in hub.faults.get("corrupt", ()):
                    data = bytes([data[0] ^ 0xFF]) + data[1:]
                start = 0
                rng = self.headers.get("Range")
                if rng and rng.startswith("bytes=") and rng.endswith("-"):
                    start = int(rng[6:-1])
                    if start >= len(data):
                        self.send_response(416)
                        self.send_header("Content-Range", "bytes */%d" % len(data))
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    self.send_response(206)
                    self.send_header("Content-Range",
                                     "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
                else:
                    self.send_response(200)
                body = data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with hub.lock:
                    hub.active_store_gets += 1
                    hub.max_active_store_gets = max(hub.max_active_store_gets,
                                                    hub.active_store_gets)
                try:
                    self.send_body(digest, body)
                finally:
                    with hub.lock:
                        hub.active_store_gets -= 1

            def send_body(self, digest, body):
                drop = hub.faults.get("drop_after", {})
                if digest in drop:
                    n = drop.pop(digest)  # once: the retry gets the rest
                    self.wfile.write(body[:n])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                if digest in hub.faults.get("slow", ()):
                    self.wfile.flush()
                    time.sleep(60)  # headers sent, then nothing
                    return
                delay = hub.faults.get("store_delay", 0)
                for i in range(0, len(body), 65536):
                    self.wfile.write(body[i:i + 65536])
                    if delay:
                        time.sleep(delay)

        return Handler
