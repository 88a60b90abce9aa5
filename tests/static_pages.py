"""The exported static page in a test: served by Python's http.server, or opened from file://, with every request
outside its folder aborted and recorded (shared by test_static_browser and test_lesson_browser)."""

from __future__ import annotations

import base64
import contextlib
import functools
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

TIMEOUT_MS = 120_000  # two shared cores: 61 MB of parts to decode and a session to create


class GzipStaticHandler(http.server.SimpleHTTPRequestHandler):
    """A host that serves a file's precompressed copy FILE.gz, when there is one and the browser accepts gzip, as
    FILE with Content-Encoding: gzip (nginx's gzip_static)."""

    def send_head(self):
        path = self.translate_path(self.path)
        if "gzip" not in self.headers.get("Accept-Encoding", "") or not os.path.isfile(path + ".gz"):
            return super().send_head()
        packed = open(path + ".gz", "rb")  # noqa: SIM115 the base class's copyfile closes it
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(os.fstat(packed.fileno()).st_size))
        self.end_headers()
        return packed

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def gzip_static_host(directory: Path):
    """GzipStaticHandler over `directory`, in a thread; its address and the paths it answered with a .gz copy."""
    handler = type("Recording", (GzipStaticHandler,), {"sent_gzip": []})
    original = handler.send_head

    def send_head(self):
        answer = original(self)
        if answer is not None and getattr(answer, "name", "").endswith(".gz"):
            handler.sent_gzip.append(self.path.split("?")[0])
        return answer

    handler.send_head = send_head
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(directory)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/", handler.sent_gzip
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def static_host(directory: Path):
    """Python's http.server over `directory` (no special headers), its address for the `with` block."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
                             "--directory", str(directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        proc.wait(10)



class Opened:
    """The page with every request outside `allowed` aborted and recorded; console errors and page errors kept."""

    def __init__(self, browser, url: str, allowed: str, cores: int | None = None):
        self.page = browser.new_page()
        if cores is not None:  # the host's core count as the page reads it, so a test does not depend on this machine's
            self.page.add_init_script(
                f"Object.defineProperty(Navigator.prototype, 'hardwareConcurrency', {{get: () => {cores}}})")
        self.page.set_default_timeout(TIMEOUT_MS)
        self.outside: list[str] = []
        self.read: list[str] = []  # what the page asked of its folder, relative to it, without a query
        self.errors: list[str] = []
        inside = lambda u: u.startswith((allowed, "blob:", "data:"))  # noqa: E731 blob: the runtime's glue
        self.page.on("request", lambda r: (self.read.append(r.url.removeprefix(allowed).split("?")[0])
                                           if r.url.startswith(allowed) else None) if inside(r.url)
                     else self.outside.append(r.url))
        self.page.route("**/*", lambda r: r.continue_() if inside(r.request.url) else r.abort())
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(url)
        self.page.wait_for_function("window.bertvizPage && window.bertvizPage.last", timeout=TIMEOUT_MS)

    def analyze(self, a, b=None, source="bertvizPage.analyze(a, b)"):
        # The float32 bytes as base64: 19 M numbers at 512 tokens are far too many for a JSON array.
        r = self.page.evaluate(f"""async ([a, b]) => {{ const r = await {source};
            const bytes = new Uint8Array(r.attention.buffer, r.attention.byteOffset, r.attention.byteLength);
            let text = "";
            for (let i = 0; i < bytes.length; i += 0x8000) {{
              text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
            }}
            return {{tokens: r.tokens, shape: [r.layers, r.heads, r.length], attention: btoa(text)}}; }}""", [a, b])
        L, H, T = r["shape"]
        return r["tokens"], np.frombuffer(base64.b64decode(r["attention"]), dtype="<f4").reshape(L, H, T, T)

    def close(self):
        self.page.close()
