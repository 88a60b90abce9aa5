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
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn

from .. import catalog
from ..checkpoint import TASK_MODELS, CheckpointError, load_model, save_pretrained, task_head
from ..model import BertModel
from ..tokenizer import Tokenizer, TokenizerError
from ..training import Trainer, fit, say_above_progress, setup_distributed
from . import recipes
from .data import (DataError, check_labels, label_names, read_squad, read_tagged_examples, read_text_examples,
                   split)
from .tasks import (QUESTION_ANSWERING, TASKS, TEXT_CLASSIFICATION, TOKEN_CLASSIFICATION, TaskObjective, collate,
                    encode, evaluate, main_metric)


@dataclass
class FineTuneResult:
    """Where the model was written, and what metrics.json says."""

    output: Path
    metrics: dict
    model: nn.Module | None = None  # the trained model (the best epoch's weights on the main process)

    def __str__(self) -> str:
        ev = self.metrics["eval"]
        shown = ", ".join(f"{k} {v:.4f}" for k, v in ev.items() if k in ("accuracy", "f1", "exact_match"))
        return f"{self.output}: held-out {shown} (epoch {self.metrics['best_epoch']})"


def finetune(task: str, train: str | os.PathLike, output: str | os.PathLike, *, validation: str | os.PathLike | None = None,
             model: str | os.PathLike | None = None, text_column: str = "text", pair_column: str | None = "text_pair",
             label_column: str = "label", epochs: int = 3, batch_size: int = 32, learning_rate: float = 5e-5,
             max_length: int = 128, seed: int = 0, overwrite: bool = False, warmup_ratio: float = 0.0,
             weight_decay: float = 0.01, clip: float = 1.0, validation_fraction: float = 0.1,
             eval_batch_size: int = 64, stride: int = 128, device: str = "auto", threads: int | None = None,
             progress: bool | None = None, stop: threading.Event | None = None,
             on_epoch: Callable[[dict], None] | None = None, on_step: Callable[[dict], None] | None = None,
             say: Callable[[str], None] | None = None) -> FineTuneResult:
    """Fine-tune `model` (default: the default model) for `task` ('text-classification', 'token-classification',
    'question-answering') on `train` (a file, or a recipe name: 'movie-reviews', 'wsj-pos') and write the result to
    `output`. Without `validation`, a seeded `validation_fraction` of `train` is held out. `stop` (an event) ends the
    run after the step under way, keeping the best epoch so far, as Ctrl-C does; `on_epoch` receives each epoch's
    record, `on_step` each step's {step, total, epoch (a fraction), loss} (the app draws its loss curve from them).
    Returns the output folder and the metrics."""
    dist_info, torch_device = setup_distributed(device)
    say = say or (say_above_progress if dist_info.is_main else (lambda *a: None))
    _check_settings(task, epochs, batch_size, learning_rate, max_length, warmup_ratio, validation_fraction, clip,
                    eval_batch_size, stride)
    output = Path(output).expanduser()
    _check_output(output, overwrite)
    if threads:
        torch.set_num_threads(threads)

    recipe, train_examples = _read(task, train, text_column, pair_column, label_column, say)
    if validation is not None:
        heldout = _read(task, validation, text_column, pair_column, label_column, say, role="validation")[1]
    else:
        train_examples, heldout = split(train_examples, validation_fraction, seed)
    labels = label_names(train_examples) if task != QUESTION_ANSWERING else None
    if labels is not None:
        check_labels(heldout, labels)

    source = catalog.resolve(model)
    torch.manual_seed(seed)  # the new head's weights (the same on every rank), then dropout
    net, report = _load_for(task, source)
    try:
        tokenizer = Tokenizer.from_folder(report.folder, max_tokens=net.config.max_position_embeddings)
    except TokenizerError as err:
        raise CheckpointError(f"{err}; fine-tuning needs the model's tokenizer beside its weights") from None
    if max_length > net.config.max_position_embeddings:
        raise DataError(f"--max-length {max_length} exceeds the model's {net.config.max_position_embeddings} "
                        "positions")
    new = _fit_head(net, task, labels, source)
    say(f"{task}: {len(train_examples)} training and {len(heldout)} held-out examples"
        + (f", labels {', '.join(labels[:8])}{' ...' if len(labels) > 8 else ''}" if labels else "")
        + f"; model {report.folder} ({net.num_parameters() / 1e6:.1f} M parameters, new: {', '.join(new) or 'none'})")

    train_features = encode(task, train_examples, tokenizer, max_length, labels, stride)
    # Tagging is scored on every word, so held-out sentences are read whole (up to the model's positions).
    eval_length = net.config.max_position_embeddings if task == TOKEN_CLASSIFICATION else max_length
    eval_features = encode(task, heldout, tokenizer, eval_length, labels, stride)
    per_step = batch_size * dist_info.world_size
    steps_per_epoch = math.ceil(len(train_features) / per_step)
    total = epochs * steps_per_epoch
    trainer = Trainer.create(net, TaskObjective(net), lr=learning_rate, weight_decay=weight_decay, total_steps=total,
                             warmup=round(warmup_ratio * total), device=torch_device, dist_info=dist_info,
                             new_parameters=set(new))

    def batch_at(step: int):
        epoch, k = divmod(step, steps_per_epoch)
        order = torch.randperm(len(train_features), generator=torch.Generator().manual_seed(seed * 1009 + epoch))
        chosen = order[k * per_step:(k + 1) * per_step].tolist()
        if dist_info.world_size > 1 and len(chosen) < per_step:
            chosen += order[:per_step - len(chosen)].tolist()  # every process needs a full share of the last batch
        mine = chosen[dist_info.rank * batch_size:(dist_info.rank + 1) * batch_size]
        return collate([train_features[i] for i in mine], tokenizer.pad_token_id, task).to(torch_device)

    metric = main_metric(task, labels)
    history: list[dict] = []
    best = {"score": -math.inf, "state": None, "epoch": 0, "eval": None, "rows": None}
    started = time.perf_counter()
    epoch_started = [started]
    losses: list[float] = []

    def evaluate_now(epoch: float) -> None:
        if not dist_info.is_main:
            return
        result, rows = evaluate(task, net, tokenizer, heldout, eval_features, labels, eval_batch_size, torch_device)
        record = {"epoch": epoch, "step": trainer.step, "train_loss": sum(losses) / len(losses) if losses else None,
                  "eval": result, "seconds": time.perf_counter() - epoch_started[0]}
        history.append(record)
        improved = result[metric] > best["score"]
        if improved:
            best.update(score=result[metric], epoch=epoch, eval=result, rows=rows,
                        state={k: v.detach().to("cpu", copy=True) for k, v in net.state_dict().items()})
        trained = "-" if record["train_loss"] is None else f"{record['train_loss']:.4f}"
        say(f"epoch {epoch}: train loss {trained}, held-out {metric} {result[metric]:.4f}, loss "
            f"{result['loss']:.4f}{' (best so far)' if improved else ''}")
        if on_epoch is not None:
            on_epoch(record)
        losses.clear()
        epoch_started[0] = time.perf_counter()

    before = None
    if dist_info.is_main:
        before = evaluate(task, net, tokenizer, heldout, eval_features, labels, eval_batch_size, torch_device)[0]
        say(f"before training: held-out {metric} {before[metric]:.4f}")

    def after_step(result: dict) -> None:
        losses.append(float(result["loss"].detach()))
        if on_step is not None:
            on_step({"step": trainer.step, "total": total, "epoch": trainer.step / steps_per_epoch,
                     "loss": losses[-1]})
        if trainer.step % steps_per_epoch == 0:
            evaluate_now(trainer.step // steps_per_epoch)

    finished = fit(trainer, batch_at, total, clip=clip, after_step=after_step, stop=stop, progress=progress,
                   description=f"fine-tuning {epochs} epochs")
    train_seconds = time.perf_counter() - started
    if not finished and (trainer.step % steps_per_epoch or not history):
        say(f"stopped at step {trainer.step} of {total}; keeping the best so far")
        evaluate_now(round(trainer.step / steps_per_epoch, 3))
    if dist_info.world_size > 1:
        dist.barrier()
    if not dist_info.is_main:
        return FineTuneResult(output, {}, net)
    if best["state"] is not None:
        net.load_state_dict(best["state"])
    metrics = {
        "task": task, "eval": best["eval"], "best_epoch": best["epoch"], "eval_before_training": before,
        "history": history, "stopped_early": not finished,
        "examples": {"train": len(train_examples), "validation": len(heldout), "train_features": len(train_features),
                     "validation_features": len(eval_features)},
        "train_seconds": round(train_seconds, 2), "labels": labels,
        "baseline": _baseline(task, train_examples, heldout),
        "data": {"train": str(train), "validation": str(validation) if validation is not None else
                 f"{validation_fraction:g} of train held out (seed {seed})"},
        "settings": {"model": str(model if model is not None else catalog.default_model_name()), "epochs": epochs,
                     "batch_size": batch_size, "processes": dist_info.world_size, "learning_rate": learning_rate,
                     "max_length": max_length, "seed": seed, "warmup_ratio": warmup_ratio,
                     "weight_decay": weight_decay, "clip": clip, "device": str(torch_device),
                     "threads": torch.get_num_threads()},
    }
    if recipe is not None:
        metrics["data"]["source"] = recipe.source
        metrics["data"]["license"] = recipe.license
    _write_output(output, net.to("cpu").eval(), tokenizer, task, labels, metrics, best["rows"] or [], overwrite)
    say(f"saved {output}")
    return FineTuneResult(output, metrics, net)


def _check_settings(task, epochs, batch_size, learning_rate, max_length, warmup_ratio, validation_fraction, clip,
                    eval_batch_size, stride) -> None:
    if task not in TASKS:
        raise DataError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    checks = [(isinstance(epochs, int) and epochs >= 1, "--epochs must be 1 or more"),
              (isinstance(batch_size, int) and batch_size >= 1, "--batch-size must be 1 or more"),
              (isinstance(eval_batch_size, int) and eval_batch_size >= 1, "the evaluation batch size must be 1 or more"),
              (0 < learning_rate < 1, "--learning-rate must be a number between 0 and 1 (BERT: 2e-5 to 5e-5)"),
              (isinstance(max_length, int) and max_length >= 16, "--max-length must be 16 tokens or more"),
              (0 <= warmup_ratio < 1, "--warmup-ratio must be at least 0 and below 1"),
              (0 < validation_fraction < 1, "--validation-fraction must be between 0 and 1"),
              (0 <= clip < math.inf, "--clip must be 0 (off) or a positive number"),
              (isinstance(stride, int) and stride >= 0, "--stride must be 0 or more")]
    for ok, message in checks:
        if not ok:
            raise DataError(message)


def _check_output(output: Path, overwrite: bool) -> None:
    if output.exists() and not output.is_dir():
        raise DataError(f"--output {output} is a file; give a folder")
    if output.is_dir() and any(output.iterdir()) and not overwrite:
        raise DataError(f"--output {output} exists and is not empty; choose another folder, or pass --overwrite to "
                        "replace it")


def _read(task: str, source, text_column, pair_column, label_column, say, role: str = "training"):
    """(recipe or None, examples) for a file or a recipe name."""
    name = os.fspath(source)
    if recipes.is_recipe(name) and not Path(name).exists():
        recipe, examples = recipes.load_recipe(name, say)
        if recipe.task != task:
            raise DataError(f"{name} is {recipe.task} data; run `bertviz-app finetune {recipe.task} --train {name}`")
        return recipe, examples
    path = Path(name).expanduser()
    if not path.exists():
        known = ", ".join(recipes.RECIPES)
        raise DataError(f"no {role} file at {path} (built-in recipes: {known})")
    if task == TEXT_CLASSIFICATION:
        return None, read_text_examples(path, text_column, pair_column, label_column)
    if task == TOKEN_CLASSIFICATION:
        return None, read_tagged_examples(path)
    return None, read_squad(path)


def _load_for(task: str, source):
    """The checkpoint as the task's model. A checkpoint fine-tuned for this task loads as it is; any other (a
    pretraining checkpoint, a bare encoder, another task's model) gives its encoder to a new model of the task, which
    leaves out what the task does not read (a pooler for tagging and QA, the pretraining heads), as transformers
    does."""
    existing = task_head(source)
    if existing is not None and existing.task == task:
        return load_model(source, TASK_MODELS[task])
    encoder, report = load_model(source, BertModel)
    net = TASK_MODELS[task](encoder.config)
    state = {k: v for k, v in encoder.state_dict().items() if net.bert.pooler is not None or not k.startswith("pooler.")}
    missing, unexpected = net.bert.load_state_dict(state, strict=False)
    if unexpected or [k for k in missing if not k.startswith("pooler.")]:
        raise CheckpointError(f"{report.folder}: the encoder does not fit a {type(net).__name__} ({unexpected or missing})")
    return net, report


def _fit_head(net: nn.Module, task: str, labels: list[str] | None, source) -> list[str]:
    """Give the model a head for `labels`: the checkpoint's own when it was fine-tuned for this task with these very
    labels, else a new one (normal(0, initializer_range), zero bias, as BERT initializes). Returns the new
    parameters' names."""
    existing = task_head(source)
    if task == QUESTION_ANSWERING:
        keep = existing is not None and existing.task == task
        if not keep:
            _reset_linear(net.qa_outputs, net.config.initializer_range)
        return [] if keep else ["qa_outputs.weight", "qa_outputs.bias"]
    if existing is not None and existing.task == task and existing.labels == labels:
        return []
    net.config = dataclasses.replace(net.config, num_labels=len(labels))
    if task == TEXT_CLASSIFICATION:
        net.config.problem_type = "single_label_classification"
    net.num_labels = len(labels)
    net.classifier = nn.Linear(net.config.hidden_size, len(labels))
    _reset_linear(net.classifier, net.config.initializer_range)
    return ["classifier.weight", "classifier.bias"]


def _reset_linear(layer: nn.Linear, std: float) -> None:
    with torch.no_grad():
        nn.init.normal_(layer.weight, std=std)
        nn.init.zeros_(layer.bias)


def _baseline(task: str, train, heldout) -> dict | None:
    """What needs no model: the most frequent label (classification) or each word's most frequent tag, the overall
    most frequent for unseen words (tagging)."""
    if task == TEXT_CLASSIFICATION:
        top = Counter(e.label for e in train).most_common(1)[0][0]
        return {"majority_label": top, "accuracy": sum(e.label == top for e in heldout) / len(heldout)}
    if task == TOKEN_CLASSIFICATION:
        by_word: dict[str, Counter] = {}
        for e in train:
            for w, t in zip(e.words, e.tags):
                by_word.setdefault(w, Counter())[t] += 1
        overall = Counter(t for e in train for t in e.tags).most_common(1)[0][0]
        guesses = [(by_word[w].most_common(1)[0][0] if w in by_word else overall) == t
                   for e in heldout for w, t in zip(e.words, e.tags)]
        return {"most_frequent_tag_accuracy": sum(guesses) / max(len(guesses), 1)}
    return None


def _write_output(output: Path, net, tokenizer: Tokenizer, task: str, labels, metrics: dict, rows: list[dict],
                  overwrite: bool) -> None:
    """Everything into a temporary folder beside `output`, then renamed into place: a failure leaves no half-written
    model, and --overwrite replaces the old folder only once the new one is complete."""
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
        _check_output(output, overwrite)  # nobody filled it while we trained
        old = None
        if output.exists():
            old = output.parent / f".{output.name}.old-{os.getpid()}"
            output.rename(old)
        partial.rename(output)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


# ------------------------------------------------------------------------------------------------------------------
# Command line
# ------------------------------------------------------------------------------------------------------------------
def add_finetune_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `bertviz-app finetune`."""
    parser.add_argument("task", choices=TASKS, help="what to teach: a label per text (or pair), a tag per word, or "
                        "an answer span in a context")
    parser.add_argument("--train", required=True, metavar="FILE|RECIPE",
                        help="training data: CSV/TSV/JSONL with a header (text-classification), CoNLL columns or "
                             "JSONL tokens/tags (token-classification), SQuAD v1.1 JSON (question-answering); or a "
                             f"built-in recipe fetched on first use: {', '.join(recipes.RECIPES)}")
    parser.add_argument("--validation", default=None, metavar="FILE",
                        help="held-out data in the same format (default: a seeded --validation-fraction of --train)")
    parser.add_argument("--model", default=None, metavar="NAME|DIR",
                        help="the checkpoint to start from (default: the built-in default model)")
    parser.add_argument("--output", required=True, metavar="DIR", help="folder to write the fine-tuned model and "
                        "metrics.json into; refused if it exists and is not empty, unless --overwrite")
    parser.add_argument("--overwrite", action="store_true", help="replace a non-empty --output (only once the new "
                        "model is complete)")
    parser.add_argument("--text-column", default="text")
    parser.add_argument("--pair-column", default="text_pair", help="second text of a pair, used when the file has "
                        "this column")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="examples per step and process")
    parser.add_argument("--learning-rate", "--lr", dest="learning_rate", type=float, default=5e-5)
    parser.add_argument("--max-length", type=int, default=128, help="tokens per input, special tokens included")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--warmup-ratio", type=float, default=0.0, help="share of the steps spent warming up the "
                        "learning rate (then it decays linearly to 0)")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--clip", type=float, default=1.0, help="gradient-norm clipping (0: off)")
    parser.add_argument("--validation-fraction", type=float, default=0.1)
    parser.add_argument("--stride", type=int, default=128, help="question answering: tokens two windows of a long "
                        "context share")
    parser.add_argument("--device", default="auto", help="auto, cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads (default: torch's)")
    return parser


def run_finetune(args: argparse.Namespace) -> FineTuneResult:
    result = finetune(args.task, args.train, args.output, validation=args.validation, model=args.model,
                      text_column=args.text_column, pair_column=args.pair_column, label_column=args.label_column,
                      epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate,
                      max_length=args.max_length, seed=args.seed, overwrite=args.overwrite,
                      warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay, clip=args.clip,
                      validation_fraction=args.validation_fraction, stride=args.stride, device=args.device,
                      threads=args.threads)
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
