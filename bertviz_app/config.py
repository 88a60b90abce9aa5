"""BERT hyper-parameters: one typed dataclass, named presets, and the adapter from Hugging Face `config.json`."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

# Activation names as they appear in Hugging Face configs; model.py maps each to a function.
SUPPORTED_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish", "tanh")
# How transformers' BertForSequenceClassification chooses its loss; None infers it from num_labels and the labels.
PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")


class ConfigError(ValueError):
    """A configuration that this BERT cannot represent; the message says what to change."""


@dataclass
class BertConfig:
    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072  # width of the feed-forward block, usually 4 x hidden_size
    hidden_act: str = "gelu"  # "gelu" is the exact erf form used by the original BERT
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512  # learned positions: also the longest input the model accepts
    type_vocab_size: int = 2  # number of segment ids; 2 for sentence A / sentence B
    layer_norm_eps: float = 1e-12
    initializer_range: float = 0.02
    pad_token_id: int = 0
    num_labels: int = 2  # only read by the fine-tuning heads
    classifier_dropout: float | None = None  # None: fall back to hidden_dropout_prob, as transformers does
    problem_type: str | None = None  # sequence classification loss; None: regression if num_labels == 1, else by labels
    # The MLM decoder reuses the word-embedding matrix. A few checkpoints train their own (config.json says false);
    # then the decoder weight is a tensor of its own in the checkpoint, and loading must not replace it.
    tie_word_embeddings: bool = True

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        positive = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size", "num_labels")
        for name in positive:
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})")
        if not isinstance(self.hidden_act, str) or self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ConfigError(
                f"hidden_act {self.hidden_act!r} is not supported; use one of {', '.join(SUPPORTED_ACTIVATIONS)}")
        if not _is_number(self.layer_norm_eps) or not self.layer_norm_eps > 0:
            raise ConfigError(f"layer_norm_eps must be a positive number, got {self.layer_norm_eps!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"):
            value = getattr(self, name)
            if value is None and name == "classifier_dropout":
                continue
            if not _is_number(value) or not 0 <= value <= 1:
                raise ConfigError(f"{name} must be a probability between 0 and 1, got {value!r}")
        # nn.Embedding would only assert this, with a message that names neither the field nor the fix.
        if self.pad_token_id is not None and (not _is_int(self.pad_token_id)
                                              or not 0 <= self.pad_token_id < self.vocab_size):
            raise ConfigError(f"pad_token_id must be an index into the vocabulary (0 to {self.vocab_size - 1}) "
                              f"or null, got {self.pad_token_id!r}")
        if self.problem_type is not None and self.problem_type not in PROBLEM_TYPES:
            raise ConfigError(f"problem_type {self.problem_type!r} is not supported; use one of "
                              f"{', '.join(PROBLEM_TYPES)} or leave it out")
        if not isinstance(self.tie_word_embeddings, bool):
            raise ConfigError(f"tie_word_embeddings must be true or false, got {self.tie_word_embeddings!r}")

    # --- presets -------------------------------------------------------------------------------
    @classmethod
    def preset(cls, name: str, **overrides) -> "BertConfig":
        """`tiny` (fast tests), `mini`, `base` (BERT-Base) or `large` (BERT-Large); keywords override fields."""
        try:
            fields = PRESETS[name]
        except KeyError:
            raise ConfigError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
        return cls(**{**fields, **overrides})

    # --- Hugging Face config.json ----------------------------------------------------------------
    @classmethod
    def from_hf_dict(cls, data: dict) -> "BertConfig":
        model_type = data.get("model_type", "bert")
        if model_type != "bert":
            raise ConfigError(
                f"this checkpoint is a {model_type!r} model, not BERT (model_type must be 'bert'); "
                "bertviz-app only loads BERT checkpoints")
        position_type = data.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ConfigError(
                f"position_embedding_type {position_type!r} is not supported; only learned absolute positions are")
        if data.get("is_decoder") or data.get("add_cross_attention"):
            raise ConfigError("decoder/cross-attention BERT variants are not supported; use an encoder checkpoint")
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known and k != "num_labels"}
        if "id2label" in data:  # transformers stores the label count this way
            kwargs["num_labels"] = len(data["id2label"])
        elif "num_labels" in data:
            kwargs["num_labels"] = data["num_labels"]
        return cls(**kwargs)

    @classmethod
    def from_json_file(cls, path: str | Path) -> "BertConfig":
        path = Path(path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(f"no config.json at {path}") from None
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise ConfigError(f"{path} is not valid JSON ({err}); re-save the checkpoint's config.json") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path} must hold a JSON object")
        return cls.from_hf_dict(data)

    def to_hf_dict(self, architectures: list[str] | None = None) -> dict:
        data = dataclasses.asdict(self)
        num_labels = data.pop("num_labels")
        if data["problem_type"] is None:  # transformers leaves it out too
            del data["problem_type"]
        data["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
        data["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
        data.update(model_type="bert", position_embedding_type="absolute",
                    architectures=architectures or ["BertForPreTraining"])
        return data


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


PRESETS: dict[str, dict] = {
    # Small enough that a full forward and backward pass takes milliseconds; for tests.
    "tiny": dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64),
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}
