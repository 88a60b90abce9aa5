"""The Fine-tune tab: a class watches BERT learn a task. The data is a built-in recipe (movie-reviews, wsj-pos) or a
file the operator named at launch with `--data` (a visitor never sends a file or a path); epochs and learning rate
come from short lists. While it trains the page shows the loss of every step and each epoch's held-out score; when
it is done the new model joins the model list, so that every view and the Task tab can look inside it at once.

Training runs in a lane of its own, not in the analyses' queue: one training at a time, in a thread of its own, on
one PyTorch thread, so that analyses keep answering while it runs (benchmarks/bench_training_lane.py measures how
much slower they get). The model is written to the user's cache
(`finetuned/` beside the recipes' data, see `training_root`), never to a path a visitor chose.

Cancel stops after the step under way. When at least one epoch is complete, the best epoch so far is kept and joins
the model list, as Ctrl-C does on the command line; otherwise nothing is kept (the folder is removed).

On by default only where no one else can reach the server (127.0.0.1, no --share link); elsewhere the operator turns
it on with `--allow-training`, and until then the tab says why it is off and the server has no endpoint to start one.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr
import pandas as pd
import torch

from .. import limits
from ..explorer import load, release_freed_memory
from ..figures.training import loss_curve_figure
from ..finetuning import RECIPES, cache_dir, finetune
from .common import Page, api, plain, refuse, user_errors

log = logging.getLogger("bertviz_app.app")

EPOCHS = (1, 2, 3, 4, 5)
LEARNING_RATES = ("1e-5", "2e-5", "3e-5", "5e-5", "1e-4")
# The learning rate a data choice suggests (the visitor may change it): a tagging head over 44 tags learns slowly at
# BERT's 5e-5 (wsj-pos from the command line reached 0.933 in 2 epochs at 1e-4, batch 16: README)
SUGGESTED_RATE = {"token-classification": "1e-4"}
BATCH_SIZE = 32
REPEAT_SEEDS = (0, 1, 2)  # "repeat 3 times": one seed is one draw
MAX_TRAINED = 4  # models fine-tuned in one server's life (each holds its weights in memory, ~90 MB for the default)
# Added to the training thread's nice value (Linux keeps one per thread): 0. At +10 the analyses' p95 was 6.3x its
# idle value in one run and 1.3x in another (0.5x and 1.0x at 0): a low-priority thread descheduled while it holds
# Python's GIL keeps the analyses waiting (benchmarks/bench_training_lane.py --phases lane,lane-nice10).
NICE = 0
POLL_S = 1.0


def training_root() -> Path:
    """Where the app writes fine-tuned models: `finetuned/` in the user's cache, beside the recipes' data."""
    return cache_dir().parent / "finetuned"


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
    choices = {name: DataChoice(name, f"{name}: {r.description}", r.task, name)
               for name, r in RECIPES.items()}
    for path in files:
        key = Path(path).name
        while key in choices:
            key = f"{Path(path).name} ({len(choices) + 1})"
        task = file_task(path)
        choices[key] = DataChoice(key, f"{key} (named at launch; {task.replace('-', ' ')})", task, os.fspath(path))
    return choices


@dataclass(frozen=True)
class TrainingSettings:
    """Whether the app may train, why not, what on, and how a trained model is loaded (as the others were)."""

    enabled: bool = False
    why_off: str = ("Fine-tuning is off in this app: whoever built it did not turn it on (`bertviz-app serve` does, "
                    "on 127.0.0.1).")
    data_files: tuple[str, ...] = ()
    cache_mb: float = limits.CACHE_MB

    @classmethod
    def for_server(cls, host: str, loopback: bool, share: bool, allow: bool, data_files: Sequence[str] = (),
                   cache_mb: float = limits.CACHE_MB, proxied: bool = False) -> "TrainingSettings":
        """On where only this machine can reach the server, or where the operator allowed it. Behind a reverse proxy
        (--behind-proxy) the server listens on 127.0.0.1 but the proxy's visitors reach it: not private."""
        if allow or (loopback and not share and not proxied):
            return cls(True, "", tuple(map(str, data_files)), cache_mb)
        reach = ("it is open through a public --share link" if share else
                 "a reverse proxy forwards other machines' visitors to it (--behind-proxy)" if proxied else
                 f"it listens on {host}, an address other machines can reach")
        return cls(False, f"Fine-tuning is off on this server: {reach}, a training takes its processor for minutes, "
                          "and anyone who reaches it could start one. Whoever runs the server can turn it on with "
                          "`--allow-training`; on 127.0.0.1 it is on by default.",
                   tuple(map(str, data_files)), cache_mb)


# --- the lane: one training at a time, in a thread of its own -----------------------------------------------------
PREPARING = "reading the data and the model, then scoring the held-out examples before training ..."


@dataclass(frozen=True)
class Job:
    data: DataChoice
    base: str  # the model list's name of the model it starts from
    base_source: str  # what finetune() reads: that model's folder, built-in name or hub id
    epochs: int
    learning_rate: float
    name: str  # the new model's name in the list
    output: Path
    device: str = "cpu"  # where the model it starts from runs (a GPU server trains there too)
    seeds: tuple[int, ...] = ()  # several: one run each, the best kept (finetune's --seeds)


@dataclass
class Progress:
    """What the page shows of the lane: a copy, taken under the lane's lock."""

    state: str = "idle"  # idle, running, cancelling, done, cancelled, failed
    job: Job | None = None
    message: str = ""  # what the lane is doing, or why it stopped, as a sentence
    steps: list[int] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    total: int = 0
    steps_per_epoch: float | None = None
    epochs: list[dict] = field(default_factory=list)
    before: dict | None = None  # held-out metrics before training (known once it is done)
    best: dict | None = None  # held-out metrics of the epoch the folder keeps
    model: str | None = None  # the name it joined the model list under
    run: int = 0  # which of the job's seeds is training (0-based)
    run_steps: int = 0  # steps of one run
    seeds: dict | None = None  # metrics.json's seed summary, once done
    unseen: dict | None = None  # held-out labels the training data never shows (metrics.json's unseen_labels)
    started: float = 0.0
    seconds: float = 0.0

    @property
    def running(self) -> bool:
        return self.state in ("running", "cancelling")


class TrainingLane:
    """Runs one `finetune()` at a time in a daemon thread, keeps its progress for every page to read, and stops it
    on Cancel. `on_trained(job, folder)` (in the lane's thread) loads the result and returns its name in the list."""

    def __init__(self, threads: int = limits.THREADS, nice: int = NICE):
        self.threads, self.nice = threads, nice
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._owner: str | None = None
        self._progress = Progress()

    def snapshot(self) -> Progress:
        with self._lock:
            return copy.deepcopy(self._progress)

    def start(self, job: Job, on_trained: Callable[[Job, Path], str], owner: str | None = None) -> None:
        """Raises ValueError while another training runs."""
        with self._lock:
            if self._progress.running:
                running = self._progress.job
                raise ValueError(f"A training is already running ({running.name}, started "
                                 f"{time.time() - self._progress.started:.0f} s ago); one runs at a time. Watch it "
                                 "here, and start yours when it is done.")
            self._stop.clear()
            self._owner = owner
            self._progress = Progress("running", job, PREPARING, started=time.time())
            self._thread = threading.Thread(target=self._run, args=(job, on_trained), name="bertviz-training",
                                            daemon=True)
            self._thread.start()

    def cancel(self, owner: str | None = None) -> str:
        """Ask the training to stop after the step under way; a sentence for the page."""
        with self._lock:
            if not self._progress.running:
                return "No training is running."
            if owner != self._owner:
                return "Only the page that started this training can cancel it."
            self._stop.set()
            self._progress.state = "cancelling"
            self._progress.message = "Cancelling: the training stops after the step under way."
            return self._progress.message

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

    def _on_step(self, record: dict) -> None:
        with self._lock:
            p = self._progress
            # several seeds: their steps follow each other on the curve
            p.run, p.run_steps = record.get("run", 0), record["total"]
            p.steps.append(record["step"] + p.run * p.run_steps)
            p.losses.append(record["loss"])
            p.total = record["total"] * max(1, len(p.job.seeds))
            p.steps_per_epoch = record["step"] / record["epoch"] if record["epoch"] else None
            if p.state == "running":
                p.message = ""
            p.seconds = time.time() - p.started

    def _on_epoch(self, record: dict) -> None:
        with self._lock:
            self._progress.epochs.append(copy.deepcopy(record))

    def _say(self, text: str) -> None:
        # Only a recipe's first fetch is worth a line here: the others name the server's folders.
        if text.startswith("fetching"):
            with self._lock:
                if self._progress.state == "running":
                    self._progress.message = text + " (the first use of this recipe)"

    def _run(self, job: Job, on_trained: Callable[[Job, Path], str]) -> None:
        _lower_priority(self.nice)
        # finetune() sets torch's thread count, which is also what every thread started later begins with: the
        # gradio workers' forward passes must not inherit the lane's one thread
        threads = torch.get_num_threads()
        try:
            result = finetune(job.data.task, job.data.source, job.output, model=job.base_source,
                              epochs=job.epochs, batch_size=BATCH_SIZE, learning_rate=job.learning_rate,
                              device=job.device, threads=self.threads, seeds=job.seeds, progress=False,
                              stop=self._stop,
                              on_step=self._on_step, on_epoch=self._on_epoch, say=self._say)
            metrics = result.metrics
            del result  # the weights: the model list loads them again from the folder
            self._update(seeds=metrics.get("seeds"), unseen=metrics.get("unseen_labels"))
            if metrics.get("stopped_early") and not any(r["epoch"] >= 1 for r in metrics["history"]):
                shutil.rmtree(job.output, ignore_errors=True)
                self._update(state="cancelled", before=metrics.get("eval_before_training"),
                             message="Cancelled before the first epoch was complete: nothing was kept.")
                return
            name = on_trained(job, job.output)
            # with several seeds, a run cancelled after the first is left out, and the best complete one kept
            stopped = metrics.get("stopped_early") or self._stop.is_set()
            self._update(state="cancelled" if stopped else "done", model=name,
                         before=metrics.get("eval_before_training"), best=metrics.get("eval"), message="")
        except OSError as err:  # a full disk, a folder it may not write: in words, without the server's paths
            shutil.rmtree(job.output, ignore_errors=True)
            self._update(state="failed", message="The server could not read or write a file the training needs ("
                                                 f"{err.strerror or type(err).__name__}); the details are in its log.")
            log.warning("fine-tuning %s failed: %s", job.name, err)
        except (ValueError, RuntimeError) as err:  # bad data, an unreachable recipe, a NaN loss: in words
            shutil.rmtree(job.output, ignore_errors=True)
            self._update(state="failed", message=in_app_words(str(err)))
        except Exception:  # noqa: BLE001 - our bug: the page gets a sentence, the log the traceback
            log.exception("fine-tuning %s failed", job.name)
            shutil.rmtree(job.output, ignore_errors=True)
            self._update(state="failed", message="Something went wrong on the server while training; the details "
                                                 "are in the server's log.")
        finally:
            torch.set_num_threads(threads)
            # The optimizer's state, the gradients and the activations were freed, but glibc keeps the pages: a
            # server went from 456 MiB to 1432 after a short training of the default model, and to 644 with this.
            release_freed_memory()


# The readers' advice names `finetune`'s options; the app reads a --data file with the default columns.
COLUMN_ADVICE = "; name the right ones with --text-column, --pair-column and --label-column"


def in_app_words(message: str) -> str:
    """A fine-tuning error as the tab says it: a sentence, with advice the operator of the app can follow."""
    message = message.strip("'\"")
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


# --- what the page shows -------------------------------------------------------------------------------------------
def _score(evaluation: dict | None) -> str:
    if not evaluation:
        return ""
    for key, words in (("accuracy", "accuracy"), ("f1", "F1"), ("exact_match", "exact match")):
        if key in evaluation:
            return f"{words} {evaluation[key]:.3f}"
    return ""


def status_text(p: Progress) -> str:
    """The lane's state as Markdown (names and data as text, never markup)."""
    if p.job is None:
        return ("Pick the data, the model to start from, the epochs and the learning rate, then press **Start**. The "
                "loss appears below after each step, the held-out score after each epoch; when it is done the new "
                "model joins the model list at the top.")
    job = p.job
    what = f"**{plain(job.name)}** (from {plain(job.base)} on {plain(job.data.key)})"
    if p.state == "failed":
        return f"**The training could not run.** {plain(p.message)}"
    if p.state == "done":
        return (f"{what} **joined the model list**: held-out {_score(p.best)} ({_score(p.before)} before "
                f"training), in {p.seconds:.0f} s.{_seeds_text(p.seeds)}{_unseen_text(p.unseen)} Pick it in the model "
                "list and press Analyze: every view shows the fine-tuned encoder, and the Task tab what it predicts.")
    if p.state == "cancelled":
        if p.model is None:
            return f"Cancelled {what}. {plain(p.message)}"
        return f"Cancelled {what}; the best epoch so far (held-out {_score(p.best)}) **joined the model list**."
    if p.message:
        return f"Training {what}: {plain(p.message)}"
    step = p.steps[-1] - p.run * p.run_steps if p.steps else 0
    epoch = step / p.steps_per_epoch if p.steps_per_epoch else 0.0
    last = f"; after epoch {p.epochs[-1]['epoch']}: held-out {_score(p.epochs[-1]['eval'])}" if p.epochs else ""
    run = f"run {p.run + 1} of {len(job.seeds)} (seed {job.seeds[p.run]}), " if len(job.seeds) > 1 else ""
    return (f"Training {what}: {run}epoch {epoch:.2f} of {job.epochs}, step {step} of {p.run_steps or p.total}, "
            f"loss {p.losses[-1] if p.losses else float('nan'):.3f}{last} · {p.seconds:.0f} s")


def _seeds_text(seeds: dict | None) -> str:
    """' Over 3 seeds: accuracy 0.801 ± 0.012 ...' (a space first), or ''."""
    if not seeds or len(seeds["runs"]) < 2:
        return ""
    each = ", ".join(f"{r['score']:.3f}" for r in seeds["runs"])
    return (f" Over {len(seeds['runs'])} seeds, held-out {seeds['metric'].replace('_', ' ')} {seeds['mean']:.3f} ± "
            f"{seeds['std']:.3f} (mean ± standard deviation; each: {each}): one seed is one draw, and this model is "
            f"the best of them (seed {seeds['kept']}).")


def _unseen_text(unseen: dict | None) -> str:
    if not unseen or not unseen.get("count"):
        return ""
    names = ", ".join(plain(str(label)) for label in list(unseen["labels"])[:8])
    return (f" {unseen['count']} of {unseen['of']} held-out {unseen['unit']} carry a label the training data never "
            f"shows ({names}): the model cannot predict them, and the score counts them as wrong.")


def epochs_frame(p: Progress) -> pd.DataFrame:
    """One row per evaluation: before training (once known), then each epoch."""
    rows = []
    for label, train_loss, ev in ([("before training", None, p.before)] if p.before else []) + [
            (f"seed {r['seed']}, {r['epoch']:g}" if "seed" in r else f"{r['epoch']:g}", r["train_loss"], r["eval"])
            for r in p.epochs]:
        row = {"epoch": label, "train loss": "" if train_loss is None else f"{train_loss:.4f}",
               "held-out loss": f"{ev['loss']:.4f}" if "loss" in ev else ""}
        row.update({name: f"{ev[key]:.4f}" for key, name in (("accuracy", "held-out accuracy"), ("f1", "held-out F1"),
                                                             ("exact_match", "exact match")) if key in ev})
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["epoch", "train loss", "held-out loss",
                                                         "held-out accuracy"])


def curve(p: Progress):
    if not p.steps:
        return None
    return loss_curve_figure(p.steps, p.losses, p.steps_per_epoch, total=p.total or None)


# --- the tab -------------------------------------------------------------------------------------------------------
class FineTuneTab:
    """Builds the tab's components in the current gr.Tab; `wire` connects them (nothing, when training is off)."""

    def __init__(self, page: Page, settings: TrainingSettings, lane: TrainingLane | None = None):
        self.page, self.settings = page, settings
        self.lane = lane or TrainingLane()
        self.folders: dict[str, Path] = {}  # models trained here: name -> folder
        self._pickers: list[gr.Dropdown] = []
        if not settings.enabled:
            self.off = gr.Markdown(settings.why_off, elem_id="finetune-off")
            return
        self.choices = data_choices(settings.data_files)
        names = page.models.names
        with gr.Row(equal_height=True, elem_id="finetune-controls"):
            # the operator's own file first when there is one: that is why they named it
            first = list(self.choices)[len(RECIPES)] if settings.data_files else next(iter(self.choices))
            self.data = gr.Dropdown([(c.label, k) for k, c in self.choices.items()], value=first,
                                    label="Data", scale=4, min_width=240, elem_id="finetune-data")
            self.base = gr.Dropdown(names, value=_default_base(page), label="Start from", scale=2, min_width=180,
                                    elem_id="finetune-base")
            self.epochs = gr.Dropdown(list(EPOCHS), value=1, label="Epochs", scale=1, min_width=90,
                                      elem_id="finetune-epochs")
            self.rate = gr.Dropdown(list(LEARNING_RATES), value=self.suggest_rate(first), label="Learning rate",
                                    scale=1, min_width=120, elem_id="finetune-rate")
            self.repeat = gr.Checkbox(False, label=f"Repeat {len(REPEAT_SEEDS)} times (seeds "
                                      f"{', '.join(map(str, REPEAT_SEEDS))}: one seed is one draw)", scale=1,
                                      min_width=150, elem_id="finetune-repeat")
            self.start_button = gr.Button("Start", variant="primary", scale=1, min_width=90, elem_id="finetune-start")
            self.cancel_button = gr.Button("Cancel", scale=1, min_width=90, interactive=False,
                                           elem_id="finetune-cancel")
        self.status = gr.Markdown(status_text(Progress()), elem_id="finetune-status")
        with gr.Row(elem_id="finetune-results"):
            self.curve = gr.Plot(label="Training loss", scale=5, elem_id="finetune-curve")
            self.table = gr.Dataframe(epochs_frame(Progress()), label="Held-out score after each epoch",
                                      interactive=False, datatype="str", scale=4, elem_id="finetune-epochs-table")
        self.timer = gr.Timer(POLL_S, active=False)
        self.seen = gr.State((len(names), False))  # what this page shows: (models in its lists, running)

    # handlers ----------------------------------------------------------------------------------------------------
    @user_errors
    def start(self, data, base, epochs, rate, repeat=False, request: gr.Request = None):
        choice = self.choices.get(data) if isinstance(data, str) else None
        if choice is None:
            raise refuse("Choose the data in the list.")
        if epochs not in EPOCHS or rate not in LEARNING_RATES or not isinstance(repeat, bool):
            raise refuse(f"Choose the epochs ({', '.join(map(str, EPOCHS))}) and the learning rate "
                         f"({', '.join(LEARNING_RATES)}) in their lists.")
        explorer = self.page.models.get(base)  # one of the list's names, or a sentence
        source = explorer.folder
        if source is None:
            raise refuse(f"{base} was not loaded from a folder, so it cannot be fine-tuned here; pick another model.")
        if len(self.folders) >= MAX_TRAINED:
            raise refuse(f"This server already holds {MAX_TRAINED} models fine-tuned here, the most it keeps in "
                         "memory; restart it to train more (their folders stay in its cache).")
        name = self._new_name(choice.key)
        output = training_root() / f"{_slug(choice.key)}-{time.strftime('%Y%m%d-%H%M%S')}"
        while output.exists():
            output = output.with_name(output.name + "-1")
        job = Job(choice, base, os.fspath(source), int(epochs), float(rate), name, output, str(explorer.device),
                  REPEAT_SEEDS if repeat else ())
        self.lane.start(job, self._join, owner=getattr(request, "session_hash", None))
        return (status_text(self.lane.snapshot()), gr.Timer(active=True), gr.Button(interactive=False),
                gr.Button(interactive=True))

    def suggest_rate(self, data) -> str:
        choice = self.choices.get(data) if isinstance(data, str) else None
        return SUGGESTED_RATE.get(choice.task, "5e-5") if choice else gr.skip()

    def cancel(self, request: gr.Request = None) -> str:
        return f"**{self.lane.cancel(getattr(request, 'session_hash', None))}**"

    def poll(self, seen, request: gr.Request = None):
        """The lane's state for this page; the model lists once a new model has joined; the buttons and the timer
        when the lane starts or stops (Cancel only on the page that started it). Each prop update makes gradio build
        a new component for the session, so only what changed is sent."""
        p = self.lane.snapshot()
        mine = p.running and self.lane.started_by(getattr(request, "session_hash", None))
        names = self.page.models.names
        models, running = seen if isinstance(seen, tuple) else (None, None)
        lists = ([gr.update(choices=list(names), interactive=len(names) > 1) for _ in self._pickers]
                 if models != len(names) else [gr.skip()] * len(self._pickers))
        switches = ((gr.Button(interactive=not p.running), gr.Button(interactive=mine), gr.Timer(active=p.running))
                    if running != (p.running, mine) else (gr.skip(),) * 3)
        return (status_text(p), curve(p), epochs_frame(p), *switches, (len(names), (p.running, mine)), *lists)

    def _join(self, job: Job, folder: Path) -> str:
        """Load the trained folder as the other models were loaded and offer it in every model list."""
        base = self.page.models.get(job.base)
        explorer = load(folder, device=base.device, max_tokens=base.max_tokens, name=job.name,
                        cache_mb=self.settings.cache_mb, cache_dtype=base.cache_dtype)
        explorer.warm_up()  # here, on the training's thread, not at the first visitor's input
        self.folders[job.name] = folder
        self.page.models.add(job.name, explorer)
        for picker in self._pickers:  # the server's copy: what the page may send from now on
            picker.choices = [(n, n) for n in self.page.models.names]
        return job.name

    def _new_name(self, data: str) -> str:
        stem = f"{data} fine-tuned {time.strftime('%H:%M')}"
        name, n = stem, 1
        while name in self.page.models.names:
            n += 1
            name = f"{stem} ({n})"
        return name

    def wire(self, tab: gr.Tab, pickers: Sequence[gr.Dropdown]) -> None:
        """`pickers`: every model list of the page (the input's, Compare's), which a new model joins."""
        if not self.settings.enabled:
            return
        self._pickers = [*pickers, self.base]
        outputs = [self.status, self.curve, self.table, self.start_button, self.cancel_button, self.timer, self.seen,
                   *self._pickers]
        quiet = dict(queue=False, show_progress="hidden")
        self.start_button.click(self.start, [self.data, self.base, self.epochs, self.rate, self.repeat],
                                [self.status, self.timer, self.start_button, self.cancel_button],
                                **api("finetune_start"), **quiet)
        self.cancel_button.click(self.cancel, None, [self.status], **api("finetune_cancel"), **quiet)
        self.data.input(self.suggest_rate, [self.data], [self.rate], **api("finetune_rate", False), **quiet)
        self.timer.tick(self.poll, [self.seen], outputs, **api("finetune_progress"), **quiet)
        tab.select(self.poll, [self.seen], outputs, **api("finetune_progress", False), **quiet)

    def on_load(self, demo: gr.Blocks) -> None:
        """A page opened after a training finished offers its model too."""
        if self.settings.enabled:
            demo.load(self.poll, [self.seen], [self.status, self.curve, self.table, self.start_button,
                                               self.cancel_button, self.timer, self.seen, *self._pickers],
                      **api("finetune_progress_load", False), queue=False, show_progress="hidden")


def _default_base(page: Page) -> str:
    from ..catalog import default_model_name

    names = page.models.names
    untrained = [n for n in names if page.models.explorers[n].task is None]
    default = default_model_name()
    return default if default in untrained else (untrained or names)[0]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-")[:60] or "model"
