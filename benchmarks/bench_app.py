"""The app's speed and memory with the default model on the CPU (not a test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_app.py [--threads 2] [--tokens 32] [--clients 20] [--requests 1000]

Server side: the work one event does (forward pass or cache hit, the views, the JSON gradio sends), timed in the
process. Through the server: gradio_client calls against the launched app on 127.0.0.1, including the queue.
Targets (issue #4): new input <= 150 ms, slider <= 50 ms, 20 clients all served with p95 <= 2 s, RSS flat over
1000 requests.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import threading
import time

import torch

WORDS = ("the river bank was quiet when the old man sat down to read his paper and watch the boats go past while "
         "children played near the water and a dog barked at the birds").split()


def sentence(i: int, tokens: int) -> str:
    """A distinct sentence of about `tokens` word pieces (the counter makes every input new: no cache hits)."""
    words = [WORDS[(i + k) % len(WORDS)] for k in range(tokens - 4)]
    return " ".join(words) + f" {i}."


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def percentile(values, q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads (the 2-core budget)")
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from gradio_client import Client

    from bertviz_app import app
    from bertviz_app.explorer import load

    explorer = load(device="cpu")
    counter = itertools.count()
    n_tokens = len(explorer.run(sentence(next(counter), args.tokens)))
    rows = []

    def timed(fn, repeat):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append((time.perf_counter() - start) * 1000)
        return statistics.median(times), percentile(times, 0.95)

    # --- server side, in the process ---------------------------------------------------------------------------
    def new_input():
        run = explorer.run(sentence(next(counter), args.tokens))
        run.token_table()
        app.heatmap_view(run, 0, 0, "all", False).to_json()

    def new_input_all_views():
        run = explorer.run(sentence(next(counter), args.tokens))
        run.token_table()
        figs = [app.heatmap_view(run, 0, 0, "all", False), *app.attention_detail_views(run, 0, 0, "all", False, 0),
                *app.overview_views(run), *app.embedding_views(run), *app.hidden_views(run, run.num_layers),
                app.corruption_view(explorer, run, 0)[2]]
        app.next_sentence_view(explorer, run)
        for fig in figs:
            fig.to_json()

    run = explorer.run(sentence(next(counter), args.tokens))
    layers = itertools.cycle(range(run.num_layers))

    def slider():
        app.heatmap_view(run, next(layers), 3, "all", False).to_json()

    def slider_all():
        layer = next(layers)
        app.heatmap_view(run, layer, 3, "all", False).to_json()
        for fig in app.attention_detail_views(run, layer, 3, "all", False, 1):
            fig.to_json()

    for name, fn, target in (("new input: forward + token table + heatmap (the `analyze` event)", new_input, 150),
                             ("new input: every view of every tab (analyze + chained events)", new_input_all_views,
                              None),
                             ("slider: heatmap (the `attention` event)", slider, 50),
                             ("slider: heatmap + the four companion views", slider_all, None)):
        fn()  # warm up
        median, p95 = timed(fn, args.repeat)
        rows.append((f"server side, {name}", f"{median:.0f} ms", f"{p95:.0f} ms",
                     f"<= {target} ms" if target else "-", ("yes" if median <= target else "NO") if target else "-"))

    # --- through the server --------------------------------------------------------------------------------------
    demo = app.build_demo({explorer.name: explorer})
    url = app.serve(demo, port=app.free_port(), block=False)
    try:
        def analyze(client, i):
            return client.predict(explorer.name, sentence(i, args.tokens), "", 0, 0, "all", False, 0,
                                  api_name="/analyze")

        latencies, errors, lock = [], [], threading.Lock()

        def visitor(k):
            try:
                client = Client(url, verbose=False)
                for j in range(3):
                    start = time.perf_counter()
                    analyze(client, 10_000 + 10 * k + j)
                    client.predict(j % run.num_layers, 1, "all", False, api_name="/attention")
                    with lock:
                        latencies.append(time.perf_counter() - start)
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
        p95 = percentile(latencies, 0.95) if latencies else float("nan")
        rows.append((f"{args.clients} concurrent clients x 3 (new input + slider), through the server",
                     f"{statistics.median(latencies):.2f} s" if latencies else "-", f"{p95:.2f} s",
                     "p95 <= 2 s, no errors",
                     "yes" if p95 <= 2 and not errors and len(latencies) == 3 * args.clients else
                     f"NO ({len(errors)} errors, {len(latencies)} served, {wall:.0f} s wall)"))

        client = Client(url, verbose=False)
        for i in range(80):  # fill the Run cache (32 entries) and warm the allocator before the baseline
            analyze(client, 50_000 + i)
        before = rss_mib()
        for i in range(args.requests):
            if i % 2:
                client.predict(i % run.num_layers, i % run.num_heads, "all", bool(i % 3), api_name="/attention")
            else:
                analyze(client, 100_000 + i)
        after = rss_mib()
        growth = after - before
        rows.append((f"memory over {args.requests} requests (half new inputs, half sliders)",
                     f"{before:.0f} -> {after:.0f} MiB", f"{growth:+.0f} MiB", "flat (< 50 MiB growth)",
                     "yes" if growth < 50 else "NO"))
    finally:
        demo.close()

    print(f"\n{explorer.name}, {n_tokens} tokens, {args.threads} torch threads, "
          f"{os.cpu_count()} CPUs visible, torch {torch.__version__}\n")
    print("| measure | median | p95 / change | target | met |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
