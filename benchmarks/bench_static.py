"""The static page's speed in headless Chromium (not a test: prints Markdown tables).

    .venv/bin/python benchmarks/bench_static.py [--repeat 5] [--no-server]

Exports the default model's folder, serves it from this process twice (plain, as any static host: one thread;
and with the cross-origin isolation headers COOP/COEP, where the page may use threads, asked for 2 with ?threads=2),
and in a fresh browser profile each time measures the first load (bytes read, seconds from navigation to the first
attention picture) and then `bertvizPage.analyze` (tokenizer + forward pass, every layer's attention back as a
Float32Array) and `bertvizPage.show` (that plus the payload written in the page and every view mounted) at 32, 128
and 512 tokens. Against it: `bertviz-app serve` in its own process (--threads 2), the analyze event's round trip
through gradio_client for the same inputs. A shared 2-core machine: compare rows measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import bertviz_app  # noqa: E402
from bench_app import CHROMIUM_ARGS, make_client, start_server, stop_server  # noqa: E402
from bench_views import sample_pair  # noqa: E402

LENGTHS = (32, 128, 512)


class _Handler(http.server.SimpleHTTPRequestHandler):
    isolated = False

    def end_headers(self):
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, *args):
        pass


def serve(folder: Path, isolated: bool):
    handler = type("H", (_Handler,), {"isolated": isolated})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def in_chromium(url: str, folder: Path, pairs: dict, repeat: int, query: str = "") -> dict:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium", headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 720})
        page = context.new_page()
        read = []
        page.on("requestfinished", lambda r: read.append(r.url))
        start = time.perf_counter()
        page.goto(url + query)
        page.wait_for_function("window.bertvizPage && bertvizPage.last && document.querySelector('#attention-view')",
                               timeout=300_000)
        out["first_picture_s"] = time.perf_counter() - start
        files = [u.removeprefix(url).split("?")[0] or "index.html" for u in read if u.startswith(url)]
        out["read_mb"] = sum((folder / f).stat().st_size for f in files) / 1e6
        out["threads"] = page.evaluate("bertvizPage.timings.threads")
        out["isolated"] = page.evaluate("window.crossOriginIsolated")
        for tokens, (a, b) in pairs.items():
            for what in ("analyze", "show"):
                times = page.evaluate(f"""async ([a, b, n]) => {{ const t = [];
                    for (let i = 0; i < n; i++) {{ const s = performance.now(); await bertvizPage.{what}(a, b);
                      t.push(performance.now() - s); }} return t; }}""", [a, b, repeat + 1])
                out[(what, tokens)] = statistics.median(times[1:])  # the first run warms up
        context.close()
    return out


def server_round_trip(pairs: dict, repeat: int) -> dict:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryFile() as log:
        proc = start_server(port, threads=2, concurrency=1, log=log, extra=("--max-tokens", "512"))
        try:
            client = make_client(f"http://127.0.0.1:{port}/")
            out = {}
            for tokens, (a, b) in pairs.items():
                times = []
                for i in range(repeat + 1):
                    start = time.perf_counter()
                    # a new input each time (the server caches Runs): one character more at the end of B
                    client.predict("minilm-l6-mlm-nsp-en", a, b + " " * i + ("." if i else ""), api_name="/analyze")
                    times.append((time.perf_counter() - start) * 1000)
                out[tokens] = statistics.median(times[1:])
            return out
        finally:
            stop_server(proc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-server", action="store_true", help="skip the server's round trip")
    args = parser.parse_args()
    explorer = bertviz_app.load(device="cpu")
    pairs = {n: sample_pair(explorer, n) for n in LENGTHS}
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        folder = explorer.export_static(Path(tmp) / "site")
        export_s = time.perf_counter() - start
        size = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6
        rows = {}
        for isolated in (False, True):
            server, url = serve(folder, isolated)
            try:
                rows[isolated] = in_chromium(url, folder, pairs, args.repeat, "?threads=2" if isolated else "")
            finally:
                server.shutdown()
    server_ms = None if args.no_server else server_round_trip(pairs, args.repeat)

    print(f"export: {export_s:.1f} s; folder: {size:.1f} MB\n")
    print("| host | threads | read on first load | first picture | " + " | ".join(
        f"analyze / show at {n}" for n in LENGTHS) + " |")
    print("|---|---|---|---|" + "---|" * len(LENGTHS))
    for isolated, r in rows.items():
        host = "COOP/COEP headers" if isolated else "plain static server"
        print(f"| {host} | {r['threads']} | {r['read_mb']:.1f} MB | {r['first_picture_s']:.1f} s | " + " | ".join(
            f"{r[('analyze', n)]:.0f} / {r[('show', n)]:.0f} ms" for n in LENGTHS) + " |")
    if server_ms:
        print("| `bertviz-app serve --threads 2`, analyze round trip (gradio_client) | | | | " + " | ".join(
            f"{server_ms[n]:.0f} ms" for n in LENGTHS) + " |")


if __name__ == "__main__":
    main()
