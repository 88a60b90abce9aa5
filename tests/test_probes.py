"""The teacher's probes (assets/probes.json): the file is well formed for the shipped vocabulary, and the shipped
model stays above floors set under what it measured when it shipped, floors a model that knows no English fails."""

from __future__ import annotations

import json
import re

import pytest

from bertviz_app import i18n
from bertviz_app.catalog import ASSETS, ENGLISH_MLM_PATH, read_example_notes, read_examples
from bertviz_app.checkpoint import load_model
from bertviz_app.masked_lm import fill_mask, normalize_mask
from bertviz_app.pretraining.probes import (PROBES_PATH, Probe, ProbeResult, copies_sentence, copy_rate, load_probes,
                                           run_probes, summarize)
from bertviz_app.tokenizer import Tokenizer

# (top-1, top-5) floors. The shipped model measured facts 0.18 / 0.64 and grammar 0.575 / 0.95 (model card), its
# weakest group's top-5 0.50 (time, colors); the floors sit about 0.05-0.1 below, so that noise in a retrained model
# passes but losing what it knows does not.
FLOORS = {"fact": (0.12, 0.55), "grammar": (0.45, 0.85)}
GROUP_TOP5_FLOOR = 0.4


def clears_floors(summary: dict) -> list[str]:
    """The floors `summary` misses, as readable lines (empty: all cleared)."""
    missed = [f"{kind} top-1 {summary[kind]['top1']:.2f} < {top1}" for kind, (top1, _) in FLOORS.items()
              if summary[kind]["top1"] < top1]
    missed += [f"{kind} top-5 {summary[kind]['top5']:.2f} < {top5}" for kind, (_, top5) in FLOORS.items()
               if summary[kind]["top5"] < top5]
    missed += [f"{group} top-5 {v['top5']:.2f} < {GROUP_TOP5_FLOOR}" for group, v in summary.items()
               if group not in FLOORS and v["top5"] < GROUP_TOP5_FLOOR]
    return missed


@pytest.fixture(scope="module")
def tokenizer() -> Tokenizer:
    return Tokenizer.from_folder(ENGLISH_MLM_PATH)


def test_every_group_has_ten_probes_of_one_mask_and_known_answers(tokenizer):
    probes = load_probes(tokenizer)  # raises on a second [MASK] or an answer outside the vocabulary
    groups = {p.group for p in probes}
    assert groups == {"capitals", "time", "colors", "animals", "everyday", "agreement", "tense", "articles",
                      "comparatives"}
    assert all(sum(p.group == g for p in probes) == 10 for g in groups)
    assert {p.kind for p in probes} == {"fact", "grammar"}
    assert len({p.text for p in probes}) == len(probes)


@pytest.mark.parametrize("item, problem", [
    ({"text": "Yesterday I [MASK] a letter.", "answers": ["mailed"]}, "not single word pieces"),
    ({"text": "The [MASK] barked at the [MASK].", "answers": ["dog"]}, "exactly one"),
])
def test_a_probe_the_model_could_not_answer_is_refused(tmp_path, tokenizer, item, problem):
    path = tmp_path / "probes.json"
    path.write_text(json.dumps({"groups": {"g": {"kind": "fact", "probes": [item]}}}))
    with pytest.raises(ValueError, match=problem):
        load_probes(tokenizer, path)


@pytest.mark.real_weights
def test_the_shipped_model_clears_the_floors(tokenizer):
    model, _ = load_model(ENGLISH_MLM_PATH)
    results = run_probes(model.eval(), tokenizer, load_probes(tokenizer, PROBES_PATH))
    assert clears_floors(summarize(results)) == []


def test_a_model_that_knows_no_english_misses_the_floors(tiny_mlm_folder, tokenizer):
    model, _ = load_model(tiny_mlm_folder)
    summary = summarize(run_probes(model.eval(), tokenizer, load_probes(tokenizer)))
    missed = clears_floors(summary)
    assert any(line.startswith("fact top-5") for line in missed), summary
    assert any(line.startswith("grammar top-5") for line in missed), summary


@pytest.mark.real_weights
def test_the_example_notes_say_what_the_shipped_model_does(tokenizer):
    """The Masked LM tab shows one example the default model gets right and one it gets instructively wrong, each
    with a note; each note is about the model's first answer, which must still be the one it names."""
    masked = json.loads((ASSETS / "examples.json").read_text())["masked"]
    noted = [m for m in masked if isinstance(m, dict)]
    assert {m["note"].split(".")[0] for m in noted} == {"right", "instructively wrong"}
    assert read_example_notes() == {m["text"]: m["note"] for m in noted}
    assert all(isinstance(m, str) for m in read_examples()[1])
    model, _ = load_model(ENGLISH_MLM_PATH)
    for m in noted:
        first = fill_mask(model.eval(), tokenizer, tokenizer.encode(normalize_mask(m["text"])), top_k=1)[0][0][0]
        assert first == m["top1"], (m["text"], first)


def test_the_masked_lm_tab_shows_the_notes_under_its_examples(tiny_mlm_folder):
    from bertviz_app import app

    demo = app.build_demo(app.load_models([tiny_mlm_folder], device="cpu", max_tokens=128))
    (notes,) = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "mask-example-notes"]
    assert "Bees make [MASK]" in notes.value and "instructively wrong" in notes.value
    assert notes.value.count("\n- ") == len(read_example_notes()) - 1
    # in Spanish, gradio shows each note translated, the English sentence it is about and the words it quotes from
    # it (*are*, *children*) as they are
    spanish = i18n.page_catalogue("es")[notes.value]
    assert "- Bees make [MASK].: se equivoca" in spanish and "acierta. El modelo responde *are*" in spanish
    for english in read_example_notes().values():
        assert english not in spanish
        assert re.findall(r"\*(\w+)\*", english) == re.findall(r"\*(\w+)\*", i18n.catalogue("es")[english])


def test_copy_rate_counts_first_choices_that_repeat_a_word_of_the_sentence():
    bees = Probe("animals", "fact", "Bees make [MASK].", ("honey",))
    paris = Probe("capitals", "fact", "Paris is the capital of [MASK].", ("france",))
    two = Probe("everyday", "fact", "One and [MASK] make three.", ("two", "one"))
    assert copies_sentence(bees, "bees") and copies_sentence(paris, "paris") and not copies_sentence(bees, "honey")
    assert not copies_sentence(bees, "mask") and not copies_sentence(bees, "wax")  # [MASK] is no word of it
    assert not copies_sentence(two, "one")  # an accepted answer is never a copy
    results = [ProbeResult(bees, [("bees", 0.5)]), ProbeResult(paris, [("france", 0.5)]),
               ProbeResult(two, [("one", 0.5)]), ProbeResult(paris, [("capital", 0.2)])]
    assert [r.copies for r in results] == [True, False, False, True] and copy_rate(results) == 0.5
