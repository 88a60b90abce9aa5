"""What one visitor (or anyone who can reach the port) can make the server hold or do: the Run cache, request bodies,
the queue, uploads, sessions, and what the login protects. Servers here are real (`app.serve` on a free 127.0.0.1
port) and serve the tiny random BERT, so that the HTTP surface, not the model, is what is tested."""

from __future__ import annotations

import gc
import weakref

import pytest
import torch

from bertviz_app import BertConfig, BertForPreTraining, Explorer, Tokenizer
from bertviz_app.catalog import minilm_path


def tiny_explorer(cache_mb: float) -> Explorer:
    torch.manual_seed(0)
    config = BertConfig.preset("tiny", vocab_size=30522)
    tokenizer = Tokenizer.from_folder(minilm_path(), max_tokens=config.max_position_embeddings)
    return Explorer(BertForPreTraining(config), tokenizer, torch.device("cpu"), "tiny", cache_mb=cache_mb)


# --- the Run cache ----------------------------------------------------------------------------------------------
def test_an_evicted_run_is_freed_at_once():
    """Reference counting alone must free a Run the cache dropped: the cyclic collector runs when enough objects were
    made, not bytes, so a Run caught in a cycle stays long after its eviction (a server grew by its 55 MB Runs)."""
    explorer = tiny_explorer(cache_mb=0)  # keeps only the newest Run
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        run = explorer.run("The first sentence.")
        run.plot.attention(0, 0)  # drawing must not tie the Run to itself
        run.plot.head_overview()
        run.rollout(1)  # nor must the derived numbers
        first = weakref.ref(run)
        del run
        explorer.run("A second sentence takes its place.")
        assert first() is None, "the evicted Run is still alive: something holds it in a reference cycle"
    finally:
        if was_enabled:
            gc.enable()


def test_the_cache_keeps_runs_within_its_bytes():
    explorer = tiny_explorer(cache_mb=0.05)
    one = explorer.run("Sentence number 0 is here.").nbytes
    for i in range(1, 30):
        explorer.run(f"Sentence number {i} is here.")
    assert one * 2 <= explorer.cached_bytes <= 0.05 * 2**20
