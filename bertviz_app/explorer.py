"""The public entry: `load()` gives an `Explorer` (model + tokenizer + device); `Explorer.run(text, text_pair)` gives a
`Run` (run.py, with its pictures from plots.py), one forward pass with everything the views need, cached by input in a
cache bounded by bytes. The explorer checks a text (inputs.check_text) and encodes it once, with its token limit; the
functions below it (masked_lm, ablation, attribution, finetuning.tasks) take that `Encoding`."""

from __future__ import annotations

import ctypes
import threading
import weakref
import time
from collections import OrderedDict
from pathlib import Path

import numpy as np
import torch

from . import ablation, attribution, catalog, causal, contrast, curves, limits, masked_lm
from .batching import Batcher
from .checkpoint import CheckpointError, TaskHead, load_model, resolve_source, task_head
from .device import resolve_device
from .family import FamilyNotes, notes
from .finetuned import base_model, read_heldout
from .finetuning.tasks import TASKS, Task
from .inputs import check_text
from .masked_lm import normalize_mask
from .model import BertForPreTraining, BertPreTrainedModel
from .plots import PlottedRun
from .run import ModelTables, Run
from .serving import TracedPass, analysis_pass
from .targets import TASK_TARGETS, Target
from .tokenizer import Encoding, Tokenizer, TokenizerError, load_tokenizer

DEFAULT_CACHE_MB = limits.CACHE_MB
# Freed memory is given back to the system once evictions have freed this much since the last time (see
# release_freed_memory): after every eviction a class's short inputs paid 1.4 ms each for it.
RELEASE_EVERY_BYTES = 16 * 2**20
# New inputs waiting together go through the model as one padded batch of at most this many tokens (inputs x the
# longest): sixteen sentences of 32 tokens, while a long input goes alone (its attention alone is 75 MB at 512).
BATCH_TOKENS = 512
CACHE_DTYPES = ("float32", "float16")


class Explorer:
    """A loaded model with its tokenizer, on one device. Thread-safe; Runs are cached, least recently used first
    out once they weigh more than `cache_mb` megabytes together (the newest Run always stays).

    `cache_dtype` is the precision a Run keeps its attention in: "float32" (the default) is the model's own numbers,
    equal to transformers within 1e-5; "float16" halves the attention (a server's choice, to keep more long inputs
    in `cache_mb`; what a Run weighs: docs/ARCHITECTURE.md, "Measured") and keeps each weight within 2**-11 of
    itself, rows summing to 1 within ~1e-3."""

    def __init__(self, model: BertForPreTraining, tokenizer: Tokenizer, device: torch.device, name: str,
                 max_tokens: int | None = None, cache_mb: float = DEFAULT_CACHE_MB, cache_dtype: str = "float32",
                 task_model: BertPreTrainedModel | None = None, task: TaskHead | None = None):
        if not 0 <= cache_mb < float("inf"):  # written so that nan fails too
            raise ValueError(f"cache_mb must be a number of megabytes, zero or more, got {cache_mb}")
        if cache_dtype not in CACHE_DTYPES:
            raise ValueError(f"cache_dtype must be one of {', '.join(CACHE_DTYPES)}, got {cache_dtype!r}")
        self.cache_dtype = cache_dtype
        # A fine-tuned model: its head model shares the encoder with `model`, so every view sees the fine-tuned
        # encoder and `predict` gives the task's answer.
        self.task = task
        self.task_model = task_model.to(device).eval() if task_model is not None else None
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.config = model.config
        self.device = device
        self.name = name
        limit = model.config.max_tokens
        # the one clamp of the token limit: every encoding below is made with it (see `encode`)
        self.max_tokens = min(max_tokens or limit, limit)
        self.load_seconds = 0.0  # load() sets it; an Explorer built by hand loaded nothing
        # load() sets it: the checkpoint folder (metrics.json, held-out predictions; the app fine-tunes from it)
        self.folder: Path | None = None
        self._heldout: tuple[Path, list[dict]] | None = None  # (folder, its held-out rows): see heldout()
        self.tables = _model_tables(self.model)
        self._cache: OrderedDict[tuple, Run] = OrderedDict()
        self._cache_bytes = int(cache_mb * 2**20)
        self._lock = threading.Lock()
        self._freed_bytes = 0  # evicted since memory was last given back
        self._pass: TracedPass | None = None  # see _analysis_pass
        self._pass_lock = threading.Lock()
        self.forward_passes = 1

    @property
    def forward_passes(self) -> int:
        """How many forward passes of new inputs may run at once (each a batch of the inputs waiting for it); the
        served app sets its --concurrency here before it serves."""
        return self._batches.at_once

    @forward_passes.setter
    def forward_passes(self, n: int) -> None:
        self._batches = Batcher(self._forward_many, at_once=n, max_items=BATCH_TOKENS,
                                fits=lambda encodings: len(encodings) * max(map(len, encodings)) <= BATCH_TOKENS)

    def __repr__(self) -> str:
        c = self.config
        task = f"; fine-tuned for {self.task.task}" if self.task is not None else ""
        return (f"Explorer({self.name!r}: {c.num_hidden_layers} layers, {c.num_attention_heads} heads, hidden "
                f"{c.hidden_size}, on {self.device}, attention kept in {self.cache_dtype}; MLM head: {self.has_mlm_head}, "
                f"NSP head: {self.has_nsp_head}{task})")

    @property
    def has_mlm_head(self) -> bool:
        return self.model.has_mlm_head

    @property
    def has_nsp_head(self) -> bool:
        """True for BERT's next-sentence head and for ALBERT's sentence-order head (see `family.sentence_head`)."""
        return self.model.has_nsp_head

    @property
    def has_replaced_head(self) -> bool:
        return getattr(self.model, "has_replaced_head", False)

    @property
    def family(self) -> FamilyNotes:
        """Which member of the BERT family this is, and what it lacks or brings, in words."""
        return notes(self.config.model_type, positions=self.config.position_biased_input,
                     segments=self.config.type_vocab_size >= 2)

    def replaced(self, text: str, text_pair: str | None = None) -> list[tuple[str, float]]:
        """ELECTRA: each token of the input with the discriminator's probability that it was replaced (from the
        input's Run: no second forward pass)."""
        run = self.run(text, text_pair)
        probabilities = masked_lm.replaced_probabilities(self.model, run.hidden_states[-1])
        return list(zip(run.labels, probabilities.tolist()))

    def score_terms(self, text: str, text_pair: str | None = None, layer: int = 0) -> dict[str, np.ndarray]:
        """Layer `layer`'s attention scores as the model's named additive terms, name -> (heads, T, T) float32
        ("q.k", and DeBERTa's "c2p" and "p2c"), from the input's Run: their sum's softmax is its attention."""
        return self.run(text, text_pair).score_terms(layer)

    @property
    def cached_bytes(self) -> int:
        """What the cached Runs weigh together."""
        with self._lock:
            return sum(run.nbytes for run in self._cache.values())

    def encode(self, text: str, text_pair: str | None = None) -> Encoding:
        """`text` (sentence A) and `text_pair` (sentence B, optional) as this explorer's model reads them: checked
        (a ValueError in words for an empty, too long or unreadable text), cut to `max_tokens`."""
        return self._encoding(text, text_pair, masks=False)

    def _encoding(self, text: str | Encoding, text_pair: str | None = None, masks: bool = True) -> Encoding:
        """What the functions below read: a Run's Encoding as it is; a text checked once (inputs.check_text) and
        encoded once with this explorer's limit, every spelling of [MASK] (`[mask]`, `[ Mask ]`) written the way the
        tokenizer keeps it whole when `masks`."""
        if isinstance(text, Encoding):
            return text
        text, text_pair = check_text(text, text_pair)
        if masks:
            text, text_pair = normalize_mask(text), text_pair and normalize_mask(text_pair)
        return self.tokenizer.encode(text, text_pair, max_tokens=self.max_tokens)

    def run(self, text: str, text_pair: str | None = None) -> PlottedRun:
        """One forward pass over `text` (and `text_pair`), cached: the same input twice costs one pass."""
        text, text_pair = check_text(text, text_pair)
        key = (text, text_pair)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        run = self._batches.submit(self.tokenizer.encode(text, text_pair, max_tokens=self.max_tokens))
        with self._lock:
            self._cache[key] = run
            self._cache.move_to_end(key)
            total = sum(r.nbytes for r in self._cache.values())
            while total > self._cache_bytes and len(self._cache) > 1:
                freed = self._cache.popitem(last=False)[1].nbytes
                total -= freed
                self._freed_bytes += freed
            release = self._freed_bytes >= RELEASE_EVERY_BYTES
            if release:
                self._freed_bytes = 0
        if release:
            release_freed_memory()
        return run

    def cached_run(self, text: str, text_pair: str | None = None) -> PlottedRun | None:
        """The Run of this input if the cache still holds it, else None (never a forward pass)."""
        with self._lock:
            return self._cache.get((text, text_pair or None))

    # --- a fine-tuned head (see finetuning/tasks.py) ---------------------------------------------------------------
    @property
    def finetuned_task(self) -> Task | None:
        """The task the fine-tuned head does (finetuning.TASKS), or None without one."""
        return TASKS[self.task.task] if self.task is not None else None

    @property
    def labels(self) -> list[str]:
        """The fine-tuned head's label (or tag) names in id order; [] without one, or for question answering."""
        return list(self.task.labels) if self.task is not None else []

    def predict(self, text: str, text_pair: str | None = None):
        """The fine-tuned task's answer: a ClassPrediction (`.label`, `.probabilities` for every label), a
        TagPrediction (a tag per word with its probability) or an AnswerPrediction (the span of `text_pair`, the
        context, that answers `text`, the question, with its start and end probabilities)."""
        self._require_task()
        return self.finetuned_task.predict(self.task_model, self.tokenizer, self.task.labels,
                                             self.encode(text, text_pair))

    def task_target(self, text: str | Encoding, text_pair: str | None = None, label: str | None = None,
                    position: int | None = None) -> Target:
        """What `attribute` and `rank_heads` explain for the fine-tuned head: log P(label) (default the predicted
        one; for a tagger, the tag of token `position`), or for question answering log P of the predicted span.
        `text` may be a Run's encoding."""
        self._require_task()
        encoding = self._encoding(text, text_pair, masks=False)
        return self.finetuned_task.explain(self.task_model, self.labels, encoding, label, position)

    def _require_task(self) -> None:
        if self.task is None:
            raise ValueError(f"{self.name} has no fine-tuned head (classification, tagging or question answering); "
                             "load a folder that `bertviz-app finetune` wrote, or a fine-tuned checkpoint")

    @property
    def base_model(self) -> str | None:
        """The model this one was fine-tuned from, as its folder records it (metrics.json, else config.json); None
        when it does not say, or for a model that is not fine-tuned."""
        return base_model(self.folder) if self.task is not None and self.folder is not None else None

    def heldout(self) -> list[dict]:
        """The held-out predictions `bertviz-app finetune` wrote (text, text_pair, gold, prediction, confidence,
        loss per example), [] when the folder has none. Read once per folder (the Task tab asks at every model
        switch, and a file may hold 64 MB); the list is shared: do not change it."""
        if self.task is None or self.folder is None:
            return []
        if self._heldout is None or self._heldout[0] != self.folder:
            self._heldout = (self.folder, read_heldout(self.folder))
        return self._heldout[1]

    def layer_change(self, other: "Explorer") -> np.ndarray:
        """(L,) how far each encoder layer's weights moved from `other`'s: ||W - W_other|| / ||W_other|| over all the
        layer's parameters (0 = unchanged). Both models must have the same shapes."""
        return layer_weight_change(other.model.bert.encoder, self.model.bert.encoder)

    # --- the pretraining heads (see masked_lm.py); each raises ValueError in words when the head is absent -------
    def fill_mask(self, text: str, text_pair: str | None = None, top_k: int = 10, max_masks: int | None = None):
        """For each [MASK] (any case) in order, the top_k (token, probability) pairs, best first."""
        return masked_lm.fill_mask(self.model, self.tokenizer, self._encoding(text, text_pair), top_k, max_masks)

    def next_sentence(self, text_a: str, text_b: str) -> float:
        """P(text_b follows text_a) from the next-sentence head: the probability the pair's Run holds."""
        if not self.has_nsp_head:
            raise ValueError("this model has no next-sentence head; load a checkpoint with one (for example a "
                             "pretraining checkpoint from `bertviz-app pretrain`)")
        if not isinstance(text_b, str) or not text_b.strip():
            raise ValueError("sentence B is empty; next-sentence prediction needs two sentences")
        return self.run(text_a, text_b).is_next_probability

    def mask_token(self, text: str | Encoding, index: int, text_pair: str | None = None, top_k: int = 10):
        """Mask token `index` of the input (a text, or a Run's encoding); predictions there and how the original
        token is rated."""
        return masked_lm.mask_token(self.model, self.tokenizer, self._encoding(text, text_pair), index, top_k)

    def logit_lens(self, text: str, position: int | None = None, top_k: int = 5, text_pair: str | None = None,
                   mask_index: int = 0):
        """The MLM head applied to every layer's hidden state at one position (default: the first [MASK])."""
        return masked_lm.logit_lens(self.model, self.tokenizer, self._encoding(text, text_pair), position, top_k,
                                    mask_index)

    def corrupt_example(self, text: str | Encoding, text_pair: str | None = None, seed: int = 0):
        """The input (a text, or a Run's encoding) corrupted by the 80/10/10 rule, as one pretraining example with
        its labels."""
        return masked_lm.corrupt_example(self.tokenizer, self._encoding(text, text_pair, masks=False), seed=seed)

    # --- beyond raw attention (see attribution.py, ablation.py) -----------------------------------------------------
    def ablate(self, text: str, heads, text_pair: str | None = None, top_k: int = 5):
        """Predictions at every [MASK], and P(IsNext) of a pair, before and after silencing `heads`, a list of
        (layer, head) pairs."""
        return ablation.ablate(self.model, self.tokenizer, self._encoding(text, text_pair), heads, top_k)

    def rank_heads(self, text: str, text_pair: str | None = None, mask_index: int = 0, token=None,
                   target: str | Target = "mask", method: str = "ablation", report=None):
        """Every head ranked by its effect on one prediction (log P of a token at a [MASK], the IsNext logit, or a
        fine-tuned head's `task_target`): 'ablation' silences each in turn, 'gradient' estimates all from one
        backward pass. report: told the work done as it goes, in forward passes (ablation.ablation_passes)."""
        return ablation.rank_heads(self._model_for(target), self.tokenizer, self._encoding(text, text_pair),
                                   mask_index, token, target, method, report=report)

    def attribute(self, text: str, text_pair: str | None = None, mask_index: int = 0, token=None, steps: int = 50,
                  baseline: str = "pad", target: str | Target = "mask"):
        """Integrated gradients on the input embeddings for log P(token at the mask_index-th [MASK]) (token: the top
        prediction by default), the IsNext logit, or a fine-tuned head's `task_target`: one score per token, with
        the convergence delta."""
        return attribution.attribute(self._model_for(target), self.tokenizer, self._encoding(text, text_pair),
                                     mask_index, token, steps, baseline, target)

    def contrast(self, text: str | Run, answer: str | int, other: str | int, text_pair: str | None = None,
                 mask_index: int = 0, steps: int = 50, baseline: str = "pad", report=None) -> contrast.Contrast:
        """Why `answer` and not `other` at the mask_index-th [MASK] (contrast.py): integrated gradients and blank-out
        of logit(answer) - logit(other) there, one score per token; `.to_frame()` is the table."""
        encoding = text.encoding if isinstance(text, Run) else self._encoding(text, text_pair)
        return contrast.contrast(self.model, self.tokenizer, encoding, answer, other, mask_index, steps, baseline,
                                 report=report)

    def faithfulness_curves(self, text: str | Run, metric=None, text_pair: str | None = None, removal: str = "mask",
                            steps: int = 50, report=None, known=None) -> curves.FaithfulnessCurves:
        """Deletion and insertion curves of `metric` (two answers at the [MASK]: their logit difference; one answer:
        its log P; "is_next"; None: the top prediction's log P) for attention, rollout, attention flow, value zeroing,
        integrated gradients and blank-out, removed tokens replaced by `removal` ("mask" or "pad"); `.aopc` is the
        table of areas, `.to_frame()` the curves (curves.py); known: scores already computed for the same metric (a
        Contrast's `scores()`), not computed again."""
        encoding = text.encoding if isinstance(text, Run) else self._encoding(text, text_pair)
        return curves.faithfulness_curves(self.model, self.tokenizer, encoding, metric, removal, steps, report=report,
                                          known=known)

    def patch(self, clean: str | Run | Encoding, corrupted: str | Run | Encoding, metric=("are", "is"),
              over: str = "heads", direction: str = "denoise"):
        """Activation patching (causal.patching): how much of the clean metric each component restores into the
        corrupted run (direction "denoise"), or keeps when the corrupted one is put into the clean run ("noise"), per
        layer and head, position, or attention / feed-forward output: a frame of fractions, 0 = corrupted, 1 =
        clean. `metric`: two answers at the [MASK] (their logit difference), or "is_next"."""
        encodings = [x.encoding if isinstance(x, Run) else self._encoding(x) for x in (clean, corrupted)]
        return causal.patch(self.model, self.tokenizer, *encodings, metric=metric, over=over, direction=direction)

    def value_zeroing(self, text: str | Run | Encoding, text_pair: str | None = None):
        """(L, T, T) value zeroing (causal.value_zeroing, Mohebbi et al. 2023): per layer, how much each token's output
        changes when another token's value vector is zeroed, rows summing to 1; `causal.aggregate` multiplies them
        down the layers."""
        encoding = text.encoding if isinstance(text, Run) else self._encoding(text, text_pair)
        return causal.value_zeroing(self.model, encoding)

    def _model_for(self, target) -> BertPreTrainedModel:
        """The fine-tuned head model for a task target (it shares the encoder), the pretraining model otherwise."""
        if isinstance(target, Target) and target.kind in TASK_TARGETS:
            self._require_task()
            return self.task_model
        return self.model

    def blank_out(self, text: str, text_pair: str | None = None, mask_index: int = 0, token=None,
                  baseline: str = "pad", target: str = "mask", max_passes: int | None = None):
        """Leave-one-token-out importance for the same targets as `attribute`; max_passes: at most that many
        passes, a long input blanked in runs of whole words (attribution.blank_out_spans)."""
        return attribution.blank_out(self.model, self.tokenizer, self._encoding(text, text_pair), mask_index, token,
                                     baseline, target, max_passes=max_passes)

    def faithfulness(self, text: str, text_pair: str | None = None, mask_index: int = 0, token=None, steps: int = 50,
                     baseline: str = "pad", target: str = "mask", report=None, max_passes: int | None = None):
        """Spearman correlations of attention, rollout and value-weighted attention with integrated gradients and
        blank-out, for one input and target. report: told the work done as it goes, in forward passes
        (attribution.faithfulness_passes); max_passes: blank-out's bound, as in `blank_out`."""
        return attribution.faithfulness(self.model, self.tokenizer, self._encoding(text, text_pair), mask_index,
                                        token, steps, baseline, target, report=report, max_passes=max_passes)

    def export_static(self, folder: str | Path, lesson: str | Path | None = None, weights: str = "float16",
                      shipped_lessons: bool = True) -> Path:
        """Write a folder whose page runs this model in the browser (bertviz_app.static): the views, fill-mask and
        next sentence, for any static host or file://, the shipped lessons (unless `shipped_lessons` is false) and
        the lesson file `lesson` (saved from the app) if given;
        `weights` "float16" (exact for the shipped model), "float32" or "int8" (a quarter of float32's bytes, not
        faithful: static/onnx_export.py). Needs both pretraining heads."""
        from .static import export_static  # onnx is an export extra: imported only here

        return export_static(folder, self.model, self.tokenizer, self.name, lesson=lesson, weights=weights,
                             shipped_lessons=shipped_lessons)

    def _forward(self, encoding: Encoding) -> PlottedRun:
        return self._forward_many([encoding])[0]

    @torch.inference_mode()
    def _forward_many(self, encodings: list[Encoding]) -> list[PlottedRun]:
        """One forward pass over `encodings`, padded to the longest (the attention mask keeps every input's numbers
        its own: equal to a pass of that input alone within float32 rounding), and a Run of each."""
        start = time.perf_counter()
        T = max(map(len, encodings))

        def padded(rows, pad: int = 0) -> torch.Tensor:
            return torch.tensor([list(row) + [pad] * (T - len(row)) for row in rows], device=self.device)  # (B, T)

        # RoBERTa counts positions from its padding id: padding must carry it (and it never matters elsewhere)
        ids = padded([e.ids for e in encodings], self.config.pad_token_id or 0)
        mask = padded([[1] * len(e) for e in encodings])  # (B, T): 1 for tokens, 0 for padding
        # The encoder only: masked-LM predictions (a (T, vocab) product) are computed where a view asks for them
        # (masked_lm.py), not for every new input.
        out = self._analysis_pass()(ids, padded([e.segment_ids for e in encodings]), mask)
        seconds = time.perf_counter() - start
        return [self._run_of(out, b, encoding, seconds) for b, encoding in enumerate(encodings)]

    def warm_up(self) -> None:
        """Trace the pass of new inputs now rather than at the first input: a server does it before it serves."""
        self._analysis_pass()

    def _analysis_pass(self) -> TracedPass:
        """The model's pass for new inputs (`serving.analysis_pass`: traced once, at the first), under a lock of its
        own: the cache's stays free while it traces."""
        with self._pass_lock:
            if self._pass is None:
                self._pass = analysis_pass(self.model.bert, Run.POINTS)
            return self._pass

    def _run_of(self, out, b: int, encoding: Encoding, seconds: float) -> PlottedRun:
        """The Run of input `b` of a (padded) batch's output."""
        run = PlottedRun.from_output(out, b, encoding, self.name, self.config, getattr(torch, self.cache_dtype),
                                     self.tables, seconds)
        if self.model.has_nsp_head:
            run.is_next_probability = masked_lm.is_next_probability(self.model, out.pooler_output[b:b + 1])
        run.explorer = weakref.ref(self)  # what run.patch asks; weak: the explorer's cache holds the Run
        return run


def layer_weight_change(before: torch.nn.Module, after: torch.nn.Module) -> np.ndarray:
    """(L,) ||after - before|| / ||before|| over each layer's parameters of two encoders of the same shapes."""
    if [p.shape for p in before.parameters()] != [p.shape for p in after.parameters()]:
        raise ValueError("the two models differ in shape (layers, heads or sizes), so their weights cannot be "
                         "compared layer by layer")
    change = []
    with torch.no_grad():
        for index in range(before.config.num_hidden_layers):
            pairs = zip(before.layer_module(index).parameters(), after.layer_module(index).parameters())
            moved, size = zip(*(((b.float() - a.float()).square().sum(), a.float().square().sum()) for a, b in pairs))
            change.append(float((sum(moved) / sum(size)).sqrt()))
    return np.asarray(change, dtype=np.float32)


def _model_tables(model: BertForPreTraining) -> ModelTables:
    """The position table as positions 0, 1, ... of an input read it (RoBERTa's starts past its padding offset), and
    the segment table; a family without one gets a single row of zeros (its notes say so in words)."""
    emb = model.bert.embeddings
    width = model.config.embedding_width

    def table(embedding, skip: int = 0) -> np.ndarray:
        if embedding is None:
            return np.zeros((1, width), dtype=np.float32)
        return embedding.weight[skip:].detach().float().cpu().numpy()

    return ModelTables(table(emb.position_embeddings, model.config.position_offset), table(emb.token_type_embeddings),
                       ModelScoreTerms(model.bert.encoder))


class ModelScoreTerms:
    """`run.ScoreTerms` of a model: one layer's score terms from a Run's queries and keys, computed by the layer's own
    `score_terms` (model/bert.py), the function its forward pass adds up. Nothing here knows a family: the names and
    arrays are the model's. A few milliseconds a layer; a Run asks only when the query/key view or its arithmetic
    is wanted, so no Run keeps (L, terms, h, T, T) floats it may never show."""

    def __init__(self, encoder):
        self._encoder = encoder
        self.scale = float(encoder.layer_module(0).attention.self.scale)

    @torch.inference_mode()
    def __call__(self, layer: int, queries: np.ndarray, keys: np.ndarray) -> dict[str, np.ndarray]:
        device = next(self._encoder.parameters()).device
        attention = self._encoder.layer_module(layer).attention.self
        dtype = attention.query.weight.dtype
        # (1, h, T, d) each: the Run's float32 queries and keys, as the pass computed them
        q, k = (torch.from_numpy(np.ascontiguousarray(x)).to(device, dtype)[None] for x in (queries, keys))
        rel = self._encoder.relative_positions(q.shape[2], device)
        terms = attention.score_terms(q, k, rel)
        return {name: term[0].float().cpu().numpy() for name, term in terms.items()}  # (h, T, T) each


def release_freed_memory() -> None:
    """Ask the C allocator to give freed memory back to the system (glibc's malloc_trim; elsewhere nothing happens).
    A Run's arrays of a few MB (hidden states, queries, keys at 512 tokens) come from glibc's heaps, one per thread
    that allocated them, and what an evicted Run frees there stays with the process (a server's memory with and
    without the trim: docs/ARCHITECTURE.md, "Measured"). Only evictions pay for it (a trim, and fresh pages for the
    next pass), and only once they have freed RELEASE_EVERY_BYTES: a long input's Run alone is more."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc
        return None


_MALLOC_TRIM = _malloc_trim()


def load(model: str | Path | None = None, device: str | torch.device = "auto", max_tokens: int | None = None,
         name: str | None = None, cache_mb: float = DEFAULT_CACHE_MB, cache_dtype: str = "float32") -> Explorer:
    """Load a BERT checkpoint with its tokenizer onto `device` ('auto', 'cpu', 'cuda'). `model`: None for the default
    model, a built-in name (`catalog.builtin_models()`: 'minilm-l6-mlm-nsp-en', 'all-MiniLM-L6-v2'), a Hugging Face
    format folder, or a hub id. `cache_mb`: what the cached Runs may weigh together; `cache_dtype`: "float32" (exact,
    the default) or "float16" for the attention the Runs keep (see Explorer)."""
    if cache_dtype not in CACHE_DTYPES:  # before reading any weights
        raise ValueError(f"cache_dtype must be one of {', '.join(CACHE_DTYPES)}, got {cache_dtype!r}")
    start = time.perf_counter()
    resolved_device = resolve_device(device)  # fail on a bad device before reading any weights
    try:
        source = catalog.resolve(model)
    except catalog.MissingModelError as err:
        raise CheckpointError(str(err)) from None
    folder = resolve_source(source)
    head = task_head(folder)
    task_model = None
    if head is None:
        bert, report = load_model(folder)
    else:
        task_model, report = load_model(folder, head.model_class)
        if report.initialized:
            raise CheckpointError(f"{report.folder} says it is a {type(task_model).__name__} but lacks the weights "
                                  f"of {', '.join(report.initialized)}; the checkpoint is incomplete")
        # The views read a BertForPreTraining: one without heads, around the fine-tuned encoder itself (shared).
        bert = BertForPreTraining(task_model.config, mlm_head=False, nsp_head=False,
                                  pooler=task_model.bert.pooler is not None)
        bert.bert = task_model.bert
        bert.eval()
    try:
        tokenizer = load_tokenizer(report.folder, bert.config.model_type, max_tokens=bert.config.max_tokens)
    except TokenizerError as err:
        raise CheckpointError(str(err)) from None
    if tokenizer.vocab_size > bert.config.vocab_size:
        # A smaller tokenizer is fine (DeBERTa v3's config has spare rows); a larger one would index past the table.
        raise CheckpointError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model's vocabulary only "
                              f"{bert.config.vocab_size}; the tokenizer files belong to another model")
    display = name or str(model if model is not None else catalog.default_model_name())
    explorer = Explorer(bert, tokenizer, resolved_device, display, max_tokens=max_tokens, cache_mb=cache_mb,
                        cache_dtype=cache_dtype, task_model=task_model, task=head)
    if resolved_device.type == "cuda":
        # The first forward pass on a GPU loads kernels and creates cuBLAS handles (about a second). Pay for it here,
        # so that it is not the first visitor, and everyone queued behind them, who waits.
        explorer._forward(tokenizer.encode("Warm up."))
        torch.cuda.synchronize(resolved_device)
    explorer.folder = Path(report.folder)
    explorer.load_seconds = time.perf_counter() - start
    explorer.folder = Path(report.folder)
    return explorer
