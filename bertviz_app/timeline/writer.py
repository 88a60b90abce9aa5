"""Writing a training timeline: at the steps of a schedule, what the views need for each input, one folder per
snapshot, each renamed into place only once complete (format.py describes the files).

The writer is handed to the one training loop (`training.fit(timeline=...)`, the `Snapshots` protocol), which gives
it the model after every step on the main process; it keeps the steps of its schedule, and the step a run stops at.
A snapshot is the model in eval mode under `torch.inference_mode()`, so it changes neither the weights nor any random
number the training draws: a run with a timeline trains exactly as one without."""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch
from torch import nn

from ..heads import HEAD_STATISTICS, SHARES, roles
from ..masked_lm import evaluating, normalize_mask, top_predictions
from ..run import Run
from ..serving import AnalysisPass, TracedPass
from ..tokenizer import Encoding
from . import format as fmt
from .inputs import TimelineError, TimelineInput
from .probe_set import STATES, ProbeSet

TOP_K = 5

# A fine-tuning's answer for one input, as JSON: (model, encoding) -> dict (finetuning passes the task's predict).
Predict = Callable[[nn.Module, Encoding], dict]


def snapshot_steps(count: int, total: int) -> list[int]:
    """`count` steps from 0 to `total` (both included; all of them when there are fewer): half spaced evenly, half
    log-spaced, so the first steps, where heads change fastest, are seen closely and the rest at an even pace. A pure
    function of (count, total): a resumed run with the same settings keeps the same schedule."""
    if count <= 0 or total < 0:
        return []
    if count >= total + 1:
        return list(range(total + 1))
    if count == 1:
        return [total]  # the trained model
    chosen: set[int] = {0, total}
    k = max(2, count // 2)
    while len(chosen) < count:
        even = np.linspace(0, total, k).round().astype(int)
        logs = np.geomspace(1, total, k).round().astype(int) if total >= 1 else np.zeros(0, dtype=int)
        candidate = {0, total, *even.tolist(), *logs.tolist()}
        if len(candidate) > count:
            break
        chosen = candidate
        k += 1
    steps = sorted(chosen)
    while len(steps) < count:  # rounding merged a few: split the widest gaps
        gap = max(range(len(steps) - 1), key=lambda i: steps[i + 1] - steps[i])
        steps.insert(gap + 1, (steps[gap] + steps[gap + 1]) // 2)
    return steps


class TimelineWriter:
    """Snapshots of a training into `folder` (e.g. OUT/timeline). kind: "pretraining" or "finetuning"; inputs: what
    each snapshot analyses; total_steps and count: the schedule (`snapshot_steps`); start_step: the step a resumed
    run starts from: snapshots after it (a killed run's, past its last checkpoint) are removed, since the run makes
    them again, and those before it are kept. predict: a fine-tuning's answer for an input; task, labels: what it
    was trained for. on_snapshot(record): called after each snapshot is in place (the app refreshes there). probe_set:
    held-out sentences whose hidden states each snapshot stores (probe_set.py), for `Timeline.probe`."""

    def __init__(self, folder: str | os.PathLike, *, tokenizer, inputs: Sequence[TimelineInput], total_steps: int,
                 count: int, kind: str, max_tokens: int, model_name: str = "", start_step: int = 0,
                 predict: Predict | None = None, task: str | None = None, labels: Sequence[str] | None = None,
                 on_snapshot: Callable[[dict], None] | None = None, probe_set: ProbeSet | None = None):
        self.folder = Path(folder)
        self.tokenizer, self.inputs, self.kind = tokenizer, list(inputs), kind
        self.predict, self.on_snapshot, self.probe_set = predict, on_snapshot, probe_set
        self.model_name = model_name or self.folder.parent.name
        self.schedule = set(snapshot_steps(count, total_steps))
        self.encodings = [tokenizer.encode(normalize_mask(i.text), i.text_pair and normalize_mask(i.text_pair),
                                           max_tokens=max_tokens) for i in self.inputs]
        self.answer_ids = [self._answer_ids(i) for i in self.inputs]
        self._pass: TracedPass | None = None
        self._losses: list[float] = []
        self.folder.mkdir(parents=True, exist_ok=True)
        for stale in self.folder.glob(f"{fmt.PARTIAL}*"):  # what a killed run left half-written
            shutil.rmtree(stale, ignore_errors=True) if stale.is_dir() else stale.unlink(missing_ok=True)
        self._check_same_inputs()
        self.written = set()
        for step, path in fmt.snapshot_folders(self.folder):
            if step > start_step:
                shutil.rmtree(path)
            else:
                self.written.add(step)
        manifest = {"format": fmt.FORMAT, "version": fmt.VERSION, "kind": kind, "task": task,
                    "labels": list(labels) if labels is not None else None, "model": self.model_name,
                    "inputs": [i.as_dict() for i in self.inputs], "total_steps": total_steps, "count": count,
                    "schedule": sorted(self.schedule), "top_k": TOP_K,
                    "probe_set": probe_set.source if probe_set is not None else None}
        if probe_set is not None:
            probe_set.write(self.folder)
        fmt.write_json(self.folder / fmt.MANIFEST, manifest)

    def _answer_ids(self, item: TimelineInput) -> list[int | None]:
        """The vocabulary id of each watched word; None for one the vocabulary lacks as a single piece (the model
        could never put it at a [MASK]), which the snapshot then leaves out."""
        return [self.tokenizer.vocab.get(word) for word in item.answers]

    def _check_same_inputs(self) -> None:
        path = self.folder / fmt.MANIFEST
        if not path.exists():
            return
        before = [TimelineInput.from_dict(d) for d in json.loads(path.read_text(encoding="utf-8"))["inputs"]]
        if before != self.inputs:
            raise TimelineError(f"{self.folder} holds a timeline of other inputs; resume with the same "
                                "--timeline-inputs, or remove that folder to start a new timeline")

    # --- the Snapshots protocol of training.fit ------------------------------------------------------------------
    def record(self, model: nn.Module, step: int, loss: float | None, lr: float, *, last: bool = False) -> None:
        if loss is not None:
            self._losses.append(loss)
        if step in self.written or not (step in self.schedule or last):
            return
        started = time.perf_counter()
        losses, self._losses = self._losses, []
        record = {"step": step, "loss": loss, "loss_mean": float(np.mean(losses)) if losses else None,
                  "lr": float(lr), "scheduled": step in self.schedule}
        payloads, per_input, stats, arrays = self._analyse(model, step)
        record["inputs"] = per_input
        record.update(_head_summary(stats, [len(e) for e in self.encodings]))
        record["seconds"] = round(time.perf_counter() - started, 4)
        fmt.write_snapshot(self.folder, step, record, payloads, arrays)
        self.written.add(step)
        if self.on_snapshot is not None:
            self.on_snapshot(record)

    # --- one snapshot ----------------------------------------------------------------------------------------------
    def _analyse(self, model: nn.Module, step: int):
        """Every input through the model in one padded pass (the explorer batches waiting inputs the same way: each
        input's numbers stay its own, within float32 rounding), then each input's Run, payload and predictions."""
        if self._pass is None:  # the Python pass of serving.py: the explorer's numbers, without tracing the model
            self._pass = TracedPass(AnalysisPass(model.bert, Run.POINTS))
        device = next(model.parameters()).device
        width = max(map(len, self.encodings))

        def padded(rows, pad: int = 0) -> torch.Tensor:
            return torch.tensor([list(r) + [pad] * (width - len(r)) for r in rows], device=device)  # (B, T)

        payloads, per_input, stats = [], [], []
        with evaluating(model), torch.inference_mode():
            out = self._pass(padded([e.ids for e in self.encodings], model.config.pad_token_id or 0),
                             padded([e.segment_ids for e in self.encodings]),
                             padded([[1] * len(e) for e in self.encodings]))
            for b, (encoding, answer_ids) in enumerate(zip(self.encodings, self.answer_ids)):
                run = Run.from_output(out, b, encoding, f"{self.model_name} step {step}", model.config)
                payloads.append(run.views_payload())
                stats.append(run.head_statistics())
                item = {"tokens": run.labels}
                item.update(self._predictions(model, encoding, out, b, answer_ids))
                per_input.append(item)
            arrays = {}
            if self.probe_set is not None:
                arrays[STATES] = self.probe_set.states(model.bert, model.config.pad_token_id or 0)
        return payloads, per_input, stats, arrays

    def _predictions(self, model, encoding: Encoding, out, b: int, answer_ids) -> dict:
        """The masked-token top five (and the watched words' probability) and P(IsNext) of a pair, from the heads of
        the model on this pass's outputs (as its forward pass applies them), and the task's answer."""
        found: dict = {}
        mask_id = self.tokenizer.mask_token_id
        positions = [i for i, t in enumerate(encoding.ids) if mask_id is not None and t == mask_id]
        if positions and getattr(model, "has_mlm_head", False):
            logits = model.cls.predictions(out.last_hidden_state[b, positions])  # (masks, vocab)
            probs = logits.float().softmax(-1)
            found["masks"] = []
            for k, (position, row) in enumerate(zip(positions, probs)):
                watched = answer_ids[k] if k < len(answer_ids) else None
                found["masks"].append({
                    "position": position,
                    "top": [[t, round(p, 6)] for t, p in top_predictions(row, self.tokenizer, TOP_K)],
                    "answer": round(float(row[watched]), 8) if watched is not None else None})
        if encoding.is_pair and getattr(model, "has_nsp_head", False) and out.pooler_output is not None:
            logits = model.cls.seq_relationship(out.pooler_output[b:b + 1])[0]  # (2,), index 0 = IsNext
            found["is_next"] = float(logits.float().softmax(-1)[0])
        if self.predict is not None:
            found["prediction"] = self.predict(model, encoding)
        return found


def _head_summary(stats: list, lengths: list[int]) -> dict:
    """Each head's statistics averaged over the inputs, and its role (heads.roles) from the averages. Entropy is
    averaged as a share of each input's uniform entropy (log T), since the inputs differ in length."""
    names = HEAD_STATISTICS
    mean = {n: np.mean([getattr(s, n) for s in stats], axis=0) for n in names}  # (L, h) each
    ratio = np.mean([s.entropy / math.log(max(t, 2)) for s, t in zip(stats, lengths)], axis=0)  # (L, h)
    heads = {n: np.round(mean[n].astype(np.float64), 4).tolist() for n in names}  # float64: no float32 digits
    heads["entropy_ratio"] = np.round(ratio.astype(np.float64), 4).tolist()
    return {"heads": heads, "roles": roles({n: mean[n] for n in SHARES}, ratio).tolist()}
