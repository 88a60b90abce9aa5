"""The audit of issue #20, repeated against a served app (not a test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_security.py [--seconds 20] [--threads 1] [--clients 30] [--pollers 8]
                                                   [--phases ...]

`bertviz-app serve --device cpu --auth USER:PASSWORD` (the built-in models, 256 tokens at most) runs as its own
process on 127.0.0.1; this process logs in and then, against that one server, in this order:

1. per-session (first, on a fresh heap: later ones would fill memory the attacks freed): `--clients` visitors each
   analyze the same 5 inputs of 256 tokens (the Run cache holds them after the first visitor, so what grows is the
   sessions); (RSS after - RSS after the first visitor) / the rest;
2. exports: 20 threads ask the views' server functions for the largest exports there are, without pause, for
   `--seconds`: the CSV of every head of a layer (at 256 tokens, as the audit asked, and at 147 tokens, the longest
   input whose all-heads CSV is still given), and the offline page at 256 tokens; from 10 sessions of one address.
   Meanwhile a visitor analyzes new sentences one after another. Reported: what the exports were answered, the
   server's resident memory (VmRSS sampled every 50 ms: before, peak, 3 s after) and the visitor's latency, against
   the same visitor alone just before;
3. sessions: a visitor (from 127.0.0.2) analyzes, then one address (127.0.0.1) sends 600 calls with random session
   hashes (300 to the server functions, 300 to an event outside the queue); reported: whether the visitor's
   analysis is still theirs, and the server's memory;
4. logins (last: it locks the user name out): 120 wrong passwords, each request naming a fresh address in
   X-Forwarded-For; reported: how many reached the password check, and what the right password then got.
Issue #31's attacks, as phases of their own:
- api-poisoning (first, before anything else asks for the API description): the first GET /gradio_api/info after
  start-up names X-Forwarded-Host: evil.example and X-Forwarded-Proto: https; reported: whether a later visitor's
  description (and the page's "Use via API" snippets) names evil.example;
- malformed: 4 threads for `--seconds` send event calls by a number no event has, by the number of an event that
  runs only in the page, and by an unknown name; reported: the answers by status, and how much the server's log grew.
- progress-polling and finetune-exhaustion (the server started with `--allow-training --data FILE` as well, FILE a
  CSV of 80 labelled sentences written here, only when one of them is asked for):
  progress-polling: a visitor trains once (the loss figure then exists), then `--pollers` threads each ask
  `finetune_progress` without pause from a page of their own for `--seconds`, while another visitor analyzes new
  12-token sentences; reported: the polls' answers, and the visitor's median analysis time against alone just before;
  finetune-exhaustion: one visitor (one page) starts 1-epoch trainings, each after the last is done, until refused;
  reported: how many it started and the refusal, then what a second visitor (another page, another address) gets.
Issue #42's:
- timeline (the server started with `--model DIR`, DIR the default model with a timeline of 1,000 snapshots of one
  122-token input written here, 475 MB of payloads): one visitor opens the Timeline tab (its event, as the page sends
  it once the tab is open), then asks for every page of payloads; reported: the answers' sizes and the server's RSS.
- corpus-hammer (`--corpus DIR`, a corpus built with the default model): 10 sessions of one address search it from
  100 threads for `--seconds`, each search a new one, while a visitor of another address asks for the summary and a
  head's details (answers made before) every 0.6 s; reported: the searches' answers, the server's memory, and the
  visitor's median and p95 against alone just before.
- pretrain-views and training-budget (`--allow-training`, as the Fine-tune phases): pretrain-views: one thread asks
  for the Pretrain tab's views without pause for `--seconds` while another visitor analyzes; training-budget: one
  page starts 2-minute pretrainings, each stopped at once, until refused, then a fine-tuning from the same page.
The machine this ran on may be shared: latencies move with the neighbours' load, the ratios less.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import WORDS, print_measures, queue_event, rss_mib, served  # noqa: E402

USER, PASSWORD = "teacher", "a long class password"
MAX_TOKENS = 256


def text_of(tokens: int, tag: str) -> str:
    """About `tokens` word pieces, `tag` first (so that it survives truncation)."""
    return f"{tag} " + " ".join(WORDS[k % len(WORDS)] for k in range(tokens - 3))


class Visitor:
    """One logged-in browser: its cookies and session hash, calling events through the queue and the views' server
    functions as the page does."""

    def __init__(self, url: str, cookies, config: dict, address: str = "127.0.0.1"):
        self.url, self.config = url, config
        # another loopback address is another client address to the server (Linux answers all of 127.0.0.0/8)
        self.http = httpx.Client(base_url=url, cookies=cookies, timeout=300,
                                 transport=httpx.HTTPTransport(local_address=address))
        self.session = uuid.uuid4().hex[:11]
        self.events = {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}
        self.hosts = {c["props"].get("elem_id"): c["id"] for c in config["components"]}
        self.model = next(c["props"]["value"] for c in config["components"] if c["props"].get("elem_id") == "model")

    def event(self, name: str, data: list) -> dict:
        return queue_event(self.http, self.events[name], self.session, data)

    def analyze(self, text: str) -> str:
        """The views' key of a new analysis."""
        data = self.event("analyze", [self.model, text, ""])["data"]
        return next(d["key"] for d in data if isinstance(d, dict) and "key" in d)

    def server_function(self, name: str, data, session: str | None = None, host: str = "attention-host") -> dict:
        answer = self.http.post("gradio_api/component_server", json={
            "session_hash": session or self.session, "component_id": self.hosts[host], "fn_name": name,
            "data": data})
        answer.raise_for_status()
        return answer.json()


class Sampler:
    """The server's VmRSS every 50 ms, in a thread, while in a `with`."""

    def __init__(self, pid: int):
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()

    def __enter__(self):
        self.before = rss_mib(self.pid)
        self.peak = self.before
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mib(self.pid))

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def latencies(visitor: Visitor, count: int, tag: str, stop: threading.Event | None = None) -> list[float]:
    """Seconds per new 12-token analysis, `count` of them (or until `stop`)."""
    times = []
    for i in range(count):
        if stop is not None and stop.is_set():
            break
        start = time.perf_counter()
        visitor.analyze(f"{tag} {i}: the cat sat on the mat near the door.")
        times.append(time.perf_counter() - start)
    return times


def under_attack(attack, threads: int, victim: Visitor, seconds: float, stop: threading.Event
                 ) -> tuple[list[float], float]:
    """`threads` runs of attack(n) for `seconds` while `victim` analyzes one new sentence after another; (the victim's
    latencies meanwhile, the seconds it all took). `attack` returns once `stop` is set."""
    with concurrent.futures.ThreadPoolExecutor(threads + 1) as pool:
        started = time.perf_counter()
        for n in range(threads):
            pool.submit(attack, n)
        during = pool.submit(latencies, victim, 10_000, "during", stop)
        time.sleep(seconds)
        stop.set()
        return during.result(), time.perf_counter() - started


def exports(url, cookies, config, pid, args) -> list[tuple[str, str]]:
    attackers = [Visitor(url, cookies, config) for _ in range(10)]
    keys = []
    for attacker in attackers:
        keys.append((attacker, attacker.analyze(text_of(MAX_TOKENS, "long")),
                     attacker.analyze(text_of(147, "capped"))))
    victim = Visitor(url, cookies, config, address="127.0.0.2")
    alone = latencies(victim, 8, "alone")
    answers: dict[str, int] = {}
    lock = threading.Lock()
    stop = threading.Event()

    def attack(n: int):
        attacker, long_key, capped_key = keys[n % len(keys)]
        calls = [("attention_csv", {"key": long_key, "matrix": "attention", "layer": 0, "head": "all"}),
                 ("attention_csv", {"key": capped_key, "matrix": "attention", "layer": 0, "head": "all"}),
                 ("offline_page", long_key)]
        k = n
        while not stop.is_set():
            name, data = calls[k % len(calls)]
            k += 1
            answer = attacker.server_function(name, data)
            error = answer.get("error", "")
            kind = ("answered" if "value" in answer else "busy" if "busy" in error
                    else "rate-limited" if "in a minute" in error else "refused: choose one head" if "one head" in error
                    else f"error: {error[:40]}")
            with lock:
                answers[kind] = answers.get(kind, 0) + 1

    with Sampler(pid) as memory:
        during, elapsed = under_attack(attack, 20, victim, args.seconds, stop)
        time.sleep(3)
        after = rss_mib(pid)
    total = sum(answers.values())
    return [("exports: 20 threads for", f"{elapsed:.0f} s, {total} calls: " + ", ".join(
                f"{n} {kind}" for kind, n in sorted(answers.items(), key=lambda kv: -kv[1]))),
            ("exports: server RSS before / peak / 3 s after",
             f"{memory.before:.0f} / {memory.peak:.0f} / {after:.0f} MiB"),
            ("a new 12-token analysis alone: median (max)", f"{statistics.median(alone):.2f} s ({max(alone):.2f} s)"),
            ("the same during the exports: median (max), n", f"{statistics.median(during):.2f} s "
                                                             f"({max(during):.2f} s), {len(during)}")]


def sessions(url, cookies, config, pid) -> list[tuple[str, str]]:
    victim = Visitor(url, cookies, config, address="127.0.0.2")
    victim.analyze("The visitor who should stay.")
    attacker = Visitor(url, cookies, config)
    before, start = rss_mib(pid), time.perf_counter()
    answers: dict[int, int] = {}
    for i in range(300):
        answer = attacker.server_function("query_key", "k", session=uuid.uuid4().hex[:11])
        answers["reload" in answer.get("error", "")] = answers.get("reload" in answer.get("error", ""), 0) + 1
        attacker.http.post("gradio_api/run/predict", json={"data": [], "fn_index": attacker.events["_restore"],
                                                             "session_hash": uuid.uuid4().hex[:11]})
    elapsed = time.perf_counter() - start
    try:
        victim.event("token_similarity", [None, 1])
        kept = "yes: their next view drew from it"
    except RuntimeError as err:
        kept = f"no: {str(err)[:80]}"
    return [("600 random-session calls from one address", f"{elapsed:.1f} s; {answers.get(True, 0)} of 300 server-"
                                                          "function calls told to reload the page"),
            ("the visitor's analysis afterwards still theirs", kept),
            ("server RSS before / after the 600 calls", f"{before:.0f} / {rss_mib(pid):.0f} MiB")]


def per_session(url, cookies, config, pid, clients: int) -> list[tuple[str, str]]:
    texts = [text_of(MAX_TOKENS, f"session{i}") for i in range(5)]
    first = Visitor(url, cookies, config)
    for text in texts:
        first.analyze(text)
    before = rss_mib(pid)
    for _ in range(clients - 1):
        visitor = Visitor(url, cookies, config)
        for text in texts:
            visitor.analyze(text)
    after = rss_mib(pid)
    return [(f"{clients} visitors x 5 analyses at {MAX_TOKENS} tokens: RSS after the first / after all",
             f"{before:.0f} / {after:.0f} MiB"),
            ("memory per session", f"{(after - before) / (clients - 1) * 1024:.0f} kB")]


def api_poisoning(url: str, cookies) -> list[tuple[str, str]]:
    evil = {"x-forwarded-host": "evil.example", "x-forwarded-proto": "https"}
    with httpx.Client(base_url=url, cookies=cookies) as attacker, httpx.Client(base_url=url, cookies=cookies) as other:
        attacker.get("gradio_api/info", headers=evil)
        later = other.get("gradio_api/info").text + other.get("gradio_api/openapi.json").text
    return [("the first API description asked with X-Forwarded-Host: evil.example; a later visitor's names it",
             "yes" if "evil.example" in later else "no")]


def malformed(url: str, cookies, config, pid: int, seconds: float) -> list[tuple[str, str]]:
    page_only = next(d["id"] for d in config["dependencies"] if d.get("backend_fn") is False)
    calls = [("gradio_api/queue/join", {"fn_index": 100_000}), ("gradio_api/queue/join", {"fn_index": page_only}),
             ("gradio_api/run/predict", {"fn_index": page_only}), ("gradio_api/run/no_such_endpoint", {})]
    log = Path(os.readlink(f"/proc/{pid}/fd/2"))
    before, statuses, stop = log.stat().st_size, [], time.monotonic() + seconds

    def attack(i: int) -> None:
        with httpx.Client(base_url=url, cookies=cookies) as http:
            while time.monotonic() < stop:
                path, body = calls[len(statuses) % len(calls)]
                try:
                    statuses.append(http.post(path, json={"data": [], "session_hash": f"bad{i}", **body}).status_code)
                except httpx.HTTPError:  # a server that broke off the connection after its 500
                    statuses.append("connection reset")

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(attack, range(4)))
    counts = ", ".join(f"{statuses.count(code)} x {code}" for code in sorted(set(statuses), key=str))
    return [(f"malformed event calls, 4 threads x {seconds:.0f} s", counts),
            ("the server's log grew by", f"{(log.stat().st_size - before) / 1024:.1f} kB")]


def logins(url: str) -> list[tuple[str, str]]:
    statuses = []
    start = time.perf_counter()
    for i in range(120):
        statuses.append(httpx.post(url + "login", data={"username": USER, "password": f"guess {i}"},
                                   headers={"x-forwarded-for": f"203.0.{i // 250}.{i % 250 + 1}"}).status_code)
    elapsed = time.perf_counter() - start
    right = httpx.post(url + "login", data={"username": USER, "password": PASSWORD},
                       headers={"x-forwarded-for": "198.51.100.200"})
    return [("120 wrong passwords, a fresh X-Forwarded-For each", f"{statuses.count(400)} checked, "
                                                                  f"{statuses.count(429)} refused untried "
                                                                  f"({elapsed:.1f} s)"),
            ("then the right password", f"{right.status_code}" + (f": {right.json().get('detail', '')}"
                                                                  if right.status_code == 429 else ""))]


# --- the Fine-tune tab (issue #31) ---------------------------------------------------------------------------------
def training_data(folder: Path) -> Path:
    """80 labelled sentences: one short epoch of the default model."""
    import csv

    good = ["a good film", "a great movie", "the film was good", "a fine and lovely story", "a witty movie"]
    bad = ["a bad film", "an awful movie", "the film was bad", "a dull and boring story", "a tedious movie"]
    path = folder / "bench-80.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(("text", "label"))
        for i in range(40):
            writer.writerows([(f"{good[i % 5]} number {i}", "positive"), (f"{bad[i % 5]} number {i}", "negative")])
    return path


def unqueued(visitor: Visitor, name: str, data: list) -> dict:
    """An event outside the queue, as the page calls it: gradio's answer ({"data": ...} or {"error": ...})."""
    answer = visitor.http.post("gradio_api/run/predict", json={"data": data, "fn_index": visitor.events[name],
                                                               "session_hash": visitor.session})
    try:
        return answer.json()
    except ValueError:
        return {"error": f"HTTP {answer.status_code}"}


def start_training(visitor: Visitor) -> str:
    """Start one epoch on the --data file; '' once started, else the refusal."""
    data = next(c["props"]["value"] for c in visitor.config["components"]
                if c["props"].get("elem_id") == "finetune-data")
    base = next(c["props"]["value"] for c in visitor.config["components"]
                if c["props"].get("elem_id") == "finetune-base")
    answer = unqueued(visitor, "finetune_start", [data, base, 1, "1e-4", False])
    return str(answer.get("error") or "") if "data" not in answer else ""


def training_done(visitor: Visitor, timeout: float = 600) -> str:
    """Poll as the page's timer does (once a second) until the lane is idle; the last status."""
    deadline, status = time.monotonic() + timeout, ""
    while time.monotonic() < deadline:
        time.sleep(1.0)
        data = unqueued(visitor, "finetune_progress", [None]).get("data") or [""]
        status = data[0] if isinstance(data[0], str) else status
        if status and not status.startswith(("Training", "Stopping", "Cancelling")):
            return status
    return f"still running after {timeout:.0f} s: {status}"


def progress_polling(url, cookies, config, args) -> list[tuple[str, str]]:
    trainer = Visitor(url, cookies, config)
    refused = start_training(trainer)
    shown = training_done(trainer) if not refused else refused
    victim = Visitor(url, cookies, config, address="127.0.0.2")
    alone = latencies(victim, 10, "alone")
    answers: dict[str, int] = {}
    lock, stop = threading.Lock(), threading.Event()

    def poll(n: int):
        page = Visitor(url, cookies, config)
        while not stop.is_set():
            answer = unqueued(page, "finetune_progress", [None])
            data = answer.get("data")
            kind = ("refused before gradio (429)" if "too often" in str(answer.get("error")) else "error"
                    if data is None else "figure sent" if isinstance(data[1], dict) and "plot" in data[1]
                    else "nothing new (skipped)")
            with lock:
                answers[kind] = answers.get(kind, 0) + 1

    during, elapsed = under_attack(poll, args.pollers, victim, args.seconds, stop)
    total = sum(answers.values())
    return [("the training before the polls", shown[:90].replace("|", "/")),
            (f"{args.pollers} threads polling finetune_progress without pause",
             f"{total} calls in {elapsed:.0f} s ({total / elapsed:.0f}/s): " + ", ".join(
                 f"{n} {kind}" for kind, n in sorted(answers.items(), key=lambda kv: -kv[1]))),
            ("a new 12-token analysis alone: median (max)", f"{statistics.median(alone):.3f} s ({max(alone):.3f} s)"),
            ("the same during the polls: median (max), n", f"{statistics.median(during):.3f} s "
                                                           f"({max(during):.3f} s), {len(during)}")]


def finetune_exhaustion(url, cookies, config) -> list[tuple[str, str]]:
    first = Visitor(url, cookies, config)
    started, refusal, begun = 0, "", time.perf_counter()
    while started < 20:
        refusal = start_training(first)
        if refusal:
            break
        started += 1
        training_done(first)
    elapsed = time.perf_counter() - begun
    second = Visitor(url, cookies, config, address="127.0.0.2")
    answer = start_training(second)
    got = f"refused: {answer}" if answer else f"started; then: {training_done(second)}"
    return [("one page starts 1-epoch trainings (80 rows) until refused",
             f"{started} started in {elapsed:.0f} s, then: {refusal or 'never refused'}".replace("|", "/")),
            ("a second visitor (another page and address) then", got[:400].replace("|", "/").replace("\n", " "))]


TIMELINE_SNAPSHOTS = 1000  # --timeline's maximum


def timeline_model(folder: Path, snapshots: int = TIMELINE_SNAPSHOTS) -> Path:
    """The default model's folder with a training timeline of `snapshots` snapshots of one 122-token input (the audit's
    case), written in the timeline's format: each snapshot the payload of a real analysis, whatever step it stands
    for (their sizes are what the phase is about, not what they show)."""
    import bertviz_app
    from bertviz_app.catalog import default_model_path
    from bertviz_app.timeline import format as fmt

    model = folder / "timeline-model"
    shutil.copytree(default_model_path(), model)
    run = bertviz_app.load(model, device="cpu").run(text_of(122, "timeline"))
    payload = run.views_payload()
    roles = [["broad"] * run.num_heads for _ in range(run.num_layers)]
    timeline = model / fmt.FOLDER
    timeline.mkdir()
    fmt.write_json(timeline / fmt.MANIFEST, {
        "format": fmt.FORMAT, "version": fmt.VERSION, "kind": "pretraining", "task": None, "labels": None,
        "model": model.name, "inputs": [{"text": run.encoding.text, "text_pair": None, "answers": [], "gold": None}],
        "total_steps": snapshots - 1, "count": snapshots, "schedule": list(range(snapshots)), "top_k": 5})
    for step in range(snapshots):
        fmt.write_snapshot(timeline, step, {"step": step, "loss": 1.0, "loss_mean": 1.0, "lr": 1e-4, "scheduled": True,
                                            "seconds": 0.1, "heads": {}, "roles": roles,
                                            "inputs": [{"tokens": run.tokens}]}, [payload])
    return model


def timeline_memory(url, cookies, config, pid) -> list[tuple[str, str]]:
    """One visitor opens the Timeline tab on a 1,000-snapshot timeline of a 122-token input, then slides through
    every page of it (the timeline_page server function, as the page does); the server's RSS meanwhile."""
    visitor = Visitor(url, cookies, config)
    host = next(c["id"] for c in config["components"] if c["props"].get("elem_id") == "timeline-host")
    with Sampler(pid) as opened:
        started = time.perf_counter()
        value = visitor.event("timeline", [visitor.model, None])["data"][2]
        took = time.perf_counter() - started
    data, name = value["timeline"], value["pages"]
    pages = -(-len(data["steps"]) // data["page_size"])
    largest, answers = 0, []
    with Sampler(pid) as slid:
        for page in range(pages):
            answer = visitor.http.post("gradio_api/component_server", json={
                "session_hash": visitor.session, "component_id": host, "fn_name": "timeline_page",
                "data": {"pages": name, "page": page}})
            answer.raise_for_status()
            largest = max(largest, len(answer.content))
            answers.append("value" in answer.json())
    after = rss_mib(pid)
    return [("timeline: one visitor opens the tab (1,000 snapshots of a 122-token input)",
             f"one answer of {len(json.dumps(value)) / 2**20:.1f} MB ({data['page_size']} snapshots' payloads of "
             f"{len(data['steps'])}) in {took:.1f} s; RSS {opened.before:.0f} -> peak {opened.peak:.0f} MiB"),
            ("timeline: the same visitor then asks for every page, one after another",
             f"{sum(answers)} of {pages} pages answered, the largest {largest / 2**20:.1f} MB; RSS peak "
             f"{slid.peak:.0f} MiB, after {after:.0f} MiB: +{max(opened.peak, slid.peak) - opened.before:.0f} MiB "
             "at most over the start")]
# --- the Corpus tab (issue #42) ------------------------------------------------------------------------------------
def corpus_hammer(url, cookies, config, pid, args) -> list[tuple[str, str]]:
    """10 sessions of one address search the corpus from 100 threads, each search a new one (token, layer and k
    vary, so no cache answers it), while a visitor of another address asks for answers the server has made before
    (the whole corpus's summary, one head's details)."""
    from bench_app import percentile

    info = next(c["props"]["value"]["corpora"][0] for c in config["components"]
                if c["props"].get("elem_id") == "corpus-host")
    corpus, layers = info["name"], info["hidden_layers"]
    attackers = [Visitor(url, cookies, config) for _ in range(10)]
    keys = [(a, a.analyze(f"hammer {i}: the cat sat on the mat near the door of the old house."))
            for i, a in enumerate(attackers)]
    victim = Visitor(url, cookies, config, address="127.0.0.2")
    cached = [("corpus_summary", {"corpus": corpus}), ("corpus_head", {"corpus": corpus, "layer": 5, "head": 3})]
    victim.analyze("The visitor who reads the corpus.")  # gradio makes a page's session at its first event
    for name, data in cached:  # made once: what follows is served from memory
        answer = victim.server_function(name, data, host="corpus-host")
        if "value" not in answer:
            raise RuntimeError(f"the visitor's {name} was refused: {answer}")

    refused: list[str] = []

    def asked(count: int, stop: threading.Event | None = None) -> list[float]:
        """Seconds per answer, one asked every 0.6 s at most (a quick visitor, within the page's rate); a refusal,
        such as "busy", is counted in `refused` and timed as well."""
        times = []
        for i in range(count):
            if stop is not None and stop.is_set():
                break
            name, data = cached[i % 2]
            start = time.perf_counter()
            answer = victim.server_function(name, data, host="corpus-host")
            times.append(time.perf_counter() - start)
            if "value" not in answer:
                refused.append(answer.get("error", "")[:60])
            time.sleep(max(0.0, 0.6 - times[-1]))
        return times

    alone = asked(20)
    answers: dict[str, int] = {}
    lock, stop = threading.Lock(), threading.Event()

    def attack(n: int):
        attacker, key = keys[n % len(keys)]
        k = n * 7919
        while not stop.is_set():
            k += 1
            asked_for = {"corpus": corpus, "key": key, "token": k % 14, "layer": k % layers, "k": 1 + k % 50}
            answer = attacker.server_function("corpus_search", asked_for, host="corpus-host")
            error = answer.get("error", "")
            kind = ("answered" if "value" in answer else "busy" if "busy" in error
                    else "rate-limited" if "in a minute" in error else f"error: {error[:60]}")
            with lock:
                answers[kind] = answers.get(kind, 0) + 1

    with Sampler(pid) as memory, concurrent.futures.ThreadPoolExecutor(101) as pool:
        started = time.perf_counter()
        for n in range(100):
            pool.submit(attack, n)
        time.sleep(2)  # the searches under way before the visitor asks
        during = pool.submit(asked, 100_000, stop)
        time.sleep(args.seconds)
        stop.set()
        during = during.result()
        elapsed = time.perf_counter() - started
    total = sum(answers.values())
    return [("corpus searches: 10 sessions x 100 threads, one address, for",
             f"{elapsed:.0f} s, {total} calls: " + ", ".join(
                 f"{n} {kind}" for kind, n in sorted(answers.items(), key=lambda kv: -kv[1]))),
            ("corpus: server RSS before / peak", f"{memory.before:.0f} / {memory.peak:.0f} MiB"),
            ("another visitor's made answers (summary, head) alone: median / p95",
             f"{statistics.median(alone):.3f} / {percentile(alone, 0.95):.3f} s"),
            ("the same during the searches: median / p95 (max), n",
             f"{statistics.median(during):.3f} / {percentile(during, 0.95):.3f} s ({max(during):.3f} s), "
             f"{len(during)}" + (f"; {len(refused)} refused: {refused[0]!r}" if refused else ""))]


def training_budget(url, cookies, config) -> list[tuple[str, str]]:
    """One page starts 2-minute pretrainings, each stopped at once (the Pretrain tab's Stop), until refused; then a
    fine-tuning start from the same page."""
    page = Visitor(url, cookies, config, address="127.0.0.3")
    text = next(c["props"]["value"] for c in config["components"] if c["props"].get("elem_id") == "pretrain-data")

    def once_free(start) -> str:
        """start() until the lane is free of the stopped one (it ends after its step under way); its refusal."""
        deadline = time.monotonic() + 180
        while True:
            refusal = start()
            if "already running" not in refusal or time.monotonic() > deadline:
                return refusal
            time.sleep(1)

    def pretrain() -> str:
        answer = unqueued(page, "pretrain_start", [text, "classroom", 2, "The [MASK] sat on the mat."])
        return str(answer.get("error") or "") if "data" not in answer else ""

    started, refusal = 0, ""
    while started < 10:
        refusal = once_free(pretrain)
        if refusal:
            break
        started += 1
        unqueued(page, "pretrain_stop", [])
    then = once_free(lambda: start_training(page))
    return [("one page: 2-minute pretrainings, each stopped at once, until refused",
             f"{started} started, then: {refusal[:160] or 'never refused'}".replace("|", "/")),
            ("then a fine-tuning start from the same page", (f"refused: {then[:160]}" if then
                                                             else "started").replace("|", "/"))]


def pretrain_views(url, cookies, config, args) -> list[tuple[str, str]]:
    """One thread asks for the Pretrain tab's views (`_pretrain_views`) without pause for `--seconds`, while a visitor
    of another address analyzes new sentences."""
    flooder = Visitor(url, cookies, config)
    victim = Visitor(url, cookies, config, address="127.0.0.2")
    alone = latencies(victim, 10, "alone")
    answers: dict[str, int] = {}
    stop = threading.Event()

    def flood(n: int):
        while not stop.is_set():
            answer = flooder.http.post("gradio_api/run/predict", json={
                "data": [""], "fn_index": flooder.events["_pretrain_views"], "session_hash": flooder.session})
            kind = ("429 before gradio" if answer.status_code == 429
                    else f"{answer.status_code}, {len(answer.content):,} bytes")
            answers[kind] = answers.get(kind, 0) + 1

    during, elapsed = under_attack(flood, 1, victim, args.seconds, stop)
    counted = ", ".join(f"{n} {kind}" for kind, n in sorted(answers.items(), key=lambda kv: -kv[1]))
    return [("one thread asking for `_pretrain_views` without pause",
             f"{sum(answers.values())} calls in {elapsed:.0f} s: {counted}"),
            ("a new 12-token analysis alone: median (max)", f"{statistics.median(alone):.3f} s ({max(alone):.3f} s)"),
            ("the same during the calls: median (max), n", f"{statistics.median(during):.3f} s "
                                                           f"({max(during):.3f} s), {len(during)}")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20, help="how long the exports go on")
    parser.add_argument("--threads", type=int, default=1, help="the server's --threads")
    parser.add_argument("--clients", type=int, default=30, help="visitors for the memory per session")
    parser.add_argument("--pollers", type=int, default=8, help="threads polling the Fine-tune tab's progress")
    parser.add_argument("--phases", default="api-poisoning,per-session,exports,sessions,malformed,logins",
                        help="which of api-poisoning, per-session, exports, sessions, malformed, logins, "
                             "progress-polling, finetune-exhaustion, timeline, corpus-hammer, pretrain-views, "
                             "training-budget to run (comma-separated)")
    parser.add_argument("--corpus", help="a corpus folder (`bertviz-app corpus build`) for corpus-hammer")
    args = parser.parse_args()
    rows = []
    server_args = ("--max-tokens", str(MAX_TOKENS), "--auth", f"{USER}:{PASSWORD}")
    folder = Path(tempfile.mkdtemp(prefix="bench-security-"))
    if "timeline" in args.phases:
        server_args += ("--model", str(timeline_model(folder)))
    if any(p in args.phases for p in ("progress-polling", "finetune-exhaustion", "training-budget", "pretrain-views")):
        # a cache of its own: the models fine-tuned here are written there, and removed afterwards
        os.environ["BERTVIZ_APP_CACHE"] = str(folder / "cache")
        server_args += ("--allow-training", "--data", str(training_data(folder)))
    if "corpus-hammer" in args.phases:
        if not args.corpus:
            parser.error("corpus-hammer needs --corpus DIR, a corpus built with the default model")
        server_args += ("--corpus", args.corpus)
    try:
        run_phases(args, server_args, rows)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print_measures(rows)


def run_phases(args, server_args: tuple[str, ...], rows: list) -> None:
    with served("security", args.threads, server_args) as (proc, url):
        with httpx.Client(base_url=url) as http:
            assert http.post("login", data={"username": USER, "password": PASSWORD}).status_code == 200
            cookies = http.cookies
            config = http.get("config").json()
        rows.append(("server", f"`bertviz-app serve --device cpu --threads {args.threads} --max-tokens "
                               f"{MAX_TOKENS} --auth ...`; RSS at the start {rss_mib(proc.pid):.0f} MiB"))
        if "api-poisoning" in args.phases:  # first: gradio kept the first description it built
            rows += api_poisoning(url, cookies)
        # memory per session first, on a fresh heap: later, sessions would fill memory the attacks freed
        if "per-session" in args.phases:
            rows += per_session(url, cookies, config, proc.pid, args.clients)
        if "exports" in args.phases:
            rows += exports(url, cookies, config, proc.pid, args)
        if "sessions" in args.phases:
            rows += sessions(url, cookies, config, proc.pid)
        if "malformed" in args.phases:
            rows += malformed(url, cookies, config, proc.pid, args.seconds)
        if "progress-polling" in args.phases:
            rows += progress_polling(url, cookies, config, args)
        if "finetune-exhaustion" in args.phases:
            rows += finetune_exhaustion(url, cookies, config)
        if "timeline" in args.phases:
            rows += timeline_memory(url, cookies, config, proc.pid)
        if "corpus-hammer" in args.phases:
            rows += corpus_hammer(url, cookies, config, proc.pid, args)
        if "pretrain-views" in args.phases:
            rows += pretrain_views(url, cookies, config, args)
        if "training-budget" in args.phases:
            rows += training_budget(url, cookies, config)
        if "logins" in args.phases:
            rows += logins(url)
        rows.append(("peak RSS over the whole run (VmHWM)", f"{rss_mib(proc.pid, 'VmHWM'):.0f} MiB"))


if __name__ == "__main__":
    main()
