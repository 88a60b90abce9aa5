"""A class poll under a class (not a test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_poll.py [--phones 50] [--visitors 10] [--rounds 3]

`bertviz-app serve` runs as its own process. A presenting page opens a poll (POST /poll/open) and asks its tally
once a second; `--phones` phones (each its own HTTP client: the page /p/CODE, which gives its voter cookie, then the
question) answer together within about a second (issue #47: p95 answer latency <= 300 ms); meanwhile `--visitors`
other visitors each analyze 3 new 32-token inputs as the page asks (bench_app.PageVisitor). The peer, in the same
run and alternating round by round: the same visitors with no poll, whose p95 the table divides by (the visitors'
time with a class answering over their time without). Every answer's count is checked against the tally.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_app import PageVisitor, analyze_fn_index, percentile, print_measures, sentence, served  # noqa: E402


def visitors(url: str, model: str, n: int, offset: int) -> list[float]:
    """`n` visitors at once, 3 new inputs each: the seconds of every analysis."""
    fn_index = analyze_fn_index(url)
    times, lock = [], threading.Lock()

    def visit(k):
        client = PageVisitor(url, fn_index)
        try:
            for j in range(3):
                start = time.perf_counter()
                client.analyze(model, sentence(offset + 10 * k + j, 32))
                with lock:
                    times.append(time.perf_counter() - start)
        finally:
            client.close()

    threads = [threading.Thread(target=visit, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return times


def class_answers(url: str, phones: int) -> tuple[list[float], list[int], dict]:
    """A poll opened, `phones` phones joined, then all answering at once while the presenter asks the tally each
    second: (each answer's seconds, the choices sent, the last tally)."""
    import httpx

    presenter = httpx.Client(base_url=url, timeout=60)
    poll = presenter.post("poll/open", json={"ask": "Which token?", "choices": ["the", "cat", "on", "mat"],
                                             "origin": url.rstrip("/")}).raise_for_status().json()
    clients = []
    for _ in range(phones):
        phone = httpx.Client(base_url=url, timeout=60)
        phone.get(f"p/{poll['code']}").raise_for_status()
        phone.get(f"poll/q/{poll['code']}").raise_for_status()
        clients.append(phone)
    times, picks, lock = [], [], threading.Lock()
    go = threading.Barrier(phones + 1)
    stop = threading.Event()

    def answer(i, phone):
        go.wait()
        time.sleep(i / phones)  # the class answers within a second, not in one instant
        start = time.perf_counter()
        phone.post(f"poll/answer/{poll['code']}", json={"choice": i % 4}).raise_for_status()
        with lock:
            times.append(time.perf_counter() - start)
            picks.append(i % 4)

    def tally():
        while not stop.wait(1.0):
            presenter.get("poll/tally", params={"key": poll["key"]}).raise_for_status()

    threads = [threading.Thread(target=answer, args=(i, phone)) for i, phone in enumerate(clients)]
    watcher = threading.Thread(target=tally)
    for t in [*threads, watcher]:
        t.start()
    go.wait()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    last = presenter.post("poll/close", json={"key": poll["key"]}).raise_for_status().json()
    for phone in clients:
        phone.close()
    presenter.close()
    return times, picks, last


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--phones", type=int, default=50)
    p.add_argument("--visitors", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    from bertviz_app.catalog import builtin_models

    model = next(iter(builtin_models()))
    answers, with_poll, without, wrong = [], [], [], 0
    with served("poll", threads=2) as (_, url):
        visitors(url, model, 2, 0)  # the first analyses' imports and caches, before any clock
        for r in range(args.rounds):
            without += visitors(url, model, args.visitors, 100_000 * (2 * r + 1))
            done = {}
            beside = threading.Thread(target=lambda: done.update(t=visitors(url, model, args.visitors,
                                                                                100_000 * (2 * r + 2))))
            beside.start()
            times, picks, last = class_answers(url, args.phones)
            beside.join()
            with_poll += done["t"]
            answers += times
            wrong += last["counts"] != [picks.count(c) for c in range(4)]
    p95 = percentile(answers, 0.95)
    ratio = percentile(with_poll, 0.95) / percentile(without, 0.95)
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}", file=sys.stderr)
    print_measures([
        (f"{args.phones} phones answering within a second, the tally asked each second ({args.rounds} rounds, "
         f"{len(answers)} answers, tallies wrong: {wrong})", f"p50 {percentile(answers, 0.5) * 1000:.0f} ms, "
                                                             f"p95 {p95 * 1000:.0f} ms"),
        (f"{args.visitors} visitors x 3 new inputs meanwhile: p95 with the class answering / without (same run)",
         f"{ratio:.2f}x ({percentile(with_poll, 0.95):.2f} s vs {percentile(without, 0.95):.2f} s)"),
    ])


if __name__ == "__main__":
    main()
