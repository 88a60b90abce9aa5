"""Do analyses keep answering while the app fine-tunes? The analyze event's work for a new 32-token input (forward
pass, token table, the views' payload, as bench_app.py's server-side row) timed in this process, one torch thread as
served, while nothing trains, while the Fine-tune tab's lane trains (its own thread, one torch thread), and while the
same training runs with two torch threads, or (lane-nice10) with the lane's thread at nice +10, phases alternating so
that a neighbour on the machine meets each alike. The training is movie-reviews from the default model, as the tab
starts it; each training phase begins once its first step is done and ends with Cancel (nothing is kept).

    .venv/bin/python benchmarks/bench_training_lane.py                 # 2 rounds x 40 inputs per phase
    .venv/bin/python benchmarks/bench_training_lane.py --inputs 10 --rounds 1   # smoke run
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_app import percentile, sentence  # noqa: E402


def analyses(explorer, counter, n: int, gap_s: float) -> list[float]:
    """Milliseconds of `n` new inputs, `gap_s` apart (visitors' inputs arrive, they do not queue back to back)."""
    times = []
    for _ in range(n):
        start = time.perf_counter()
        run = explorer.run(sentence(next(counter), 32))
        run.token_table()
        run.views_payload()
        times.append((time.perf_counter() - start) * 1000)
        time.sleep(gap_s)
    return times


def training(lane, explorer, phase: str):
    """Start the tab's job on `lane`; return once its first step is done (model read, evaluation before training
    done)."""
    from bertviz_app.app.lane.training import Job, data_choices, training_root
    from bertviz_app.app.tabs.finetune import BATCH_SIZE
    from bertviz_app.finetuning import FinetuneSettings

    choice = data_choices()["movie-reviews"]
    job = Job(choice, explorer.name, f"bench {phase}", FinetuneSettings(
        task=choice.task, train=choice.source, output=training_root() / f"bench-training-lane-{phase}-{time.time():.0f}",
        model=str(explorer.folder), epochs=1, batch_size=BATCH_SIZE, learning_rate=5e-5, device="cpu"))
    lane.start(job, on_trained=lambda job, folder: job.name)
    while not lane.snapshot().steps:
        if not lane.snapshot().running:
            raise SystemExit(f"the training stopped: {lane.snapshot().message}")
        time.sleep(0.2)
    return lane.snapshot().steps[-1], time.perf_counter()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inputs", type=int, default=40, help="new inputs timed per phase")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--gap", type=float, default=0.2, help="seconds between two inputs")
    parser.add_argument("--phases", default="lane,plain", help="training phases, each after an idle one: lane (the "
                        "tab's: 1 thread), lane-nice10 (1 thread at nice +10), plain (2 threads)")
    args = parser.parse_args()

    import torch

    import bertviz_app
    from bertviz_app.app.lane.training import TrainingLane

    torch.set_num_threads(1)  # the served default (limits.THREADS)
    explorer = bertviz_app.load(device="cpu")
    counter = itertools.count()
    analyses(explorer, counter, 3, 0)  # warm up
    kinds = {"lane": (1, 0), "lane-nice10": (1, 10), "plain": (2, 0)}
    phases = args.phases.split(",")
    lanes = {phase: TrainingLane(*kinds[phase]) for phase in phases}
    times: dict[str, list[float]] = {phase: [] for phase in ["idle", *phases]}
    steps: dict[str, list[float]] = {phase: [] for phase in phases}
    for _ in range(args.rounds):
        for phase in [p for training in phases for p in ("idle", training)]:
            if phase == "idle":
                torch.set_num_threads(1)  # MKL's count is the process's: a 2-thread training phase set it to 2
                times[phase] += analyses(explorer, counter, args.inputs, args.gap)
                continue
            lane = lanes[phase]
            first, started = training(lane, explorer, phase)
            times[phase] += analyses(explorer, counter, args.inputs, args.gap)
            done = lane.snapshot().steps[-1] - first
            steps[phase].append((time.perf_counter() - started) / max(done, 1))
            lane.cancel()
            lane.wait()
    idle = statistics.median(times["idle"])
    print(f"\nnew 32-token input (forward + token table + views payload), {args.inputs} per phase, {args.rounds} "
          "rounds\n")
    print("| while | inputs | median | p95 | median / idle | p95 / idle p95 | training s per step |")
    print("|---|---|---|---|---|---|---|")
    names = {"idle": "nothing trains", "lane": "the tab's lane trains (its own thread, 1 torch thread)",
             "lane-nice10": "the same, the lane's thread at nice +10",
             "plain": "the same training on 2 torch threads"}
    for phase, ms in times.items():
        per_step = f"{statistics.median(steps[phase]):.2f}" if phase in steps else "-"
        print(f"| {names[phase]} | {len(ms)} | {statistics.median(ms):.0f} ms | {percentile(ms, 0.95):.0f} ms | "
              f"{statistics.median(ms) / idle:.2f} | {percentile(ms, 0.95) / percentile(times['idle'], 0.95):.2f} | "
              f"{per_step} |")


if __name__ == "__main__":
    main()
