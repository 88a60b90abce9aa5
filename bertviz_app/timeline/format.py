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
        probe.npy              with a probe set: (L + 1, N, H) float16, its hidden states (probe_set.py)
      probe-set.json, probe-set.npy   the probe set's sentences and token columns, where the training has one
      .partial-step-.../       a snapshot being written; readers skip it, the next writer removes it

A snapshot folder is written under its .partial name and renamed when complete, and the manifest is replaced
whole (os.replace), so a reader, or a run killed at any moment, never sees half a snapshot."""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import shutil
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)

FORMAT = "bertviz-timeline"
VERSION = 1
MANIFEST = "timeline.json"
SNAPSHOT = "snapshot.json"
PARTIAL = ".partial-"
FOLDER = "timeline"  # the timeline's folder inside a training's output folder
# a snapshot's numbers of the training itself (snapshot.json, described above): Timeline.frame()'s columns, in this
# order, None where an older timeline lacks one; a new number is its line here and its value in the writer's record
SCALARS = ("loss", "loss_mean", "lr", "seconds")
_STEP = re.compile(r"step-(\d{7,})$")
MAX_STEP = 2**53 - 1  # the largest integer a browser reads exactly from JSON


def step_folder(step: int) -> str:
    return f"step-{step:07d}"


def payload_name(index: int) -> str:
    return f"input-{index:02d}.bviz"


def snapshot_folders(folder: Path) -> list[tuple[int, Path]]:
    """(step, folder) of every complete snapshot, by step. A step folder that is a link out of `folder`, or whose
    step no JSON reader takes as an integer (JavaScript's 2**53 - 1), is skipped with a warning: a visitor is sent
    what is listed here."""
    found = []
    root = folder.resolve()
    for path in folder.iterdir() if folder.is_dir() else ():
        match = _STEP.match(path.name)
        if not (match and path.is_dir() and (path / SNAPSHOT).is_file()):
            continue
        step = int(match.group(1))
        real = path.resolve()
        if root not in real.parents:
            _skip(path, "it is a link out of the timeline's folder")
        elif step > MAX_STEP:
            _skip(path, f"its step is beyond {MAX_STEP:,}, the largest a browser reads exactly")
        else:
            found.append((step, path))
    return sorted(found)


@functools.lru_cache(maxsize=256)  # once per folder, not at every listing (the app lists at each visit)
def _skip(path: Path, why: str) -> None:
    log.warning("timeline: %s skipped: %s", path, why)


def write_json(path: Path, value) -> None:
    """`value` as JSON at `path`, replacing it whole."""
    partial = path.with_name(f"{PARTIAL}{path.name}")
    partial.write_text(json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n",
                       encoding="utf-8")
    os.replace(partial, path)


def write_snapshot(folder: Path, step: int, record: dict, payloads: list[bytes],
                   arrays: dict[str, np.ndarray] | None = None) -> Path:
    """One snapshot folder, renamed into place once every file is written (`arrays`: name -> array, NAME.npy)."""
    final = folder / step_folder(step)
    partial = folder / f"{PARTIAL}{step_folder(step)}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    for index, payload in enumerate(payloads):
        (partial / payload_name(index)).write_bytes(payload)
    for name, array in (arrays or {}).items():
        np.save(partial / name, array)
    (partial / SNAPSHOT).write_text(json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                                    + "\n", encoding="utf-8")
    if final.exists():
        shutil.rmtree(final)
    partial.rename(final)
    return final
