"""BERT hyper-parameters: one typed dataclass, named presets, and the adapter from Hugging Face `config.json`.

The BERT family (RoBERTa, DistilBERT, ALBERT, ELECTRA, DeBERTa v2/v3) is read into the same dataclass: each member is
BERT with a few named differences (narrower embeddings, positions counted from an offset, shared layers, relative
attention), each a field below, so the model has one encoder and reads the fields."""

from __future__ import annotations

import dataclasses
import reprlib
from dataclasses import dataclass
from pathlib import Path

from .files import read_json

# Activation names as they appear in Hugging Face configs; model/bert.py maps each to a function.
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
# The same for the sizes only the family has.
FAMILY_LIMITS = {
    "embedding_size": 16_384,  # ALBERT 128, ELECTRA-small 128: never wider than the hidden size in practice
    "num_hidden_groups": 256,  # ALBERT: 1 (every layer shares one set of weights)
    "position_buckets": 65_536,  # DeBERTa v3: 256 buckets of relative distance
    "max_relative_positions": 65_536,  # DeBERTa: up to max_position_embeddings
}
# The model_type values of config.json that we read (transformers' names), each with a word for people.
FAMILIES = {"bert": "BERT", "roberta": "RoBERTa", "distilbert": "DistilBERT", "albert": "ALBERT",
            "electra": "ELECTRA", "deberta-v2": "DeBERTa v2/v3"}
# DeBERTa's two position terms of the attention score, as config.json spells them.
POSITION_TERMS = ("c2p", "p2c")
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
    # --- the family's differences from BERT (BERT's values by default) ---
    model_type: str = "bert"  # one of FAMILIES; checkpoint keys are renamed into BERT's layout by family.py
    embedding_size: int | None = None  # ALBERT, ELECTRA: embeddings this wide, projected up to hidden_size; None = H
    num_hidden_groups: int | None = None  # ALBERT: layers share this many weight sets; None = each its own
    position_offset: int = 0  # RoBERTa: positions count from pad_token_id + 1 (padding sits at pad_token_id)
    position_biased_input: bool = True  # False (DeBERTa v3): no absolute position embedding is added to the input
    head_act: str | None = None  # the masked-LM head's activation where the family fixes it (RoBERTa, ELECTRA: gelu)
    relative_attention: bool = False  # DeBERTa: scores gain content-to-position and position-to-content terms
    pos_att_type: tuple[str, ...] = ()  # DeBERTa: which of POSITION_TERMS the score has
    position_buckets: int = -1  # DeBERTa: relative distances in this many log buckets; -1 = exact distances
    max_relative_positions: int = -1  # DeBERTa: -1 = max_position_embeddings
    norm_rel_ebd: bool = False  # DeBERTa: LayerNorm over the relative position embeddings

    def __post_init__(self) -> None:
        self.validate()

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def embedding_width(self) -> int:
        """Width of the embedding tables (and of the masked-LM decoder's input)."""
        return self.embedding_size or self.hidden_size

    @property
    def projects_embeddings(self) -> bool:
        """Whether a linear layer takes the embeddings up to the hidden size: ALBERT always has one, ELECTRA when its
        embeddings are narrower."""
        return self.model_type == "albert" or self.embedding_width != self.hidden_size

    @property
    def num_weight_layers(self) -> int:
        """Distinct layers in the checkpoint: num_hidden_groups for ALBERT, one per layer otherwise."""
        return self.num_hidden_groups or self.num_hidden_layers

    def weights_of_layer(self, index: int) -> int:
        """Which set of weights layer `index` applies (ALBERT spreads its groups evenly over the stack)."""
        if self.num_hidden_groups is None:
            return index
        return int(index / (self.num_hidden_layers / self.num_hidden_groups))

    @property
    def max_tokens(self) -> int:
        """The longest input: RoBERTa's first positions are taken by its padding offset."""
        return self.max_position_embeddings - self.position_offset

    @property
    def relative_span(self) -> int:
        """DeBERTa: relative position embeddings on each side of zero (the table has twice as many rows)."""
        if self.position_buckets > 0:
            return self.position_buckets
        return self.max_relative_positions if self.max_relative_positions > 0 else self.max_position_embeddings

    @property
    def family(self) -> str:
        return FAMILIES.get(self.model_type, self.model_type)

    def validate(self) -> None:
        if not isinstance(self.model_type, str) or self.model_type not in FAMILIES:
            raise ConfigError(f"model_type {_show(self.model_type)} is not one we read; bertviz-app reads "
                              f"{', '.join(FAMILIES)}")
        positive = ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "num_labels")
        # type_vocab_size 0: no segment embedding at all (DistilBERT, DeBERTa); the others may be left out (None).
        optional = {"type_vocab_size": 0, "embedding_size": None, "num_hidden_groups": None}
        for name in (*positive, *optional):
            value = getattr(self, name)
            if name in optional and value == optional[name] and (value is None or _is_int(value)):
                continue
            if not _is_int(value) or value <= 0:
                what = "a positive integer" if name in positive else f"a positive integer or {optional[name]}"
                raise ConfigError(f"{name} must be {what}, got {_show(value)}")
            limit = SIZE_LIMITS.get(name) or FAMILY_LIMITS[name]
            if value > limit:
                raise ConfigError(f"{name} is {_show(value)}, above the limit of {limit:,} (far above any "
                                  f"real BERT); check {name} in config.json")
        if self.hidden_size % self.num_attention_heads:
            raise ConfigError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_attention_heads "
                f"({self.num_attention_heads})")
        for name in ("hidden_act", "head_act"):
            value = getattr(self, name)
            if (value is not None or name == "hidden_act") and (not isinstance(value, str)
                                                                or value not in SUPPORTED_ACTIVATIONS):
                raise ConfigError(f"{name} {_show(value)} is not supported; use one of "
                                  f"{', '.join(SUPPORTED_ACTIVATIONS)}")
        self._validate_family()
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

    def _validate_family(self) -> None:
        if self.num_hidden_groups is not None and self.num_hidden_layers % self.num_hidden_groups:
            raise ConfigError(f"num_hidden_groups ({self.num_hidden_groups}) must divide num_hidden_layers "
                              f"({self.num_hidden_layers}): ALBERT shares each group's weights over equal runs of layers")
        if not _is_int(self.position_offset) or not 0 <= self.position_offset < self.max_position_embeddings:
            raise ConfigError(f"position_offset must be an integer from 0 below max_position_embeddings, got "
                              f"{_show(self.position_offset)}")
        for name in ("position_biased_input", "relative_attention", "norm_rel_ebd"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {_show(getattr(self, name))}")
        if not isinstance(self.pos_att_type, tuple) or any(t not in POSITION_TERMS for t in self.pos_att_type):
            raise ConfigError(f"pos_att_type must list some of {', '.join(POSITION_TERMS)}, got "
                              f"{_show(self.pos_att_type)}")
        for name in ("position_buckets", "max_relative_positions"):
            value = getattr(self, name)
            if not _is_int(value) or not (value == -1 or 0 < value <= FAMILY_LIMITS[name]):
                raise ConfigError(f"{name} must be -1 (off) or a positive integer up to {FAMILY_LIMITS[name]:,}, got "
                                  f"{_show(value)}")
        if self.position_buckets > 0 and self.relative_attention:
            if self.position_buckets < 4 or (self.max_relative_positions != -1
                                             and self.max_relative_positions <= self.position_buckets // 2):
                # The log-bucket formula divides by log((max_relative_positions - 1) / (buckets / 2)).
                raise ConfigError("position_buckets must be at least 4, and max_relative_positions (when set) above "
                                  f"half of it; got {self.position_buckets} and {self.max_relative_positions}")
        if not self.position_biased_input and not self.relative_attention:
            raise ConfigError("a model with neither absolute positions (position_biased_input) nor relative attention "
                              "cannot tell word order; check config.json")
        if self.model_type == "deberta-v2" and self.embedding_width != self.hidden_size:
            raise ConfigError("a DeBERTa with embedding_size different from hidden_size is not supported (no "
                              "published v2/v3 checkpoint has one)")

    def max_num_parameters(self) -> int:
        """Parameters of the largest model this config builds (encoder, pooler, masked-LM head with an untied decoder,
        next-sentence head and a classifier), computed without allocating anything; tests/test_config.py checks it
        against the models themselves."""
        h, i, v, e = self.hidden_size, self.intermediate_size, self.vocab_size, self.embedding_width
        layer_norm = 2 * h
        embeddings = (v + self.max_position_embeddings + self.type_vocab_size) * e + 2 * e
        project = e * h + h if self.projects_embeddings else 0  # ALBERT, ELECTRA: embeddings up to the hidden size
        relative = (2 * self.relative_span * h + layer_norm) if self.relative_attention else 0  # DeBERTa
        layer = 4 * (h * h + h) + layer_norm + (h * i + i) + (i * h + h) + layer_norm  # q, k, v, out; the MLP
        pooler = h * h + h
        mlm = (h * e + e) + 2 * e + v + (0 if self.tie_word_embeddings else v * e)  # transform, bias, decoder
        discriminator = h * h + h + h + 1 if self.model_type == "electra" else 0  # the replaced-token head
        heads = mlm + (2 * h + 2) + discriminator + (self.num_labels * h + self.num_labels)  # + NSP + classifier
        return embeddings + project + relative + self.num_weight_layers * layer + pooler + heads

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
        if not isinstance(model_type, str) or model_type not in FAMILIES:
            raise ConfigError(
                f"this checkpoint is a {_show(model_type)} model; bertviz-app reads BERT and its family, whose "
                f"config.json says model_type {', '.join(repr(t) for t in FAMILIES)}")
        if data.get("is_decoder") or data.get("add_cross_attention"):
            raise ConfigError("decoder/cross-attention BERT variants are not supported; use an encoder checkpoint")
        data = _FAMILY_ADAPTERS.get(model_type, _bert_fields)(data)
        position_type = data.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ConfigError(f"position_embedding_type {_show(position_type)} is not supported; only learned "
                              "absolute positions are")
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in known and k != "num_labels"}
        kwargs["model_type"] = model_type
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
        if self.model_type != "bert":
            raise ConfigError(f"saving writes BERT checkpoints; this is a {self.family} model, whose own "
                              "checkpoint folder already holds its config.json")
        data = dataclasses.asdict(self)
        for name in FAMILY_FIELDS:  # BERT's values: transformers' BertConfig has no such fields
            data.pop(name)
        num_labels = data.pop("num_labels")
        if data["problem_type"] is None:  # transformers leaves it out too
            del data["problem_type"]
        data["id2label"] = {str(i): f"LABEL_{i}" for i in range(num_labels)}
        data["label2id"] = {f"LABEL_{i}": i for i in range(num_labels)}
        data.update(model_type="bert", position_embedding_type="absolute",
                    architectures=architectures or ["BertForPreTraining"])
        return data


# --- config.json of each family, brought to BertConfig's field names -------------------------------------------------
FAMILY_FIELDS = ("model_type", "embedding_size", "num_hidden_groups", "position_offset", "position_biased_input",
                 "head_act", "relative_attention", "pos_att_type", "position_buckets", "max_relative_positions",
                 "norm_rel_ebd")

# Which of FAMILY_FIELDS (beyond model_type) each member reads; the others keep BERT's values and mean nothing for it.
FAMILY_READS = {"bert": (), "roberta": ("position_offset", "head_act"), "distilbert": ("head_act",),
                "albert": ("embedding_size", "num_hidden_groups"), "electra": ("embedding_size", "head_act"),
                "deberta-v2": ("position_biased_input", "relative_attention", "pos_att_type", "position_buckets",
                               "max_relative_positions", "norm_rel_ebd")}
# Read only by DeBERTa's relative attention, so meaningless when relative_attention is off.
RELATIVE_FIELDS = ("pos_att_type", "position_buckets", "max_relative_positions", "norm_rel_ebd")
# Read only by a fine-tuned head.
HEAD_FIELDS = ("num_labels", "classifier_dropout", "problem_type")
# Every field in a few plain words, for the Model tab (a student's reading of the comments above).
FIELD_WORDS = {
    "vocab_size": "how many different word pieces the model knows",
    "hidden_size": "how many numbers describe each token inside the model",
    "num_hidden_layers": "how many layers the input passes through, one after another",
    "num_attention_heads": "how many attention heads each layer has",
    "intermediate_size": "width of each layer's feed-forward part (usually 4 × hidden_size)",
    "hidden_act": "the function that bends the feed-forward part's numbers (its activation)",
    "hidden_dropout_prob": "share of numbers switched off at random while training, against memorizing; "
                           "off while analyzing",
    "attention_probs_dropout_prob": "the same for attention weights: only while training",
    "max_position_embeddings": "how many positions the model learned: the longest input it takes",
    "type_vocab_size": "how many segments (sentence A, sentence B) it tells apart; 0: none",
    "layer_norm_eps": "a tiny number that keeps layer normalization from dividing by zero",
    "initializer_range": "how spread out the random weights of a new model are",
    "pad_token_id": "the token that fills short inputs up to a batch's length",
    "num_labels": "how many labels the fine-tuned head chooses among",
    "classifier_dropout": "the fine-tuned head's dropout while training; not set: hidden_dropout_prob",
    "problem_type": "how the fine-tuned head learned: one label, several labels, or a number; not set: from "
                    "num_labels",
    "tie_word_embeddings": "whether the masked-LM head scores words with the word-embedding table itself",
    "model_type": "which member of the BERT family this is (config.json's name)",
    "embedding_size": "width of the embedding tables, widened to hidden_size before the first layer",
    "num_hidden_groups": "how many sets of weights the layers take turns with (1: every layer is the same weights)",
    "position_offset": "positions count from this number (the first ones are kept for padding)",
    "position_biased_input": "whether each token gets a position embedding added (no: only distances tell order)",
    "head_act": "the activation of the masked-LM head",
    "relative_attention": "whether an attention score also depends on how far apart the two tokens are",
    "pos_att_type": "which distance terms the score adds: c2p (word to distance), p2c (distance to word)",
    "position_buckets": "distances grouped into this many buckets, finer near zero (-1: each distance its own)",
    "max_relative_positions": "the farthest distance told apart (-1: max_position_embeddings)",
    "norm_rel_ebd": "whether the distance embeddings are layer-normalized",
}


def fields_that_apply(config: BertConfig, head: bool) -> list[str]:
    """The fields `config`'s model reads, in the dataclass's order: BERT's, its family's own, DeBERTa's distance fields
    only with relative attention on, and the fine-tuned head's only when there is one (`head`)."""
    family = set(FAMILY_FIELDS) - {"model_type", *FAMILY_READS[config.model_type]}
    if not config.relative_attention:
        family |= set(RELATIVE_FIELDS)
    skip = family | (set() if head else set(HEAD_FIELDS))
    return [f.name for f in dataclasses.fields(config) if f.name not in skip]



def _bert_fields(data: dict) -> dict:
    """BERT's own config.json: the family's fields are not its to set."""
    return {k: v for k, v in data.items() if k not in FAMILY_FIELDS}


def _roberta(data: dict) -> dict:
    out = _bert_fields(data)
    pad = data.get("pad_token_id", 1)
    # Positions are counted from pad_token_id + 1 (transformers' create_position_ids_from_input_ids).
    out["position_offset"] = pad + 1 if _is_int(pad) else pad
    out["head_act"] = "gelu"  # RobertaLMHead applies gelu whatever hidden_act says
    return out


def _distilbert(data: dict) -> dict:
    names = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
             "hidden_dim": "intermediate_size", "activation": "hidden_act", "dropout": "hidden_dropout_prob",
             "attention_dropout": "attention_probs_dropout_prob"}
    out = {names.get(k, k): v for k, v in _bert_fields(data).items() if k not in names.values()}
    out.update(type_vocab_size=0, layer_norm_eps=1e-12)  # no segments; transformers fixes the epsilon
    out["head_act"] = out.get("hidden_act", "gelu")  # vocab_transform uses config.activation
    return out


def _albert(data: dict) -> dict:
    out = _bert_fields(data)
    inner = data.get("inner_group_num", 1)
    if inner != 1:
        raise ConfigError(f"inner_group_num {_show(inner)} is not supported; only ALBERTs with one layer per group "
                          "(every published checkpoint) are")
    out.update(embedding_size=data.get("embedding_size", 128), num_hidden_groups=data.get("num_hidden_groups", 1))
    out.setdefault("hidden_act", "gelu_new")
    return out


def _electra(data: dict) -> dict:
    out = _bert_fields(data)
    out.update(embedding_size=data.get("embedding_size", 128), head_act="gelu")  # the generator head's gelu
    return out


def _deberta_v2(data: dict) -> dict:
    out = _bert_fields(data)
    if data.get("conv_kernel_size", 0):
        raise ConfigError("DeBERTa's convolution layer (conv_kernel_size, DeBERTa v2 xlarge and xxlarge) is not "
                          "supported; DeBERTa v3 checkpoints have none")
    relative = data.get("relative_attention", False)
    if relative and not data.get("share_att_key", False):
        raise ConfigError("DeBERTa with separate position projections (share_att_key false) is not supported; "
                          "v2 and v3 checkpoints share them")
    head_size = data.get("attention_head_size")
    if head_size is not None and _is_int(data.get("hidden_size")) and _is_int(data.get("num_attention_heads")) \
            and head_size * data["num_attention_heads"] != data["hidden_size"]:
        raise ConfigError("attention_head_size x num_attention_heads must equal hidden_size")
    terms = data.get("pos_att_type") or ()
    if isinstance(terms, str):  # older configs: "p2c|c2p"
        terms = [t.strip() for t in terms.lower().split("|") if t.strip()]
    norm = data.get("norm_rel_ebd", "none")
    out.update(relative_attention=relative, pos_att_type=tuple(terms) if isinstance(terms, list) else terms,
               position_buckets=data.get("position_buckets", -1),
               max_relative_positions=data.get("max_relative_positions", -1),
               norm_rel_ebd="layer_norm" in [x.strip() for x in norm.lower().split("|")] if isinstance(norm, str)
               else norm, position_biased_input=data.get("position_biased_input", True),
               type_vocab_size=data.get("type_vocab_size", 0), layer_norm_eps=data.get("layer_norm_eps", 1e-7))
    if data.get("embedding_size") is not None:
        out["embedding_size"] = data["embedding_size"]
    return out


_FAMILY_ADAPTERS = {"roberta": _roberta, "distilbert": _distilbert, "albert": _albert, "electra": _electra,
                    "deberta-v2": _deberta_v2}


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
    # The Pretrain tab's: small enough to learn visibly on 2 CPU cores within a class period (README, "Pretraining
    # live, in class", has what it measured).
    "classroom": dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=4, intermediate_size=512,
                      max_position_embeddings=64),
    "mini": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
    "base": dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "large": dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}
