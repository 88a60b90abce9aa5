"""The static page over the wire and in headless Chromium (not a test: prints Markdown tables).

    .venv/bin/python benchmarks/bench_static.py [--repeat 3] [--before DIR] [--no-threads] [--no-server]

Exports the default model's folder twice (`--weights float16`, the default, and `--weights int8`) and, with
`--before DIR`, measures an earlier export too (today's page: `git worktree add /tmp/base <commit>` and
`bertviz-app export-static DIR` there). Each folder is served from this process by a host that compresses (gzip:
the file's .gz copy where there is one, as nginx's gzip_static, otherwise compressed as it is sent, as GitHub Pages
and nginx's `gzip on` do) and asks the browser to revalidate everything (`Cache-Control: no-cache` with
Last-Modified: the least a cache may do). In a fresh browser profile: the first visit (bytes on the wire, as Chromium's
network log counts them, headers included; seconds from navigation to the first attention picture), a second visit
in the same profile (the browser's cache), then `bertvizPage.analyze` (tokenizer + forward pass, every layer's
attention back as a Float32Array) and `bertvizPage.show` (that + the views mounted) at 32, 128 and 512 tokens. With
threads: the float16 folder again from a host that sends the cross-origin isolation headers, `?threads=2`. Against
it: `bertviz-app serve --threads 2`, the analyze event's round trip through gradio_client.

Then how far int8 moves the numbers: each folder's graph under onnxruntime (CPU; the page computes the same within
1e-4, tests/test_static_browser.py) against PyTorch, every head's attention on prose pairs of 32, 128 and 512 tokens,
tests/texts.py's pairs and hard strings, and fill-mask's top 5 on assets/probes.json. A shared 2-core machine:
compare rows measured in the same run.
"""

from __future__ import annotations

import argparse
import email.utils
import functools
import gzip
import http.server
import io
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

import bertviz_app  # noqa: E402
from bench_app import CHROMIUM_ARGS, make_client, start_server, stop_server  # noqa: E402
from bench_views import sample_pair  # noqa: E402

LENGTHS = (32, 128, 512)


class _Host(http.server.SimpleHTTPRequestHandler):
    """A compressing static host (above); COOP/COEP headers where `isolated`."""

    isolated = False
    packed: dict = {}  # path -> gzip'ed bytes, compressed once

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        if not os.path.isfile(path):
            return super().send_head()
        modified = int(os.stat(path).st_mtime)
        since = self.headers.get("If-Modified-Since")
        if since and email.utils.parsedate_to_datetime(since).timestamp() >= modified:
            self.send_response(304)
            self.end_headers()
            return None
        gz = "gzip" in self.headers.get("Accept-Encoding", "")
        if gz and os.path.isfile(path + ".gz"):
            body = Path(path + ".gz").read_bytes()
        elif gz:
            if path not in self.packed:
                self.packed[path] = gzip.compress(Path(path).read_bytes(), compresslevel=6)
            body = self.packed[path]
        else:
            body = Path(path).read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        if gz:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Last-Modified", email.utils.formatdate(modified, usegmt=True))
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        return io.BytesIO(body)

    def end_headers(self):
        if self.isolated:
            self.send_header("Cross-Origin-Opener-Policy", "same-origin")
            self.send_header("Cross-Origin-Embedder-Policy", "require-corp")
        super().end_headers()

    def log_message(self, *args):
        pass


def serve(folder: Path, isolated: bool):
    handler = type("H", (_Host,), {"isolated": isolated, "packed": {}})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def _visit(context, url: str) -> tuple[object, int, float]:
    """A new page at `url` until the first attention picture: (the page, bytes on the wire, seconds)."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Network.enable")
    wire = {}
    cdp.on("Network.loadingFinished", lambda e: wire.__setitem__(e["requestId"], e["encodedDataLength"]))
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_function("window.bertvizPage && bertvizPage.last && document.querySelector('#attention-view')",
                           timeout=300_000)
    seconds = time.perf_counter() - start
    page.wait_for_timeout(500)  # the last requests' loadingFinished events
    return page, sum(wire.values()), seconds


def in_chromium(url: str, pairs: dict, repeat: int, query: str = "") -> dict:
    from playwright.sync_api import sync_playwright

    out = {}
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium", headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 720})
        page, out["first_bytes"], out["first_picture_s"] = _visit(context, url + query)
        page.close()
        page, out["second_bytes"], out["second_picture_s"] = _visit(context, url + query)
        out["threads"] = page.evaluate("bertvizPage.timings.threads")
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


def fidelity(explorer, graph: Path, pairs: dict) -> dict:
    """How far `graph` (a folder's data/model.onnx) is from PyTorch: the largest difference of any head's attention
    per group of inputs, and how many probes keep fill-mask's top 5 (the same five in order; the same five)."""
    import onnxruntime as ort
    import torch

    from texts import HARD, PAIRS

    session = ort.InferenceSession(str(graph), providers=["CPUExecutionProvider"])
    tok, model = explorer.tokenizer, explorer.model

    def run(enc, outputs, positions=(0,)):
        return session.run(outputs, {"input_ids": np.array([enc.ids]), "token_type_ids": np.array([enc.segment_ids]),
                                     "mlm_positions": np.array(positions), "with_score_terms": np.array(False)})[0]

    def attention_error(a, b):
        enc = tok.encode(a, b)
        with torch.no_grad():
            out = model.bert(torch.tensor([enc.ids]), torch.tensor([enc.segment_ids]),
                             capture={"layer.*.attention.probs"})
        want = torch.stack([x[0] for x in out.layers("attention.probs")]).numpy()
        return float(np.abs(run(enc, ["attentions"]) - want).max())

    groups = {f"{n} tokens": [pairs[n]] for n in LENGTHS}
    groups["pairs and hard strings"] = ([(a, b) for a, b in PAIRS if a.strip()]
                                        + [(h, None) for h in HARD if h.strip()])
    out = {name: max(attention_error(a, b or None) for a, b in inputs) for name, inputs in groups.items()}
    probes = [p["text"] for g in json.loads((ROOT / "assets" / "probes.json").read_text())["groups"].values()
              for p in g["probes"]]
    in_order = as_set = 0
    for text in probes:
        enc = tok.encode(text)
        positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"]
        got = [[tok.id_to_token(int(i)) for i in np.argsort(-row, kind="stable")[:5]]
               for row in run(enc, ["mlm_logits"], positions)]
        want = [[t for t, _ in row] for row in explorer.fill_mask(text, top_k=5)]
        in_order += got == want
        as_set += [set(r) for r in got] == [set(r) for r in want]
    out["top5"] = (in_order, as_set, len(probes))
    return out


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 1e5 else f"{n / 1e3:.0f} kB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, default=None, metavar="DIR",
                        help="an earlier export to measure beside today's (today's page before this change)")
    parser.add_argument("--no-threads", action="store_true", help="skip the two-thread row")
    parser.add_argument("--no-server", action="store_true", help="skip the server's round trip")
    args = parser.parse_args()
    explorer = bertviz_app.load(device="cpu")
    pairs = {n: sample_pair(explorer, n) for n in LENGTHS}
    with tempfile.TemporaryDirectory() as tmp:
        folders = {} if args.before is None else {"before: base64 parts (`--before`)": args.before}
        exports = {}
        for weights in ("float16", "int8"):
            start = time.perf_counter()
            folder = explorer.export_static(Path(tmp) / weights, weights=weights)
            exports[weights] = (time.perf_counter() - start, folder)
            folders[f"after: `--weights {weights}`"] = folder
        rows = {}
        for label, folder in folders.items():
            server, url = serve(folder, isolated=False)
            try:
                rows[label] = in_chromium(url, pairs, args.repeat)
            finally:
                server.shutdown()
        if not args.no_threads:
            server, url = serve(exports["float16"][1], isolated=True)
            try:
                rows["after: `--weights float16`, COOP/COEP headers, `?threads=2`"] = in_chromium(
                    url, pairs, args.repeat, "?threads=2")
            finally:
                server.shutdown()
        errors = {label: fidelity(explorer, folder / "data" / "model.onnx", pairs)
                  for label, folder in folders.items() if (folder / "data" / "model.onnx").exists()}
        sizes = {label: sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
                 for label, folder in folders.items()}
    server_ms = None if args.no_server else server_round_trip(pairs, args.repeat)

    for weights, (seconds, _) in exports.items():
        print(f"export --weights {weights}: {seconds:.1f} s")
    print("\n| page | folder | first visit: on the wire, first picture | second visit | threads | " + " | ".join(
        f"analyze / show, {n} tokens" for n in LENGTHS) + " |")
    print("|---|---|---|---|---|" + "---|" * len(LENGTHS))
    for label, r in rows.items():
        folder = next((sizes[k] for k in sizes if label.startswith(k)), None)
        print(f"| {label} | {_mb(folder) if folder else ''} | {_mb(r['first_bytes'])}, {r['first_picture_s']:.1f} s"
              f" | {_mb(r['second_bytes'])}, {r['second_picture_s']:.1f} s | {r['threads']} | " + " | ".join(
                  f"{r[('analyze', n)]:.0f} / {r[('show', n)]:.0f} ms" for n in LENGTHS) + " |")
    if server_ms:
        print("| `bertviz-app serve --threads 2`, analyze round trip (gradio_client) | | | | | " + " | ".join(
            f"{server_ms[n]:.0f} ms" for n in LENGTHS) + " |")
    groups = [k for k in next(iter(errors.values())) if k != "top5"]
    print("\n| graph | largest attention difference from PyTorch: " + " | ".join(groups)
          + " | fill-mask top 5 on probes.json: same order / same five |")
    print("|---|" + "---|" * (len(groups) + 1))
    for label, e in errors.items():
        in_order, as_set, n = e["top5"]
        print(f"| {label} | " + " | ".join(f"{e[g]:.1e}" for g in groups) + f" | {in_order} / {as_set} of {n} |")


if __name__ == "__main__":
    main()
