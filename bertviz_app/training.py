"""The one training loop that pretraining and fine-tuning share: AdamW with BERT's parameter groups, a learning-rate
schedule handed in (warmup then linear decay, cosine or constant: `SCHEDULES`), gradient clipping, mixed precision on
GPU, one process or `torchrun` DistributedDataParallel (gloo on CPU, nccl on GPU), a progress bar with the loss and
examples per second, and a clean stop on Ctrl-C (or a cancel event).

What changes between objectives is handed in: the objective (a module whose forward takes a batch and returns a dict
with `loss`), the batch for each step, what to do after a step (log, evaluate, save), and the timeline that keeps
snapshots of the model as it learns (`Snapshots`; bertviz_app.timeline writes one). Keeping the best epoch,
checkpoints and resuming belong to the callers, which know what "best" and "a checkpoint" mean for them."""

from __future__ import annotations

import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Protocol

import torch
import torch.distributed as dist
from torch import nn

from .device import resolve_device


@dataclass
class Distributed:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def setup_distributed(device: str) -> tuple[Distributed, torch.device]:
    """One process, or the process group that `torchrun` describes in the environment (gloo on CPU, nccl on GPU)."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Distributed(), resolve_device(device)
    info = Distributed(int(os.environ["RANK"]), world_size, int(os.environ.get("LOCAL_RANK", "0")))
    use_cuda = torch.cuda.is_available() and device in ("auto", "cuda")
    if use_cuda:
        torch.cuda.set_device(info.local_rank)
    if not dist.is_initialized():
        dist.init_process_group("nccl" if use_cuda else "gloo")
    return info, torch.device("cuda", info.local_rank) if use_cuda else torch.device("cpu")


Schedule = Callable[[int], float]  # optimizer step -> the learning rate's factor (of the peak rate)


def linear_schedule(warmup: int, total: int) -> Schedule:
    """Linear warmup from 0 to 1 over `warmup` steps, then linear decay to 0 at `total` (BERT's schedule)."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        return max(0.0, (total - step) / max(1, total - warmup))
    return factor


def cosine_schedule(warmup: int, total: int) -> Schedule:
    """Linear warmup, then half a cosine from 1 down to 0 at `total`."""
    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / max(1, warmup)
        done = min(1.0, (step - warmup) / max(1, total - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * done))
    return factor


def constant_schedule(warmup: int, total: int) -> Schedule:
    """Linear warmup, then the peak rate to the end."""
    return lambda step: (step + 1) / max(1, warmup) if step < warmup else 1.0


# The schedules a settings field may name: (warmup steps, total steps) -> Schedule. A new one is one line here.
SCHEDULES: dict[str, Callable[[int, int], Schedule]] = {
    "linear": linear_schedule, "cosine": cosine_schedule, "constant": constant_schedule}


def warmup_steps(ratio: float, total: int) -> int:
    """The warmup a ratio of `total` steps gives (at least one step when the ratio is not 0)."""
    return max(1, round(ratio * total)) if ratio > 0 else 0


def configure_optimizer(model: nn.Module, lr: float, weight_decay: float, new_parameters: set[str] = frozenset(),
                        new_lr_scale: float = 1.0, fused: bool = False) -> torch.optim.AdamW:
    """AdamW with BERT's parameter groups: no weight decay on biases and LayerNorm weights; parameters named in
    `new_parameters` (heads newly initialized) learn `new_lr_scale` times faster. The groups come in the order their
    first parameter appears (pretraining checkpoints store the optimizer state in that order)."""
    groups: dict[tuple[bool, bool], list] = {}
    for name, p in model.named_parameters():
        no_decay = name.endswith("bias") or "LayerNorm" in name
        groups.setdefault((no_decay, name in new_parameters), []).append(p)
    return torch.optim.AdamW(
        [{"params": ps, "weight_decay": 0.0 if no_decay else weight_decay, "lr": lr * (new_lr_scale if new else 1.0)}
         for (no_decay, new), ps in groups.items()],
        lr=lr, betas=(0.9, 0.999), eps=1e-6, fused=fused)


@dataclass
class Trainer:
    """Everything a training run holds between steps; `step` counts optimizer steps done."""

    model: nn.Module  # the model itself, unwrapped (what is saved)
    objective: nn.Module  # forward(batch) -> {"loss": ..., other numbers}
    runner: nn.Module  # the objective, wrapped in DistributedDataParallel under torchrun
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler | None
    amp_dtype: torch.dtype | None
    dist: Distributed = field(default_factory=Distributed)
    new_parameters: set[str] = field(default_factory=set)
    step: int = 0

    @classmethod
    def create(cls, model: nn.Module, objective: nn.Module, *, lr: float, weight_decay: float, schedule: Schedule,
               device: torch.device, dist_info: Distributed | None = None,
               new_parameters: set[str] = frozenset(), new_lr_scale: float = 1.0) -> "Trainer":
        """Optimizer and mixed precision as every objective here trains, the learning rate following `schedule`
        (e.g. `SCHEDULES["linear"](warmup, total)`): `model` moved to `device` in training mode, the objective
        wrapped in DDP when there are several processes."""
        dist_info = dist_info or Distributed()
        model.to(device).train()
        optimizer = configure_optimizer(model, lr, weight_decay, set(new_parameters), new_lr_scale,
                                        fused=device.type == "cuda")
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
        amp_dtype = None
        if device.type == "cuda":
            amp_dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        scaler = torch.amp.GradScaler("cuda") if amp_dtype == torch.float16 else None
        runner: nn.Module = objective
        if dist_info.world_size > 1:
            runner = nn.parallel.DistributedDataParallel(
                objective, device_ids=[device.index] if device.type == "cuda" else None)
        return cls(model, objective, runner, optimizer, scheduler, scaler, amp_dtype, dist_info, set(new_parameters))

    def train_step(self, batch, clip: float) -> dict:
        """One optimizer step on `batch`; returns the objective's outputs."""
        with torch.autocast(batch.input_ids.device.type, dtype=self.amp_dtype, enabled=self.amp_dtype is not None):
            result = self.runner(batch)
        loss = result["loss"]
        if not torch.isfinite(loss):
            raise RuntimeError(f"the loss became {float(loss)} at step {self.step}; lower the learning rate or check "
                               "the data")
        scaler, optimizer = self.scaler, self.optimizer
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
        else:
            loss.backward()
        if clip > 0:
            nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        self.scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return result


class Snapshots(Protocol):
    """What `fit` tells a training timeline (bertviz_app.timeline.TimelineWriter is one): every step's model, loss and
    learning rate, on the main process only. The timeline decides which steps it keeps; `last` marks the step a run
    ends or stops at, which it keeps whatever its schedule (a stopped run's checkpoint is at that step)."""

    def record(self, model: nn.Module, step: int, loss: float | None, lr: float, *, last: bool = False) -> None: ...


@contextmanager
def stop_requests(cancel: threading.Event | None = None) -> Iterator[threading.Event]:
    """An event that is set when the run should stop: `cancel` (the app's Cancel button), or a first Ctrl-C in the
    main thread, which then lets the step under way finish instead of breaking it off half-done. A second Ctrl-C
    stops at once (KeyboardInterrupt)."""
    stop = cancel if cancel is not None else threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.getsignal(signal.SIGINT)

    def on_interrupt(signum, frame):
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    signal.signal(signal.SIGINT, on_interrupt)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)


def _everyone_agrees_to_stop(asked: bool, info: Distributed) -> bool:
    """Under torchrun every process must stop at the same step (a process still stepping would wait forever for the
    others' gradients): stop when any of them was asked to."""
    if info.world_size <= 1:
        return asked
    flag = torch.tensor([1.0 if asked else 0.0])
    if dist.get_backend() == "nccl":
        flag = flag.cuda()
    dist.all_reduce(flag, op=dist.ReduceOp.MAX)
    return bool(flag.item() > 0)


def fit(trainer: Trainer, batch_at: Callable[[int], object], until: int, *, clip: float = 1.0,
        after_step: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
        progress: bool | None = None, description: str = "training", timeline: Snapshots | None = None) -> bool:
    """The loop: optimizer steps from `trainer.step` up to `until`, on `batch_at(step)` (a batch with `input_ids` of
    shape (B, T)), calling `after_step(result)` after each. A progress bar (tqdm, on the main process; None shows it
    only on a terminal) reports the loss and examples per second. `timeline` sees the model before the first step,
    after each step (before `after_step`, so a checkpoint saved there has its snapshot already written) and where the
    run ends. Returns True when `until` was reached, False when the run was asked to stop (Ctrl-C or `stop`), after
    a complete step."""
    from tqdm.auto import tqdm

    # disable=None: tqdm draws only on a terminal (a log file would fill with carriage returns)
    disable = True if not trainer.dist.is_main or progress is False else (None if progress is None else False)
    bar = tqdm(total=until, initial=trainer.step, desc=description, unit="step", dynamic_ncols=True, disable=disable)
    smoothed, examples, started = None, 0, time.perf_counter()
    # only the main process keeps a timeline; the others wait for it at the next step's gradients
    timeline = timeline if trainer.dist.is_main else None
    loss, lr = None, trainer.scheduler.get_last_lr()[0]

    def snapshot(last: bool = False) -> None:
        if timeline is not None:
            timeline.record(trainer.model, trainer.step, loss, lr, last=last)

    snapshot()
    try:
        with stop_requests(stop) as asked:
            while trainer.step < until:
                if _everyone_agrees_to_stop(asked.is_set(), trainer.dist):
                    snapshot(last=True)
                    return False
                batch = batch_at(trainer.step)
                lr = trainer.scheduler.get_last_lr()[0]  # the rate this step uses
                result = trainer.train_step(batch, clip)
                loss = float(result["loss"].detach())
                if timeline is not None:
                    timeline.record(trainer.model, trainer.step, loss, lr)
                smoothed = loss if smoothed is None else 0.9 * smoothed + 0.1 * loss
                examples += int(batch.input_ids.shape[0]) * trainer.dist.world_size
                bar.set_postfix(loss=f"{smoothed:.4f}", examples_per_s=f"{examples / (time.perf_counter() - started):.1f}",
                                refresh=False)
                bar.update(1)
                if after_step is not None:
                    after_step(result)
            snapshot(last=True)
            return True
    finally:
        bar.close()


def say_above_progress(*parts) -> None:
    """print() to stderr without breaking a progress bar drawn there."""
    from tqdm.auto import tqdm

    tqdm.write(" ".join(str(p) for p in parts), file=sys.stderr)
