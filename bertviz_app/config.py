"""BERT hyper-parameters: one typed dataclass, named presets, and the adapter from Hugging Face `config.json`."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

# Activation names as they appear in Hugging Face configs; model.py maps each to a function.
SUPPORTED_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish", "tanh")


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

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def validate(self) -> None:
        positive = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size")
        for name in positive:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ConfigError(f"{name} must be a positive integer, got {value!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})")
        if self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ConfigError(
                f"hidden_act {self.hidden_act!r} is not supported; use one of {', '.join(SUPPORTED_ACTIVATIONS)}")
        if not self.layer_norm_eps > 0:
            raise ConfigError(f"layer_norm_eps must be positive, got {self.layer_norm_eps!r}")

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
        data["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
        data["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
        data.update(model_type="bert", position_embedding_type="absolute",
                    architectures=architectures or ["BertForPreTraining"])
        return data


PRESETS: dict[str, dict] = {
    # Small enough that a full forward and backward pass takes milliseconds; for tests.
    "tiny": dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64),
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}
