"""The Corpus tab's search by meaning against the API's (not a test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_corpus_search.py --corpus DIR [--queries 20]
    .venv/bin/python benchmarks/bench_corpus_search.py --shape 269668,384 [--queries 20]

In one process, over the same token vectors at the last layer, each query a token's own vector: the tab's search as
it was (the float16 states read a chunk at a time, every query), the tab's search now (a float32 copy of the layer
kept within limits.CORPUS_SEARCH_CACHE_BYTES: the first query reads it), and `corpus.search` (the API: the same
copy, kept without a bound). Medians of the queries after the first; the first apart. Every answer's top 10 is
checked against the API's. `--shape TOKENS,HIDDEN` stands in random float16 states of that size, mapped from a file
in a temporary folder (a corpus's shard as the build writes it), for a machine where a build is out of reach.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bertviz_app import limits, open_corpus  # noqa: E402
from bertviz_app.corpus.browser import CorpusViews, _Cache  # noqa: E402


class _Shard:
    def __init__(self, hidden):
        self.hidden = hidden

    def array(self, name):
        return self.hidden


class StandIn:
    """What a search reads of a corpus: its shards' mapped states, its size, its unit vectors (store.Corpus's)."""

    def __init__(self, tokens: int, hidden: int, folder: Path, layers: int = 2):
        path = folder / "hidden.npy"
        states = np.lib.format.open_memmap(path, "w+", np.float16, (layers, tokens, hidden))
        rng = np.random.default_rng(0)
        for start in range(0, tokens, 65_536):
            states[:, start:start + 65_536] = rng.standard_normal((layers, min(65_536, tokens - start), hidden))
        states.flush()
        self.shards = [_Shard(np.load(path, mmap_mode="r"))]
        self.manifest = {"tokens": tokens}
        self.hidden_size = hidden
        self._vectors = {}

    def check_hidden_layer(self, layer):
        return layer

    def unit_vectors(self, layer):
        vectors = np.asarray(self.shards[0].hidden[layer], np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)

    def hidden(self, layer):
        if layer not in self._vectors:
            self._vectors[layer] = self.unit_vectors(layer)
        return self._vectors[layer]


def top(scores, k=10):
    best = np.argpartition(-scores, k - 1)[:k]
    return best[np.lexsort((best, -scores[best]))]


def timed(sides: dict, queries) -> dict:
    """name -> (first query's seconds, median of the rest, the answers); the sides take turns at each query, in a
    rotating order, so that a busy machine's swings fall on each alike."""
    names = list(sides)
    times = {n: [] for n in names}
    answers = {n: [] for n in names}
    for k, q in enumerate(queries):
        for n in names[k % len(names):] + names[:k % len(names)]:
            start = time.perf_counter()
            answers[n].append(sides[n](q))
            times[n].append(time.perf_counter() - start)
    return {n: (times[n][0], statistics.median(times[n][1:]), answers[n]) for n in names}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpus", type=Path)
    p.add_argument("--shape", help="TOKENS,HIDDEN: random float16 states of that size instead of a corpus")
    p.add_argument("--queries", type=int, default=20)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.corpus:
            corpus = open_corpus(args.corpus)
            layer = corpus.num_layers
            where = f"{args.corpus.name}: {corpus.manifest['tokens']:,} tokens"
        else:
            tokens, hidden = (int(v) for v in args.shape.split(","))
            corpus, layer = StandIn(tokens, hidden, Path(tmp)), 1
            where = f"random float16 states of {tokens:,} tokens x {hidden}, mapped from a file"
        first = corpus.shards[0].array("hidden")[layer]
        rows = np.random.default_rng(1).choice(len(first), args.queries, replace=False)
        queries = [np.asarray(first[r], np.float32) for r in rows]
        chunked = CorpusViews.__new__(CorpusViews)
        chunked.corpus, chunked._norms, chunked._vectors = corpus, {}, None
        cached = CorpusViews.__new__(CorpusViews)
        cached.corpus, cached._norms = corpus, {}
        layer_bytes = corpus.manifest["tokens"] * corpus.hidden_size * 4
        cached._vectors = _Cache(limits.CORPUS_SEARCH_CACHE_BYTES // layer_bytes)

        def unit(q):
            return q / np.linalg.norm(q)

        sides = {
            "the tab before: float16 states read a chunk at a time": lambda q: top(chunked._scores(layer, unit(q))),
            "the tab now: float32 layer kept within the budget": lambda q: top(cached._scores(layer, unit(q))),
            "the API, corpus.search's product": lambda q: top(corpus.hidden(layer) @ unit(q)),
        }
        results = timed(sides, queries)
        api = results["the API, corpus.search's product"][2]
        for name, (_, _, answers) in results.items():
            if any(list(a) != list(b) for a, b in zip(answers, api)):
                raise SystemExit(f"{name}: a top 10 differs from the API's")
        print(f"search, top 10 by cosine over {where}, layer {layer}, {args.queries} queries; budget "
              f"{limits.CORPUS_SEARCH_CACHE_BYTES / 2**30:.1f} GiB ({layer_bytes / 2**20:,.0f} MiB a layer):\n")
        print("| search | first query | median of the rest |\n|---|---|---|")
        for name, (first, median, _) in results.items():
            print(f"| {name} | {first * 1000:,.0f} ms | {median * 1000:,.1f} ms |")


if __name__ == "__main__":
    main()
