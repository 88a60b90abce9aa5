"""The exported static page in a test: served by Python's http.server, or opened from file://, with every request
outside its folder aborted and recorded (shared by test_static_browser and test_lesson_browser)."""

from __future__ import annotations

import base64
import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

TIMEOUT_MS = 120_000  # two shared cores: 61 MB of parts to decode and a session to create


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

    def __init__(self, browser, url: str, allowed: str):
        self.page = browser.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.outside: list[str] = []
        self.errors: list[str] = []
        inside = lambda u: u.startswith((allowed, "blob:", "data:"))  # noqa: E731 blob: the runtime's glue
        self.page.on("request", lambda r: None if inside(r.url) else self.outside.append(r.url))
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
