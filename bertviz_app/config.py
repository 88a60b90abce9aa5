"""BERT hyper-parameters: one typed dataclass, named presets, and the adapter from Hugging Face `config.json`."""

from __future__ import annotations

import dataclasses
import reprlib
from dataclasses import dataclass
from pathlib import Path

from .files import read_json

# Activation names as they appear in Hugging Face configs; model.py maps each to a function.
SUPPORTED_ACTIVATIONS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "relu", "silu", "swish", "tanh")
# How transformers' BertForSequenceClassification chooses its loss; None infers it from num_labels and the labels.
PROBLEM_TYPES = ("regression", "single_label_classification", "multi_label_classification")
# Upper bounds on every size, far above any published BERT, so that a typo or a hostile config.json fails here in
# microseconds instead of after minutes of allocating. Each leaves several times the largest real value we know.
SIZE_LIMITS = {
    "vocab_size": 1_000_000,  # multilingual BERT has 119,547 tokens, LaBSE (a BERT) 501,153
    "hidden_size": 16_384,  # BERT-Base 768, BERT-Large 1024, Megatron-BERT 3.9B 2560
    "num_hidden_layers": 256,  # BERT-Large 24, Megatron-BERT 3.9B 48
    "num_attention_heads": 256,  # BERT-Large 16, Megatron-BERT 3.9B 40
    "intermediate_size": 65_536,  # 4 x hidden_size in BERT: room for 4 x the hidden_size limit
    "max_position_embeddings": 65_536,  # BERT 512; long-input BERTs 4096 or 8192
    "type_vocab_size": 1024,  # 2 (sentence A / sentence B) in BERT; a row each, so a generous bound costs nothing
    "num_labels": 100_000,  # classifiers have 2 to a few thousand classes; this is extreme multi-label territory
}
# Parameters of the largest model a config may describe: 16 GB in float32, the dtype we load into. The largest
# published BERT-style encoder (Megatron-BERT, 3.9 billion) fits; a config that asks for more is a mistake.
MAX_PARAMETERS = 4_000_000_000


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
                raise ConfigError(f"{name} must be a positive integer, got {_show(value)}")
            if value > SIZE_LIMITS[name]:
                raise ConfigError(f"{name} is {_show(value)}, above the limit of {SIZE_LIMITS[name]:,} (far above any "
                                  f"real BERT); check {name} in config.json")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})")
        if not isinstance(self.hidden_act, str) or self.hidden_act not in SUPPORTED_ACTIVATIONS:
            raise ConfigError(f"hidden_act {_show(self.hidden_act)} is not supported; use one of "
                              f"{', '.join(SUPPORTED_ACTIVATIONS)}")
        if not _is_number(self.layer_norm_eps) or not self.layer_norm_eps > 0:
            raise ConfigError(f"layer_norm_eps must be a positive number, got {_show(self.layer_norm_eps)}")
        if not self.layer_norm_eps < 1:  # an epsilon this large swamps the variance it protects (BERT: 1e-12)
            raise ConfigError(f"layer_norm_eps must be below 1, got {_show(self.layer_norm_eps)}")
        if not _is_number(self.initializer_range) or not 0 < self.initializer_range <= 1:
            raise ConfigError("initializer_range (the standard deviation of new weights, 0.02 in BERT) must be a "
                              f"number above 0 and at most 1, got {_show(self.initializer_range)}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"):
            value = getattr(self, name)
            if value is None and name == "classifier_dropout":
                continue
            if not _is_number(value) or not 0 <= value <= 1:
                raise ConfigError(f"{name} must be a probability between 0 and 1, got {_show(value)}")
        parameters = self.max_num_parameters()
        if parameters > MAX_PARAMETERS:
            raise ConfigError(
                f"this config describes a model of up to {parameters / 1e9:,.1f} billion parameters "
                f"({parameters * 4 / 1e9:,.0f} GB in float32), above the limit of {MAX_PARAMETERS / 1e9:g} billion; "
                "check num_hidden_layers, hidden_size, intermediate_size and vocab_size in config.json")
        # nn.Embedding would only assert this, with a message that names neither the field nor the fix.
        if self.pad_token_id is not None and (not _is_int(self.pad_token_id)
                                              or not 0 <= self.pad_token_id < self.vocab_size):
            raise ConfigError(f"pad_token_id must be an index into the vocabulary (0 to {self.vocab_size - 1}) "
                              f"or null, got {_show(self.pad_token_id)}")
        if self.problem_type is not None and self.problem_type not in PROBLEM_TYPES:
            raise ConfigError(f"problem_type {_show(self.problem_type)} is not supported; use one of "
                              f"{', '.join(PROBLEM_TYPES)} or leave it out")
        if not isinstance(self.tie_word_embeddings, bool):
            raise ConfigError(f"tie_word_embeddings must be true or false, got {_show(self.tie_word_embeddings)}")

    def max_num_parameters(self) -> int:
        """Parameters of the largest model this config builds (encoder, pooler, masked-LM head with an untied decoder,
        next-sentence head and a classifier), computed without allocating anything; tests/test_config.py checks it
        against the models themselves."""
        h, i, v = self.hidden_size, self.intermediate_size, self.vocab_size
        layer_norm = 2 * h
        embeddings = (v + self.max_position_embeddings + self.type_vocab_size) * h + layer_norm
        layer = 4 * (h * h + h) + layer_norm + (h * i + i) + (i * h + h) + layer_norm  # q, k, v, out; the MLP
        pooler = h * h + h
        mlm = (h * h + h) + layer_norm + v + (0 if self.tie_word_embeddings else v * h)  # transform, bias, decoder
        heads = mlm + (2 * h + 2) + (self.num_labels * h + self.num_labels)  # + next-sentence + classifier
        return embeddings + self.num_hidden_layers * layer + pooler + heads

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
        if not isinstance(data, dict):
            raise ConfigError(f"a config must be a JSON object (a dict), got {type(data).__name__}")
        model_type = data.get("model_type", "bert")
        if model_type != "bert":
            raise ConfigError(
                f"this checkpoint is a {_show(model_type)} model, not BERT (model_type must be 'bert'); "
                "bertviz-app only loads BERT checkpoints")
        position_type = data.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ConfigError(f"position_embedding_type {_show(position_type)} is not supported; only learned "
                              "absolute positions are")
        if data.get("is_decoder") or data.get("add_cross_attention"):
            raise ConfigError("decoder/cross-attention BERT variants are not supported; use an encoder checkpoint")
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known and k != "num_labels"}
        if "id2label" in data:  # transformers stores the label count this way
            if not isinstance(data["id2label"], dict):
                raise ConfigError(f"id2label must be a JSON object (label id -> name), got {_show(data['id2label'])}")
            kwargs["num_labels"] = len(data["id2label"])
        elif "num_labels" in data:
            kwargs["num_labels"] = data["num_labels"]
        return cls(**kwargs)

    @classmethod
    def from_json_file(cls, path: str | Path) -> "BertConfig":
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"no config.json at {path}")
        data = read_json(path, ConfigError, advice="re-save the checkpoint's config.json")
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


def _show(value) -> str:
    """repr() cut to a readable length: a config value may be a megabyte-long string or a 4000-digit number."""
    try:
        return reprlib.repr(value)
    except ValueError:  # an int too long to print (Python's 4300-digit limit)
        return "an integer of thousands of digits"


PRESETS: dict[str, dict] = {
    # Small enough that a full forward and backward pass takes milliseconds; for tests.
    "tiny": dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=64),
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}
