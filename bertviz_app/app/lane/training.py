"""The training lane of the Fine-tune tab (tabs/finetune.py): what may be trained on (the recipes, or files the
operator named at launch with `--data`: a visitor never sends a file or a path), whether the app may train at all
(`TrainingSettings`), and `TrainingLane`, which runs one `finetune()` at a time.

Training runs in a lane of its own, not in the analyses' queue: one training at a time, in a thread of its own, on
one PyTorch thread, so that analyses keep answering while it runs (benchmarks/bench_training_lane.py measures how
much slower they get). The model is written to the user's cache (`finetuned/` beside the recipes' data, see
`training_root`), never to a path a visitor chose.

Cancel stops after the step under way. When at least one epoch is complete, the best epoch so far is kept, as Ctrl-C
does on the command line; otherwise nothing is kept (the folder is removed). The server's bound on a training's length
(`Job.limit_s`, `--max-training-minutes`) and the operator's stop (`stop_trainings`, which `bertviz-app serve` calls on
SIGUSR1) stop it the same way. The lane's `StartBudget` counts the starts of each page and each client address, and
the minutes their trainings held the lane, for every kind of training.

What a failed training says to the page never names the server's folders or its network set-up: a file by its name
only, a recipe whose data could not be fetched in one sentence (and not fetched again for FETCH_RETRY_MINUTES); the
server's log keeps the detail. The lane's own sentences (its progress, a stop, a refusal, why it failed) are
`i18n.Message`s, written once for every page: each page's tab translates them into its visitor's language; what the
library says (a bad file's reason) stays as the library wrote it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import os
import re
import shutil
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ... import limits
from ...i18n import Message, composed
from ...explorer import release_freed_memory
from ...finetuning import RECIPES, FinetuneSettings, RecipeError, cache_dir, finetune
from ...pretraining import latest_checkpoint, run_pretrain
from .pretraining import PretrainJob, builtin_corpus, heldout_score, timeline_lines

log = logging.getLogger("bertviz_app.app")

# Added to the training thread's nice value (Linux keeps one per thread): 0. At +10 the analyses' p95 was 6.3x its
# idle value in one run and 1.3x in another (0.5x and 1.0x at 0): a low-priority thread descheduled while it holds
# Python's GIL keeps the analyses waiting (benchmarks/bench_training_lane.py --phases lane,lane-nice10).
NICE = 0


def training_root() -> Path:
    """Where the app writes fine-tuned models: `finetuned/` in the user's cache, beside the recipes' data."""
    return cache_dir().parent / "finetuned"


def trained_folders() -> list[tuple[str, Path]]:
    """The folders the app fine-tuned earlier (`training_root()`), newest first, each with the name the tab gave it
    ("{data} fine-tuned HH:MM", the data as its list named it; the caller makes names unique). A folder without a
    readable metrics.json is left out with a log line: a server starting again must not fail on one damaged
    folder."""
    root = training_root()
    found = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if folder.name.startswith(".") or not folder.is_dir():  # a training under way, or one killed mid-write
            continue
        try:
            metrics = folder / "metrics.json"
            source = json.loads(metrics.read_text())["settings"]["train"]
            when = metrics.stat().st_mtime
        except (OSError, ValueError, KeyError, TypeError) as err:
            log.warning("fine-tuned folder %s left out: no readable metrics.json (%s)", folder.name, err)
            continue
        # the data list's key: a recipe's name, or an operator's file by its name (data_choices)
        data = source if source in RECIPES else Path(str(source)).name
        # the time the tab named it by: its start, which the folder's name carries (tabs/finetune.py)
        started = re.search(r"-\d{8}-(\d\d)(\d\d)\d\d(-1)*$", folder.name)
        clock = f"{started[1]}:{started[2]}" if started else time.strftime("%H:%M", time.localtime(when))
        found.append((when, f"{data} fine-tuned {clock}", folder))
    return [(name, folder) for _, name, folder in sorted(found, key=lambda f: f[0], reverse=True)]


# --- what may be trained on ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DataChoice:
    key: str  # the data list's value, which the page sends
    label: str  # what the list shows
    task: str
    source: str  # a recipe's name or the operator's file; never a visitor's


def file_task(path: str | os.PathLike) -> str:
    """The task a --data file is for, from its name (and a JSON Lines file's first keys). Raises ValueError."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "question-answering"
    if suffix in (".conll", ".txt", ".iob", ".bio"):
        return "token-classification"
    if suffix in (".csv", ".tsv", ".tab"):
        return "text-classification"
    if suffix in (".jsonl", ".ndjson"):
        with path.open(encoding="utf-8", errors="replace") as handle:
            first = next((line for line in handle if line.strip()), "{}")
        try:
            keys = json.loads(first)
        except json.JSONDecodeError:
            keys = {}
        return "token-classification" if isinstance(keys, dict) and "tokens" in keys else "text-classification"
    raise ValueError(f"--data {path.name}: cannot tell the task from the file's name; use .csv, .tsv or .jsonl "
                     "(text classification), .conll or .txt (tagging), or .json (SQuAD question answering)")


def data_choices(files: Sequence[str | os.PathLike] = ()) -> dict[str, DataChoice]:
    """The recipes, then the operator's files (by name; a second file of the same name gets a number)."""
    # each label translated whole in the page (i18n.composed), the recipe's and the file's names as they are
    choices = {name: DataChoice(name, composed("{name}: {description}", {"name": name}, description=r.description),
                                r.task, name) for name, r in RECIPES.items()}
    for path in files:
        key = Path(path).name
        while key in choices:
            key = f"{Path(path).name} ({len(choices) + 1})"
        task = file_task(path)
        choices[key] = DataChoice(key, composed("{name} (named at launch; {task})", {"name": key},
                                                task=task.replace("-", " ")), task, os.fspath(path))
    return choices


@dataclass(frozen=True)
class TrainingSettings:
    """Whether the app may train, why not, what on, and how a trained model is loaded (as the others were)."""

    enabled: bool = False
    why_off: str = ("Fine-tuning is off in this app: whoever built it did not turn it on (`bertviz-app serve` does, "
                    "on 127.0.0.1).")
    data_files: tuple[str, ...] = ()
    cache_mb: float = limits.CACHE_MB
    max_minutes: float = limits.TRAINING_MINUTES  # one training's length at most; 0: no bound
    # Whether others can reach the server: then each page and each client address may start only so many trainings
    # an hour (StartBudget); where only this machine can, its one visitor is the operator.
    shared: bool = True
    pretrain_files: tuple[str, ...] = ()  # texts the Pretrain tab offers beside the built-in one (--pretrain-data)

    @classmethod
    def for_server(cls, host: str, loopback: bool, share: bool, allow: bool, data_files: Sequence[str] = (),
                   cache_mb: float = limits.CACHE_MB, proxied: bool = False,
                   max_minutes: float = limits.TRAINING_MINUTES,
                   pretrain_files: Sequence[str] = ()) -> "TrainingSettings":
        """On where only this machine can reach the server, or where the operator allowed it. Behind a reverse proxy
        (--behind-proxy) the server listens on 127.0.0.1 but the proxy's visitors reach it: not private. The starts
        are counted wherever the operator allowed training (--allow-training: for others), or others can reach it."""
        private = loopback and not share and not proxied
        if allow or private:
            return cls(True, "", tuple(map(str, data_files)), cache_mb, max_minutes, shared=allow or not private,
                       pretrain_files=tuple(map(str, pretrain_files)))
        # the tab's Markdown, translated whole in the page (i18n.composed): the host as it is
        reach = ("it is open through a public --share link" if share else
                 "a reverse proxy forwards other machines' visitors to it (--behind-proxy)" if proxied else
                 composed("it listens on {host}, an address other machines can reach", {"host": host}))
        return cls(False, composed("Fine-tuning is off on this server: {reach}, a training takes its processor for "
                                   "minutes, and anyone who reaches it could start one. Whoever runs the server can "
                                   "turn it on with `--allow-training`; on 127.0.0.1 it is on by default.",
                                   reach=reach),
                   tuple(map(str, data_files)), cache_mb, max_minutes, pretrain_files=tuple(map(str, pretrain_files)))


# --- how much of the lane a page and an address may take ---------------------------------------------------------
class StartBudget:
    """The one training lane's budget, shared by every kind of training (a pretraining counts as a fine-tuning does):
    per page (session) and per client address, over a sliding window, how many trainings were started and how many
    minutes they held the lane (a running one counts up to now). `check` raises ValueError in words that say when the
    next start is possible; `record` counts a start that got the lane and returns its entry; `finish(entry)` notes when
    it gave the lane back. The lane (TrainingLane.start) does all three."""

    def __init__(self, per_session: int = limits.TRAININGS_PER_SESSION,
                 per_address: int = limits.TRAININGS_PER_ADDRESS, window_s: float = limits.TRAINING_WINDOW_S,
                 clock: Callable[[], float] = time.monotonic,
                 session_minutes: float = limits.TRAINING_MINUTES_PER_SESSION,
                 address_minutes: float = limits.TRAINING_MINUTES_PER_ADDRESS):
        self.per_session, self.per_address, self.window_s, self.clock = per_session, per_address, window_s, clock
        self.session_minutes, self.address_minutes = session_minutes, address_minutes
        self._lock = threading.Lock()
        self._starts: dict[tuple[str, str], deque[list]] = {}  # (kind, who) -> [start, end or None], oldest first

    def _recent(self, key: tuple[str, str], now: float) -> deque:
        entries = self._starts.get(key, deque())
        since = now - self.window_s
        while entries and entries[0][0] <= since and entries[0][1] is not None and entries[0][1] <= since:
            entries.popleft()
        return entries

    def _minutes(self, entries, now: float) -> float:
        since = now - self.window_s
        return sum(max(0.0, (now if end is None else end) - max(start, since)) for start, end in entries) / 60

    def check(self, session: str | None, address: str | None, minutes: float = 0.0) -> None:
        """Whether a training of at most `minutes` (0: its length is not known before) may start now."""
        now = self.clock()
        with self._lock:
            # forget who has not held the lane within the window: the table stays as small as the last hour's
            for key in [k for k, v in self._starts.items() if not self._recent(k, now)]:
                del self._starts[key]
            for kind, who, most, most_minutes in (("session", session, self.per_session, self.session_minutes),
                                                  ("address", address, self.per_address, self.address_minutes)):
                entries = self._recent((kind, who), now) if who else deque()
                whom = (Message("This page has") if kind == "session" else
                        Message("Pages from your network address (a class behind one school address shares it) "
                                "have"))
                started = [e for e in entries if e[0] > now - self.window_s]
                held = self._minutes(entries, now)
                if len(started) >= most:
                    wait = max(1, round((started[0][0] + self.window_s - now) / 60))
                    raise ValueError(Message(
                        "{whom} started {most} trainings in the last {window} minutes, the most allowed, so that the "
                        "one training lane stays free for others; you may start another in about {wait}.",
                        whom=whom, most=most, window=f"{self.window_s / 60:.0f}", wait=_minutes_words(wait)))
                if held >= most_minutes or held + minutes > most_minutes:
                    wait = max(1, round(held + minutes - most_minutes))
                    more = Message(" and this one may take {minutes} more", minutes=f"{minutes:g}") if minutes else ""
                    raise ValueError(Message(
                        "{whom} held the one training lane {held} of the {most} minutes an hour allowed{more}; you "
                        "may start it in about {wait}, or choose fewer minutes.", whom=whom, held=f"{held:.0f}",
                        most=f"{most_minutes:g}", more=more, wait=_minutes_words(wait)))

    def record(self, session: str | None, address: str | None) -> list:
        entry = [self.clock(), None]
        with self._lock:
            for key in (("session", session), ("address", address)):
                if key[1]:
                    self._starts.setdefault(key, deque()).append(entry)
        return entry

    def finish(self, entry: list) -> None:
        with self._lock:
            entry[1] = self.clock()


def _minutes_words(n: int) -> Message:
    return Message("1 minute") if n == 1 else Message("{n} minutes", n=n)


# --- the lane: one training at a time, in a thread of its own -----------------------------------------------------
PREPARING = Message("reading the data and the model, then scoring the held-out examples before training ...")
READING_TEXT = Message("reading the text, then making a BERT with random weights ...")  # a pretraining's start


@dataclass(frozen=True)
class Job:
    """A fine-tuning for the lane: what the page calls it, and the settings `finetune()` runs with (the model it
    starts from, its folder, where it runs, the epochs, the learning rate, the seeds, ...), made whole by the tab."""

    data: DataChoice
    base: str  # the model list's name of the model it starts from
    name: str  # the new model's name in the list
    settings: FinetuneSettings
    limit_s: float | None = None  # stopped as Cancel stops it once it has trained this long (the server's bound)

    @property
    def output(self) -> Path:
        return Path(self.settings.output)

    @property
    def epochs(self) -> int:
        return self.settings.epochs

    @property
    def seeds(self) -> tuple[int, ...]:
        return self.settings.seeds


@dataclass
class Progress:
    """What the page shows of the lane: a copy, taken under the lane's lock."""

    state: str = "idle"  # idle, running, cancelling, done, cancelled, failed
    job: Job | None = None
    message: str = ""  # what the lane is doing, or why it stopped, as a sentence (an i18n.Message: each page's)
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    total: int = 0
    steps_per_epoch: float | None = None
    epochs: list[dict] = field(default_factory=list)
    before: dict | None = None  # held-out metrics before training (the first run's, once scored; the kept run's at the end)
    best: dict | None = None  # held-out metrics of the epoch the folder keeps
    model: str | None = None  # the name it joined the model list under
    run: int = 0  # which of the job's seeds is training (0-based)
    run_steps: int = 0  # steps of one run
    seeds: dict | None = None  # metrics.json's seed summary, once done
    unseen: dict | None = None  # held-out labels the training data never shows (metrics.json's unseen_labels)
    stopped_by: str = ""  # what stopped it early: "cancel" (its page), "limit" (the server's bound), "operator"
    replaced: str | None = None  # the model fine-tuned here that the new one replaced in the lists
    started: float = 0.0
    seconds: float = 0.0
    first_step: float | None = None  # `seconds` at the first step: the time left is measured from there
    version: int = 0  # one more at every change: a page that has drawn this version needs nothing new
    # a pretraining's latest snapshot: {"count", "step", "masks" (the class's sentence's top-5 at each [MASK]), "roles"}
    timeline: dict | None = None
    heldout: dict | None = None  # a pretraining's held-out masked-token score at its end, when its text has one

    @property
    def running(self) -> bool:
        return self.state in ("running", "cancelling")


class TrainingLane:
    """Runs one `finetune()` at a time in a daemon thread, keeps its progress for every page to read, and stops it
    on Cancel. `on_trained(job, folder)` (in the lane's thread) loads the result and returns its name in the list."""

    def __init__(self, threads: int = limits.THREADS, nice: int = NICE,
                 fetch_retry_s: float = limits.FETCH_RETRY_MINUTES * 60, budget: StartBudget | None = None):
        self.threads, self.nice, self.fetch_retry_s = threads, nice, fetch_retry_s
        self.budget = budget or StartBudget()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._owner: str | None = None
        self._progress = Progress()
        self._fetch_failed: dict[str, float] = {}  # recipe -> when its data could not be fetched (time.time())
        LANES.add(self)

    def snapshot(self) -> Progress:
        with self._lock:
            return copy.deepcopy(self._progress)

    def start(self, job: Job | PretrainJob, on_trained: Callable[[Job, Path], str | tuple[str, str | None]],
              owner: str | None = None, charge: tuple[str | None, str | None] | None = None) -> None:
        """Raises ValueError while another training runs, for a recipe whose data could not be fetched lately, and
        when `charge` (the page's session, its client address) has used its share of the lane (`budget`)."""
        with self._lock:
            if self._progress.running:
                running = self._progress.job
                raise ValueError(Message("A training is already running ({name}, started {seconds} s ago); one "
                                         "runs at a time. Watch it here, and start yours when it is done.",
                                         name=running.name, seconds=f"{time.time() - self._progress.started:.0f}"))
            failed = self._fetch_failed.get(job.data.source)
            if failed is not None and time.time() < failed + self.fetch_retry_s:
                raise ValueError(Message(
                    "{failed} It tries again from {time} (server time, in about {minutes} min); pick other data "
                    "meanwhile.", failed=fetch_failed_words(job.data.key),
                    time=time.strftime('%H:%M', time.localtime(failed + self.fetch_retry_s)),
                    minutes=max(1, round((failed + self.fetch_retry_s - time.time()) / 60))))
            if charge is not None:
                self.budget.check(*charge, minutes=getattr(job, "minutes", 0.0))
            entry = self.budget.record(*charge) if charge is not None else None
            self._stop.clear()
            self._owner = owner
            self._progress = Progress("running", job, READING_TEXT if isinstance(job, PretrainJob) else PREPARING,
                                      started=time.time(), version=self._progress.version + 1)
            self._thread = threading.Thread(target=self._charged, args=(job, on_trained, entry),
                                            name="bertviz-training", daemon=True)
            self._thread.start()

    def cancel(self, owner: str | None = None) -> Message:
        """Ask the training to stop after the step under way; a sentence for the page."""
        with self._lock:
            if not self._progress.running:
                return Message("No training is running.")
            if owner != self._owner:
                return Message("Only the page that started this training can cancel it.")
            return self._stopping("cancel", Message("Cancelling: the training stops after the step under way."))

    def stop(self) -> bool:
        """The operator's stop (SIGUSR1 to `bertviz-app serve`): as Cancel, whoever started it. True if one ran."""
        with self._lock:
            if not self._progress.running:
                return False
            self._stopping("operator", Message("Stopping: the server's operator stopped this training; it ends "
                                               "after the step under way."))
            return True

    def _stopping(self, why: str, message: Message) -> Message:
        """(Under the lock.) Stop after the step under way, saying why."""
        if not self._stop.is_set():
            self._progress.stopped_by = why
        self._stop.set()
        self._progress.state = "cancelling"
        self._progress.message = message
        self._progress.version += 1
        return message

    def started_by(self, owner: str | None) -> bool:
        with self._lock:
            return self._progress.running and owner == self._owner

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the training under way (tests, benchmarks); True once none runs."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _update(self, **changes) -> None:
        with self._lock:
            for key, value in changes.items():
                setattr(self._progress, key, value)
            self._progress.seconds = time.time() - self._progress.started
            self._progress.version += 1

    def _on_step(self, record: dict) -> None:
        with self._lock:
            p = self._progress
            # several seeds: their steps follow each other on the curve
            p.run, p.run_steps = record.get("run", 0), record["total"]
            p.steps.append(record["step"] + p.run * p.run_steps)
            if p.first_step is None:
                p.first_step = time.time() - p.started
            p.losses.append(record["loss"])
            p.total = record["total"] * max(1, len(p.job.seeds))
            p.steps_per_epoch = record["step"] / record["epoch"] if record["epoch"] else None
            if p.state == "running":
                p.message = ""
            p.seconds = time.time() - p.started
            p.version += 1
            self._stop_at_limit(p)

    def _stop_at_limit(self, p) -> None:
        limit = p.job.limit_s
        if limit and p.seconds >= limit and p.state == "running":
            self._stopping("limit", Message("Stopping: this training reached the server's limit of {minutes} "
                                            "minutes per training; it ends after the step under way.",
                                            minutes=f"{limit / 60:g}"))

    def _on_epoch(self, record: dict) -> None:
        with self._lock:
            self._progress.epochs.append(copy.deepcopy(record))
            self._progress.version += 1

    def _on_before(self, metrics: dict) -> None:
        with self._lock:
            if self._progress.before is None:  # with several seeds, the first run's until the kept one is known
                self._progress.before = copy.deepcopy(metrics)

    def _say(self, text: str) -> None:
        # Only a recipe's first fetch is worth a line here: the others name the server's folders.
        if text.startswith("fetching"):
            with self._lock:
                if self._progress.state == "running":
                    self._progress.message = Message("{what} (the first use of this recipe)", what=text)
                    self._progress.version += 1

    def _charged(self, job, on_trained, entry: list | None) -> None:
        try:
            self._run(job, on_trained)
        finally:
            if entry is not None:
                self.budget.finish(entry)

    def _run(self, job: Job, on_trained: Callable[[Job, Path], str | tuple[str, str | None]]) -> None:
        _lower_priority(self.nice)
        # finetune() sets torch's thread count, which is also what every thread started later begins with: the
        # gradio workers' forward passes must not inherit the lane's one thread
        threads = torch.get_num_threads()
        try:
            if isinstance(job, PretrainJob):
                self._pretrain(job, on_trained)
                return
            # the lane's own share of the processor: the one setting a job does not choose
            result = finetune(settings=dataclasses.replace(job.settings, threads=self.threads), progress=False,
                              stop=self._stop, on_step=self._on_step, on_epoch=self._on_epoch, say=self._say,
                              on_before=self._on_before)
            metrics = result.metrics
            del result  # the weights: the model list loads them again from the folder
            self._update(seeds=metrics.get("seeds"), unseen=metrics.get("unseen_labels"))
            if metrics.get("stopped_early") and not any(r["epoch"] >= 1 for r in metrics["history"]):
                shutil.rmtree(job.output, ignore_errors=True)
                self._update(state="cancelled", before=metrics.get("eval_before_training"),
                             message=Message("{how} before the first epoch was complete: nothing was kept.",
                                             how=STOPPED_BY.get(self.snapshot().stopped_by, STOPPED_BY["cancel"])))
                return
            joined = on_trained(job, job.output)
            name, replaced = joined if isinstance(joined, tuple) else (joined, None)
            # with several seeds, a run cancelled after the first is left out, and the best complete one kept
            stopped = metrics.get("stopped_early") or self._stop.is_set()
            self._update(state="cancelled" if stopped else "done", model=name, replaced=replaced,
                         before=metrics.get("eval_before_training"), best=metrics.get("eval"), message="")
        except OSError as err:  # a full disk, a folder it may not write: in words, without the server's paths
            shutil.rmtree(job.output, ignore_errors=True)
            self._update(state="failed", message=Message("The server could not read or write a file the training "
                                                         "needs ({why}); the details are in its log.",
                                                         why=err.strerror or type(err).__name__))
            log.warning("fine-tuning %s failed: %s", job.name, err)
        except RecipeError as err:  # pip's and apt's words name the server's network set-up: the log keeps them
            shutil.rmtree(job.output, ignore_errors=True)
            with self._lock:
                self._fetch_failed[job.data.source] = time.time()
            retry = time.strftime("%H:%M", time.localtime(time.time() + self.fetch_retry_s))
            self._update(state="failed", message=Message("{failed} It tries again from {time} (server time); pick "
                                                         "other data meanwhile.",
                                                         failed=fetch_failed_words(job.data.key), time=retry))
            log.warning("fine-tuning %s: %s", job.name, err)
        except (ValueError, RuntimeError) as err:  # bad data, a NaN loss: in words, without the server's paths
            shutil.rmtree(job.output, ignore_errors=True)
            ours = err.args[0] if err.args and isinstance(err.args[0], Message) else None  # a missing built-in text
            self._update(state="failed", message=ours or in_app_words(str(err)))
            log.warning("fine-tuning %s failed: %s", job.name, err)
        except Exception:  # noqa: BLE001 - our bug: the page gets a sentence, the log the traceback
            log.exception("fine-tuning %s failed", job.name)
            shutil.rmtree(job.output, ignore_errors=True)
            self._update(state="failed", message=Message("Something went wrong on the server while training; the "
                                                         "details are in the server's log."))
        finally:
            torch.set_num_threads(threads)
            # The optimizer's state, the gradients and the activations were freed, but glibc keeps the pages: a
            # server went from 456 MiB to 1432 after a short training of the default model, and to 644 with this.
            release_freed_memory()

    def _pretrain(self, job: PretrainJob, on_trained: Callable) -> None:
        """(In the lane's thread.) Read the text, train until the minutes are up or a stop, and offer the model at its
        last step; stopped while the text was read, nothing is kept."""
        settings = job.settings
        if job.data.builtin:  # the built-in text stands as its name until the lane writes it out
            settings = dataclasses.replace(settings, corpus=builtin_corpus(job.data.source))
        if not self._stop.is_set():
            job.output.mkdir(parents=True, exist_ok=True)
            (job.output / "timeline-inputs.txt").write_text(timeline_lines(job.sentence), encoding="utf-8")
            model = run_pretrain(dataclasses.replace(settings, threads=self.threads),
                                 stop=self._stop, on_step=self._on_pretrain_step, on_snapshot=self._on_snapshot)
        else:
            model = None
        folder = latest_checkpoint(job.output) if model is not None else None
        del model  # the model list loads the weights again from the folder
        if folder is None:
            shutil.rmtree(job.output, ignore_errors=True)
            self._update(state="cancelled", message=Message(
                "{how} while the text was read: nothing was trained, so nothing was kept.",
                how=STOPPED_BY.get(self.snapshot().stopped_by, STOPPED_BY["cancel"])))
            return
        self._update(heldout=heldout_score(job.output))
        joined = on_trained(job, folder)
        name, replaced = joined if isinstance(joined, tuple) else (joined, None)
        # its own --minutes end it through the same event: only a cancel, the limit or the operator name a stop
        self._update(state="cancelled" if self.snapshot().stopped_by else "done", model=name, replaced=replaced,
                     message="")

    def _on_pretrain_step(self, record: dict) -> None:
        with self._lock:
            p = self._progress
            p.steps.append(record["step"])
            p.losses.append(record["loss"])
            p.total = record["total"]
            if p.first_step is None:
                p.first_step = time.time() - p.started
            if p.state == "running":
                p.message = ""
            p.seconds = time.time() - p.started
            p.version += 1
            self._stop_at_limit(p)

    def _on_snapshot(self, record: dict) -> None:
        with self._lock:
            p = self._progress
            first = record["inputs"][0] if record.get("inputs") else {}
            p.timeline = {"count": (p.timeline or {}).get("count", 0) + 1, "step": record["step"],
                          "masks": copy.deepcopy(first.get("masks", [])), "roles": copy.deepcopy(record.get("roles"))}
            p.version += 1


# Every lane of this process, for the operator's stop (weak: a lane goes with its page's demo).
LANES: "weakref.WeakSet[TrainingLane]" = weakref.WeakSet()
STOPPED_BY = {"cancel": Message("Cancelled"), "limit": Message("Stopped at the server's time limit"),
              "operator": Message("Stopped by the server's operator")}


def stop_trainings() -> int:
    """Stop every training under way in this process, as its Cancel would (the operator's stop); how many."""
    return sum(lane.stop() for lane in list(LANES))


def fetch_failed_words(recipe: str) -> Message:
    return Message("The data of the {recipe} recipe could not be fetched from the internet (the server's log has "
                   "the details).", recipe=recipe)


# The readers' advice names `finetune`'s options; the app reads a --data file with the default columns.
COLUMN_ADVICE = "; name the right ones with --text-column, --pair-column and --label-column"


# An absolute path in a message (POSIX, ~, or a Windows drive), with at least one folder (not 'without /TAG'): the
# page is shown only its last part, a file's name.
PATH = re.compile(r"(?<![\w.:/~-])(?:~[/\\]|(?:[A-Za-z]:)?[/\\][^\s'\"(),;/\\]+[/\\])(?:[^\s'\"(),;/\\]+[/\\])*([^\s'\"(),;/\\]+)")


def without_paths(message: str) -> str:
    """`message` with each absolute path reduced to its last part: a visitor learns a file's name, never where the
    server keeps it (its home folder, the cache, the operator's folders)."""
    return PATH.sub(lambda m: m.group(1), message)


def in_app_words(message: str) -> str:
    """A fine-tuning error as the tab says it: a sentence without the server's paths, with advice the operator of the
    app can follow."""
    message = without_paths(message.strip("'\""))
    if COLUMN_ADVICE in message:
        message = message.replace(COLUMN_ADVICE, "; the app reads the columns text and label (and text_pair for a "
                                                 "pair task): rename the file's columns and start the server again")
    return sentence(message)


def sentence(text: str) -> str:
    """Capitalized, unless it starts with a file's name (`train.csv line 3: ...`)."""
    first = text.split(" ", 1)[0]
    return text if "." in first or "/" in first else text[:1].upper() + text[1:]


def _lower_priority(nice: int) -> None:
    """Lower this thread's CPU priority by `nice` (Linux: a thread's nice value is its own)."""
    if not nice:
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + nice))
    except (AttributeError, OSError):  # not Linux, or not permitted: the training runs at the server's priority
        pass
