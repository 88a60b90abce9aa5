"""`finetune()`: data -> features -> the shared training loop (bertviz_app.training), evaluated after each epoch with
the best epoch kept -> a Hugging Face folder (config.json with id2label, model.safetensors, tokenizer files) plus
metrics.json, written to a temporary folder beside --output and renamed into place only once complete."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import shutil
import statistics
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from .. import catalog
from ..checkpoint import CheckpointError, load_model, save_pretrained, task_head
from ..model import BertModel
from ..settings import add_arguments, as_dict, from_args
from ..timeline import FOLDER as TIMELINE_FOLDER
from ..timeline import TimelineError, TimelineInput, TimelineWriter, choose_inputs, read_inputs
from ..tokenizer import Tokenizer, TokenizerError
from ..training import SCHEDULES, Trainer, fit, say_above_progress, setup_distributed, warmup_steps
from . import recipes
from .data import DataError, split, unseen_labels, unseen_sentence
from .settings import FinetuneSettings
from .tasks import TASKS, Task, TaskObjective


@dataclass
class FineTuneResult:
    """Where the model was written, and what metrics.json says."""

    output: Path
    metrics: dict
    model: nn.Module | None = None  # the trained model (the best epoch's weights on the main process)

    def __str__(self) -> str:
        ev = self.metrics["eval"]
        shown = ", ".join(f"{k} {v:.4f}" for k, v in ev.items() if k in ("accuracy", "f1", "exact_match"))
        line = f"{self.output}: held-out {shown} (epoch {self.metrics['best_epoch']})"
        unseen = self.metrics.get("unseen_labels") or {}
        if unseen.get("count"):
            line += (f"; {unseen['count']} of {unseen['of']} held-out {unseen['unit']} carry a label the training "
                     "data never shows, counted as wrong")
        if ev.get("words_cut"):
            line += (f"; {ev['words_cut']} words of {ev['sentences_cut']} held-out sentences were past --max-tokens "
                     f"{self.metrics['settings']['max_tokens']} pieces and are not scored (raise it to score them)")
        seeds = self.metrics.get("seeds")
        if seeds:
            each = ", ".join(f"seed {r['seed']} {r['score']:.4f}" for r in seeds["runs"])
            line += (f"\nover {len(seeds['runs'])} seeds: {seeds['metric']} {seeds['mean']:.4f} +- "
                     f"{seeds['std']:.4f} (mean +- std; min {seeds['min']:.4f}, max {seeds['max']:.4f}): {each}; "
                     f"kept seed {seeds['kept']}")
        return line


@dataclass
class Hooks:
    """What a caller watches or stops a fine-tuning with; not settings (nothing of it goes into metrics.json)."""

    progress: bool | None = None  # the tqdm bar; None: only on a terminal
    stop: threading.Event | None = None  # set: stop after the step under way, keeping the best epoch so far
    on_epoch: Callable[[dict], None] | None = None  # each epoch's record
    on_step: Callable[[dict], None] | None = None  # each step's {step, total, epoch (a fraction), loss}
    say: Callable[[str], None] | None = None  # progress in words (default: stderr, above the bar)
    on_before: Callable[[dict], None] | None = None  # the held-out metrics before training, once known
    on_snapshot: Callable[[dict], None] | None = None  # each timeline snapshot's record, once it is on disk


def finetune(task: str | None = None, train: str | os.PathLike | None = None, output: str | os.PathLike | None = None,
             *, settings: FinetuneSettings | None = None, progress: bool | None = None,
             stop: threading.Event | None = None, on_epoch: Callable[[dict], None] | None = None,
             on_step: Callable[[dict], None] | None = None, say: Callable[[str], None] | None = None,
             on_before: Callable[[dict], None] | None = None, on_snapshot: Callable[[dict], None] | None = None,
             **options) -> FineTuneResult:
    """Fine-tune as `settings` (a `FinetuneSettings`) say, or as its fields given here as arguments
    (`finetune("text-classification", "movie-reviews", "runs/sentiment", epochs=2)`; given both, the arguments
    replace those fields): the model (default: the default model) for the task ('text-classification',
    'token-classification', 'question-answering') on `train` (a file, or a recipe name: 'movie-reviews', 'wsj-pos'),
    written to `output`. Without `validation`, a seeded `validation_fraction` of `train` is held out. With `seeds`,
    one run per seed, each scored on the same held-out examples: metrics["seeds"] has each run's score, their mean
    and spread, and `output` the best run. `stop` (an event) ends the run after the step under way, keeping the best
    epoch so far, as Ctrl-C does; `on_epoch` receives each epoch's record, `on_step` each step's {step, total, epoch
    (a fraction), loss} (the app draws its loss curve from them), `on_before` the held-out metrics before training
    (each run's, with seeds) as soon as they are known, `on_snapshot` each snapshot of the timeline (`timeline`
    snapshots, OUTPUT/timeline once the model is written; `open_timeline` reads it). Returns the output folder and
    the metrics."""
    given = {k: v for k, v in (("task", task), ("train", train), ("output", output)) if v is not None}
    given.update(options)
    if settings is None:
        settings = FinetuneSettings(**given)
    elif given:
        settings = dataclasses.replace(settings, **FinetuneSettings.current_names(given))
    hooks = Hooks(progress, stop, on_epoch, on_step, say, on_before, on_snapshot)
    return _finetune_seeds(settings, hooks) if settings.seeds else _finetune_once(settings, hooks)


@dataclass
class _Data:
    recipe: object | None  # the built-in recipe read, or None for a file
    train: list
    heldout: list
    labels: list[str] | None  # the training data's labels (None: question answering)
    unseen: dict | None  # held-out labels the training data never shows (data.unseen_labels)


def _prepare_data(s: FinetuneSettings, say) -> _Data:
    task = TASKS[s.task]
    recipe, train_examples = _read(task, s.train, s.text_column, s.pair_column, s.label_column, say)
    if s.validation is not None:
        heldout = _read(task, s.validation, s.text_column, s.pair_column, s.label_column, say, role="validation")[1]
    else:
        train_examples, heldout = split(train_examples, s.validation_fraction, s.heldout_seed)
    labels = task.label_names(train_examples)
    unseen = unseen_labels(heldout, labels) if labels is not None else None
    if unseen is not None and unseen["count"]:
        say(unseen_sentence(unseen))
    return _Data(recipe, train_examples, heldout, labels, unseen)


def _prepare_model(s: FinetuneSettings, source, labels: list[str] | None, say):
    """(the task's model with its head, the tokenizer, the new parameters' names)."""
    torch.manual_seed(s.seed)  # the new head's weights (the same on every rank), then dropout
    task = TASKS[s.task]
    net, report = _load_for(task, source)
    try:
        tokenizer = Tokenizer.from_folder(report.folder, max_tokens=net.config.max_tokens)
    except TokenizerError as err:
        raise CheckpointError(f"{err}; fine-tuning needs the model's tokenizer beside its weights") from None
    if s.max_tokens > net.config.max_tokens:
        raise DataError(f"--max-tokens {s.max_tokens} exceeds the {net.config.max_tokens} tokens the model reads")
    new = task.fit_head(net, labels, task_head(source))
    say(f"model {report.folder} ({net.num_parameters() / 1e6:.1f} M parameters, new: {', '.join(new) or 'none'})")
    return net, tokenizer, new


def _finetune_once(s: FinetuneSettings, hooks: Hooks) -> FineTuneResult:
    dist_info, torch_device = setup_distributed(s.device)
    say = hooks.say or (say_above_progress if dist_info.is_main else (lambda *a: None))
    output = Path(s.output).expanduser()
    _check_output(output, s.overwrite)
    if s.threads:
        torch.set_num_threads(s.threads)
    if s.timeline and s.timeline_inputs is not None:
        read_inputs(s.timeline_inputs)  # a bad file is said before the data is read
    data = _prepare_data(s, say)
    say(f"{s.task}: {len(data.train)} training and {len(data.heldout)} held-out examples"
        + (f", labels {', '.join(data.labels[:8])}{' ...' if len(data.labels) > 8 else ''}" if data.labels else ""))
    net, tokenizer, new = _prepare_model(s, catalog.resolve(s.model), data.labels, say)
    loop = _Loop(s, data, net, tokenizer, new, dist_info, torch_device, hooks, say).run()
    if dist_info.world_size > 1:
        dist.barrier()
    if not dist_info.is_main:
        return FineTuneResult(output, {}, net)
    if loop.best["state"] is not None:
        net.load_state_dict(loop.best["state"])
    metrics = _metrics(s, data, loop, dist_info.world_size, torch_device)
    _write_output(output, net.to("cpu").eval(), tokenizer, s.task, data.labels, metrics, loop.best["rows"] or [],
                  s.overwrite, loop.timeline.folder if loop.timeline is not None else None)
    say(f"saved {output}")
    return FineTuneResult(output, metrics, net)


class _Loop:
    """One fine-tuning on the shared loop: the features, the trainer, an evaluation after each epoch (and before
    training), the best epoch's weights and held-out rows."""

    def __init__(self, s: FinetuneSettings, data: _Data, net, tokenizer: Tokenizer, new: list[str],
                 dist_info, device: torch.device, hooks: Hooks, say):
        self.s, self.data, self.net, self.tokenizer = s, data, net, tokenizer
        self.dist, self.device, self.hooks, self.say = dist_info, device, hooks, say
        self.task = task = TASKS[s.task]
        self.train_features = task.encode(data.train, tokenizer, s.max_tokens, data.labels, s.stride)
        eval_length = task.eval_length(s.max_tokens, net.config.max_tokens)
        self.eval_features = task.encode(data.heldout, tokenizer, eval_length, data.labels, s.stride)
        self.per_step = s.batch_size * dist_info.world_size
        self.steps_per_epoch = math.ceil(len(self.train_features) / self.per_step)
        self.total = s.epochs * self.steps_per_epoch
        schedule = SCHEDULES[s.schedule](warmup_steps(s.warmup_ratio, self.total), self.total)
        self.trainer = Trainer.create(net, TaskObjective(net, task), lr=s.learning_rate, weight_decay=s.weight_decay,
                                      schedule=schedule, device=device, dist_info=dist_info, new_parameters=set(new))
        self.metric = task.main_metric(data.labels)
        self.history: list[dict] = []
        self.best = {"score": -math.inf, "state": None, "epoch": 0, "eval": None, "rows": None}
        self.before: dict | None = None
        self.losses: list[float] = []
        self.finished, self.seconds = False, 0.0
        self.timeline = _timeline(s, data, net, tokenizer, self.total, hooks) if dist_info.is_main else None

    def batch_at(self, step: int):
        s, info = self.s, self.dist
        epoch, k = divmod(step, self.steps_per_epoch)
        generator = torch.Generator().manual_seed(s.seed * 1009 + epoch)
        order = torch.randperm(len(self.train_features), generator=generator)
        chosen = order[k * self.per_step:(k + 1) * self.per_step].tolist()
        if info.world_size > 1 and len(chosen) < self.per_step:
            # every process needs a full share of the last batch
            chosen += order[:self.per_step - len(chosen)].tolist()
        mine = chosen[info.rank * s.batch_size:(info.rank + 1) * s.batch_size]
        return self.task.collate([self.train_features[i] for i in mine], self.tokenizer.pad_token_id).to(self.device)

    def evaluate(self):
        return self.task.evaluate(self.net, self.tokenizer, self.data.heldout, self.eval_features, self.data.labels,
                                  self.s.eval_batch_size, self.device)

    def evaluate_now(self, epoch: float) -> None:
        if not self.dist.is_main:
            return
        result, rows = self.evaluate()
        losses, metric = self.losses, self.metric
        record = {"epoch": epoch, "step": self.trainer.step,
                  "train_loss": sum(losses) / len(losses) if losses else None, "eval": result,
                  "seconds": time.perf_counter() - self.epoch_started}
        self.history.append(record)
        improved = result[metric] > self.best["score"]
        if improved:
            self.best.update(score=result[metric], epoch=epoch, eval=result, rows=rows,
                             state={k: v.detach().to("cpu", copy=True) for k, v in self.net.state_dict().items()})
        trained = "-" if record["train_loss"] is None else f"{record['train_loss']:.4f}"
        self.say(f"epoch {epoch}: train loss {trained}, held-out {metric} {result[metric]:.4f}, loss "
                 f"{result['loss']:.4f}{' (best so far)' if improved else ''}")
        if self.hooks.on_epoch is not None:
            self.hooks.on_epoch(record)
        losses.clear()
        self.epoch_started = time.perf_counter()

    def after_step(self, result: dict) -> None:
        self.losses.append(float(result["loss"].detach()))
        step = self.trainer.step
        if self.hooks.on_step is not None:
            self.hooks.on_step({"step": step, "total": self.total, "epoch": step / self.steps_per_epoch,
                                "loss": self.losses[-1]})
        if step % self.steps_per_epoch == 0:
            self.evaluate_now(step // self.steps_per_epoch)

    def run(self) -> "_Loop":
        started = self.epoch_started = time.perf_counter()
        if self.dist.is_main:
            self.before = self.evaluate()[0]
            self.say(f"before training: held-out {self.metric} {self.before[self.metric]:.4f}")
            if self.hooks.on_before is not None:
                self.hooks.on_before(self.before)
        self.finished = fit(self.trainer, self.batch_at, self.total, clip=self.s.clip, after_step=self.after_step,
                            stop=self.hooks.stop, progress=self.hooks.progress,
                            description=f"fine-tuning {self.s.epochs} epochs", timeline=self.timeline)
        self.seconds = time.perf_counter() - started
        step = self.trainer.step
        if not self.finished and (step % self.steps_per_epoch or not self.history):
            self.say(f"stopped at step {step} of {self.total}; keeping the best so far")
            self.evaluate_now(round(step / self.steps_per_epoch, 3))
        return self


def _timeline(s: FinetuneSettings, data: _Data, net, tokenizer: Tokenizer, total: int,
              hooks: Hooks) -> TimelineWriter | None:
    """The writer of this run's timeline, or None with --timeline 0. It writes beside the output folder (a hidden
    .NAME.timeline-PID), since the output is renamed into place only once complete, and _write_output moves it in
    as OUTPUT/timeline; a run killed before that leaves it there, readable by open_timeline."""
    if not s.timeline:
        return None
    task = TASKS[s.task]
    if s.timeline_inputs is not None:
        inputs = choose_inputs(s.timeline_inputs, (), tokenizer.vocab)
        refused = task.check_timeline_inputs(inputs, f"--timeline-inputs {Path(s.timeline_inputs).name}")
        if refused:
            raise TimelineError(refused)
    else:
        inputs = heldout_inputs(task, data.heldout)
    output = Path(s.output).expanduser()
    folder = output.parent / f".{output.name}.timeline-{os.getpid()}"
    shutil.rmtree(folder, ignore_errors=True)

    def answer(model, encoding) -> dict:
        return dataclasses.asdict(task.predict(model, tokenizer, data.labels, encoding))

    return TimelineWriter(folder, tokenizer=tokenizer, inputs=inputs, total_steps=total, count=s.timeline,
                          kind="finetuning", max_tokens=net.config.max_tokens, model_name=output.name,
                          predict=answer, task=s.task, labels=data.labels, on_snapshot=hooks.on_snapshot)


def heldout_inputs(task: Task, heldout: list, count: int = 5, among: int = 200) -> list[TimelineInput]:
    """A timeline's default inputs for a fine-tuning: the `count` shortest of the first `among` held-out examples,
    in their order, each with its gold answer (a label, the tags, the answer's text). A question's context is cut to
    MAX_LINE_CHARS characters (every snapshot keeps every head's attention, which grows with the square of the
    length); its gold answer stays only when the cut keeps it."""
    items = [task.timeline_input(example) for example in heldout[:among]]
    size = [len(i.text) + len(i.text_pair or "") for i in items]
    keep = sorted(sorted(range(len(items)), key=lambda k: size[k])[:count])
    return [items[k] for k in keep]


def _metrics(s: FinetuneSettings, data: _Data, loop: _Loop, processes: int, device: torch.device) -> dict:
    """What metrics.json says; `settings` is every field of `s` (the model and the device as resolved), plus how it
    ran (processes, threads)."""
    metrics = {
        "task": s.task, "metric": loop.metric, "eval": loop.best["eval"], "best_epoch": loop.best["epoch"],
        "eval_before_training": loop.before, "history": loop.history, "stopped_early": not loop.finished,
        "examples": {"train": len(data.train), "validation": len(data.heldout),
                     "train_features": len(loop.train_features), "validation_features": len(loop.eval_features)},
        "train_seconds": round(loop.seconds, 2), "labels": data.labels, "unseen_labels": data.unseen,
        "baseline": TASKS[s.task].baseline(data.train, data.heldout),
        "data": {"train": str(s.train), "validation": str(s.validation) if s.validation is not None else
                 f"{s.validation_fraction:g} of train held out (seed {s.heldout_seed})"},
        "settings": {**as_dict(s), "model": str(s.model if s.model is not None else catalog.default_model_name()),
                     "device": str(device), "processes": processes, "threads": torch.get_num_threads()},
    }
    if data.recipe is not None:
        metrics["data"]["source"] = data.recipe.source
        metrics["data"]["license"] = data.recipe.license
    return metrics


# ------------------------------------------------------------------------------------------------------------------
# Several seeds: one seed is one draw
# ------------------------------------------------------------------------------------------------------------------
SPREAD = ("std: the sample standard deviation (n - 1) of the runs' held-out scores; min and max: their range. A "
          "difference smaller than the range is within the spread of seeds")


def seed_summary(runs: list[dict], metric: str) -> dict:
    """Each run's score ({seed, score, ...}), their mean, std (n - 1) and range, and the seed of the best run."""
    scores = [r["score"] for r in runs]
    best = max(runs, key=lambda r: r["score"])
    return {"metric": metric, "runs": runs, "mean": statistics.fmean(scores),
            "std": statistics.stdev(scores) if len(scores) > 1 else 0.0, "min": min(scores), "max": max(scores),
            "spread": SPREAD, "kept": best["seed"]}


def _finetune_seeds(s: FinetuneSettings, hooks: Hooks) -> FineTuneResult:
    """One run per seed into a hidden folder beside `output`, all scored on the same held-out examples; the best
    becomes `output` (with keep_all, the others stay beside it as OUTPUT-seed-N) and every kept metrics.json gets
    the summary."""
    output = Path(s.output).expanduser()
    _check_output(output, s.overwrite)
    runs, best, folders = [], None, {}
    main = int(os.environ.get("RANK", "0")) == 0
    say = hooks.say or (say_above_progress if main else (lambda *a: None))
    try:
        for index, seed in enumerate(s.seeds):
            folders[seed] = output.parent / f".{output.name}.seed-{seed}-{os.getpid()}"
            one = dataclasses.replace(s, seed=seed, seeds=(), split_seed=s.heldout_seed, output=folders[seed],
                                      overwrite=True)
            say(f"run {index + 1} of {len(s.seeds)}: seed {seed}")
            result = _finetune_once(one, _for_run(hooks, index, seed))
            if not result.metrics:  # another process under torchrun: the main one writes
                continue
            if result.metrics["stopped_early"] and runs:
                say(f"run {index + 1} (seed {seed}) was stopped: left out, the {len(runs)} complete runs kept")
                break  # a run cut short is not a draw of the same training
            score = result.metrics["eval"][result.metrics["metric"]]
            runs.append({"seed": seed, "score": score, "best_epoch": result.metrics["best_epoch"],
                         "eval": result.metrics["eval"], "stopped_early": result.metrics["stopped_early"]})
            if best is None or score > best.metrics["eval"][best.metrics["metric"]]:
                best = result
            else:
                result.model = None  # only the best run's weights are handed back
            if result.metrics["stopped_early"]:
                break  # Ctrl-C or Cancel: no further seeds
        if best is None:
            return FineTuneResult(output, {}, None)
        return _keep_runs(s, output, best, runs, folders)
    finally:
        for folder in folders.values():
            shutil.rmtree(folder, ignore_errors=True)


def _for_run(hooks: Hooks, index: int, seed: int) -> Hooks:
    """The hooks, each record saying which run (0-based) and seed it comes from."""
    def tagged(callback):
        return None if callback is None else (lambda record: callback({**record, "run": index, "seed": seed}))
    return dataclasses.replace(hooks, on_epoch=tagged(hooks.on_epoch), on_step=tagged(hooks.on_step))


def _keep_runs(s: FinetuneSettings, output: Path, best: FineTuneResult, runs: list[dict],
               folders: dict[int, Path]) -> FineTuneResult:
    summary = seed_summary(runs, best.metrics["metric"])
    kept = {summary["kept"]: output}
    if s.keep_all:
        kept.update({r["seed"]: output.parent / f"{output.name}-seed-{r['seed']}" for r in runs
                     if r["seed"] != summary["kept"]})
    for r in runs:
        r["folder"] = str(kept[r["seed"]]) if r["seed"] in kept else None
    for seed, target in kept.items():
        path = folders[seed] / "metrics.json"
        metrics = json.loads(path.read_text())
        metrics["seeds"] = summary
        metrics["settings"].update(seeds=list(s.seeds), keep_all=s.keep_all, output=str(output))
        path.write_text(json.dumps(metrics, indent=2) + "\n")
        _move_into_place(folders[seed], target, s.overwrite)
        if seed == summary["kept"]:
            best.metrics = metrics
    best.output = output
    return best


def _check_output(output: Path, overwrite: bool) -> None:
    if output.exists() and not output.is_dir():
        raise DataError(f"--output {output} is a file; give a folder")
    if output.is_dir() and any(output.iterdir()) and not overwrite:
        raise DataError(f"--output {output} exists and is not empty; choose another folder, or pass --overwrite to "
                        "replace it")


def _read(task: Task, source, text_column, pair_column, label_column, say, role: str = "training"):
    """(recipe or None, examples) for a file or a recipe name."""
    name = os.fspath(source)
    if recipes.is_recipe(name) and not Path(name).exists():
        recipe, examples = recipes.load_recipe(name, say)
        if TASKS[recipe.task] is not task:
            raise DataError(f"{name} is {recipe.task} data; run `bertviz-app finetune {recipe.task} --train {name}`")
        return recipe, examples
    path = Path(name).expanduser()
    if not path.exists():
        known = ", ".join(recipes.RECIPES)
        raise DataError(f"no {role} file at {path} (built-in recipes: {known})")
    return None, task.read(path, (text_column, pair_column, label_column))


def _load_for(task: Task, source):
    """The checkpoint as the task's model. A checkpoint fine-tuned for this task loads as it is; any other (a
    pretraining checkpoint, a bare encoder, another task's model) gives its encoder to a new model of the task, which
    leaves out what the task does not read (a pooler for tagging and QA, the pretraining heads), as transformers
    does."""
    if task.made(task_head(source)):
        return load_model(source, task.head)
    encoder, report = load_model(source, BertModel)
    net = task.head(encoder.config)
    state = {k: v for k, v in encoder.state_dict().items() if net.bert.pooler is not None or not k.startswith("pooler.")}
    missing, unexpected = net.bert.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.startswith("pooler.")]:
        raise CheckpointError(f"{report.folder}: the encoder does not fit a {type(net).__name__} ({unexpected or missing})")
    return net, report


def _write_output(output: Path, net, tokenizer: Tokenizer, task: str, labels, metrics: dict, rows: list[dict],
                  overwrite: bool, timeline: Path | None = None) -> None:
    """Everything into a temporary folder beside `output`, then renamed into place: a failure leaves no half-written
    model, and --overwrite replaces the old folder only once the new one is complete. `timeline`: the run's timeline
    folder, moved in as OUTPUT/timeline (removed with the rest when the model cannot be saved)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.parent / f".{output.name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        save_pretrained(net, partial, tokenizer=tokenizer)
        config_path = partial / "config.json"
        config = json.loads(config_path.read_text())
        if labels is not None:
            config["id2label"] = {str(i): name for i, name in enumerate(labels)}
            config["label2id"] = {name: i for i, name in enumerate(labels)}
        config["finetuning_task"] = task
        config_path.write_text(json.dumps(config, indent=2) + "\n")
        (partial / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
        with (partial / "heldout_predictions.jsonl").open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        if timeline is not None and timeline.is_dir():
            timeline.rename(partial / TIMELINE_FOLDER)
        _move_into_place(partial, output, overwrite)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        if timeline is not None:  # the timeline of a model that was not saved
            shutil.rmtree(timeline, ignore_errors=True)
        raise


def _move_into_place(folder: Path, output: Path, overwrite: bool) -> None:
    """Rename a complete `folder` to `output`, replacing an old one only now (and only with `overwrite`)."""
    _check_output(output, overwrite)  # nobody filled it while we trained
    old = None
    if output.exists():
        old = output.parent / f".{output.name}.old-{os.getpid()}"
        output.rename(old)
    folder.rename(output)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------------------------
def add_finetune_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `bertviz-app finetune`: one per field of FinetuneSettings."""
    return add_arguments(parser, FinetuneSettings)


def run_finetune(args: argparse.Namespace) -> FineTuneResult:
    result = finetune(settings=from_args(FinetuneSettings, args))
    if result.metrics:
        print(result)
    return result


def main(argv: list[str] | None = None) -> int:
    """`python -m bertviz_app.finetuning TASK ...` (what `torchrun` runs)."""
    parser = add_finetune_arguments(argparse.ArgumentParser(prog="bertviz-app finetune"))
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run_finetune(args)
    except (ValueError, OSError, RuntimeError) as err:
        print(f"bertviz-app finetune: error: {err}", file=sys.stderr)
        return 2
    return 0
