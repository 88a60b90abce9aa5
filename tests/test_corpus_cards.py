"""Head report cards (corpus/cards.py): every top example recomputed from the sentence's own Run."""

import numpy as np
import pytest

from bertviz_app import build_corpus, open_corpus
from bertviz_app.corpus import CorpusError
from bertviz_app.corpus.cards import CARD_STATISTICS, ROLE_STATISTIC
from tests.test_corpus_probes import _conll, explorer  # noqa: F401 - the same tiny model's explorer fixture


@pytest.fixture(scope="module")
def corpus(explorer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cards")
    (folder / "grammar.conll").write_text(_conll(40, seed=1), encoding="utf-8")
    return open_corpus(build_corpus(folder / "grammar.conll", folder / "c", explorer=explorer, say=lambda t: None),
                       explorer=explorer)


def _from_run(run, layer, head, position, statistic):
    """One token's statistic recomputed from its sentence's Run (the definitions of corpus/stats.py)."""
    a = np.asarray(run.attention(layer=layer, head=head), dtype=np.float64)[position]
    special = np.asarray(run.token_table()["special"], dtype=bool)
    pieces = list(run.token_table()["token"])
    punctuation = np.array([bool(p.strip("#")) and all(not c.isalnum() for c in p.strip("#")) for p in pieces])
    return {"entropy": -(a * np.log(np.maximum(a, 1e-12))).sum(),
            "distance": (a * np.abs(np.arange(len(a)) - position)).sum(),
            "cls": a[0], "sep": a[np.flatnonzero(special)[1:]].sum(), "self": a[position],
            "previous": a[position - 1] if position > 0 else np.nan,
            "next": a[position + 1] if position + 1 < len(a) else np.nan,
            "punctuation": a[punctuation & ~special].sum()}[statistic]


@pytest.mark.parametrize("statistic", CARD_STATISTICS)
def test_every_example_equals_its_run(corpus, explorer, statistic):
    for layer, head in ((0, 1), (1, 3)):
        card = corpus.head_card(layer, head, statistic=statistic, k=4)
        assert len(card.examples) == 4 and card.examples["sentence"].is_unique
        values = card.examples["value"].to_numpy()
        assert (np.diff(values) <= 0).all() if statistic != "entropy" else (np.diff(values) >= 0).all()
        for example in card.examples.itertuples():
            run = corpus.run(example.sentence)
            assert run.token_table()["token"][example.position] == example.piece
            # 1e-6 of the value's size: the corpus keeps float32, and a distance reaches the sentence's length
            expected = _from_run(run, layer, head, example.position, statistic)
            assert abs(expected - example.value) <= 1e-6 * max(1.0, abs(expected))


def test_the_first_example_is_the_corpus_extreme_and_the_role_picks_the_statistic(corpus):
    summary = corpus.head_summary()
    for row in summary.head(4).itertuples():
        card = corpus.head_card(row.layer, row.head)
        assert card.role == row.role
        name, largest = ROLE_STATISTIC.get(row.role, ("entropy", False))
        assert card.ranked_by == name
        every = np.concatenate([np.asarray(s.array("head_stats")[:, row.layer, row.head, :])
                                for s in corpus.shards])[:, list(CARD_STATISTICS).index(name)]
        extreme = np.nanmax(every) if largest else np.nanmin(every)
        assert abs(card.examples["value"].iloc[0] - extreme) <= 1e-6
        assert card.statistics["entropy"] == pytest.approx(row.entropy)
        assert list(card.profile["offset"]) == list(range(-10, 11))
        assert card.links is not None  # the corpus is tagged


def test_the_heads_scatter_has_every_head(corpus):
    figure = corpus.plot.heads_scatter("previous", "entropy")
    assert sum(len(trace.x) for trace in figure.data) == corpus.num_layers * corpus.num_heads
    assert {trace.name for trace in figure.data} == set(corpus.head_summary()["role"])


def test_bad_cards_are_one_sentence(corpus):
    for call, words in ((lambda: corpus.head_card(9, 0), "layer"), (lambda: corpus.head_card(0, 0, "beauty"),
                                                                    "ranks its examples"),
                        (lambda: corpus.head_card(0, 0, k=0), "number of examples"),
                        (lambda: corpus.plot.heads_scatter("role", "entropy"), "two statistics")):
        with pytest.raises((CorpusError, ValueError), match=words) as caught:
            call()
        assert "\n" not in str(caught.value)
