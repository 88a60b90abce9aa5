"""Building a corpus: the sentences of a source through the model in length-bucketed batches, with what the questions
of store.py need streamed to disk in shards.

The folder (format below) holds memory-mapped NumPy arrays and one JSON Lines file per shard, not Parquet: every
per-token and per-head column is numeric, the search is one matrix product straight over the mapped arrays, pandas
builds its tables from them without a copy, and no dependency is added for it.

    corpus.json                 the manifest: model (name, weights sha256, sizes), source (name, sha256, counts), settings,
                                the shards' sentence ranges, the tag and label names; `complete` once every shard is
    shard-00000/                sentences [start, stop) of the source, written under another name and renamed when whole
      sentences.jsonl           text, pair, label, length, truncated; with a fine-tuned classifier its prediction,
                                probabilities and loss
      sentence_vectors.npy      (n, L + 1, 2, H) float32: each layer's [CLS] vector and mean over the tokens
      token_columns.npy         (N, 6) int32: sentence id, position, piece id, word id, tag id (-1: none), segment
      hidden.npy                (L + 1, N, H) float16: every layer's hidden state (float16: ample for cosine search,
                                2**-11 relative; float32 vectors come from corpus.run(i))
      head_stats.npy            (N, L, h, S) float32: stats.STATISTICS of every head, per query token (float32: a
                                sentence's means equal `Run.head_statistics()` within 1e-6)
      offsets.npy               (L, h, 21) float64 summed attention by offset -10..10; offset_counts.npy (21,)
      summary_sums.npy          (3, 1, L * h * 10) float64: the head summary's sums, sums of squares and counts
      qk.npy                    (L, h, 2, M, d) float16: queries and keys of a sample of the tokens (qk_rows.npy: their
                                rows), not all of them: all heads of the default model cost 9 KB a token, so the joint
                                map keeps about --qk-sample of them, chosen by a hash of (sentence id, position) so the
                                same tokens are kept however the work is split

Shards are cut by tokens (the source is tokenized once, up front), so a shard's size is bounded whatever the corpus
and whatever its sentences' lengths: a build's memory is one shard's arrays. A killed build resumes at the first
missing shard; under `torchrun` each process builds every N-th shard, and the folder is the one a single process
writes."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from tqdm import tqdm

from ..checkpoint import _weight_files
from ..explorer import Explorer, load
from ..run_settings import RunSettings
from ..probing import words_and_tags
from ..settings import as_dict, setting, whole
from ..finetuning.tasks import TASKS
from .questions import statistic_sums
from .sources import CorpusError, Sentence, Source, heldout_folder, read_source, within_reach
from .stats import OFFSETS, STATISTICS, is_punctuation, offset_sums, token_statistics

FORMAT = 1
MANIFEST = "corpus.json"
PIECES = "pieces.json"  # every token id's spelling, as the views show it
# Shard size, in tokens: ~75 MB of arrays for the default model (hidden states 5.4 KB a token, statistics 2.6 KB).
SHARD_TOKENS = 8192
# A batch holds at most this many attention weights per head (sentences x the longest squared, after sorting by
# length: almost no padding): a pass's memory is then the same for short and long sentences (64 of 32 tokens, 8 of
# 128), so a build's peak does not grow with the longest sentence it meets.
BATCH_CELLS = 2**16
TOKEN_COLUMNS = ("sentence", "position", "piece", "word", "tag", "segment")


@dataclass(kw_only=True)
class CorpusSettings(RunSettings):
    """What `build_corpus` does; invalid values raise CorpusError with a sentence naming the option. The model,
    output, max tokens and device are every run's (settings.RunSettings)."""

    POSITIONAL: ClassVar[tuple[str, ...]] = ("source", "output", "model")
    ERROR: ClassVar[type[Exception]] = CorpusError
    MIN_TOKENS: ClassVar[int] = 4

    source: str = setting(help="a text file (a sentence a line, or A<TAB>B), a CSV/TSV/JSON Lines table, a CoNLL "
                          "file, a recipe (brown, sotu, movie-reviews, wsj-pos), or heldout:FOLDER, a fine-tuned "
                          "folder's held-out set (read by that model unless --model says otherwise)", positional=True)
    # a forward pass, not a training step: its own default and bound
    batch_size: int = setting(64, "sentences per forward pass, at most (fewer for long sentences: a pass holds at "
                              f"most {BATCH_CELLS:,} attention weights a head)", check=whole(1),
                              why="--batch-size must be 1 or more")
    max_sentences: int | None = setting(None, "at most this many sentences, sampled across the source (in "
                                        "proportion to each label, e.g. Brown's genres, when it has labels), kept in "
                                        "the source's order", check=lambda v: v is None or whole(1)(v),
                                        why="--max-sentences must be 1 or more")
    seed: int = setting(0, "the seed of the --max-sentences sample", check=whole(0), why="--seed must be 0 or more")
    shard_tokens: int = setting(SHARD_TOKENS, "tokens per shard: a build holds one shard's arrays in memory "
                                "(~75 MB at the default for the default model)", check=whole(1),
                                why="--shard-tokens must be 1 or more")
    qk_sample: float = setting(0.1, "share of the tokens whose queries and keys are kept for the joint map",
                               check=lambda v: 0 <= v <= 1, why="--qk-sample must be between 0 and 1")
    text_column: str = setting("text", "a table's text column")
    pair_column: str | None = setting("text_pair", "a table's second-text column, when it has one")
    label_column: str | None = setting("label", "a table's label column, when it has one")

    def identity(self) -> dict:
        """The settings a folder's arrays depend on (a resumed build must repeat them), under the names corpus.json
        has always given them (`max_length`: the max tokens)."""
        keep = ("max_sentences", "seed", "max_tokens", "shard_tokens", "qk_sample", "text_column", "pair_column",
                "label_column")
        return {"max_length" if k == "max_tokens" else k: v for k, v in as_dict(self).items() if k in keep}


def sample_sentences(sentences: list[Sentence], most: int | None, seed: int = 0) -> tuple[np.ndarray, str]:
    """The indices of at most `most` sentences, in the source's order, and a sentence saying how they were chosen
    (empty when all are kept). A source is often ordered by kind (Brown by genre: its first 2,000 sentences are all
    press reportage), so the cap samples across it: with labels, each label keeps its share of the source (largest
    remainders, every label at least one sentence while the cap allows), without, uniformly; seeded."""
    n = len(sentences)
    if most is None or most >= n:
        return np.arange(n), ""
    rng = np.random.default_rng(seed)
    labels = [s.label for s in sentences]
    if all(label is None for label in labels):
        return np.sort(rng.choice(n, most, replace=False)), (f"sampled {most:,} of {n:,} sentences uniformly across "
                                                             f"the source (seed {seed})")
    names, codes = np.unique(np.array(["" if v is None else v for v in labels], dtype=object), return_inverse=True)
    sizes = np.bincount(codes, minlength=len(names))
    share = sizes * most / n
    take = np.minimum(np.floor(share).astype(int), sizes)
    if most >= len(names):
        take = np.maximum(take, np.minimum(1, sizes))
    for k in np.argsort(-(share - np.floor(share)), kind="stable"):  # the rest to the largest remainders
        if take.sum() >= most:
            break
        take[k] += take[k] < sizes[k]
    while take.sum() > most:  # the one-each floor overshot: take back where it is most over its share
        take[np.argmax(np.where(take > 1, take - share, -np.inf))] -= 1
    chosen = [rng.choice(np.flatnonzero(codes == k), take[k], replace=False) for k in range(len(names))]
    return np.sort(np.concatenate(chosen)), (f"sampled {most:,} of {n:,} sentences across the source, each of its "
                                             f"{len(names)} labels in proportion (seed {seed})")


@dataclass
class Shard:
    index: int
    start: int  # sentences [start, stop) of the source
    stop: int
    tokens: int

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}"


def build_corpus(source: str | os.PathLike, output: str | os.PathLike, model: str | os.PathLike | None = None,
                 say: Callable[[str], None] = print, explorer: Explorer | None = None, **options) -> Path:
    """Build (or finish) the corpus folder `output` from `source`; the options are CorpusSettings' fields. Returns
    the folder; `bertviz_app.open_corpus(folder)` asks it questions."""
    settings = CorpusSettings(str(source), str(output), None if model is None else str(model), **options)
    if settings.model is None and heldout_folder(settings.source) is not None:
        # a held-out set is read by the model that was tested on it: its predictions colour the sentence map
        settings.model = str(heldout_folder(settings.source))
    world, rank = _distributed(settings.device)
    explorer = explorer or load(settings.model, device=_device(settings.device, rank, world),
                                max_tokens=settings.max_tokens)
    folder = Path(settings.output)
    read = read_source(settings.source, settings.text_column, settings.pair_column, settings.label_column,
                       say if rank == 0 else lambda text: None)
    chosen, sampled = sample_sentences(read.sentences, settings.max_sentences, settings.seed)
    # cut by words and characters before anything tokenizes them: a giant sentence keeps only what can be kept
    sentences = [within_reach(read.sentences[i], settings.max_tokens) for i in chosen]
    lengths, truncated = _lengths(explorer, sentences, settings.max_tokens)
    shards = plan_shards(lengths, settings.shard_tokens)
    manifest = _manifest(explorer, read, sentences, settings, shards, truncated)
    if rank == 0:
        _start(folder, manifest, explorer)
        say(read.summary() + (f"; {truncated:,} longer than --max-tokens {settings.max_tokens}, cut" if truncated
                              else ""))
        if sampled:
            say(sampled)
    _barrier(world)
    _check_same(folder, manifest)
    todo = [s for s in shards if s.index % world == rank and not (folder / s.name).is_dir()]
    done_sentences = sum(s.stop - s.start for s in shards if (folder / s.name).is_dir())
    if rank == 0 and done_sentences:
        say(f"resuming: {done_sentences:,} of {len(sentences):,} sentences already built")
    writer = _ShardWriter(explorer, manifest, settings)
    with tqdm(total=sum(s.stop - s.start for s in todo), unit="sentence", disable=rank != 0 and world > 1,
              file=sys.stderr, desc="corpus") as bar:
        for shard in todo:
            writer.write(folder, shard, sentences[shard.start:shard.stop], bar)
    _barrier(world)
    if rank == 0:
        manifest["complete"] = True
        _write_json(folder / MANIFEST, manifest)
        say(f"corpus of {len(sentences):,} sentences ({sum(lengths):,} tokens) in {folder}")
    return folder


def plan_shards(lengths: list[int], shard_tokens: int) -> list[Shard]:
    """Consecutive sentence ranges of at most `shard_tokens` tokens each (a longer sentence alone)."""
    shards, start, tokens = [], 0, 0
    for i, n in enumerate(lengths):
        if tokens and tokens + n > shard_tokens:
            shards.append(Shard(len(shards), start, i, tokens))
            start, tokens = i, 0
        tokens += n
    if tokens:
        shards.append(Shard(len(shards), start, len(lengths), tokens))
    return shards


def _lengths(explorer: Explorer, sentences: list[Sentence], max_length: int) -> tuple[list[int], int]:
    lengths, truncated = [], 0
    for start in range(0, len(sentences), 1024):
        chunk = sentences[start:start + 1024]
        for enc in explorer.tokenizer.encode_batch([s.text for s in chunk], [s.pair for s in chunk], max_length):
            lengths.append(len(enc))
            truncated += enc.truncation is not None
    return lengths, truncated


# ------------------------------------------------------------------------------------------------------------------
# The manifest: what a folder holds, so that a build never mixes models, sources or settings
# ------------------------------------------------------------------------------------------------------------------
def weights_sha256(explorer: Explorer) -> str:
    digest = hashlib.sha256()
    if explorer.folder is None:  # an explorer built by hand: its weights themselves
        for name, tensor in explorer.model.state_dict().items():
            digest.update(name.encode())
            digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return digest.hexdigest()
    for path in _weight_files(explorer.folder)[0]:
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _manifest(explorer: Explorer, read: Source, sentences: list[Sentence], settings: CorpusSettings,
              shards: list[Shard], truncated: int) -> dict:
    c = explorer.config
    tags = sorted({t for s in sentences for t in (s.tags or ())})
    labels = sorted({s.label for s in sentences if s.label is not None})
    model = {"name": explorer.name, "folder": str(explorer.folder) if explorer.folder else None,
             "weights_sha256": weights_sha256(explorer), "layers": c.num_hidden_layers,
             "heads": c.num_attention_heads, "hidden": c.hidden_size, "head_size": c.hidden_size // c.num_attention_heads,
             "task": explorer.task.task if explorer.task else None,
             "task_labels": explorer.task.labels if explorer.task else None}
    return {"format": FORMAT, "model": model,
            "source": {"name": read.name, "sha256": read.sha256, "sentences": len(sentences), "blank": read.blank,
                       "duplicates": read.duplicates, "truncated": truncated},
            "settings": settings.identity(), "statistics": list(STATISTICS), "offsets": list(OFFSETS),
            "tags": tags, "labels": labels, "tokens": sum(s.tokens for s in shards),
            "shards": [[s.start, s.stop, s.tokens] for s in shards], "complete": False}


def _start(folder: Path, manifest: dict, explorer: Explorer) -> None:
    """Create the folder with its manifest and the pieces' spelling (so that the folder reads without the model), or
    check that the manifest there describes the same build."""
    path = folder / MANIFEST
    if folder.exists() and not folder.is_dir():
        raise CorpusError(f"{folder} is a file; give a folder for the corpus")
    if not path.exists():
        if folder.is_dir() and any(folder.iterdir()):
            raise CorpusError(f"{folder} is not empty and holds no corpus; give a new or empty folder")
        folder.mkdir(parents=True, exist_ok=True)
        vocab = explorer.tokenizer
        _write_json(folder / PIECES, [vocab.readable(vocab.id_to_token(i)) for i in range(vocab.vocab_size)])
        _write_json(path, manifest)
    _check_same(folder, manifest)
    for partial in folder.glob("shard-*.partial*"):  # what a killed build was writing
        shutil.rmtree(partial, ignore_errors=True)


def _check_same(folder: Path, manifest: dict) -> None:
    try:
        there = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise CorpusError(f"{folder / MANIFEST} cannot be read ({err}); delete the folder and build again") from None
    here_model, there_model = manifest["model"], there.get("model", {})
    if there_model.get("weights_sha256") != here_model["weights_sha256"]:
        raise CorpusError(f"{folder} was built by the model {there_model.get('name')!r}, not by "
                          f"{here_model['name']!r}; give another --output, or the same --model")
    if there.get("source", {}).get("sha256") != manifest["source"]["sha256"]:
        raise CorpusError(f"{folder} was built from {there.get('source', {}).get('name')!r}, not from this "
                          f"{manifest['source']['name']!r}; give another --output")
    if there.get("settings") != manifest["settings"]:
        changed = [k for k, v in manifest["settings"].items() if there.get("settings", {}).get(k) != v]
        raise CorpusError(f"{folder} was built with other settings ({', '.join(changed)}: "
                          f"{', '.join(str(there.get('settings', {}).get(k)) for k in changed)}); repeat them or give "
                          "another --output")


def _write_json(path: Path, data: dict) -> None:
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    partial.replace(path)


# ------------------------------------------------------------------------------------------------------------------
# One shard
# ------------------------------------------------------------------------------------------------------------------
def sampled_for_qk(sentence: np.ndarray, position: np.ndarray, share: float) -> np.ndarray:
    """Whether token (sentence id, position) is one whose queries and keys are kept: a hash of the pair against
    `share`, so the choice is the same however the sentences are split among shards and processes."""
    key = (sentence.astype(np.uint64) * np.uint64(1_000_003) + position.astype(np.uint64)) * np.uint64(2654435761)
    return (key % np.uint64(2**32)).astype(np.float64) / 2**32 < share


class _ShardWriter:
    def __init__(self, explorer: Explorer, manifest: dict, settings: CorpusSettings):
        self.explorer, self.settings = explorer, settings
        self.tag_ids = {t: i for i, t in enumerate(manifest["tags"])}
        model = manifest["model"]
        self.L, self.h, self.H, self.d = model["layers"], model["heads"], model["hidden"], model["head_size"]
        self.classifier = explorer.task_model if model["task"] and TASKS[model["task"]].one_label else None
        self.task_labels = model["task_labels"] or []
        vocab = explorer.tokenizer
        self.punctuation = np.array([is_punctuation(vocab.id_to_token(i)) for i in range(vocab.vocab_size)])

    def write(self, folder: Path, shard: Shard, sentences: list[Sentence], bar) -> None:
        encodings = self.explorer.tokenizer.encode_batch([s.text for s in sentences], [s.pair for s in sentences],
                                                         self.settings.max_tokens)
        rows = np.cumsum([0] + [len(e) for e in encodings])  # the sentence's first row among the shard's tokens
        N, n = int(rows[-1]), len(encodings)
        ids = np.arange(shard.start, shard.stop)
        columns = _token_columns(encodings, sentences, ids, self.tag_ids)
        qk_rows = np.flatnonzero(sampled_for_qk(columns[:, 0], columns[:, 1], self.settings.qk_sample))
        arrays = {"hidden": np.zeros((self.L + 1, N, self.H), np.float16),
                  "head_stats": np.zeros((N, self.L, self.h, len(STATISTICS)), np.float32),
                  "sentence_vectors": np.zeros((n, self.L + 1, 2, self.H), np.float32),
                  "offsets": np.zeros((self.L, self.h, len(OFFSETS)), np.float64),
                  "offset_counts": np.zeros(len(OFFSETS), np.int64),
                  "qk": np.zeros((self.L, self.h, 2, len(qk_rows), self.d), np.float16),
                  "token_columns": columns, "qk_rows": qk_rows.astype(np.int32)}
        records = [{"id": int(i), "text": s.text, "pair": s.pair, "label": s.label, "length": len(e),
                    "truncated": e.truncation is not None} for i, s, e in zip(ids, sentences, encodings)]
        qk_index = np.full(N, -1)
        qk_index[qk_rows] = np.arange(len(qk_rows))
        for batch in _batches(encodings, self.settings.batch_size):
            self._forward(batch, encodings, sentences, rows, qk_index, arrays, records)
            bar.update(len(batch))
        lengths = np.diff(rows)[np.repeat(np.arange(n), np.diff(rows))]  # each token's sentence length
        arrays["summary_sums"] = statistic_sums(arrays["head_stats"], lengths, np.zeros(N, np.int64), 1)
        _save(folder, shard.name, arrays, records)

    @torch.inference_mode()
    def _forward(self, batch: list[int], encodings, sentences, rows, qk_index, arrays, records) -> None:
        device = self.explorer.device
        chosen = [encodings[i] for i in batch]
        T = max(map(len, chosen))
        lengths = torch.tensor([len(e) for e in chosen], device=device)

        def padded(values, pad=0):
            return torch.tensor([list(v) + [pad] * (T - len(v)) for v in values], device=device)  # (B, T)

        ids = padded([e.ids for e in chosen], self.explorer.config.pad_token_id or 0)
        mask = padded([[1] * len(e) for e in chosen])
        special = padded([e.special_tokens_mask for e in chosen]).bool()
        punctuation = torch.from_numpy(self.punctuation).to(device)[ids] & mask.bool()
        options = dict(capture=("embeddings", "layer.*.output", "layer.*.attention.probs", "layer.*.attention.queries",
                                "layer.*.attention.keys"))
        segments = padded([e.segment_ids for e in chosen])
        if self.classifier is not None:
            out = self.classifier(ids, segments, mask, **options)
            self._predictions(out.logits, [sentences[i] for i in batch], [records[i] for i in batch])
        else:
            out = self.explorer.model.bert(ids, segments, mask, **options)
        mask_f = mask.unsqueeze(-1).float()
        kept = [(b, t, qk_index[rows[i] + t]) for b, i in enumerate(batch) for t in range(len(chosen[b]))
                if qk_index[rows[i] + t] >= 0]  # (row in batch, position, place among the shard's sampled tokens)
        sample_b = torch.tensor([b for b, _, _ in kept], dtype=torch.long, device=device)
        sample_t = torch.tensor([t for _, t, _ in kept], dtype=torch.long, device=device)
        sample_at = np.array([m for _, _, m in kept], dtype=np.int64)
        for layer, hidden in enumerate((out.captured["embeddings"], *out.layers("output"))):  # (B, T, H) each
            mean = (hidden * mask_f).sum(1) / mask_f.sum(1)
            vectors = torch.stack([hidden[:, 0], mean], 1).float().cpu().numpy()  # (B, 2, H)
            hidden16 = hidden.half().cpu().numpy()
            for b, i in enumerate(batch):
                arrays["sentence_vectors"][i, layer] = vectors[b]
                arrays["hidden"][layer, rows[i]:rows[i + 1]] = hidden16[b, :len(chosen[b])]
        for layer, attention in enumerate(out.layers("attention.probs")):  # (B, h, T, T) each
            stats = token_statistics(attention.float(), lengths, special, punctuation).cpu().numpy()
            sums, counts = offset_sums(attention.float(), lengths)
            arrays["offsets"][layer] += sums.numpy()
            arrays["offset_counts"] += counts.numpy() if layer == 0 else 0
            for b, i in enumerate(batch):
                arrays["head_stats"][rows[i]:rows[i + 1], layer] = stats[b, :len(chosen[b])]
            # only the sampled tokens' queries and keys leave the batch: (K, h, d) each
            q = out.layers("attention.queries")[layer][sample_b, :, sample_t].half().cpu().numpy()
            k = out.layers("attention.keys")[layer][sample_b, :, sample_t].half().cpu().numpy()
            arrays["qk"][layer, :, 0, sample_at] = q
            arrays["qk"][layer, :, 1, sample_at] = k

    def _predictions(self, logits: torch.Tensor, sentences: list[Sentence], records: list[dict]) -> None:
        probabilities = torch.softmax(logits.float(), -1).cpu().numpy()
        for p, sentence, record in zip(probabilities, sentences, records):
            record["prediction"] = self.task_labels[int(p.argmax())]
            record["probabilities"] = {name: float(v) for name, v in zip(self.task_labels, p)}
            if sentence.label in self.task_labels:
                record["loss"] = float(-np.log(max(p[self.task_labels.index(sentence.label)], 1e-12)))


def _token_columns(encodings, sentences: list[Sentence], ids: np.ndarray, tag_ids: dict[str, int]) -> np.ndarray:
    rows = []
    for sentence_id, sentence, enc in zip(ids, sentences, encodings):
        words, tags = words_and_tags(sentence.words, sentence.tags, enc, tag_ids)
        for position in range(len(enc)):
            rows.append((sentence_id, position, enc.ids[position], words[position], tags[position],
                         enc.segment_ids[position]))
    return np.asarray(rows, dtype=np.int32).reshape(-1, len(TOKEN_COLUMNS))


def _batches(encodings, batch_size: int) -> list[list[int]]:
    """Sentence indexes in batches of similar length (sorted by length), each within batch_size and BATCH_CELLS."""
    order = sorted(range(len(encodings)), key=lambda i: len(encodings[i]))
    batches, current = [], []
    for i in order:
        if current and (len(current) >= batch_size or (len(current) + 1) * len(encodings[i]) ** 2 > BATCH_CELLS):
            batches.append(current)
            current = []
        current.append(i)
    return batches + ([current] if current else [])


def _save(folder: Path, name: str, arrays: dict[str, np.ndarray], records: list[dict]) -> None:
    """The shard's files into a folder of another name, renamed into place once whole: a shard is there or not."""
    partial = folder / f"{name}.partial-{os.getpid()}"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    for key, value in arrays.items():
        np.save(partial / f"{key}.npy", value)
    with (partial / "sentences.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    (partial / "shard.json").write_text(json.dumps({"files": sorted(p.name for p in partial.iterdir())}))
    partial.rename(folder / name)


# ------------------------------------------------------------------------------------------------------------------
# torchrun: each process its share of the shards
# ------------------------------------------------------------------------------------------------------------------
def _distributed(device: str) -> tuple[int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 1, 0
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device != "cpu" and torch.cuda.is_available() else "gloo")
    return world, dist.get_rank()


def _device(device: str, rank: int, world: int) -> str:
    if world > 1 and device != "cpu" and torch.cuda.is_available():
        return f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}"
    return device


def _barrier(world: int) -> None:
    if world > 1:
        dist.barrier()
