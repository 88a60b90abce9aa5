"""The Corpus tab's speed (not a test: prints Markdown tables).

    .venv/bin/python benchmarks/bench_corpus_app.py --corpus DIR [--visitors 50] [--analysts 10] [--heads 4]
                                                [--points 100000] [--skip-server] [--skip-page]

Through the server: `bertviz-app serve --corpus DIR` runs as its own process; `--heads` heads' maps are asked for
once (each computed once, then cached), then `--visitors` visitors at once each open the Corpus tab as the page
does (the summary, a head's details and that head's joint map, through the tab's server functions) while
`--analysts` other visitors each analyze three new 32-token inputs: the p95 of a head's map (target <= 1 s) and of a
new analysis beside them (target <= 1 s; issue #33).

In Chromium: the corpus views' offline page (the same drawing code as the app's) with one head's map of `--points`
points: the time from the map's data in the page to its first picture (decoding, colouring, layout, paint; target
<= 1 s), and the cost of a hover (hit test, repaint and tooltip; target one frame, 16 ms), measured in the page with
performance.now. A corpus that kept fewer tokens for the map than `--points` / 2 has its tokens repeated, each copy
moved by a small random step, up to that count (said in the table): drawing and hit tests cost by points, not by
which tokens they are.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_app import CHROMIUM_ARGS, percentile, print_measures, queue_event, sentence, served  # noqa: E402


class Visitor:
    """One page: its session, its events through the queue, the Corpus tab's server functions."""

    def __init__(self, url: str, config: dict):
        self.http = httpx.Client(base_url=url, timeout=300)
        self.session = uuid.uuid4().hex[:11]
        self.events = {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}
        self.hosts = {c["props"].get("elem_id"): c["id"] for c in config["components"]}
        self.model = next(c["props"]["value"] for c in config["components"] if c["props"].get("elem_id") == "model")
        self.corpus = next(c["props"]["value"] for c in config["components"]
                           if c["props"].get("elem_id") == "corpus-host")["corpora"][0]

    def analyze(self, text: str) -> None:
        queue_event(self.http, self.events["analyze"], self.session, [self.model, text, ""])

    def ask(self, name: str, data: dict):
        answer = self.http.post("gradio_api/component_server", json={
            "session_hash": self.session, "component_id": self.hosts["corpus-host"], "fn_name": name, "data": data})
        answer.raise_for_status()
        value = answer.json()
        if "error" in value:
            raise RuntimeError(value["error"])
        return value["value"]


def through_the_server(args) -> list[tuple]:
    extra = ("--corpus", str(args.corpus))
    with served("corpus", 1, extra) as (proc, url):
        config = httpx.get(url + "config", timeout=120).json()
        first = Visitor(url, config)
        first.analyze("The cat sat on the mat.")  # a session the server functions answer
        name, layers, heads = first.corpus["name"], first.corpus["layers"], first.corpus["heads"]
        chosen = [(k % layers, (3 * k + 1) % heads) for k in range(args.heads)]
        rows = []
        for layer, head in chosen:
            start = time.perf_counter()
            blob = first.ask("corpus_qk", {"corpus": name, "layer": layer, "head": head})
            rows.append((f"first map of layer {layer}, head {head} (computed)", f"{time.perf_counter() - start:.2f} s",
                         f"{len(blob) / 1e6:.2f} MB base64"))
        start = time.perf_counter()  # the summaries the server makes at start (a thread of its own): waited for
        first.ask("corpus_summary", {"corpus": name, "subset": "all"})
        first.ask("corpus_head", {"corpus": name, "layer": 0, "head": 0})
        rows.append(("the first summary and head's details (waiting for the start's warm-up)",
                     f"{time.perf_counter() - start:.2f} s", "once"))
        visitors = [Visitor(url, config) for _ in range(args.visitors)]
        analysts = [Visitor(url, config) for _ in range(args.analysts)]
        for v in visitors + analysts:
            v.analyze("A first sentence to open the page.")
        alone = analyses_alone(analysts)
        rows.append((f"a new 32-token analysis, {len(analysts)} visitors x 3, nothing beside them",
                     f"p50 {statistics.median(alone):.2f} s · p95 {percentile(alone, 0.95):.2f} s · max "
                     f"{max(alone):.2f} s", f"{len(alone)} answers"))
        maps, summaries, analyses, errors = [], [], [], []
        barrier = threading.Barrier(len(visitors) + len(analysts))

        def corpus_visitor(k: int, v: Visitor) -> None:
            layer, head = chosen[k % len(chosen)]
            barrier.wait()
            try:
                start = time.perf_counter()
                v.ask("corpus_summary", {"corpus": name, "subset": "all"})
                v.ask("corpus_head", {"corpus": name, "layer": layer, "head": head})
                summaries.append(time.perf_counter() - start)
                start = time.perf_counter()
                v.ask("corpus_qk", {"corpus": name, "layer": layer, "head": head})
                maps.append(time.perf_counter() - start)
            except Exception as err:  # noqa: BLE001 (counted and shown)
                errors.append(str(err))

        def analyst(k: int, v: Visitor) -> None:
            barrier.wait()
            for i in range(3):
                start = time.perf_counter()
                v.analyze(sentence(1000 * k + i, 32))
                analyses.append(time.perf_counter() - start)

        threads = [threading.Thread(target=corpus_visitor, args=(k, v)) for k, v in enumerate(visitors)]
        threads += [threading.Thread(target=analyst, args=(k, v)) for k, v in enumerate(analysts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for what, times in ((f"a head's map, {len(visitors)} visitors at once (cached)", maps),
                            ("the summary and a head's details, the same visitors", summaries),
                            (f"a new 32-token analysis, {len(analysts)} visitors x 3 beside them", analyses)):
            rows.append((what, f"p50 {statistics.median(times):.2f} s · p95 {percentile(times, 0.95):.2f} s · "
                               f"max {max(times):.2f} s", f"{len(times)} answers"))
        rows.append(("refused or failed", str(len(errors)), "; ".join(sorted(set(errors)))[:200] or "none"))
        return rows


def analyses_alone(analysts) -> list[float]:
    """Seconds per new analysis of the analysts by themselves: the baseline of the same machine and moment."""
    times = []

    def analyst(k, v):
        for i in range(3):
            start = time.perf_counter()
            v.analyze(sentence(500_000 + 1000 * k + i, 32))
            times.append(time.perf_counter() - start)

    threads = [threading.Thread(target=analyst, args=(k, v)) for k, v in enumerate(analysts)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def map_of(views, layer: int, head: int, points: int) -> tuple[bytes, str]:
    """One head's map blob of about `points` points (the corpus's own, its tokens repeated with a small random step
    when it kept fewer)."""
    from bertviz_app.views import corpus_payload

    blob = views.qk_map(layer, head)
    decoded = corpus_payload.decode_map(blob)
    n = decoded.header["tokens"]
    if 2 * n >= points:
        return blob, f"{2 * n:,} points of the corpus"
    copies = -(-points // (2 * n))
    x, y = corpus_payload.coordinates(decoded)
    rng = np.random.default_rng(0)
    step = 0.01 * max(np.ptp(x), np.ptp(y))
    xs = np.concatenate([np.concatenate([x[:n] + rng.normal(0, step, n) * (c > 0) for c in range(copies)]),
                         np.concatenate([x[n:] + rng.normal(0, step, n) * (c > 0) for c in range(copies)])])
    ys = np.concatenate([np.concatenate([y[:n] + rng.normal(0, step, n) * (c > 0) for c in range(copies)]),
                         np.concatenate([y[n:] + rng.normal(0, step, n) * (c > 0) for c in range(copies)])])
    a = decoded.arrays
    strings = corpus_payload.strings
    tags = strings(decoded, "tags")
    bigger = corpus_payload.encode_qk_map(
        xs, ys, sentence=np.tile(a["sentence"], copies), position=np.tile(a["position"], copies),
        piece=np.tile(a["piece"].astype(np.int64), copies), tag=np.tile(np.where(a["tag"] == 65535, -1, a["tag"]),
                                                                         copies),
        sentence_ids=a["sentence_ids"], context_at=a["context_at"], context=a["context"].astype(np.int64),
        pieces=strings(decoded, "pieces"), tags=tags, header={k: decoded.header[k] for k in
                                                               ("corpus", "layer", "head", "sentences", "of_tokens")})
    return bigger, f"{2 * n:,} points of the corpus, repeated {copies}x with a small random step"


def in_the_page(args) -> list[tuple]:
    from playwright.sync_api import sync_playwright

    from bertviz_app import open_corpus
    from bertviz_app.corpus.browser import CorpusViews, offline_data
    from bertviz_app.views.corpus_page import corpus_html

    views = CorpusViews(open_corpus(args.corpus))
    layer, head = views.corpus.num_layers // 2, 1
    data = offline_data(views, [(layer, head)])
    blob, source = map_of(views, layer, head, args.points)
    data["qk"][f"{layer},{head}"] = base64.b64encode(blob).decode("ascii")
    rows = [("the map's data", f"{len(blob) / 1e6:.2f} MB ({len(blob) * 4 / 3 / 1e6:.2f} MB base64)", source)]
    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "corpus.html"
        page_file.write_text(corpus_html(data), encoding="utf-8")
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            for size in ((1280, 720), (390, 844)):
                page = browser.new_page(viewport={"width": size[0], "height": size[1]})
                page.goto(page_file.as_uri())
                page.wait_for_selector(".bv-corpus-heads[data-drawn]")
                pictures, hovers = [], []
                page.click("#corpus-tab-qk")
                for k in range(args.repeat):
                    if k:  # a head the page did not save, then this one again: decoded and drawn anew
                        page.evaluate("() => delete document.querySelector('#corpus-pane-qk .bv-point-map')"
                                      ".dataset.pictureMs")
                        page.select_option("#corpus-head-pick", "0")
                        page.select_option("#corpus-head-pick", str(head))
                    page.wait_for_function("() => document.querySelector('#corpus-pane-qk .bv-point-map')"
                                           "?.dataset.pictureMs")
                    pictures.append(float(page.eval_on_selector("#corpus-pane-qk .bv-point-map",
                                                                "e => e.dataset.pictureMs")))
                hovers = hover_costs(page)
                points = page.eval_on_selector("#corpus-pane-qk .bv-point-map", "e => e.dataset.drawn")
                rows.append((f"{size[0]}x{size[1]}: first picture after the data arrives ({points.split(':')[-1]} "
                             "points in the window)", f"median {statistics.median(pictures):.0f} ms · max "
                             f"{max(pictures):.0f} ms", f"{len(pictures)} openings"))
                rows.append((f"{size[0]}x{size[1]}: a hover (hit, repaint, tooltip)",
                             f"median {statistics.median(hovers):.1f} ms · p95 {percentile(hovers, 0.95):.1f} ms · max "
                             f"{max(hovers):.1f} ms", f"{len(hovers)} moves"))
                page.close()
            browser.close()
    return rows


def hover_costs(page) -> list[float]:
    box = page.locator("#corpus-pane-qk canvas").bounding_box()
    page.eval_on_selector("#corpus-pane-qk canvas", "e => e.scrollIntoView({ block: 'center' })")
    box = page.locator("#corpus-pane-qk canvas").bounding_box()
    costs = []
    for k in range(120):
        x = box["x"] + box["width"] * (0.2 + 0.6 * ((k * 37) % 100) / 100)
        y = box["y"] + box["height"] * (0.2 + 0.6 * ((k * 53) % 100) / 100)
        page.mouse.move(x, y)
        costs.append(float(page.eval_on_selector("#corpus-pane-qk .bv-point-map", "e => e.dataset.hoverMs || 0")))
    return costs


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", type=Path, required=True)
    p.add_argument("--visitors", type=int, default=50)
    p.add_argument("--analysts", type=int, default=10)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--points", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--skip-server", action="store_true")
    p.add_argument("--skip-page", action="store_true")
    args = p.parse_args()
    if not args.skip_server:
        print_measures([(a, f"{b} ({c})") for a, b, c in through_the_server(args)])
    if not args.skip_page:
        print_measures([(a, f"{b} ({c})") for a, b, c in in_the_page(args)])


if __name__ == "__main__":
    main()
