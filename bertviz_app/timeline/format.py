"""A timeline on disk: the files, and writing each of them whole.

    timeline/
      timeline.json            the manifest: format, version, kind ("pretraining" | "finetuning"), task, labels,
                               model, inputs [{text, text_pair, answers, gold}], total_steps, count, schedule, top_k
      step-0000000/            one folder per snapshot, named by its optimizer step (7 digits, sorted by name)
        snapshot.json          step, loss (that step's batch), loss_mean (the steps since the previous snapshot), lr
                               (the rate that step used), scheduled, seconds (what the snapshot took), heads
                               ({statistic: (L, h)} averaged over the inputs, entropy_ratio among them), roles
                               ((L, h) labels), inputs [{tokens, masks: [{position, top: [[token, p] x5], answer}],
                               is_next, prediction}] (each key only where the model has that head)
        input-00.bviz          the views payload of input 0 (views/payload.py, the bytes `Run.views_payload()` gives
        input-01.bviz          and the JavaScript views' `mount` reads), one per input in the manifest's order
      .partial-step-.../       a snapshot being written; readers skip it, the next writer removes it

A snapshot folder is written under its .partial name and renamed when complete, and the manifest is replaced
whole (os.replace), so a reader, or a run killed at any moment, never sees half a snapshot."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

FORMAT = "bertviz-timeline"
VERSION = 1
MANIFEST = "timeline.json"
SNAPSHOT = "snapshot.json"
PARTIAL = ".partial-"
FOLDER = "timeline"  # the timeline's folder inside a training's output folder
_STEP = re.compile(r"step-(\d{7,})$")


def step_folder(step: int) -> str:
    return f"step-{step:07d}"


def payload_name(index: int) -> str:
    return f"input-{index:02d}.bviz"


def snapshot_folders(folder: Path) -> list[tuple[int, Path]]:
    """(step, folder) of every complete snapshot, by step."""
    found = []
    for path in folder.iterdir() if folder.is_dir() else ():
        match = _STEP.match(path.name)
        if match and path.is_dir() and (path / SNAPSHOT).is_file():
            found.append((int(match.group(1)), path))
    return sorted(found)


def write_json(path: Path, value) -> None:
    """`value` as JSON at `path`, replacing it whole."""
    partial = path.with_name(f"{PARTIAL}{path.name}")
    partial.write_text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n",
                       encoding="utf-8")
    os.replace(partial, path)


def write_snapshot(folder: Path, step: int, record: dict, payloads: list[bytes]) -> Path:
    """One snapshot folder, renamed into place once every file is written."""
    final = folder / step_folder(step)
    partial = folder / f"{PARTIAL}{step_folder(step)}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    for index, payload in enumerate(payloads):
        (partial / payload_name(index)).write_bytes(payload)
    (partial / SNAPSHOT).write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                                    + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    partial.rename(final)
    return final
