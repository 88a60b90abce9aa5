"""The attention views in Chromium: payload sizes and the time from a layer, head or token change to the next frame.

    python benchmarks/bench_views.py [--tokens 32,128,512] [--repeat 20]

For each length, a sentence pair of exactly that many tokens (from PROSE) goes through the default model; the
payload is measured as bytes and as base64 (how a JSON value or an HTML page carries it), with the query/key
blob beside it. Then the standalone page opens in Debian's headless Chromium (file://, network blocked) and, for
each of the lines, matrix and query/key views, a control's `input` event is dispatched and the time until the next
requestAnimationFrame callback after the views' own (scheduled in the same frame, so it runs after them) is read
with performance.now(): the median of `--repeat` changes, alternating between two values. Targets: under 16 ms at
32 tokens, under 50 ms at 512. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]

# Plain, varied English (no repetition, which would flatter the compression), long enough for 512 tokens.
PROSE = (
    "The lighthouse keeper had kept a log for thirty years, and every entry began with the weather. On the morning "
    "the ferry failed to arrive, he wrote that the fog had come in low and thick, swallowing the harbour wall before "
    "breakfast. His daughter, who had returned from the city to help him through the winter, read the old volumes in "
    "the evenings and found them stranger than any novel. Storms were counted like relatives. Ships were named, "
    "praised, scolded and sometimes mourned. A whale had once followed the supply boat for an entire afternoon, and "
    "the keeper had drawn it in the margin with surprising care. She asked him why he never wrote about himself. He "
    "said the sea was more interesting, and that a log was meant to be useful to whoever came next. Nobody came next, "
    "of course; the light had been automated years ago, and the council only let him stay because moving him would "
    "have cost more than leaving him alone. Still, he climbed the spiral stairs each night, polished the brass, "
    "checked the batteries that no longer needed checking, and looked out across the water as though someone might "
    "be depending on him. In spring the researchers arrived, three of them, with crates of instruments and a permit "
    "to measure the seabirds. They slept in the old storeroom and cooked strange meals that filled the tower with the "
    "smell of ginger. The youngest, a quiet man from the north, asked to see the logs, and the keeper brought them "
    "down one by one, blowing dust from the covers. For weeks the researcher copied numbers into a laptop: "
    "temperatures, wind directions, the dates when the puffins returned. He explained that nobody else had recorded "
    "this island so patiently, and that the notes might show how the colonies had shrunk as the water warmed. The "
    "keeper listened without saying much. That night he wrote a longer entry than usual. He described the "
    "researchers, their instruments, the gingery kitchen and the young man's excitement over columns of figures he "
    "had always considered dull. At the end he added a line about himself, the first in thirty years: that he had "
    "been glad of the company, and that perhaps the log had been useful after all. When the autumn gales came, the "
    "researchers left with their crates and a promise to send copies of whatever they published. A parcel arrived in "
    "December, wrapped in brown paper and tied with string. Inside was a journal article with a graph on the second "
    "page, a long thin line falling slowly across the decades, and beneath it, in small print, a sentence thanking "
    "the keeper of the island light for observations made with remarkable care. His daughter framed the page and "
    "hung it beside the stairs. He pretended not to notice it for a week, then began pausing there each evening on "
    "his way up to the lamp, as if checking that it was still true. The following year the council wrote to say that "
    "the tower would be sold. A hotel company wanted the island, and the keeper was offered a small flat on the "
    "mainland, near the harbour, with a view of the water if one leaned out of the kitchen window. He packed the logs "
    "into tea chests and refused to let anyone else carry them. On his last night he climbed the stairs once more and "
    "sat beside the lamp until it was light, watching the birds return from the sea in long, untidy lines."
)


def sample_pair(explorer, tokens: int) -> tuple[str, str]:
    """Two halves of a stretch of PROSE that encodes to exactly `tokens` tokens ([CLS] A [SEP] B [SEP])."""
    words = PROSE.split()
    # BERT splits on spaces before WordPiece, so a stretch's length is the sum of its words' piece counts.
    pieces = [len(explorer.tokenizer.tokenize(w)) for w in words]
    for start in range(len(words)):
        total, end = 0, start
        while end < len(words) and total < tokens - 3:
            total += pieces[end]
            end += 1
        if total == tokens - 3:
            half = (start + end) // 2
            a, b = " ".join(words[start:half]), " ".join(words[half:end])
            if len(explorer.encode(a, b)) == tokens:
                return a, b
    raise RuntimeError(f"PROSE has no stretch of exactly {tokens} tokens")
