"""Small labelled data files the fine-tuning tests write (shared by test_finetuning and test_finetune_tab)."""
from __future__ import annotations

import csv
from pathlib import Path


def write_csv(path: Path, rows, header=("text", "label")) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path
