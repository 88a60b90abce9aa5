"""What each layer knows: linear probes on hidden states (Tenney et al. 2019), with Hewitt & Liang's (2019) control
task so that a probe that memorizes words is not read as the layer knowing grammar. The one probe of a corpus
(corpus/probes.py) and of a training timeline's probe set (timeline/probe_set.py): each hands in its items' tables
and hidden states.

One fixed recipe, for every target and layer: the hidden states of a sample of tokens (or each sentence's [CLS]),
standardized with the training part's mean and spread, a multinomial logistic regression with an L2 penalty
(scikit-learn's objective at C = 1: the summed log loss plus |W|^2 / 2, the bias not penalized) fitted by L-BFGS in
float32 until its largest gradient entry is under 1e-4 (scikit-learn's rule), and the accuracy on sentences the probe
never saw (80/20 by sentence, seeded).
Fitted with torch, already a dependency, rather than scikit-learn (which the tests use as the oracle): the recipe is
twenty lines, and the app gains no 40 MB dependency for it.

Targets: "tag" (a word's tag, for a tagged source: CoNLL, Brown), "label" (a sentence's label, read from [CLS]), and
two any corpus has, computed from its text: "position" (the token's position, bucketed) and "recurs" (whether the
word already occurred earlier in the sentence). A word is probed at its first piece.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

TARGETS = ("tag", "label", "position", "recurs")
# Position buckets: each of the first few alone, then doubling widths (what a position probe can tell apart).
POSITION_EDGES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64)
MAX_ITEMS = 12_000          # tokens (or sentences) read per probe: the bound that keeps a layer's probe in memory
HELD_OUT = 0.2              # the share of sentences kept apart to score the probe
C = 1.0                     # inverse L2 strength, scikit-learn's default
MIN_SENTENCES = 5           # fewer cannot be split into a training and a held-out part with each non-empty
MAX_THREADS = 4             # a probe's fits at once (each holds one layer's items)


class ProbeError(ValueError):
    """A probe that cannot be made (a target the items lack, too few sentences); the message says why in one
    sentence."""


@dataclass
class ProbeData:
    """The items one target is probed on: their rows of the corpus (token rows, or each sentence's first token for
    a sentence target), their classes, the class names and which items are held out."""
    rows: np.ndarray
    y: np.ndarray
    classes: list[str]
    held_out: np.ndarray
    words: np.ndarray | None  # each item's word type (lower case), for the control task; None for sentences


def probe_items(data: ProbeData, target: str, layers, states, control: bool = True, seed: int = 0,
                threads: int | None = None) -> pd.DataFrame:
    """`probe`'s table for items already chosen (`probe_data`), whatever holds their hidden states: states(layer) ->
    (items, H) float64, the items' rows at that layer (a corpus's shards, or a training timeline's snapshot).

    The fits (each layer's probe, and its control task's) are independent: `threads` of them run at once (default:
    one a core, at most MAX_THREADS), each on one torch thread, the control tasks first since they take the longest
    (2-5x the real task's evaluations on Brown's tags). Each fit reads its layer's rows itself, so at most `threads`
    layers' items are held at once; the table is the same bit for bit whatever the number of threads."""
    from concurrent.futures import ThreadPoolExecutor

    from .spare_cores import cores  # torch, imported when a probe is made

    layers = list(layers)
    control_y = control_task(data.words, data.y, len(data.classes), seed) if control and data.words is not None else None
    train, test = ~data.held_out, data.held_out
    majority = float(np.mean(data.y[test] == np.bincount(data.y[train]).argmax()))
    fits = ([("control_accuracy", k, control_y) for k in layers] if control_y is not None else []) + \
        [("accuracy", k, data.y) for k in layers]

    def one(job: tuple) -> float:
        _, k, y = job
        X_train, X_test = standardize(*(lambda X: (X[train], X[test]))(states(k)))
        return fit_and_score(X_train, y[train], X_test, y[test])

    # Plain threads at the caller's priority, joined before this returns: the fits differ tenfold in length, so
    # spare_cores.in_chunks' rule of running a helper's late call again would redo long fits, and a helper still
    # fitting when the interpreter exits aborts it.
    # torch's thread count is the process's (a new thread starts from it), and each fit sets it to 1 and back, so
    # fits ending in any order could leave the whole process on one thread: the caller's count comes back after.
    import torch

    saved = torch.get_num_threads()
    try:
        with ThreadPoolExecutor(max(1, min(MAX_THREADS, cores()) if threads is None else threads)) as pool:
            scores = dict(zip(((column, k) for column, k, _ in fits), pool.map(one, fits)))
    finally:
        torch.set_num_threads(saved)
    rows = []
    for k in layers:
        row = {"target": target, "layer": k, "accuracy": scores["accuracy", k], "control_accuracy": np.nan,
               "selectivity": np.nan, "majority": majority}
        if control_y is not None:
            row["control_accuracy"] = scores["control_accuracy", k]
            row["selectivity"] = row["accuracy"] - row["control_accuracy"]
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.attrs.update(items=len(data.y), held_out=int(data.held_out.sum()), classes=len(data.classes))
    return frame


def probe_data(corpus, target: str, max_items: int = MAX_ITEMS, seed: int = 0) -> ProbeData:
    """The items, classes and held-out split of one target (the same for every layer). `corpus`: a Corpus, or what
    has the same tables (a timeline's probe set: token_columns, tags, labels, sentences, sentence_starts, pieces)."""
    if target not in TARGETS:
        raise ProbeError(f"a probe's target is one of {', '.join(TARGETS)}, not {target!r}")
    columns = corpus.token_columns
    sentence, position, word = columns[:, 0], columns[:, 1], columns[:, 3]
    if target == "label" and not corpus.labels:
        raise ProbeError("this corpus has no sentence labels to probe: build it from a labelled source (a CSV with "
                          "a label column, or heldout:FOLDER)")
    if target == "tag" and not corpus.tags:
        raise ProbeError("this corpus has no tags to probe: build it from a tagged source (CoNLL, or the brown "
                          "recipe); 'position' and 'recurs' work on any corpus")
    if len(corpus) < MIN_SENTENCES:
        raise ProbeError(f"this corpus has {len(corpus)} sentences: a probe needs at least {MIN_SENTENCES}, to keep "
                          f"a fifth of them apart to score it")
    if target == "label":
        names = corpus.sentences["label"].astype(str).to_numpy()
        known = np.isin(names, corpus.labels)
        ids = np.arange(len(corpus))[known]
        rows = corpus.sentence_starts[:-1][ids]  # each sentence's first token, [CLS]
        y = np.searchsorted(np.asarray(sorted(corpus.labels)), names[known])
        return _sampled(ProbeData(rows, y, sorted(corpus.labels), None, None), ids, max_items, seed)
    first = np.ones(len(columns), bool)
    first[1:] = (sentence[1:] != sentence[:-1]) | (word[1:] != word[:-1])
    first &= word >= 0  # special tokens belong to no word
    if target == "tag":
        keep = first & (columns[:, 4] >= 0)
        rows = np.flatnonzero(keep)
        present = np.unique(columns[rows, 4])
        y = np.searchsorted(present, columns[rows, 4])
        classes = [corpus.tags[t] for t in present]
    else:
        rows = np.flatnonzero(first)
    words = None
    if target == "position":
        y = np.searchsorted(np.asarray(POSITION_EDGES), position[rows], side="right")
        bounds = (0,) + POSITION_EDGES
        classes = [_bucket_name(bounds, k) for k in range(len(bounds))]
    elif target == "recurs":
        words = _word_types(corpus, rows)  # every word: whether one recurs needs the words before it
        y = _recurs(sentence[rows], words).astype(np.int64)
        classes = ["first time", "seen earlier"]
    data = _sampled(ProbeData(rows, y, classes, None, words), sentence[rows], max_items, seed)
    if data.words is None:  # only the sampled items spelled (a tenth of 10,000 sentences' words)
        data.words = _word_types(corpus, data.rows)
    return data


def _sampled(data: ProbeData, sentence_of_item: np.ndarray, max_items: int, seed: int) -> ProbeData:
    """The split by sentence (a fifth apart, seeded), then at most `max_items` items drawn evenly from both parts."""
    if len(np.unique(data.y)) < 2:
        raise ProbeError(f"every item of this corpus is '{data.classes[int(data.y[0])]}' for this target: there is "
                          "nothing to tell apart (a source with one genre or label?)")
    rng = np.random.default_rng(seed)
    sentences = np.unique(sentence_of_item)
    apart = rng.permutation(sentences)[:max(1, int(round(len(sentences) * HELD_OUT)))]
    held_out = np.isin(sentence_of_item, apart)
    if held_out.all() or not held_out.any():
        raise ProbeError("too few sentences carry this target to keep a part apart for scoring")
    if len(data.y) > max_items:
        pick = np.sort(rng.choice(len(data.y), max_items, replace=False))
    else:
        pick = np.arange(len(data.y))
    words = None if data.words is None else data.words[pick]
    return ProbeData(data.rows[pick], data.y[pick], data.classes, held_out[pick], words)


def control_task(words: np.ndarray, y: np.ndarray, n_classes: int, seed: int = 0) -> np.ndarray:
    """Hewitt & Liang's control target: every word type gets one class, drawn from the real classes' distribution
    (seeded), and keeps it wherever it occurs; only a probe that memorizes word types can learn it."""
    types, inverse = np.unique(words, return_inverse=True)
    frequency = np.bincount(y, minlength=n_classes) / len(y)
    drawn = np.random.default_rng(seed + 1).choice(n_classes, size=len(types), p=frequency)
    return drawn[inverse]


def standardize(train: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean, spread = train.mean(0), train.std(0)
    spread[spread == 0] = 1.0
    return (train - mean) / spread, (test - mean) / spread


def fit(X_train, y_train, max_iter: int = 1000):
    """The recipe's multinomial logistic regression (module docstring): (W (H, K), b (K,), the K classes of the
    training part). Only the classes the training part holds get a column, as in scikit-learn: a class seen only in
    the held-out part could never be predicted, and its column cost a third of the time of Brown's tag probe (46 of
    179 tags absent, each bias driven down step after step until its gradient fell under the rule's 1e-4)."""
    import torch

    classes, y_train = np.unique(y_train, return_inverse=True)
    X = torch.from_numpy(np.ascontiguousarray(X_train, dtype=np.float32))
    y = torch.from_numpy(np.asarray(y_train, dtype=np.int64))
    k = len(classes)
    # The weights' columns padded to a multiple of 8 (at least 16) with columns the loss never reads: their gradient
    # is 0, so they stay 0 and the problem is the same, but MKL's products are faster at those widths (an
    # evaluation at Brown's 133 tags 25 ms of CPU against 33, 6.3 against 11.5 at 2 classes, 8.4 against 17 at 11).
    width = max(16, -(-k // 8) * 8)
    W = torch.zeros(X.shape[1], width, requires_grad=True)
    b = torch.zeros(width, requires_grad=True)
    # scikit-learn's objective divided by the number of examples (the same minimum), and its stopping rule: the
    # largest gradient entry under 1e-4
    optimizer = torch.optim.LBFGS([W, b], lr=1, max_iter=max_iter, tolerance_grad=1e-4, tolerance_change=1e-10,
                                  history_size=20, line_search_fn="strong_wolfe")

    def loss():
        optimizer.zero_grad()
        value = torch.nn.functional.cross_entropy((X @ W + b)[:, :k], y) + (W * W).sum() / (2 * C * len(y))
        value.backward()
        return value

    # One thread: these products are small, and on a busy machine torch's threads wait on each other (measured: 5 s
    # against 0.1 s for one probe of 541 tokens at load 16).
    # The count is the process's, not this thread's: probe_items restores it once its fits on threads are done.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        optimizer.step(loss)
    finally:
        torch.set_num_threads(threads)
    return W.detach()[:, :k].numpy(), b.detach()[:k].numpy(), classes


def fit_and_score(X_train, y_train, X_test, y_test, max_iter: int = 1000) -> float:
    """The held-out accuracy of the recipe's regression."""
    W, b, classes = fit(X_train, y_train, max_iter)
    predicted = classes[(np.asarray(X_test, np.float32) @ W + b).argmax(1)]
    return float(np.mean(predicted == y_test))


def words_and_tags(words: list[str] | None, tags: list[str] | None, enc, tag_ids: dict[str, int]
                   ) -> tuple[list[int], list[int]]:
    """Each token's word id and tag id: for a tagged sentence (`words` joined by single spaces was encoded), the
    source word its first character falls in (special tokens -1); otherwise the tokenizer's word ids and no tag (-1)."""
    if words is None:
        return list(enc.word_ids), [-1] * len(enc)
    starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
    word_ids, tag_ids_of = [], []
    for position, (start, _) in enumerate(enc.offsets):
        if enc.sequence_ids[position] is None:
            word_ids.append(-1)
            tag_ids_of.append(-1)
            continue
        w = int(np.searchsorted(starts, start, side="right") - 1)
        word_ids.append(w)
        tag_ids_of.append(tag_ids[tags[w]])
    return word_ids, tag_ids_of


def _word_types(corpus, rows: np.ndarray) -> np.ndarray:
    """The lower-cased word each row's token begins (its pieces joined, WordPiece's ## dropped)."""
    columns = corpus.token_columns
    ends = np.r_[np.flatnonzero((columns[1:, 0] != columns[:-1, 0]) | (columns[1:, 3] != columns[:-1, 3])) + 1,
                 len(columns)]
    stop = ends[np.searchsorted(ends, rows, side="right")]
    pieces = corpus.pieces
    return np.asarray(["".join(str(p)[2:] if str(p).startswith("##") else str(p)
                               for p in pieces[columns[r:s, 2]]).lower() for r, s in zip(rows, stop)], dtype=object)


def _recurs(sentence: np.ndarray, words: np.ndarray) -> np.ndarray:
    seen, out = set(), np.zeros(len(words), bool)
    for k, (s, w) in enumerate(zip(sentence, words)):
        out[k] = (s, w) in seen
        seen.add((s, w))
    return out


def _bucket_name(bounds: tuple, k: int) -> str:
    lo = bounds[k]
    hi = bounds[k + 1] - 1 if k + 1 < len(bounds) else None
    return f"{lo}+" if hi is None else (str(lo) if hi == lo else f"{lo}-{hi}")
