"""What a fine-tuned model's folder records beside its weights: the model it was fine-tuned from, and the held-out
predictions `bertviz-app finetune` wrote. Read by the explorer, which needs none of the training code to do so."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import files

HELDOUT_LIMIT = 64 * 2**20  # heldout_predictions.jsonl: 400 sentences weigh 60 kB; SQuAD's contexts more


def base_model(folder: str | os.PathLike) -> str | None:
    """The model a folder was fine-tuned from: `settings.model` of our metrics.json, else transformers' own record
    (`_name_or_path` in config.json, when it names another model); None when neither says."""
    folder = Path(folder)
    for name, keys in (("metrics.json", ("settings", "model")), ("config.json", ("_name_or_path",))):
        path = folder / name
        if not path.is_file():
            continue
        try:
            value = files.read_json(path, ValueError)
            for key in keys:
                value = value.get(key) if isinstance(value, dict) else None
        except ValueError:
            continue
        if isinstance(value, str) and value.strip() and Path(value).expanduser().resolve() != folder.resolve():
            return value
    return None


def read_heldout(folder: str | os.PathLike) -> list[dict]:
    """The rows of heldout_predictions.jsonl (text, text_pair, gold, prediction, confidence, loss), [] when the
    folder has none; a ValueError naming the line that is not one JSON object."""
    path = Path(folder) / "heldout_predictions.jsonl"
    if not path.is_file():
        return []
    try:  # the Task tab shows these rows to visitors: a link out of the model's folder is not its held-out set
        real = files.inside(Path(folder), path, ValueError)
    except ValueError:
        raise ValueError(f"{path.name} is a link out of the model's folder: refused") from None
    rows = []
    for number, line in enumerate(files.read_text(real, ValueError, HELDOUT_LIMIT).splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            # the file's name only: the app shows this sentence to visitors, who never see the server's folders
            raise ValueError(f"{path.name} line {number}: not a held-out prediction (a JSON object with a text)")
        rows.append(row)
    return rows
