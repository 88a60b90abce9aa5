"""The corpus engine's speed and memory (bertviz_app.corpus), each phase against what it promises:

  build    sentences per second of `build_corpus` against what a user would write instead, in the same process:
           transformers' BertModel (eager, output_attentions and output_hidden_states) over the same sentences in
           batches of the same size, in the source's order, padded by its tokenizer; the two alternate (ours, theirs,
           theirs, ours) so that a neighbour's load hits both alike, and both wall time and CPU time (all threads)
           are taken: on a shared machine the CPU time is the fair one. Target: ours >= 0.9x theirs.
  memory   peak RSS of whole builds (each in a process of its own) at two corpus sizes. Target: within 20 %, < 2 GB.
  search   top-10 by cosine over every token of a corpus folder (--corpus) at the last layer, median of 20 queries,
           each checked against numpy's brute force. Target: <= 200 ms over >= 1M token vectors.
  summary  open_corpus(folder).head_summary(), from the folder. Target: <= 2 s for 10,000 sentences.
  probe    corpus.probe for every target the folder has (tag, label, position, recurs), every layer, with the
           control task; the peer is scikit-learn's LogisticRegression fitted on the same features and split (the
           tests' oracle), timed in the same process (wall and CPU), and each layer's accuracies are printed side
           by side; reading the items beside spelling every word (what it did before it sampled first).
           Target: <= 60 s for 10,000 Brown sentences on 2 cores.

    .venv/bin/python benchmarks/bench_corpus.py build --sentences 1000
    .venv/bin/python benchmarks/bench_corpus.py memory --sizes 2000,10000
    .venv/bin/python benchmarks/bench_corpus.py search summary --corpus /work/corpora/brown50k
    .venv/bin/python benchmarks/bench_corpus.py probe --corpus /work/runs/brown2k
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertviz_app  # noqa: E402
from bertviz_app.catalog import minilm_path  # noqa: E402
from bertviz_app.corpus import build_corpus, open_corpus  # noqa: E402
from bertviz_app.corpus.sources import read_source  # noqa: E402


def build_phase(sentences: int, batch: int, repeats: int) -> None:
    from transformers import AutoTokenizer, BertModel

    explorer = bertviz_app.load(device="cpu", max_tokens=128)
    texts = [s.text for s in read_source("brown").sentences[:sentences]]
    folder = minilm_path()
    theirs_model = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    theirs_tokenizer = AutoTokenizer.from_pretrained(folder)

    def ours() -> tuple[float, float]:
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp) / "s.txt"
            source.write_text("\n".join(texts) + "\n", encoding="utf-8")
            start, cpu = time.perf_counter(), time.process_time()
            build_corpus(source, Path(tmp) / "c", explorer=explorer, batch_size=batch, say=lambda t: None)
            return time.perf_counter() - start, time.process_time() - cpu

    @torch.inference_mode()
    def theirs() -> tuple[float, float]:
        start, cpu = time.perf_counter(), time.process_time()
        for k in range(0, len(texts), batch):
            enc = theirs_tokenizer(texts[k:k + batch], padding=True, truncation=True, max_length=128,
                                   return_tensors="pt")
            theirs_model(**enc, output_attentions=True, output_hidden_states=True)
        return time.perf_counter() - start, time.process_time() - cpu

    times = {"ours": [], "theirs": []}
    for r in range(repeats):
        for side in (("ours", "theirs") if r % 2 == 0 else ("theirs", "ours")):
            times[side].append(ours() if side == "ours" else theirs())
    wall = {side: len(texts) / statistics.median(t[0] for t in runs) for side, runs in times.items()}
    cpu = {side: len(texts) / statistics.median(t[1] for t in runs) for side, runs in times.items()}
    print(f"build, {len(texts):,} Brown sentences, batches of {batch}, {torch.get_num_threads()} threads, "
          f"{repeats} runs each (sentences per second of wall time / of CPU time):")
    print(f"  ours (build_corpus, everything kept on disk)   {wall['ours']:7.1f} / {cpu['ours']:7.1f}")
    print(f"  transformers forward (eager, outputs, padded)  {wall['theirs']:7.1f} / {cpu['theirs']:7.1f}")
    print(f"  ratio ours/theirs: {wall['ours'] / wall['theirs']:.2f} by wall time, {cpu['ours'] / cpu['theirs']:.2f} "
          "by CPU time (target >= 0.9)")


MEMORY_CHILD = """
import json, resource, sys, tempfile, time
from pathlib import Path
from bertviz_app.corpus import build_corpus
n, out = int(sys.argv[1]), sys.argv[2]
start = time.perf_counter()
build_corpus("brown", out, max_sentences=n, say=lambda t: None)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def memory_phase(sizes: list[int]) -> None:
    print("memory, whole builds of the Brown corpus with the default model, each in its own process:")
    peaks = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([sys.executable, "-c", MEMORY_CHILD, str(n), str(Path(tmp) / "c")],
                                  capture_output=True, text=True, check=True)
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            size = sum(f.stat().st_size for f in Path(tmp).rglob("*") if f.is_file())
        peaks.append(figures["peak_mb"])
        print(f"  {n:>7,} sentences: peak RSS {figures['peak_mb']:7.0f} MB, {figures['seconds']:7.0f} s "
              f"({n / figures['seconds']:.1f} sentences/s), folder {size / 1e9:.2f} GB")
    print(f"  growth of the peak: {peaks[-1] / peaks[0] - 1:+.0%} (target within 20 %, under 2 GB)")


def search_phase(folder: Path, queries: int = 20) -> None:
    corpus = open_corpus(folder)
    layer = corpus.num_layers
    start = time.perf_counter()
    vectors = corpus.hidden(layer)
    load = time.perf_counter() - start
    rng = np.random.default_rng(0)
    rows = rng.choice(len(vectors), size=queries, replace=False)
    times = []
    for row in rows:
        query = vectors[row] * 3.0  # any length: the search normalizes it
        start = time.perf_counter()
        result = corpus.search(query, layer=layer, k=10)
        times.append(time.perf_counter() - start)
        brute = np.argsort(-(vectors @ (query / np.linalg.norm(query))), kind="stable")[:10]
        if not np.array_equal(result.table["row"].to_numpy(), brute):
            raise SystemExit(f"search differs from numpy's brute force for row {row}")
    print(f"search over {len(vectors):,} token vectors of {corpus.hidden_size} (layer {layer}), "
          f"{torch.get_num_threads()} threads:")
    print(f"  first search loads the layer's vectors: {load:.1f} s ({vectors.nbytes / 1e9:.2f} GB as float32)")
    print(f"  top-10: median {statistics.median(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms over {queries} "
          "queries, each equal to numpy's brute force (target <= 200 ms)")


def summary_phase(folder: Path) -> None:
    times = []
    for _ in range(3):
        start = time.perf_counter()
        corpus = open_corpus(folder)
        summary = corpus.head_summary()
        times.append(time.perf_counter() - start)
    print(f"head summary of {len(corpus):,} sentences ({corpus.manifest['tokens']:,} tokens, {len(summary)} heads) "
          f"from the folder: median {statistics.median(times):.2f} s of 3 (target <= 2 s)")


def probe_phase(folder: Path, items: int = 10_000, peer: bool = True) -> None:
    """Each target's probe, wall and CPU time (on a shared machine the CPU time is the fair one), split into reading
    the items (with, as its peer, the spelling of every word the earlier version did before sampling) and the fits
    (with scikit-learn's on the same features as the peer: the tests' oracle, its accuracies printed beside ours)."""
    from bertviz_app.corpus import CorpusError, probes
    from bertviz_app.spare_cores import cores
    from sklearn.linear_model import LogisticRegression

    corpus = open_corpus(folder)
    print(f"{corpus!r}; at most {items:,} items a target; the fits on "
          f"{min(probes.probing.MAX_THREADS, cores())} threads")
    total = total_cpu = 0.0
    for target in probes.TARGETS:
        try:
            start, cpu = time.perf_counter(), time.process_time()
            data = probes.probe_data(corpus, target, items)
        except CorpusError as error:
            print(f"{target}: {error}")
            continue
        read, read_cpu = time.perf_counter() - start, time.process_time() - cpu
        if target in ("tag", "position"):  # the peer: every word spelled, as before sampling
            columns = corpus.token_columns
            first = np.ones(len(columns), bool)
            first[1:] = (columns[1:, 0] != columns[:-1, 0]) | (columns[1:, 3] != columns[:-1, 3])
            first &= columns[:, 3] >= 0
            start = time.perf_counter()
            probes.probing._word_types(corpus, np.flatnonzero(first))
            every = time.perf_counter() - start
            print(f"{target}: items read in {read:.2f} s (spelling every word as before: +{every:.2f} s)")
        start, cpu = time.perf_counter(), time.process_time()
        table = probes.probe(corpus, target, max_items=items)
        ours, ours_cpu = time.perf_counter() - start, time.process_time() - cpu
        total, total_cpu = total + ours, total_cpu + ours_cpu
        if not peer:
            print(f"{target}: {len(data.y):,} items, {len(data.classes)} classes; {ours:.1f} s ({ours_cpu:.1f} s CPU); "
                  f"accuracy by layer {' '.join(f'{a:.3f}' for a in table['accuracy'])}, control "
                  f"{' '.join(f'{a:.3f}' for a in table['control_accuracy'])}")
            continue
        control = probes.control_task(data.words, data.y, len(data.classes)) if data.words is not None else None
        train, test = ~data.held_out, data.held_out
        start, cpu, oracle = time.perf_counter(), time.process_time(), []
        for layer in table["layer"]:
            X_train, X_test = probes.standardize(*(lambda X: (X[train], X[test]))(
                probes.hidden_rows(corpus, layer, data.rows)))
            for y in (data.y, control) if control is not None else (data.y,):
                model = LogisticRegression(C=probes.C, max_iter=1000).fit(X_train, y[train])
                oracle.append(float(np.mean(model.predict(X_test) == y[test])))
        theirs, theirs_cpu = time.perf_counter() - start, time.process_time() - cpu
        print(f"{target}: {len(data.y):,} items, {len(data.classes)} classes; ours {ours:.1f} s ({ours_cpu:.1f} s "
              f"CPU), scikit-learn {theirs:.1f} s ({theirs_cpu:.1f} s CPU): {ours / theirs:.2f}x wall, "
              f"{ours_cpu / theirs_cpu:.2f}x CPU")
        pairs = np.asarray(oracle).reshape(len(table), -1)
        for row, theirs_row in zip(table.itertuples(), pairs):
            print(f"  layer {row.layer}: accuracy {row.accuracy:.3f} (sklearn {theirs_row[0]:.3f}), control "
                  f"{row.control_accuracy:.3f}{f' (sklearn {theirs_row[1]:.3f})' if len(theirs_row) > 1 else ''}, "
                  f"selectivity {row.selectivity:.3f}, majority {row.majority:.3f}")
    print(f"every target, every layer, with controls: {total:.1f} s ({total_cpu:.1f} s CPU); peak RSS "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB; load average "
          f"{' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("phases", nargs="*", default=["build"], choices=["build", "memory", "search", "summary", "probe"])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sizes", default="2000,10000")
    parser.add_argument("--corpus", type=Path, help="a corpus folder for the search, summary and probe phases")
    parser.add_argument("--items", type=int, default=10_000, help="the probe phase's items per target")
    parser.add_argument("--skip-peer", action="store_true", help="the probe phase without scikit-learn's fits")
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; load average "
          f"{' '.join(f'{x:.1f}' for x in __import__('os').getloadavg())}")
    for phase in args.phases:
        if phase == "build":
            build_phase(args.sentences, args.batch_size, args.repeats)
        elif phase == "memory":
            memory_phase([int(x) for x in args.sizes.split(",")])
        elif args.corpus is None:
            raise SystemExit(f"the {phase} phase needs --corpus DIR")
        else:
            {"search": search_phase, "summary": summary_phase,
             "probe": lambda folder: probe_phase(folder, args.items, not args.skip_peer)}[phase](args.corpus)


if __name__ == "__main__":
    main()
