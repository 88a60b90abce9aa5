"""This host against the one the README's figures come from: one number, the default model's forward pass over a
32-token input (attentions and hidden states requested, as the app asks), on one thread, median of 200.

    .venv/bin/python benchmarks/yardstick.py

Divide it by the README's yardstick (Speed section) to scale the other figures to this machine: a host twice as
slow here is about twice as slow on the page's figures too, as long as the same number of cores is free.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertviz_app  # noqa: E402
from bench_forward import cpu_model  # noqa: E402

SENTENCE = ("The cat sat on the mat because it was tired after chasing the small grey mouse around the old house, "
            "and then it slept until the evening came.")


OUTPUTS = ("embeddings", "layer.*.output", "layer.*.attention.probs")  # hidden states and attentions

def main() -> None:
    torch.set_num_threads(1)
    explorer = bertviz_app.load(device="cpu")
    encoding = explorer.tokenizer.encode(SENTENCE)
    ids = torch.tensor([encoding.ids[:32]])
    with torch.inference_mode():
        for _ in range(20):
            explorer.model(ids, capture=OUTPUTS)
        times = []
        for _ in range(200):
            start = time.perf_counter()
            explorer.model(ids, capture=OUTPUTS)
            times.append(time.perf_counter() - start)
    print(f"{cpu_model()}, {os.cpu_count()} cores, torch {torch.__version__}: default model, {ids.shape[1]} tokens, "
          f"1 thread: {statistics.median(times) * 1000:.2f} ms per forward pass (median of {len(times)})")


if __name__ == "__main__":
    main()
