"""The settings every run shares (run_settings.py): each shared field defined once for the three kinds, and the names
they had before kept for a release as deprecated aliases, as keyword arguments, attributes and command-line flags."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from bertviz_app.corpus import CorpusSettings
from bertviz_app.finetuning import FinetuneSettings, add_finetune_arguments
from bertviz_app.pretraining import PretrainSettings, add_pretrain_arguments
from bertviz_app.run_settings import RunSettings, TrainingRunSettings
from bertviz_app.settings import add_arguments, from_args


def fields(cls) -> dict:
    return {f.name: f for f in dataclasses.fields(cls)}


def test_the_shared_fields_are_one_definition_each():
    run, training = fields(RunSettings), fields(TrainingRunSettings)
    for kind in (CorpusSettings, FinetuneSettings, PretrainSettings):
        mine = fields(kind)
        assert all(mine[name] is run[name] for name in ("output", "max_tokens", "device")), kind
    for kind in (FinetuneSettings, PretrainSettings):
        mine = fields(kind)
        assert all(mine[name] is training[name] for name in ("seed", "schedule", "clip", "timeline", "threads"))
    # a kind's own default: pretraining starts from scratch and a larger rate; a corpus pass is not a step
    assert PretrainSettings("c.txt", "o").model == "scratch" and PretrainSettings("c.txt", "o").learning_rate == 1e-4
    assert FinetuneSettings("text-classification", "t.csv", "o").learning_rate == 5e-5
    assert CorpusSettings("s.txt", "o").batch_size == 64
    # each kind's least max tokens, in one sentence naming the one flag
    for kind, args, least in ((PretrainSettings, ("c.txt", "o"), 8), (CorpusSettings, ("s.txt", "o"), 4),
                              (FinetuneSettings, ("text-classification", "t.csv", "o"), 16)):
        with pytest.raises(ValueError, match=f"^--max-tokens must be {least} or more$"):
            kind(*args, max_tokens=least - 1)
        assert kind(*args, max_tokens=least).max_tokens == least


@pytest.mark.parametrize("kind, args, old, new, value", [
    (PretrainSettings, ("c.txt",), "out", "output", "runs/a"),
    (PretrainSettings, ("c.txt", "o"), "init", "model", "runs/enc"),
    (PretrainSettings, ("c.txt", "o"), "lr", "learning_rate", 3e-4),
    (PretrainSettings, ("c.txt", "o"), "max_length", "max_tokens", 64),
    (FinetuneSettings, ("text-classification", "t.csv", "o"), "max_length", "max_tokens", 32),
    (FinetuneSettings, ("text-classification", "t.csv", "o"), "lr", "learning_rate", 1e-4),
    (CorpusSettings, ("s.txt", "o"), "max_length", "max_tokens", 24),
])
def test_an_old_keyword_still_works_and_says_it_is_deprecated(kind, args, old, new, value):
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated; use {new}"):
        settings = kind(*args, **{old: value})
    assert getattr(settings, new) == value
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated"):
        assert getattr(settings, old) == value
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match=f"both {old} and {new}"):
        kind(*args, **{old: value, new: value})
    with pytest.warns(DeprecationWarning):  # what finetune(settings=..., max_length=32) does with it
        assert getattr(dataclasses.replace(settings, **kind.current_names({old: value})), new) == value


def test_an_old_flag_still_works_and_says_it_is_deprecated(capsys):
    parser = add_pretrain_arguments(argparse.ArgumentParser(prog="bertviz-app pretrain"))
    s = from_args(PretrainSettings, parser.parse_args(["--corpus", "c.txt", "--out", "runs/a", "--init", "runs/enc",
                                                       "--lr", "3e-4", "--max-length", "64"]))
    assert (s.output, s.model, s.learning_rate, s.max_tokens) == ("runs/a", "runs/enc", 3e-4, 64)
    err = capsys.readouterr().err
    for old, new in (("--out", "--output"), ("--init", "--model"), ("--lr", "--learning-rate"),
                     ("--max-length", "--max-tokens")):
        assert f"bertviz-app pretrain: {old} is deprecated; use {new}" in err
    parser = add_finetune_arguments(argparse.ArgumentParser(prog="bertviz-app finetune"))
    s = from_args(FinetuneSettings, parser.parse_args(["text-classification", "--train", "t.csv", "--output", "o",
                                                       "--max-length", "32", "--lr", "1e-4"]))
    assert (s.max_tokens, s.learning_rate) == (32, 1e-4) and "--max-length is deprecated" in capsys.readouterr().err
    parser = add_arguments(argparse.ArgumentParser(prog="bertviz-app corpus build"), CorpusSettings)
    s = from_args(CorpusSettings, parser.parse_args(["s.txt", "-o", "o", "--max-length", "24"]))
    assert s.max_tokens == 24 and "--max-length is deprecated; use --max-tokens" in capsys.readouterr().err
    # the new flags say nothing
    s = from_args(CorpusSettings, parser.parse_args(["s.txt", "--output", "o", "--max-tokens", "24"]))
    assert s.max_tokens == 24 and capsys.readouterr().err == ""


def test_a_corpus_folder_keeps_the_name_its_manifest_has_always_used():
    # corpus.json's settings are compared on resume and read by open_corpus: the folders built before keep working
    assert CorpusSettings("s.txt", "o", max_tokens=24).identity()["max_length"] == 24
