"""The app's speed and memory with the default model, on the CPU unless --device cuda (not a test: prints Markdown
tables).

    .venv/bin/python benchmarks/bench_app.py [--threads 2] [--clients 50] [--client page] [--requests 600] [--rounds 2]
                                             [--concurrency 2] [--server-threads 1] [--device cpu] [--browser 20]
                                             [--busy 0] [--contention 2] [--long 5]

Server side: the work of the analyze event (forward pass, token table, the attention views' payload: every layer and
head, rollout, value-weighted attention, statistics), timed in this process at 32 and 512 tokens. Through the
server: `bertviz-app serve` runs as its own process (so it shares no GIL with the clients), and `--clients`
visitor threads in this process each load the page and analyze three new sentences at once, queue included, asking
as the page does (`--client page`: queue/join, then the event stream to the result) or through gradio_client
(`--client gradio_client`, which costs the shared cores ~5x the CPU); the payload they receive is what draws every
attention view (moving through layers, heads and tokens then asks the server nothing).
Memory: the server's resident set (VmRSS) after each round of `--requests` new inputs. In Chromium: the time from
pressing Analyze to every attention view drawn from the new payload, and from a layer change to the next painted
frame, with the requests the page made meanwhile (targets of issue #13: <= 300 ms, 0 requests and < 16 ms at 32
tokens; issue #19: 50 visitors at once p95 <= 1 s, and a new 512-token input drawn <= 1 s).
`--peer`: the same burst then goes to benchmarks/peer_app.py (the plain Gradio app a user writes in an afternoon:
transformers' BertModel with output_attentions, a plotly heatmap per head) on the same model, in its own process,
and the table gives our p95 over its (issue #42: <= 0.5x), both measured in the same run.

`--train-beside`: the server also fine-tunes (`--allow-training --data` a CSV of 3,000 labelled sentences, 5 epochs,
started through the Fine-tune tab's own event); the visitors' burst begins once its first steps are done and the
training is cancelled after it (issue #31: p95 <= 1.5 s with a training beside). `--train-beside pretrain`: the
Pretrain tab's `classroom` BERT from scratch on the built-in fortunes instead, snapshots and all (issue #34).

A classroom server is rarely alone on its machine: `--contention N` times new 32-token inputs in process with N
busy processes beside it, one and two torch threads alternating input by input (the served default, --threads, is
chosen from it); `--busy N` keeps N busy processes running through the whole benchmark.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import torch

WORDS = ("the river bank was quiet when the old man sat down to read his paper and watch the boats go past while "
         "children played near the water and a dog barked at the birds").split()
ROOT = Path(__file__).resolve().parent.parent
# Runnable as `python benchmarks/bench_app.py` from a checkout without installing the package.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_views import MEASURE_JS  # noqa: E402  (the same measurement as the standalone views')

from bertviz_app import limits  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def sentence(i: int, tokens: int) -> str:
    """A distinct sentence of about `tokens` word pieces (the counter makes every input new: no cache hits)."""
    words = [WORDS[(i + k) % len(WORDS)] for k in range(tokens - 4)]
    return " ".join(words) + f" {i}."


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """The resident set of process `pid` (VmRSS; VmHWM: its peak), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def start_server(port: int, threads: int, concurrency: int, log, device: str = "cpu",
                 extra: tuple[str, ...] = ()) -> subprocess.Popen:
    """`bertviz-app serve` (the built-in models, `extra` arguments after ours) as a child process on `device`;
    returns once it answers HTTP."""
    proc = subprocess.Popen([sys.executable, "-m", "bertviz_app", "serve", "--device", device, "--port", str(port),
                             "--threads", str(threads), "--concurrency", str(concurrency), *extra],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with status {proc.returncode} before it answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return proc
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"the server did not answer on {url} within 240 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def served(name: str, threads: int, extra: tuple[str, ...] = ()):
    """(process, url) of `bertviz-app serve` on a free port for the `with` block (one forward pass at a time), its
    log in a temporary file whose name is printed once the server has stopped."""
    from bertviz_app.app import free_port

    port = free_port()
    with tempfile.NamedTemporaryFile("w+", prefix=f"bench-{name}-", suffix=".log", delete=False) as log:
        proc = start_server(port, threads, 1, log, extra=extra)
        try:
            yield proc, f"http://127.0.0.1:{port}/"
        finally:
            stop_server(proc)
        print(f"server log: {log.name}", file=sys.stderr)


def print_measures(rows) -> None:
    """(measure, value) rows as a Markdown table."""
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


def percentile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2,
                        help="torch CPU threads for the server-side timings in this process (the 2-core budget)")
    parser.add_argument("--server-threads", type=int, default=limits.THREADS,
                        help="the server's --threads (torch CPU threads; default: the served default)")
    parser.add_argument("--concurrency", type=int, default=limits.CONCURRENCY,
                        help="the server's --concurrency (default: the served default)")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--peer", action="store_true",
                        help="after our burst, the same burst on benchmarks/peer_app.py (a plain gradio app with "
                             "transformers' BertModel and a plotly heatmap per head), and our p95 over its")
    parser.add_argument("--train-beside", nargs="?", const="finetune", choices=("finetune", "pretrain"),
                        help="the server fine-tunes (--allow-training --data), or with 'pretrain' pretrains the "
                             "Pretrain tab's classroom BERT, through the visitors' burst")
    parser.add_argument("--client", choices=("page", "gradio_client"), default="page",
                        help="how the --clients visitors ask: as the page does (queue/join and the event stream, "
                             "light) or through gradio_client (~13 ms of CPU per request on the same cores)")
    parser.add_argument("--contention", type=int, default=2,
                        help="busy processes beside the in-process timing of one and two torch threads (0: skip)")
    parser.add_argument("--busy", type=int, default=0, help="busy processes beside the whole benchmark")
    parser.add_argument("--requests", type=int, default=600, help="new inputs per memory round")
    parser.add_argument("--rounds", type=int, default=2,
                        help="memory rounds; the RSS after each is printed, the growth over the last is the figure")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--browser", type=int, default=20, help="new inputs timed in Chromium (0: skip)")
    parser.add_argument("--long", type=int, default=5,
                        help="new 512-token inputs timed in Chromium after the short ones (the server then reads up to "
                             "512 tokens: --max-tokens 512)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the model runs")
    args = parser.parse_args()
    if args.rounds < 2:
        parser.error("--rounds must be at least 2: the first round is the warm-up")
    return args


def make_client(url: str):
    from gradio_client import Client

    # The clients share the 2 cores with the server. gradio_client otherwise builds a TLS context (loading the CA
    # bundle) for every HTTP call, even on http://: that cost 0.13 s of client CPU per request here and starved
    # the server. Certificates mean nothing on http://127.0.0.1, and there is no network for telemetry.
    # httpx's default 5 s read timeout would count a slow answer as an error; a browser waits, and so do we.
    return Client(url, verbose=False, ssl_verify=False, analytics_enabled=False, httpx_kwargs={"timeout": 120})


def timed(fn, repeat: int) -> list[float]:
    """Milliseconds of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def server_side(explorer, args, counter) -> list[tuple]:
    """The analyze event's work, in this process: forward pass, token table and the views' payload of a new input."""
    rows = []
    for tokens, target in ((32, 300), (512, None)):
        sizes = []

        def new_input():
            run = explorer.run(sentence(next(counter), tokens))
            run.token_table()
            sizes.append(len(base64.b64encode(run.views_payload())))

        new_input()  # warm up
        times = timed(new_input, args.repeat if tokens <= 64 else max(3, args.repeat // 4))
        median = statistics.median(times)
        rows.append((f"server side, new input at {tokens} tokens: forward + token table + views payload "
                     f"({statistics.median(sizes) / 1000:.0f} kB as base64)", f"{median:.0f} ms",
                     f"{percentile(times, 0.95):.0f} ms", f"<= {target} ms" if target else "-",
                     ("yes" if median <= target else "NO") if target else "-"))
    return rows


def busy_processes(n: int) -> list[subprocess.Popen]:
    """`n` processes that keep one core each busy (pure Python, no threads), as other work on a shared machine."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def stop_all(procs) -> None:
    for proc in procs:
        proc.kill()
        proc.wait()


def under_contention(explorer, args, counter) -> list[tuple]:
    """New 32-token inputs (forward + token table + views payload) with `--contention` busy processes beside this
    one, one and two torch threads alternating input by input, so both meet the same neighbours."""
    times = {1: [], 2: []}
    busy = busy_processes(args.contention)
    try:
        time.sleep(1)
        for k in range(2 * max(args.repeat, 20)):
            threads = 1 + k % 2
            torch.set_num_threads(threads)
            start = time.perf_counter()
            run = explorer.run(sentence(next(counter), 32))
            run.token_table()
            run.views_payload()
            times[threads].append((time.perf_counter() - start) * 1000)
    finally:
        stop_all(busy)
        torch.set_num_threads(args.threads)
    return [(f"server side, new input at 32 tokens with {args.contention} busy processes beside it, {threads} torch "
             f"thread{'s' if threads > 1 else ''}", f"{statistics.median(ms):.0f} ms", f"{percentile(ms, 0.9):.0f} ms "
             "(p90)", "-", "-") for threads, ms in times.items()]


def analyze(client, model_name: str, i: int, tokens: int = 32):
    return client.predict(model_name, sentence(i, tokens), "", api_name="/analyze")


class PageVisitor:
    """What a browser sends for Analyze: the page once, then per input a queue/join and the session's event stream
    read to the event's result (the page also sends one unqueued step per Analyze, which clears the silencing
    result under the picture; left out here). The visitors run in the benchmark's process, on the server's two cores:
    gradio_client spends ~13 ms of CPU per request and ~25 ms per new client there (2 s per burst of 50 x 3, a third
    of the cores' time), which no visitor's browser takes from a real server."""

    def __init__(self, url: str, fn_index: int):
        import httpx

        # verify=False: no CA bundle loaded per visitor (16 ms of CPU each); certificates mean nothing on http://
        self.http = httpx.Client(base_url=url, timeout=120, verify=False)
        self.fn_index, self.session = fn_index, os.urandom(6).hex()
        self.http.get("/").raise_for_status()

    def analyze(self, model_name: str, text: str) -> list:
        return queue_event(self.http, self.fn_index, self.session, self.inputs(model_name, text))["data"]

    def inputs(self, model_name: str, text: str) -> list:
        return [model_name, text, ""]

    def close(self) -> None:
        self.http.close()


def queue_event(http, fn_index: int, session: str, data: list) -> dict:
    """One event through gradio's queue as the page sends it, on `http` (an httpx.Client with the app's base url):
    queue/join, then the session's event stream read to the event's result, gradio's {"data": [...], ...}. Raises
    RuntimeError with gradio's answer where the event failed."""
    import json

    joined = http.post("gradio_api/queue/join", json={
        "data": data, "fn_index": fn_index, "session_hash": session, "event_data": None, "trigger_id": None})
    joined.raise_for_status()
    with http.stream("GET", f"gradio_api/queue/data?session_hash={session}") as stream:
        for line in stream.iter_lines():
            if line.startswith("data:") and '"process_completed"' in line:
                message = json.loads(line[5:])
                if not message.get("success"):
                    raise RuntimeError(message.get("output"))
                return message["output"]
    raise RuntimeError("the event stream ended without a result")


class PeerVisitor(PageVisitor):
    """The same visitor on the peer (peer_app.py), whose one event takes the text alone."""

    def inputs(self, model_name: str, text: str) -> list:
        return [text]


def analyze_fn_index(url: str, name: str = "analyze") -> int:
    import httpx

    config = httpx.get(url + "config", timeout=60).json()
    return next(d["id"] for d in config["dependencies"] if d.get("api_name") == name)


@contextlib.contextmanager
def peer_served(log):
    """(url) of benchmarks/peer_app.py on the default model, as its own process, for the `with` block."""
    from bertviz_app.app import free_port
    from bertviz_app.catalog import ENGLISH_MLM_PATH

    port = free_port()
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "peer_app.py"), str(ENGLISH_MLM_PATH),
                             str(port)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 240
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the peer did not answer on {url} (status {proc.poll()})")
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                time.sleep(0.25)
        yield url
    finally:
        stop_server(proc)


def training_data(folder: Path) -> Path:
    """A CSV of 3,000 labelled sentences: long enough to train through a burst of visitors."""
    path = folder / "beside.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows((sentence(i, 24), "even" if i % 2 else "odd") for i in range(3000))
    return path


@contextlib.contextmanager
def training_running(url: str, kind: str = "finetune"):
    """A training started as the Fine-tune (or Pretrain) tab starts it, under way (its first steps done) for the
    `with` block, then cancelled."""
    import httpx

    config = httpx.get(url + "config", timeout=60).json()
    fns = {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}
    value = {c["props"].get("elem_id"): c["props"].get("value") for c in config["components"]}
    session = "trainer"

    def call(name: str, data: list):
        answer = httpx.post(url + "gradio_api/run/predict", timeout=60,
                            json={"fn_index": fns[name], "data": data, "session_hash": session})
        answer.raise_for_status()
        return answer.json()["data"]

    if kind == "pretrain":
        # the fortunes the README's figures were measured on, not the default text (python-help since issue #43)
        status = call("pretrain_start", ["fortunes", "classroom", 10, "The capital of France is [MASK]."])[0]
        started = lambda s: "**step " in s and "**step 0**" not in s  # noqa: E731
    else:
        status = call("finetune_start", [value["finetune-data"], value["finetune-base"], 5, "5e-5", False])[0]
        started = lambda s: "step" in s and "step 0 " not in s  # noqa: E731
    deadline = time.monotonic() + 600
    while not isinstance(status, str) or not started(status):
        if time.monotonic() > deadline or "could not run" in str(status):
            raise RuntimeError(f"the training did not start: {status}")
        time.sleep(1)
        status = call(f"{kind}_progress", [None])[0]
    try:
        yield status
    finally:
        call("pretrain_stop" if kind == "pretrain" else "finetune_cancel", [])


def concurrent_visitors(url: str, model_name: str, args, peer: bool = False) -> list[tuple]:
    """`--clients` visitors at once, each analyzing 3 new inputs; every request timed on its own, from the moment it
    is sent to its result read (the page, or gradio_client's connection, comes first, untimed). Also the CPU this
    process (the visitors) spent meanwhile. `peer`: the same visitors on peer_app.py (always as the page asks)."""
    latencies, errors, lock = [], [], threading.Lock()
    Visitor = PeerVisitor if peer else PageVisitor
    fn_index = analyze_fn_index(url, "attention" if peer else "analyze") if peer or args.client == "page" else None
    if fn_index is not None:  # the modules a visitor's first request imports, imported before the clock starts
        Visitor(url, fn_index).close()

    def visitor(k):
        try:
            if fn_index is None:
                client = make_client(url)
                ask = lambda text: client.predict(model_name, text, "", api_name="/analyze")  # noqa: E731
            else:
                client = Visitor(url, fn_index)
                ask = lambda text: client.analyze(model_name, text)  # noqa: E731
            for j in range(3):
                start = time.perf_counter()
                if not ask(sentence(10_000 + 10 * k + j, 32))[-1]:
                    raise RuntimeError("an analysis came back without the views' payload")
                with lock:
                    latencies.append(time.perf_counter() - start)
        except Exception as err:  # a benchmark reports failures, it does not stop at the first
            with lock:
                errors.append(repr(err))

    threads = [threading.Thread(target=visitor, args=(k,)) for k in range(args.clients)]
    cpu, start = os.times(), time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.perf_counter() - start, sum(os.times()[:2]) - sum(cpu[:2])
    for error in sorted(set(errors))[:5]:
        print(f"visitor error: {error[:300]}", file=sys.stderr)
    served = len(latencies) == 3 * args.clients
    bound = 1.5 if args.train_beside else 1.0
    ok = served and not errors and percentile(latencies, 0.95) <= bound
    p50, p95 = (f"{percentile(latencies, q):.2f} s" if latencies else "-" for q in (0.5, 0.95))
    if peer:
        return [(f"the same burst on the peer (benchmarks/peer_app.py: gradio.Interface, transformers' BertModel with "
                 f"output_attentions, a plotly heatmap per head; {len(latencies)} served, {len(errors)} errors, "
                 f"{wall:.1f} s wall)", p50, p95, "-", "-")], latencies
    who = "browser-like visitors" if fn_index is not None else "gradio_client visitors"
    beside = {"finetune": ", a fine-tuning training beside them", "pretrain": ", a pretraining from scratch beside them",
              None: ""}[args.train_beside]
    return [(f"{args.clients} visitors x 3 new inputs at once, through the server ({who}: {len(latencies)} served, "
             f"{len(errors)} errors, {wall:.1f} s wall, the visitors' CPU {cpu:.1f} s{beside})", p50, p95,
             f"all served, p95 <= {bound:g} s", "yes" if ok else "NO")]


def memory_rounds(url: str, pid: int, model_name: str, args) -> list[tuple]:
    """The server's memory over `--rounds` rounds of `--requests` new inputs. The first rounds fill the Run cache and
    let the C heap reach its working size; a leak shows as growth in the last."""
    client = make_client(url)
    start_rss = rss = rss_mib(pid)
    print(f"server RSS after 0 requests: {rss:.0f} MiB", file=sys.stderr, flush=True)
    for round_ in range(1, args.rounds + 1):
        before = rss
        for i in range(100_000 * round_, 100_000 * round_ + args.requests):
            analyze(client, model_name, i)
        rss = rss_mib(pid)
        print(f"server RSS after {round_ * args.requests} requests: {rss:.0f} MiB", file=sys.stderr, flush=True)
    growth = rss - before
    return [(f"server RSS, {args.requests} new inputs after {(args.rounds - 1) * args.requests} more, from "
             f"{start_rss:.0f} MiB", f"{before:.0f} -> {rss:.0f} MiB", f"{growth:+.0f} MiB",
             "flat (< 50 MiB growth)", "yes" if growth < 50 else "NO")]


def in_the_browser(url: str, args) -> list[tuple]:
    """Chromium at 1280 x 720: Analyze pressed with a new 32-token sentence until every attention view has drawn the
    new payload, then layer changes, with the requests the page made during the changes; then `--long` new 512-token
    inputs, Analyze to drawn (issue #19: <= 1 s)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium", headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 720})
        page = context.new_page()
        requests = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto(url)
        page.wait_for_function("() => document.querySelector('#attention-view')?.dataset.key", timeout=120_000)
        page.wait_for_timeout(3000)  # the first analysis' other tabs
        new_input, work, latency = [], [], []
        for i in range(args.browser):
            new_input.append(analyze_in(page, sentence(50_000 + i, 32)))
            page.wait_for_timeout(1500)  # let the other tabs' steps finish before timing the views alone
            requests.clear()
            timing = page.evaluate(MEASURE_JS, ["view-layer", [str(k % 6) for k in range(1, 7)], "input", 6])
            work += timing["work"]
            latency += timing["latency"]
            assert not [r for r in requests if url in r], requests
        long_input = []
        for i in range(args.long):
            page.wait_for_timeout(3000)  # the previous input's other tabs
            long_input.append(analyze_in(page, sentence(60_000 + i, 512)))
            assert "512 tokens" in page.inner_text("#notice"), page.inner_text("#notice")
        context.close()
    rows = [] if not long_input else [
        ("in Chromium, Analyze pressed to every attention view drawn (512 tokens)",
         f"{statistics.median(long_input):.0f} ms", f"{percentile(long_input, 0.95):.0f} ms", "<= 1000 ms",
         "yes" if percentile(long_input, 0.95) <= 1000 else "NO")]
    return rows + [("in Chromium, Analyze pressed to every attention view drawn (32 tokens)",
             f"{statistics.median(new_input):.0f} ms", f"{percentile(new_input, 0.95):.0f} ms", "<= 300 ms",
             "yes" if statistics.median(new_input) <= 300 else "NO"),
            ("in Chromium, a layer change: the page's work up to its painted frame (32 tokens; 0 requests to the "
             "server)", f"{statistics.median(work):.1f} ms", f"{percentile(work, 0.95):.1f} ms", "< 16 ms, 0 requests",
             "yes" if statistics.median(work) < 16 else "NO"),
            ("in Chromium, a layer change: from the event to the frame on screen (waits for the display's next "
             "frame, 16.7 ms apart at 60 Hz)", f"{statistics.median(latency):.1f} ms",
             f"{percentile(latency, 0.95):.1f} ms", "-", "-")]


def analyze_in(page, text: str) -> float:
    """Milliseconds from pressing Analyze with `text` in sentence A to the lines view drawn from the new payload."""
    old = page.evaluate("() => document.querySelector('#attention-view').dataset.key")
    page.locator("#sentence-a textarea").fill(text)
    start = time.perf_counter()
    page.click("#analyze")
    page.wait_for_function("old => { const v = document.querySelector('#attention-view');"
                           " return v && v.dataset.key !== old && document.querySelector("
                           "'#view-pane-lines .bv-view')?.dataset.drawn; }", arg=old, timeout=60_000)
    return (time.perf_counter() - start) * 1000


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    from bertviz_app.app import free_port
    from bertviz_app.explorer import load

    explorer = load(device=args.device, max_tokens=512)
    counter = itertools.count()
    busy = busy_processes(args.busy)
    rows = server_side(explorer, args, counter)
    if args.contention:
        rows += under_contention(explorer, args, counter)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    server_log = tempfile.TemporaryFile(mode="w+")
    server = None
    try:
        extra = ("--max-tokens", "512") if args.browser and args.long else ()
        data_folder = tempfile.TemporaryDirectory()
        if args.train_beside == "finetune":
            extra += ("--allow-training", "--data", str(training_data(Path(data_folder.name))))
        elif args.train_beside == "pretrain":
            extra += ("--allow-training",)
        server = start_server(port, args.server_threads, args.concurrency, server_log, args.device, extra)
        if args.clients:
            with training_running(url, args.train_beside) if args.train_beside else contextlib.nullcontext():
                rows += concurrent_visitors(url, explorer.name, args)
            if args.peer:
                ours = float(rows[-1][2].split()[0])
                with peer_served(server_log) as peer_url:
                    peer_rows, _ = concurrent_visitors(peer_url, explorer.name, args, peer=True)
                theirs = float(peer_rows[0][2].split()[0])
                rows += peer_rows + [("our p95 over the peer's, the same burst in the same run", "-",
                                      f"{ours / theirs:.3f}x", "<= 0.5x", "yes" if ours <= 0.5 * theirs else "NO")]
        if args.browser:
            rows += in_the_browser(url, args)
        rows += memory_rounds(url, server.pid, explorer.name, args)
    except Exception:
        server_log.seek(0)
        print("server output:\n" + server_log.read(), file=sys.stderr)
        raise
    finally:
        if server is not None:
            stop_server(server)
        server_log.close()
        stop_all(busy)

    where = torch.cuda.get_device_name(explorer.device) if explorer.device.type == "cuda" else "the CPU"
    print(f"\n{explorer.name} on {where}, {os.cpu_count()} CPUs visible, torch {torch.__version__}, load average "
          f"{os.getloadavg()[0]:.1f}; server side: {args.threads} torch threads in process; through the server: "
          f"separate process, --threads {args.server_threads} --concurrency {args.concurrency}, {args.clients} "
          f"client threads; {args.busy} busy processes beside it all\n")
    print("| measure | median | p95 / change | target | met |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
