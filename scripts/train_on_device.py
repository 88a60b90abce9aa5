#!/usr/bin/env python3
"""Continue the shipped model's MLM + NSP pretraining on a lent GPU, within one command of a few minutes, so that a
cut run still returns something and two lent sessions add up.

    python scripts/train_on_device.py              # on the lent machine: writes into $OUT
    python scripts/train_on_device.py --rehearse   # here, on the CPU, a few steps on the same path

Reads the token-id corpus runs/device/corpus/ (scripts/tokenize_corpus.py; carried to the machine) and starts from
assets/minilm-l6-mlm-nsp-en, or from the weights a previous session returned (runs/device/state.json names them by
their SHA-256; scripts/train_on_device.sh's header says how to put them back). After the evaluation of the starting
weights and at every checkpoint it writes into $OUT, each file under the device tool's 16 MiB:

    model.safetensors.part0..2   the float16 weights, cut in pieces (cat them back together)
    state.json                   the sessions and steps so far and the weights' SHA-256: the next session's resume
    figures.json                 per evaluation: held-out masked-token top-1/top-5 and NSP accuracy (heldout, broad,
                                 unseen), the probes' top-1 per kind and their copy rate
    log.csv                      the training log (train rows every --log-every steps, held-out rows)
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bertviz_app.catalog import ENGLISH_MLM_PATH  # noqa: E402
from bertviz_app.checkpoint import save_pretrained  # noqa: E402
from bertviz_app.pretraining import PretrainSettings, SentencePairDataset, evaluate, run_pretrain  # noqa: E402
from bertviz_app.pretraining.probes import copy_rate, load_probes, run_probes, summarize  # noqa: E402
from bertviz_app.tokenizer import Tokenizer  # noqa: E402

DEVICE_DIR = ROOT / "runs" / "device"
PART_BYTES = 15 * 2 ** 20  # the device tool returns files of at most 16 MiB
HELDOUT_SPLITS = ("heldout", "heldout-broad", "unseen")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(2 ** 20), b""):
            digest.update(block)
    return digest.hexdigest()


def split_file(path: Path, out: Path, part_bytes: int = PART_BYTES) -> list[Path]:
    """`path` cut into out/NAME.part0, .part1, ... of at most part_bytes each (earlier parts removed first)."""
    for old in out.glob(f"{path.name}.part*"):
        old.unlink()
    parts = []
    with path.open("rb") as f:
        for i, block in enumerate(iter(lambda: f.read(part_bytes), b"")):
            parts.append(out / f"{path.name}.part{i}")
            parts[-1].write_bytes(block)
    return parts


def resume_state(state_file: Path, init: Path) -> dict:
    """The previous session's state.json, checked against the weights in `init`; {} when there is none."""
    if not state_file.exists():
        return {}
    state = json.loads(state_file.read_text())
    found = sha256(init / "model.safetensors")
    if found != state["weights_sha256"]:
        raise SystemExit(f"{state_file} belongs to weights with SHA-256 {state['weights_sha256'][:12]}, but "
                         f"{init}/model.safetensors has {found[:12]}: put the returned parts back first "
                         "(cat model.safetensors.part* > that file), or remove the state to start afresh")
    return state


class Reporter:
    """Evaluates a model (held-out splits and probes) and writes figures.json, the weights, state.json and the log
    into `out` as it goes, so that whatever the run reached comes back even when it is cut."""

    def __init__(self, out: Path, corpus: Path, tokenizer: Tokenizer, state: dict, pairs: int, work: Path):
        self.out, self.tokenizer, self.state, self.pairs, self.work = out, tokenizer, state, pairs, work
        self.heldout = {name: SentencePairDataset.from_token_corpus(corpus / f"{name}.npz", tokenizer, seed=1234)
                        for name in HELDOUT_SPLITS if (corpus / f"{name}.npz").exists()}
        self.probes = load_probes(tokenizer)
        self.figures = json.loads((out / "figures.json").read_text()) if (out / "figures.json").exists() else []

    def measure(self, model, label: str, step: int) -> dict:
        was_training = model.training
        model.eval()
        row = {"label": label, "session": self.state.get("sessions", 0) + 1, "step": step,
               "total_steps": self.state.get("steps", 0) + step}
        for name, data in self.heldout.items():
            result = evaluate(model, data, self.pairs, 32, device=model.device)
            row.update({f"{name} top-1": result.mlm_top1, f"{name} top-5": result.mlm_top5,
                        f"{name} NSP": result.nsp_accuracy})
        results = run_probes(model, self.tokenizer, self.probes)
        for key, value in summarize(results).items():
            if key in ("fact", "grammar"):
                row[f"probes {key} top-1"] = value["top1"]
        row["probes copy rate"] = copy_rate(results)
        model.train(was_training)
        self.figures.append(row)
        (self.out / "figures.json").write_text(json.dumps(self.figures, indent=2) + "\n")
        print("figures: " + ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in row.items()),
              flush=True)
        return row

    def checkpoint(self, folder: Path, model) -> None:
        step = int(folder.name.split("-")[-1])
        half = self.work / "float16"
        save_pretrained(copy.deepcopy(model).half(), half)
        split_file(half / "model.safetensors", self.out)
        state = {"sessions": self.state.get("sessions", 0) + 1, "steps": self.state.get("steps", 0) + step,
                 "weights_sha256": sha256(half / "model.safetensors"), "saved": time.strftime("%Y-%m-%d %H:%M:%S")}
        (self.out / "state.json").write_text(json.dumps(state, indent=2) + "\n")
        shutil.copy(folder.parent / "log.csv", self.out / "log.csv")
        self.measure(model, f"checkpoint {folder.name}", step)


def settings_for(args, corpus: Path, work: Path, init: Path, session: int) -> PretrainSettings:
    rehearse = args.rehearse
    return PretrainSettings(
        corpus=corpus, output=work, model=str(init), steps=args.steps or (6 if rehearse else 20_000),
        batch_size=4 if rehearse else 128, max_tokens=128,
        # a continuation: a tenth of BERT's peak, warmed up, then held (a session ends by --minutes, not by steps)
        learning_rate=args.lr, schedule="constant", warmup=2 if rehearse else 200, whole_word=True, same_source_negatives=True,
        # the copy fix (model card, "Why it answers with a word of its sentence"): a new top layer in place of
        # all-MiniLM-L6-v2's sentence-embedding one, trained with the MLM head at 10 x the rest's rate
        reinit_top_layers=1, head_lr_scale=10.0,
        seed=session,  # each session draws other pairs and masks
        device="cpu" if rehearse else "auto", threads=2 if rehearse else None, log_every=1 if rehearse else 50,
        eval_every=3 if rehearse else 100, eval_examples=8 if rehearse else 512, save_every=3 if rehearse else 500,
        save_minutes=0, keep=1, minutes=args.minutes, max_documents=300 if rehearse else None)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rehearse", action="store_true", help="a few steps on the CPU on a few hundred documents")
    parser.add_argument("--corpus", type=Path, default=DEVICE_DIR / "corpus")
    parser.add_argument("--out", type=Path, default=None, help="where the results go (default: $OUT, the device "
                        "tool's folder, else runs/device/out)")
    parser.add_argument("--minutes", type=float, default=6.0, help="training time; evaluation and saving come on top")
    parser.add_argument("--steps", type=int, default=0, help="stop earlier than --minutes at this step")
    parser.add_argument("--state", type=Path, default=DEVICE_DIR / "state.json",
                        help="the previous session's state.json, when resuming")
    parser.add_argument("--work", type=Path, default=None, help="the local checkpoints with the optimizer state, too "
                        "big to return (default: a folder per session in the temporary folder, so that the same "
                        "command on the same machine resumes)")
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--pairs", type=int, default=0, help="held-out pairs per split (default 512; 8 rehearsing)")
    args = parser.parse_args(argv)
    out = args.out or Path(os.environ.get("OUT") or ROOT / "runs" / "device-out")
    out.mkdir(parents=True, exist_ok=True)
    init = ENGLISH_MLM_PATH
    state = resume_state(args.state, init)
    session = state.get("sessions", 0) + 1
    work = args.work or Path(tempfile.gettempdir()) / f"bertviz-device-session-{session}"
    print(f"session {session}, {state.get('steps', 0)} steps before it; init {init}; cuda {torch.cuda.is_available()}",
          flush=True)
    settings = settings_for(args, args.corpus, work, init, session)
    tokenizer = Tokenizer.from_folder(init)
    reporter = Reporter(out, args.corpus, tokenizer, state, args.pairs or (8 if args.rehearse else 512), work)
    if not any(row["session"] == session and row["step"] == 0 for row in reporter.figures):
        from bertviz_app.checkpoint import load_model
        model, _ = load_model(init)
        reporter.measure(model.to("cuda" if torch.cuda.is_available() and not args.rehearse else "cpu"), "start", 0)
        del model
    run_pretrain(settings, on_checkpoint=reporter.checkpoint)


if __name__ == "__main__":
    main()
