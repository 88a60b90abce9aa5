"""Hugging Face format checkpoints: a folder (or hub id) -> config + weights -> our model, and back.

Loading is strict: every key and every shape is compared with the model, and everything that does not fit is reported
in one message. Weights load with safetensors, or with `torch.load(weights_only=True)` for `pytorch_model.bin`, so a
checkpoint can never run code.

Nothing is allocated before the checkpoint is known to fit: config.json is bounded (config.py), then the weights'
shapes are read from the files' headers alone, and a config whose sizes contradict them is refused with the full
key/shape listing of a model built on the meta device (no memory). Only then are the tensors read and the model built.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor

from .config import BertConfig, ConfigError
from .family import to_bert_key
from .files import read_json, regular_file
from .model import (BertForPreTraining, BertForQuestionAnswering, BertForSequenceClassification,
                    BertForTokenClassification, BertModel, BertPreTrainedModel)

WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "pytorch_model.bin.index.json")
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# Keys that hold no weights of their own: buffers, and (unless config.tie_word_embeddings is False) the decoder that
# is tied to the word embeddings.
BUFFER_KEYS = ("bert.embeddings.position_ids", "bert.embeddings.token_type_ids")
TIED_DECODER_KEY = "cls.predictions.decoder.weight"
DERIVED_KEYS = (*BUFFER_KEYS, TIED_DECODER_KEY)
# Fine-tuning heads that may sit in a checkpoint; a model without them ignores them and says so.
HEAD_PREFIXES = {"cls.predictions.": "masked-LM head", "cls.seq_relationship.": "next-sentence head",
                 "cls.discriminator.": "replaced-token head",
                 "classifier.": "classification head", "qa_outputs.": "question-answering head"}
# What a fine-tuning model may start without: its head, and the pooler (absent from masked-LM checkpoints), both
# newly initialized and listed in the report, as transformers does.
INITIALIZABLE_PREFIXES = (*HEAD_PREFIXES, "bert.pooler.")
# Seconds to wait for the hub to answer before saying it cannot be reached (huggingface_hub waits forever by
# default, so a network that drops packets would hang the app).
HUB_TIMEOUT = 5.0


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message names the problem and what to do."""


@dataclass
class LoadReport:
    """What loading did, in words a user can read (`str(report)`)."""

    source: str
    folder: Path
    weights_file: str
    model_class: str
    num_tensors: int
    seconds: float = 0.0
    ignored: list[str] = field(default_factory=list)  # keys of heads this model does not have
    initialized: list[str] = field(default_factory=list)  # parameters the checkpoint lacked (new heads)
    absent_heads: list[str] = field(default_factory=list)  # e.g. "masked-LM head": views explain instead of guessing

    def __str__(self) -> str:
        lines = [f"loaded {self.num_tensors} tensors from {self.folder / self.weights_file} into {self.model_class} "
                 f"in {self.seconds:.2f} s"]
        if self.absent_heads:
            lines.append(f"the checkpoint has no {' and no '.join(self.absent_heads)}")
        if self.ignored:
            lines.append(f"ignored {len(self.ignored)} keys of heads this model does not use: "
                         + _abbreviate(self.ignored))
        if self.initialized:
            lines.append(f"newly initialized (train before use): {_abbreviate(self.initialized)}")
        return "\n".join(lines)


def _abbreviate(keys: list[str], limit: int = 8) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f", ... ({len(keys) - limit} more)" if len(keys) > limit else "")


# ------------------------------------------------------------------------------------------------------------------
# Finding the folder
# ------------------------------------------------------------------------------------------------------------------
def resolve_source(source: str | os.PathLike) -> Path:
    """A local folder as it is; anything shaped like a hub id (`bert-base-uncased`, `org/name`) through
    huggingface_hub. Offline, a hub id fails at once with a message that names the local-folder alternative."""
    text = os.fspath(source)
    path = Path(text).expanduser()
    if path.is_dir():
        return path
    if path.exists():
        raise CheckpointError(f"{path} is a file; give the folder that holds config.json and the weights")
    if not HUB_ID.match(text) or text.startswith(".") or text.endswith("/"):
        raise CheckpointError(f"no checkpoint folder at {path}; give a folder that holds config.json and "
                              "model.safetensors (or pytorch_model.bin)")
    return _download(text)


def _download(repo_id: str) -> Path:
    try:
        from huggingface_hub import HfApi, snapshot_download
        from huggingface_hub.utils import GatedRepoError, RepositoryNotFoundError
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency, but keep the message useful
        raise CheckpointError(f"no local folder {repo_id!r}, and huggingface_hub is not installed to fetch it "
                              "from the hub; pass a local folder instead") from None
    patterns = ["config.json", "*.safetensors", "model.safetensors.index.json", *TOKENIZER_FILES]
    try:  # the local cache first: no network, no waiting
        return Path(snapshot_download(repo_id, allow_patterns=patterns, local_files_only=True))
    except Exception:
        pass
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on"):
        raise CheckpointError(
            f"no local folder {repo_id!r}, and the Hugging Face hub is switched off here (HF_HUB_OFFLINE); "
            "download the checkpoint on a machine with internet and pass its local folder instead")
    # One bounded call first: it proves the hub answers (huggingface_hub's own calls have no timeout) and pins the
    # commit, so snapshot_download below does not ask again.
    try:
        revision = HfApi().repo_info(repo_id, timeout=HUB_TIMEOUT).sha
    except (RepositoryNotFoundError, GatedRepoError) as err:
        raise CheckpointError(
            f"no local folder {repo_id!r}, and the Hugging Face hub has no public model of that name "
            f"({type(err).__name__}); check the spelling, or pass the local folder of the checkpoint") from None
    except Exception as err:
        raise CheckpointError(
            f"no local folder {repo_id!r}, and the Hugging Face hub could not be reached ({type(err).__name__}); "
            "without internet, download the checkpoint elsewhere and pass its local folder instead") from None
    try:
        folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=patterns,
                                        etag_timeout=HUB_TIMEOUT))
        if not any((folder / name).exists() for name in WEIGHT_FILES):
            # Older repositories only have pytorch_model.bin; fetch it only when there is no safetensors file.
            folder = Path(snapshot_download(repo_id, revision=revision, allow_patterns=["pytorch_model.bin"],
                                            etag_timeout=HUB_TIMEOUT))
    except Exception as err:
        raise CheckpointError(
            f"could not download {repo_id!r} from the Hugging Face hub ({type(err).__name__}); try again, or "
            "download the checkpoint elsewhere and pass its local folder instead") from None
    return folder


# ------------------------------------------------------------------------------------------------------------------
# Reading weights
# ------------------------------------------------------------------------------------------------------------------
def read_state_dict(folder: Path) -> tuple[dict[str, Tensor], str]:
    """All tensors of the checkpoint in `folder` (safetensors preferred) and the file they came from."""
    paths, name = _weight_files(folder)
    state: dict[str, Tensor] = {}
    for path in paths:
        state.update(_read_file(path))
    return state, name


def read_shapes(folder: Path) -> tuple[dict[str, torch.Size], str]:
    """The shape of every tensor of the checkpoint in `folder`, read without loading the tensors: from the
    safetensors headers, or from a memory-mapped pytorch_model.bin."""
    paths, name = _weight_files(folder)
    shapes: dict[str, torch.Size] = {}
    for path in paths:
        shapes.update(_read_file(path, shapes_only=True))
    return shapes, name


def _weight_files(folder: Path) -> tuple[list[Path], str]:
    """The weight files of the checkpoint (the shards of a sharded one) and the name of the file that lists them."""
    for name in WEIGHT_FILES:
        path = folder / name
        if path.exists():
            break
    else:
        raise CheckpointError(f"{folder} has no weights: expected one of {', '.join(WEIGHT_FILES)}")
    if not name.endswith(".index.json"):
        return [path], name
    advice = "download or save the checkpoint again"
    index = read_json(path, CheckpointError, what="a valid weight index", advice=advice)
    if not isinstance(index, dict) or "weight_map" not in index:
        raise CheckpointError(f"{path} is not a valid weight index (KeyError: no 'weight_map' object); {advice}")
    weight_map = index["weight_map"]
    if not isinstance(weight_map, dict) or not all(isinstance(v, str) for v in weight_map.values()):
        raise CheckpointError(f"{path} is not a valid weight index (its weight_map must map tensor names to file "
                              f"names); {advice}")
    shards = sorted(set(weight_map.values()))
    for shard in shards:  # shards sit next to their index; never read a file from elsewhere
        if Path(shard).name != shard:
            raise CheckpointError(f"{path} names a shard outside its folder ({shard!r}); the index is invalid")
    return [folder / shard for shard in shards], name


def _read_file(path: Path, shapes_only: bool = False) -> dict[str, Tensor] | dict[str, torch.Size]:
    if not path.exists():
        raise CheckpointError(f"the weight file {path} is missing; the checkpoint is incomplete")
    regular_file(path, CheckpointError)
    try:
        if path.suffix == ".safetensors":
            from safetensors import safe_open
            from safetensors.torch import load_file
            if not shapes_only:
                return load_file(str(path))
            with safe_open(str(path), framework="pt") as f:  # the JSON header only
                return {key: torch.Size(f.get_slice(key).get_shape()) for key in f.keys()}
        # weights_only: a pickled checkpoint may contain tensors and plain containers, never code. mmap leaves the
        # tensors on disk until they are copied into the model; files from before torch 1.6 (not zip) cannot be mapped.
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    except Exception as err:
        raise CheckpointError(_unreadable(path, err)) from None
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in state.items()):
        raise CheckpointError(f"{path} does not hold a dictionary of tensors")
    return {key: value.shape for key, value in state.items()} if shapes_only else state


# A global that torch's weights-only unpickler refused, in each of its wordings: "Unsupported global: GLOBAL x.y was
# not an allowed global" (a class or function it does not know) and "Trying to load unsupported GLOBAL posix.system
# whose module posix is blocked" (torch 2.6+: os, subprocess, sys, ... are refused before anything else is looked at).
_REFUSED_GLOBAL = re.compile(r"\bGLOBAL ([\w.]+)")
# torch's lines around its reason: the advice to load with weights_only=False, how to allowlist, where the docs are
_TORCH_ADVICE = ("weights_only", "Weights only load failed", "add_safe_globals", "safe_globals", "trusted source",
                 "Check the documentation of torch.load")


def _unreadable(path: Path, err: Exception) -> str:
    """Why a weight file was not read, in one line. torch words a pickle that asks for a global (a class, or a function
    such as os.system in a __reduce__) in several ways, all after the advice that `weights_only=False` "will likely
    succeed": here such a pickle is refused as unsafe, never called corrupted, and torch's advice is never repeated."""
    text = str(err)
    named = _REFUSED_GLOBAL.search(text)
    if named:
        return (f"{path} was refused as unsafe: it is a pickle that asks for {named.group(1)}, and unpickling can run "
                "code, so such a file is read only when it holds nothing but tensors. Convert the checkpoint to "
                "safetensors where you trust it (transformers' save_pretrained(folder) writes model.safetensors) and "
                "load that")
    # torch's own reason, without its advice (which it puts first, and on the reason's line in older versions)
    marker = "WeightsUnpickler error:"
    after = text.split(marker, 1)[1] if marker in text else text
    detail = next((line.strip() for line in after.splitlines()
                   if line.strip() and not any(a in line for a in _TORCH_ADVICE)), "")[:200]
    return (f"could not read {path}: the file is corrupted or not a {path.suffix} weight file "
            f"({type(err).__name__}{': ' + detail if detail else ''}); download or save the checkpoint again")


def normalize_keys(state: dict[str, Tensor], model_type: str = "bert") -> dict[str, Tensor]:
    """Bring every key into the BertForPreTraining layout: a family's names renamed (family.py), `bert.` prefix on the
    encoder, `weight`/`bias` for the legacy TensorFlow-port `gamma`/`beta`, and the MLM bias under
    `cls.predictions.bias`.

    Where a checkpoint holds both `cls.predictions.decoder.bias` and `cls.predictions.bias`, the decoder's wins: it is
    the one transformers adds to the logits (the two are one tensor when the decoder is tied, and differ otherwise)."""
    out: dict[str, Tensor] = {}
    for key, value in state.items():
        key = to_bert_key(key, model_type)
        key = re.sub(r"\.gamma$", ".weight", re.sub(r"\.beta$", ".bias", key))
        if key.startswith(("embeddings.", "encoder.", "pooler.")):
            key = "bert." + key
        out[key] = value
    decoder_bias = out.pop("cls.predictions.decoder.bias", None)
    if decoder_bias is not None:
        out["cls.predictions.bias"] = decoder_bias
    return out


# ------------------------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------------------------
def load_model(source: str | os.PathLike, model_class: type[BertPreTrainedModel] = BertForPreTraining
               ) -> tuple[BertPreTrainedModel, LoadReport]:
    """Load a checkpoint into `model_class` (on CPU, float32, eval mode).

    For BertForPreTraining (what the explorer uses) the heads are built only when the checkpoint has them, so
    `model.has_mlm_head` and `model.has_nsp_head` tell whether predictions are real. Other classes get heads (and a
    pooler) the checkpoint lacks newly initialized, as fine-tuning starts, and the report lists them."""
    start = time.perf_counter()
    folder = resolve_source(source)
    if not (folder / "config.json").exists():
        raise CheckpointError(f"{folder} has no config.json; a Hugging Face checkpoint folder needs config.json "
                              "next to model.safetensors or pytorch_model.bin")
    try:  # bounded sizes and parameter count: a config.json asking for terabytes stops here
        config = BertConfig.from_json_file(folder / "config.json")
    except ConfigError as err:
        where = str(folder / "config.json")
        raise CheckpointError(str(err) if str(err).startswith(where) else f"{where}: {err}") from None
    shapes, weights_file = read_shapes(folder)
    keys = normalize_keys(shapes, config.model_type)

    def build() -> BertPreTrainedModel:
        if model_class is BertForPreTraining:
            nsp = any(k.startswith("cls.seq_relationship.") for k in keys)
            # With a next-sentence head the pooler is needed: if the checkpoint lacks it, it is reported as missing.
            return BertForPreTraining(config, mlm_head=any(k.startswith("cls.predictions.") for k in keys),
                                      nsp_head=nsp, pooler=nsp or any(k.startswith("bert.pooler.") for k in keys),
                                      replaced_head=any(k.startswith("cls.discriminator.") for k in keys))
        if model_class is BertModel:
            return BertModel(config, add_pooling_layer=any(k.startswith("bert.pooler.") for k in keys))
        return model_class(config)

    strict_heads = model_class is BertForPreTraining
    if _config_disagreements(config, keys) or any(key not in keys for _, key, _, _ in _sized_by(config)):
        # Refused before allocating, with the same listing as below, from a skeleton that has shapes and no storage.
        # Only on this path: the first meta-device model in a process costs ~1 s (torch imports torch._dynamo for it).
        with torch.device("meta"):
            skeleton = build()
        _check_fit(skeleton, keys, LoadReport(str(source), folder, weights_file, type(skeleton).__name__,
                                              num_tensors=len(shapes)), strict_heads)
    # From here on the config agrees with the weights in every size, so the model is as big as the checkpoint itself.
    model = build()
    report = LoadReport(str(source), folder, weights_file, type(model).__name__, num_tensors=len(shapes))
    _copy_weights(model, normalize_keys(read_state_dict(folder)[0], config.model_type), report, strict_heads)
    if isinstance(model, BertForPreTraining):
        sentence_head = "sentence-order head" if config.model_type == "albert" else "next-sentence head"
        report.absent_heads = [name for present, name in ((model.has_mlm_head, "masked-LM head"),
                                                          (model.has_nsp_head, sentence_head)) if not present]
    model.eval()
    report.seconds = time.perf_counter() - start
    return model, report


def _check_fit(model: BertPreTrainedModel, shapes: dict[str, torch.Size], report: LoadReport,
               strict_heads: bool) -> None:
    """Compare every key and shape of the checkpoint with `model` (real or a meta-device skeleton); fill in the
    report's ignored and initialized keys, or raise one CheckpointError that lists everything that does not fit."""
    # BertModel's own keys carry no prefix; everything else matches the normalized layout.
    prefix = "bert." if isinstance(model, BertModel) else ""
    params = {prefix + k: v.shape for k, v in model.state_dict().items()}
    derived = _derived_keys(model)
    missing, mismatched, unexpected, ignored = [], [], [], []
    for key, shape in params.items():
        if key in derived:
            continue
        if key not in shapes:
            missing.append(key)
        elif shapes[key] != shape:
            mismatched.append(f"{key}: checkpoint {tuple(shapes[key])} vs model {tuple(shape)}")
    for key in shapes:
        if key in params or key in derived:
            continue
        head = next((p for p in HEAD_PREFIXES if key.startswith(p)), None)
        (ignored if head is not None else unexpected).append(key)
    report.ignored = ignored
    if not strict_heads:  # a fine-tuning head absent from the checkpoint starts from its initialization
        report.initialized = [k for k in missing if k.startswith(INITIALIZABLE_PREFIXES)]
        missing = [k for k in missing if k not in report.initialized]
    if missing or mismatched or unexpected:
        parts = [f"the weights in {report.folder / report.weights_file} do not fit a {type(model).__name__} built "
                 "from its config.json:"]
        disagreements = _config_disagreements(model.config, shapes)
        if disagreements:
            parts.append(f"config.json disagrees with the weights: {'; '.join(disagreements)}")
        if missing:
            parts.append(f"missing {len(missing)}: {_abbreviate(missing)}")
        if mismatched:
            parts.append(f"wrong shape {len(mismatched)}: {_abbreviate(mismatched, 4)}")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)}: {_abbreviate(unexpected)}")
        parts.append("check that config.json belongs to these weights")
        raise CheckpointError("\n  ".join(parts))


# Which config.json field sizes which tensor dimension, to name the field when a checkpoint does not fit.
SIZED_BY = (("vocab_size", "bert.embeddings.word_embeddings.weight", 0, "rows"),
            ("hidden_size", "bert.embeddings.word_embeddings.weight", 1, "columns"),
            ("max_position_embeddings", "bert.embeddings.position_embeddings.weight", 0, "rows"),
            ("type_vocab_size", "bert.embeddings.token_type_embeddings.weight", 0, "rows"),
            ("intermediate_size", "bert.encoder.layer.0.intermediate.dense.weight", 0, "rows"))
LAYER_KEY = re.compile(r"^bert\.encoder\.layer\.(\d+)\.")


def _sized_by(config: BertConfig) -> list[tuple[str, str, int, str]]:
    """SIZED_BY for this config: tables the family does not have are left out, and the embedding tables' width is
    embedding_size where the family has one (ALBERT, ELECTRA)."""
    out = []
    for name, key, dim, unit in SIZED_BY:
        if (name == "max_position_embeddings" and not config.position_biased_input) or \
                (name == "type_vocab_size" and not config.type_vocab_size):
            continue
        if name == "hidden_size" and config.embedding_size is not None:
            name = "embedding_size"
        out.append((name, key, dim, unit))
    return out


def _config_disagreements(config: BertConfig, shapes: dict[str, torch.Size]) -> list[str]:
    """The config.json fields that contradict the weights, each with the tensor that shows it."""
    found = []
    for name, key, dim, unit in _sized_by(config):
        shape = shapes.get(key)
        if shape is None:
            continue  # the comparison lists it as missing
        if len(shape) != 2:
            found.append(f"{key} has shape {tuple(shape)}, not (rows, columns)")
        elif shape[dim] != getattr(config, name):
            found.append(f"{name} is {getattr(config, name)} but {key} has {shape[dim]} {unit}")
    layers = sorted({int(m.group(1)) for key in shapes if (m := LAYER_KEY.match(key))})
    if len(layers) != config.num_weight_layers:
        held = f"{len(layers)} layers (bert.encoder.layer.{layers[0]} to {layers[-1]})" if layers else "no layers"
        field_name = "num_hidden_groups" if config.num_hidden_groups is not None else "num_hidden_layers"
        found.append(f"{field_name} is {config.num_weight_layers} but the weights hold {held}")
    return found


def _copy_weights(model: BertPreTrainedModel, state: dict[str, Tensor], report: LoadReport,
                  strict_heads: bool) -> None:
    # The tensors themselves are compared again: the final word, whatever the headers said.
    _check_fit(model, {key: value.shape for key, value in state.items()}, report, strict_heads)
    prefix = "bert." if isinstance(model, BertModel) else ""
    derived = _derived_keys(model)
    loaded = {prefix + k: v for k, v in model.state_dict().items() if prefix + k in state and prefix + k not in derived}
    with torch.no_grad():
        for key, target in loaded.items():
            target.copy_(state[key])  # copy_ also converts half-precision checkpoints to float32
    # Refused rather than warned about: one NaN or Inf weight turns every activation after it into NaN (LayerNorm
    # spreads it across the hidden vector, attention across the tokens), so every view would be blank or garbage, and
    # a warning in a server log is not where the person looking at those views would find the reason. Checked after
    # the copy, so that float64 values too large for float32 are caught as well.
    bad = [key for key, target in loaded.items() if target.is_floating_point() and not torch.isfinite(target).all()]
    if bad:
        raise CheckpointError(f"{len(bad)} of the {len(loaded)} tensors in {report.folder / report.weights_file} hold "
                              f"NaN or infinite values: {_abbreviate(bad)}; the checkpoint is damaged (or was saved "
                              "after training diverged): use an earlier or a fresh copy")
    if isinstance(model, BertForPreTraining):
        model.tie_weights()


def _derived_keys(model: BertPreTrainedModel) -> tuple[str, ...]:
    """Keys that are not read from (nor written to) a checkpoint for this model."""
    return DERIVED_KEYS if model.config.tie_word_embeddings else BUFFER_KEYS


# ------------------------------------------------------------------------------------------------------------------
# Which fine-tuning head a checkpoint carries
# ------------------------------------------------------------------------------------------------------------------
# Task name -> the model class of its head, and the `architectures` names transformers writes for them.
TASK_MODELS: dict[str, type[BertPreTrainedModel]] = {
    "text-classification": BertForSequenceClassification, "token-classification": BertForTokenClassification,
    "question-answering": BertForQuestionAnswering}
TASK_OF_ARCHITECTURE = {cls.__name__: task for task, cls in TASK_MODELS.items()}


@dataclass
class TaskHead:
    """A fine-tuned checkpoint's task, the class to load it into, and its label names in id order ([] for QA)."""

    task: str
    model_class: type[BertPreTrainedModel]
    labels: list[str]


def task_head(source: str | os.PathLike) -> TaskHead | None:
    """The fine-tuning head of a checkpoint (ours or one transformers saved), or None for a pretraining or bare
    encoder checkpoint. config.json's `architectures` decides; without it, the weights do (qa_outputs: question
    answering; a classifier with a pooler: sequence classification, without one: token classification)."""
    folder = resolve_source(source)
    data = read_json(folder / "config.json", CheckpointError, advice="re-save the checkpoint's config.json")
    if not isinstance(data, dict):
        raise CheckpointError(f"{folder / 'config.json'} must hold a JSON object")
    architectures = data.get("architectures") if isinstance(data.get("architectures"), list) else []
    task = next((TASK_OF_ARCHITECTURE[a] for a in architectures if a in TASK_OF_ARCHITECTURE), None)
    if task is None and not architectures:
        keys = normalize_keys(read_shapes(folder)[0])
        if any(k.startswith("qa_outputs.") for k in keys):
            task = "question-answering"
        elif any(k.startswith("classifier.") for k in keys):
            pooled = any(k.startswith("bert.pooler.") for k in keys)
            task = "text-classification" if pooled else "token-classification"
    if task is None:
        return None
    labels: list[str] = []
    if TASK_MODELS[task].labelled:
        id2label = data.get("id2label")
        try:
            named = {int(k): str(v) for k, v in id2label.items()} if isinstance(id2label, dict) else {}
        except ValueError:  # a key that is not a number: fall back to the generic names
            named = {}
        count = len(named) or int(data.get("num_labels", 2))
        labels = [named.get(i, f"LABEL_{i}") for i in range(count)]
    return TaskHead(task, TASK_MODELS[task], labels)


# ------------------------------------------------------------------------------------------------------------------
# Saving
# ------------------------------------------------------------------------------------------------------------------
def _architecture(model: BertPreTrainedModel) -> str:
    if isinstance(model, BertForPreTraining):
        if model.has_mlm_head and model.has_nsp_head:
            return "BertForPreTraining"
        if model.has_mlm_head:
            return "BertForMaskedLM"
        if model.has_nsp_head:
            return "BertForNextSentencePrediction"
        return "BertModel"
    return type(model).__name__


def save_pretrained(model: BertPreTrainedModel, folder: str | os.PathLike, tokenizer=None,
                    dtype: torch.dtype | None = None) -> Path:
    """Write config.json and model.safetensors (optionally in `dtype`, e.g. torch.float16) so that both we and
    `transformers` can load the folder; with a tokenizer, its files too."""
    from safetensors.torch import save_file

    if model.config.model_type != "bert":
        raise CheckpointError(f"save_pretrained writes BERT checkpoints; a {model.config.family} model is read from "
                              "its own checkpoint folder, which needs no saving")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    architecture = _architecture(model)
    derived = _derived_keys(model)
    state = {}
    for key, value in model.state_dict().items():
        if key in derived:  # buffers, and the tied decoder: transformers ties it back on load
            continue
        if architecture == "BertModel" and key.startswith("bert."):
            key = key[len("bert."):]  # transformers' BertModel keys carry no prefix
        value = value.detach().to("cpu")
        state[key] = (value.to(dtype) if dtype is not None and value.is_floating_point() else value).contiguous()
    if TIED_DECODER_KEY in state:
        # An untied decoder in transformers has a bias of its own, the one its forward adds; it equals ours.
        state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
    save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = model.config
    if isinstance(model, BertForQuestionAnswering):
        # transformers sizes qa_outputs by num_labels; ours always has the two outputs, start and end.
        config = dataclasses.replace(config, num_labels=2)
    (folder / "config.json").write_text(json.dumps(config.to_hf_dict([architecture]), indent=2) + "\n")
    # safetensors writes its file as 0600 (a private temporary file renamed into place), while config.json and the
    # tokenizer's files get 0666 less the umask: a folder copied to a shared place then has weights no one else can
    # read. The weights take config.json's mode, which is what the umask gave (no process-wide umask call).
    os.chmod(folder / "model.safetensors", (folder / "config.json").stat().st_mode & 0o777)
    if tokenizer is not None:
        tokenizer.save(folder)
    return folder
