"""Fine-tuning speed and memory: our loop (bertviz_app.training.fit on our BertForSequenceClassification) against a
plain transformers loop (its BertForSequenceClassification, torch's AdamW, the same schedule and clipping) with the
same data, batches, weights and settings.

Each side runs in a child process of its own, so that its peak resident memory (ru_maxrss) is its own; children
alternate (ours, theirs, theirs, ours, ...) so that a neighbour loading the machine hits both alike. Each child
trains `--epochs` epochs on the first `--examples` sentences of the movie-reviews recipe and reports seconds per
epoch; the table gives medians and the ratio ours / theirs (target <= 1.0 for both time and memory).

    .venv/bin/python benchmarks/bench_finetune.py                    # 2 rounds x 2 epochs x 320 sentences
    .venv/bin/python benchmarks/bench_finetune.py --examples 64 --rounds 1 --epochs 1   # smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_RATIO = 1.0


def _data(examples: int, max_length: int, batch_size: int, seed: int):
    """The same batches for both sides: features of our tokenizer, shuffled per epoch by one seed."""
    import torch

    from bertviz_app.catalog import default_model_path
    from bertviz_app.finetuning import load_recipe
    from bertviz_app.finetuning.tasks import TASKS
    from bertviz_app.tokenizer import Tokenizer

    tokenizer = Tokenizer.from_folder(default_model_path())
    _, reviews = load_recipe("movie-reviews")
    reviews = reviews[:examples]
    task = TASKS["text-classification"]
    features = task.encode(reviews, tokenizer, max_length, ["negative", "positive"])

    def epoch_batches(epoch: int):
        order = torch.randperm(len(features), generator=torch.Generator().manual_seed(seed * 1009 + epoch)).tolist()
        return [task.collate([features[i] for i in order[k:k + batch_size]], tokenizer.pad_token_id)
                for k in range(0, len(order), batch_size)]
    return epoch_batches


def child(side: str, args) -> dict:
    import torch
    from torch import nn

    torch.set_num_threads(args.threads)
    from bertviz_app.catalog import default_model_path
    from bertviz_app.training import Trainer, configure_optimizer, fit, linear_schedule

    epoch_batches = _data(args.examples, args.max_length, args.batch_size, args.seed)
    steps_per_epoch = len(epoch_batches(0))
    total = steps_per_epoch * args.epochs
    torch.manual_seed(args.seed)
    times = []
    if side == "ours":
        from bertviz_app.finetuning.tasks import TASKS, TaskObjective
        from bertviz_app.finetuning.training import _load_for

        task = TASKS["text-classification"]
        net, _ = _load_for(task, default_model_path())
        task.fit_head(net, ["negative", "positive"], None)
        trainer = Trainer.create(net, TaskObjective(net, task), lr=args.lr, weight_decay=0.01,
                                 schedule=linear_schedule(0, total), device=torch.device("cpu"))
        for epoch in range(args.epochs):
            batches = epoch_batches(epoch)
            start = time.perf_counter()
            fit(trainer, lambda step: batches[step - epoch * steps_per_epoch], (epoch + 1) * steps_per_epoch,
                clip=1.0, progress=False)
            times.append(time.perf_counter() - start)
    else:
        import transformers

        transformers.logging.set_verbosity_error()
        # float32 as ours: the shipped weights are float16, and transformers 5 keeps a checkpoint's dtype by default
        model = transformers.BertForSequenceClassification.from_pretrained(default_model_path(), num_labels=2,
                                                                           dtype=torch.float32)
        model.train()
        optimizer = configure_optimizer(model, args.lr, 0.01)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_schedule(0, total))
        for epoch in range(args.epochs):
            batches = epoch_batches(epoch)
            start = time.perf_counter()
            for b in batches:  # the loop every tutorial writes
                out = model(input_ids=b.input_ids, token_type_ids=b.segment_ids, attention_mask=b.attention_mask,
                            labels=b.labels)
                out.loss.backward()
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - start)
    return {"side": side, "epoch_seconds": times,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=320)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of children (ours+theirs, then theirs+ours)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--side", choices=("ours", "theirs"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        print(json.dumps(child(args.side, args)))
        return
    import torch

    print(f"torch {torch.__version__}, {args.threads} threads, {args.examples} movie-reviews sentences, batch "
          f"{args.batch_size}, max length {args.max_length}, load average {os.getloadavg()[0]:.1f}", flush=True)
    results = {"ours": [], "theirs": []}
    order = []
    for r in range(args.rounds):
        order += ["ours", "theirs"] if r % 2 == 0 else ["theirs", "ours"]
    for side in order:
        command = [sys.executable, __file__, "--side", side, *[f"--{k.replace('_', '-')}={v}" for k, v in
                                                               vars(args).items() if k != "side"]]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        result = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"  {side}: epochs {', '.join(f'{t:.1f}' for t in result['epoch_seconds'])} s, peak RSS "
              f"{result['peak_rss_mib']:.0f} MiB", flush=True)
        results[side].append(result)
    seconds = {s: statistics.median(t for r in rs for t in r["epoch_seconds"]) for s, rs in results.items()}
    memory = {s: statistics.median(r["peak_rss_mib"] for r in rs) for s, rs in results.items()}
    print(f"\n| measure | ours | transformers loop | ours / theirs | target |\n|---|---|---|---|---|\n"
          f"| seconds per epoch ({args.examples} sentences) | {seconds['ours']:.1f} | {seconds['theirs']:.1f} | "
          f"{seconds['ours'] / seconds['theirs']:.2f} | <= {TARGET_RATIO} |\n"
          f"| peak resident memory (MiB) | {memory['ours']:.0f} | {memory['theirs']:.0f} | "
          f"{memory['ours'] / memory['theirs']:.2f} | <= {TARGET_RATIO} |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
