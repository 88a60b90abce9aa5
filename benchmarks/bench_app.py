"""The app's speed and memory with the default model, on the CPU unless --device cuda (not a test: prints a
Markdown table).

    .venv/bin/python benchmarks/bench_app.py [--threads 2] [--tokens 32] [--clients 20] [--requests 1000]
                                             [--rounds 2] [--concurrency 1] [--server-threads 1] [--device cpu]

Server side: the work one event does (forward pass or cache hit, the views, the JSON gradio sends), timed in this
process. Through the server: `bertviz-app serve` runs as its own process (so it does not share a GIL with the
clients), and gradio_client threads in this process call it on 127.0.0.1, queue included; every request is timed on
its own. Memory: the server process's resident set (VmRSS), read from /proc.
Targets (issue #4): new input <= 150 ms, slider <= 50 ms, 20 clients all served with p95 <= 2 s, RSS flat over
1000 requests.
"""

from __future__ import annotations

import argparse
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


def sentence(i: int, tokens: int) -> str:
    """A distinct sentence of about `tokens` word pieces (the counter makes every input new: no cache hits)."""
    words = [WORDS[(i + k) % len(WORDS)] for k in range(tokens - 4)]
    return " ".join(words) + f" {i}."


ROOT = Path(__file__).resolve().parent.parent
# Runnable as `python benchmarks/bench_app.py` from a checkout without installing the package.
sys.path.insert(0, str(ROOT))


def rss_mib(pid: int) -> float:
    """The resident set of process `pid` (VmRSS), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def start_server(port: int, threads: int, concurrency: int, log, device: str = "cpu") -> subprocess.Popen:
    """`bertviz-app serve` as a child process with the default model on `device`; returns once it answers HTTP."""
    proc = subprocess.Popen([sys.executable, "-m", "bertviz_app", "serve", "--device", device, "--port", str(port),
                             "--threads", str(threads), "--concurrency", str(concurrency)],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 180
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
    raise RuntimeError(f"the server did not answer on {url} within 180 s")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def percentile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2,
                        help="torch CPU threads for the server-side timings in this process (the 2-core budget)")
    parser.add_argument("--server-threads", type=int, default=1, help="the server's --threads (torch CPU threads)")
    parser.add_argument("--concurrency", type=int, default=1, help="the server's --concurrency")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=1000, help="requests per memory round")
    parser.add_argument("--rounds", type=int, default=2,
                        help="memory rounds; the RSS after each is printed, the growth over the last is the figure")
    parser.add_argument("--repeat", type=int, default=20)
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
    return Client(url, verbose=False, ssl_verify=False, analytics_enabled=False)


def timed(fn, repeat: int) -> tuple[float, float]:
    """(median, p95) in ms of `repeat` calls."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times), percentile(times, 0.95)


def server_side(explorer, args, counter) -> list[tuple]:
    """The work of one event, timed in this process: forward pass or cache hit, the views, their JSON."""
    from bertviz_app.app import attention, masked_lm, next_sentence

    def new_input():
        run = explorer.run(sentence(next(counter), args.tokens))
        run.token_table()
        attention.heatmap_view(run, 0, 0, "all", False).to_json()

    def new_input_all_views():
        run = explorer.run(sentence(next(counter), args.tokens))
        run.token_table()
        plot = run.plot
        figs = [attention.heatmap_view(run, 0, 0, "all", False), *attention.detail_views(run, 0, 0, "all", False, 0),
                plot.head_overview(), plot.head_map(), plot.embedding_parts(), plot.segment_comparison(),
                plot.hidden_norms(), plot.layer_similarity(), plot.token_similarity(), plot.hidden_projection(),
                masked_lm.corruption_view(explorer, run, 0)[2]]
        next_sentence.next_sentence_view(explorer, run)
        for fig in figs:
            fig.to_json()

    run = explorer.run(sentence(next(counter), args.tokens))
    layers = itertools.cycle(range(run.num_layers))

    def slider():
        attention.heatmap_view(run, next(layers), 3, "all", False).to_json()

    def slider_all():
        layer = next(layers)
        attention.heatmap_view(run, layer, 3, "all", False).to_json()
        for fig in attention.detail_views(run, layer, 3, "all", False, 1):
            fig.to_json()

    rows = []
    for name, fn, target in (("new input: forward + token table + heatmap (the `analyze` event)", new_input, 150),
                             ("new input: every view of every tab (analyze + chained events)", new_input_all_views,
                              None),
                             ("slider: heatmap (the `attention` event)", slider, 50),
                             ("slider: heatmap + the four companion views", slider_all, None)):
        fn()  # warm up
        median, p95 = timed(fn, args.repeat)
        rows.append((f"server side, {name}", f"{median:.0f} ms", f"{p95:.0f} ms",
                     f"<= {target} ms" if target else "-", ("yes" if median <= target else "NO") if target else "-"))
    return rows


def analyze(client, model_name: str, i: int, tokens: int):
    return client.predict(model_name, sentence(i, tokens), "", 0, 0, "all", False, 0, api_name="/analyze")


def concurrent_visitors(url: str, model_name: str, num_layers: int, args) -> list[tuple]:
    """`--clients` visitors at once, each analyzing 3 new inputs and moving a slider after each."""
    new_lat, slider_lat, errors, lock = [], [], [], threading.Lock()

    def visitor(k):
        try:
            client = make_client(url)
            for j in range(3):
                start = time.perf_counter()
                analyze(client, model_name, 10_000 + 10 * k + j, args.tokens)
                middle = time.perf_counter()
                client.predict(j % num_layers, 1, "all", False, api_name="/attention")
                end = time.perf_counter()
                with lock:
                    new_lat.append(middle - start)
                    slider_lat.append(end - middle)
        except Exception as err:  # a benchmark reports failures, it does not stop at the first
            with lock:
                errors.append(repr(err))

    threads = [threading.Thread(target=visitor, args=(k,)) for k in range(args.clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    every = new_lat + slider_lat

    def seconds(values, q):
        return f"{percentile(values, q):.2f} s" if values else "-"

    label = f"{args.clients} clients x 3,"
    served = len(every) == 2 * 3 * args.clients
    ok = bool(every) and percentile(every, 0.95) <= 2 and not errors and served
    return [(f"{label} new input (`/analyze`), through the server", seconds(new_lat, 0.5), seconds(new_lat, 0.95),
             "-", "-"),
            (f"{label} slider (`/attention`), through the server", seconds(slider_lat, 0.5),
             seconds(slider_lat, 0.95), "-", "-"),
            (f"{label} every request ({len(every)} served, {len(errors)} errors, {wall:.1f} s wall)",
             seconds(every, 0.5), seconds(every, 0.95), "all served, p95 <= 2 s, no errors", "yes" if ok else "NO")]


def memory_rounds(url: str, pid: int, model_name: str, num_layers: int, num_heads: int, args) -> list[tuple]:
    """The server's memory over `--rounds` rounds of `--requests` requests, new inputs and sliders alternating. The
    first rounds fill the Run cache and let the C heap reach its working size; a leak shows as growth in the last."""
    client = make_client(url)
    start_rss = rss = rss_mib(pid)
    print(f"server RSS after 0 requests: {rss:.0f} MiB", file=sys.stderr, flush=True)
    for round_ in range(1, args.rounds + 1):
        before = rss
        for i in range(100_000 * round_, 100_000 * round_ + args.requests):
            if i % 2:
                client.predict(i % num_layers, i % num_heads, "all", bool(i % 3), api_name="/attention")
            else:
                analyze(client, model_name, i, args.tokens)
        rss = rss_mib(pid)
        print(f"server RSS after {round_ * args.requests} requests: {rss:.0f} MiB", file=sys.stderr, flush=True)
    growth = rss - before
    return [(f"server RSS, {args.requests} requests (half new inputs, half sliders) after "
             f"{(args.rounds - 1) * args.requests} more from {start_rss:.0f} MiB", f"{before:.0f} -> {rss:.0f} MiB",
             f"{growth:+.0f} MiB", "flat (< 50 MiB growth)", "yes" if growth < 50 else "NO")]


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    from bertviz_app.app import free_port
    from bertviz_app.explorer import load

    explorer = load(device=args.device)
    counter = itertools.count()
    run = explorer.run(sentence(next(counter), args.tokens))
    rows = server_side(explorer, args, counter)
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    server_log = tempfile.TemporaryFile(mode="w+")
    server = None
    try:
        server = start_server(port, args.server_threads, args.concurrency, server_log, args.device)
        rows += concurrent_visitors(url, explorer.name, run.num_layers, args)
        rows += memory_rounds(url, server.pid, explorer.name, run.num_layers, run.num_heads, args)
    except Exception:
        server_log.seek(0)
        print("server output:\n" + server_log.read(), file=sys.stderr)
        raise
    finally:
        if server is not None:
            stop_server(server)
        server_log.close()

    where = torch.cuda.get_device_name(explorer.device) if explorer.device.type == "cuda" else "the CPU"
    print(f"\n{explorer.name} on {where}, {len(run)} tokens, {os.cpu_count()} CPUs visible, torch "
          f"{torch.__version__}; server side: {args.threads} torch threads in process; through the server: separate "
          f"process, --threads {args.server_threads} --concurrency {args.concurrency}, {args.clients} client threads\n")
    print("| measure | median | p95 / change | target | met |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
