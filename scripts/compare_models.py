#!/usr/bin/env python3
"""Compare a checkpoint with today's default model on every measure that decides whether it ships:

    held-out       masked-token top-1/top-5 and NSP accuracy on the Debian corpus's held-out split (heldout.txt,
                   the split and the 1,024 pairs x masks the shipped model's card reports)
    broad          the same on the held-out documents of the registry sources (heldout-broad.txt)
    unseen         the same on genres no training document comes from (unseen.txt)
    probes         top-1/top-5 per group of assets/probes.json, and the copy rate: the share of probes whose
                   first choice is a word of the sentence itself that is not an answer ("Bees make [MASK]." -> bees;
                   lower is better)
    size           the float16 weights, which must stay under 50 MB

    python scripts/compare_models.py runs/minilm-mlm-nsp-3/step-0004000 --corpus runs/corpus \\
        --baseline runs/baseline-model --baseline-figures runs/baseline-figures.json --json runs/compare.json

(runs/baseline-model: a copy of assets/minilm-l6-mlm-nsp-en taken before the run, since assets/ changes when a
model ships.) Give the baseline as the checkpoint to measure it alone.

The verdict is "ship" only when no measure is worse than the baseline's and held-out and unseen top-1 are better.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bertviz_app.catalog import ENGLISH_MLM_PATH  # noqa: E402
from bertviz_app.checkpoint import load_model  # noqa: E402
from bertviz_app.pretraining import SentencePairDataset, evaluate  # noqa: E402
from bertviz_app.pretraining.probes import copy_rate, load_probes, run_probes, summarize  # noqa: E402
from bertviz_app.tokenizer import Tokenizer  # noqa: E402

COPY_RATE = "probes copy rate"  # the one measure where lower is better
SPLITS = {"heldout": "heldout.txt", "broad": "heldout-broad.txt", "unseen": "unseen.txt"}


def measure(folder: Path, corpus: Path, pairs: int) -> dict[str, float]:
    model, _ = load_model(folder)
    model.eval()
    tokenizer = Tokenizer.from_folder(folder)
    out: dict[str, float] = {}
    for name, file in SPLITS.items():
        if not (corpus / file).exists():
            continue
        data = SentencePairDataset.from_files([corpus / file], tokenizer, 128, seed=1234)
        result = evaluate(model, data, pairs, 32)
        out.update({f"{name} top-1": result.mlm_top1, f"{name} top-5": result.mlm_top5,
                    f"{name} NSP": result.nsp_accuracy})
        print(f"  {folder.name} {name}: {result}", file=sys.stderr, flush=True)
    results = run_probes(model, tokenizer, load_probes(tokenizer))
    for key, value in summarize(results).items():
        out[f"probes {key} top-1"] = value["top1"]
        out[f"probes {key} top-5"] = value["top5"]
    out[COPY_RATE] = copy_rate(results)
    copied = [f"{r.probe.text} -> {r.predictions[0][0]}" for r in results if r.copies]
    print(f"  {folder.name} copies a word of the sentence on {len(copied)} of {len(results)} probes: "
          + "; ".join(copied), file=sys.stderr, flush=True)
    out["float16 MB"] = sum(p.numel() for p in model.parameters()) * 2 / 1e6  # parameters(): the tied decoder once
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("--corpus", type=Path, required=True, help="folder that scripts/build_corpus.py wrote")
    parser.add_argument("--baseline", type=Path, default=ENGLISH_MLM_PATH)
    parser.add_argument("--pairs", type=int, default=1024, help="sentence pairs per held-out set")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--baseline-figures", type=Path, default=None,
                        help="a JSON file of the baseline's figures: read when it exists (the baseline is measured "
                             "once), written when it does not")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    if args.baseline_figures and args.baseline_figures.exists():
        base = json.loads(args.baseline_figures.read_text())
    else:
        base = measure(args.baseline, args.corpus, args.pairs)
        if args.baseline_figures:
            args.baseline_figures.write_text(json.dumps(base, indent=2) + "\n")
    if args.checkpoint == args.baseline:
        print(f"{args.baseline}: " + ", ".join(f"{k} {v:.3f}" for k, v in base.items()))
        return
    new = measure(args.checkpoint, args.corpus, args.pairs)
    worse = [k for k in base if k != "float16 MB" and (new[k] > base[k] if k == COPY_RATE else new[k] < base[k])]
    print(f"{'measure':<28}{'baseline':>10}{'checkpoint':>12}")
    for key in base:
        better = new[key] < base[key] if key == COPY_RATE else new[key] > base[key]
        mark = " worse" if key in worse else (" better" if better else "")
        print(f"{key:<28}{base[key]:>10.3f}{new[key]:>12.3f}{mark}")
    ship = (not worse and new["float16 MB"] < 50 and new["heldout top-1"] > base["heldout top-1"]
            and new.get("unseen top-1", 0) > base.get("unseen top-1", 0))
    print(f"verdict: {'ship' if ship else 'keep the baseline'}" + (f" (worse: {', '.join(worse)})" if worse else ""))
    if args.json:
        args.json.write_text(json.dumps({"baseline": str(args.baseline), "checkpoint": str(args.checkpoint),
                                         "baseline_figures": base, "checkpoint_figures": new, "worse": worse,
                                         "ship": ship}, indent=2) + "\n")


if __name__ == "__main__":
    main()
