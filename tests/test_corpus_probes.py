"""Probes of what each layer knows (corpus/probes.py): scikit-learn's LogisticRegression is the oracle of the
recipe; the control task's construction; targets computed from the text; refusals in one sentence."""

import threading

import numpy as np
import torch
import pytest
from sklearn.linear_model import LogisticRegression

import bertviz_app
from bertviz_app import build_corpus, open_corpus
from bertviz_app.corpus import CorpusError
from bertviz_app import probing
from bertviz_app.corpus import probes

DET, PREP = ["the", "a", "this", "every"], ["near", "under", "behind"]
# one pool for every content slot: each word is a noun, a verb or an adjective by where it stands, so a probe must
# read its context, and the held-out accuracy is neither 1 nor the majority class's
CONTENT = ["book", "saw", "watch", "park", "light", "paint", "cool", "fly", "run", "clear", "ship", "wave"]


def _conll(n: int, seed: int = 0) -> str:
    """n tagged sentences of a small grammar (NP VBD NP [IN NP] ., an NP being DT JJ{0,2} NN), content words drawn
    at random from one ambiguous pool."""
    rng = np.random.default_rng(seed)
    pick = lambda words: words[rng.integers(len(words))]  # noqa: E731
    sentences = []
    for _ in range(n):
        def noun_phrase():  # an adjective or two, or none: the same position holds any content tag
            return ([(pick(DET), "DT")] + [(pick(CONTENT), "JJ") for _ in range(rng.integers(3))]
                    + [(pick(CONTENT), "NN")])
        words = noun_phrase() + [(pick(CONTENT), "VBD")] + noun_phrase()
        if rng.random() < 0.5:
            words += [(pick(PREP), "IN")] + noun_phrase()
        sentences.append("\n".join(f"{w} {t}" for w, t in words + [(".", ".")]))
    return "\n\n".join(sentences) + "\n"


@pytest.fixture(scope="module")
def explorer(tiny_mlm_folder):
    return bertviz_app.load(tiny_mlm_folder, device="cpu", max_tokens=32)


@pytest.fixture(scope="module")
def tagged(explorer, tmp_path_factory):
    folder = tmp_path_factory.mktemp("probes")
    (folder / "grammar.conll").write_text(_conll(80), encoding="utf-8")
    return open_corpus(build_corpus(folder / "grammar.conll", folder / "c", explorer=explorer, say=lambda t: None),
                       explorer=explorer)


def test_the_probe_equals_scikit_learn_on_the_same_features_and_split(tagged):
    table = tagged.probe("tag")
    assert list(table["layer"]) == list(range(tagged.num_layers + 1))
    data = probes.probe_data(tagged, "tag")
    control = probes.control_task(data.words, data.y, len(data.classes))
    train, test = ~data.held_out, data.held_out
    for layer in table["layer"]:
        X_train, X_test = probes.standardize(*(lambda X: (X[train], X[test]))(probes.hidden_rows(tagged, layer,
                                                                                                  data.rows)))
        for y, column in ((data.y, "accuracy"), (control, "control_accuracy")):
            oracle = LogisticRegression(C=probes.C, max_iter=5000, tol=1e-8).fit(X_train, y[train])
            expected = np.mean(oracle.predict(X_test) == y[test])
            assert abs(table.loc[layer, column] - expected) <= 0.01, (layer, column)
    np.testing.assert_allclose(table["selectivity"], table["accuracy"] - table["control_accuracy"])
    majority = np.mean(data.y[test] == np.bincount(data.y[train]).argmax())
    assert (table["majority"] == majority).all()
    # a test that could fail: neither perfect nor the majority class's
    assert (table["accuracy"] < 0.999).any() and (table["accuracy"] > majority + 0.05).any()


def test_the_fit_knows_only_the_classes_of_its_training_part_as_scikit_learn(tagged):
    data = probes.probe_data(tagged, "tag")
    X_train, X_test = probes.standardize(*(lambda X: (X[~data.held_out], X[data.held_out]))(
        probes.hidden_rows(tagged, 1, data.rows)))
    y = data.y.copy()
    y[np.flatnonzero(data.held_out)[:5]] = len(data.classes)  # a class only the held-out part has
    W, b, classes = probes.fit(X_train, y[~data.held_out])
    oracle = LogisticRegression(C=probes.C, max_iter=5000, tol=1e-8).fit(X_train, y[~data.held_out])
    assert list(classes) == list(oracle.classes_) and W.shape == (X_train.shape[1], len(oracle.classes_))
    predicted = classes[(X_test.astype(np.float32) @ W + b).argmax(1)]
    assert np.mean(predicted == oracle.predict(X_test)) >= 0.98


def test_fits_on_several_threads_are_the_fits_made_one_by_one(tagged, monkeypatch):
    """probe_items runs a probe's fits (every layer's, and its control task's) on several threads at once: each cell
    of the table is still the fit of that layer and column, bit for bit, on one thread or two."""
    data = probes.probe_data(tagged, "tag")
    control = probes.control_task(data.words, data.y, len(data.classes))
    train, test = ~data.held_out, data.held_out
    layers = range(tagged.num_layers + 1)
    threads, tables = [], {}
    real = probing.fit_and_score
    monkeypatch.setattr(probing, "fit_and_score", lambda *a: threads.append(threading.get_ident()) or real(*a))
    for n in (1, 2):
        threads.clear()
        tables[n] = probing.probe_items(data, "tag", layers, lambda k: probes.hidden_rows(tagged, k, data.rows),
                                        threads=n)
        assert len(set(threads)) == n and threading.get_ident() not in threads
    for layer in layers:
        X_train, X_test = probes.standardize(*(lambda X: (X[train], X[test]))(probes.hidden_rows(tagged, layer,
                                                                                                  data.rows)))
        for y, column in ((data.y, "accuracy"), (control, "control_accuracy")):
            alone = real(X_train, y[train], X_test, y[test])
            assert tables[1].loc[layer, column] == tables[2].loc[layer, column] == alone, (layer, column)
    assert tables[2].loc[2, "accuracy"] != tables[2].loc[2, "control_accuracy"]  # columns that could be swapped


def test_fits_on_threads_leave_torchs_thread_count_as_it_was(tagged):
    """Each fit runs on one torch thread, a setting of the whole process: after the probe, the caller and any thread
    started later (a server's next worker) have the count they had before, whatever order the fits ended in."""
    data = probes.probe_data(tagged, "tag")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        for _ in range(3):
            probing.probe_items(data, "tag", range(tagged.num_layers + 1),
                                lambda k: probes.hidden_rows(tagged, k, data.rows), threads=2)
            seen = []
            later = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
            later.start()
            later.join()
            assert (torch.get_num_threads(), seen) == (2, [2])
    finally:
        torch.set_num_threads(before)


def test_the_hidden_rows_are_the_corpus_states(tagged):
    rows = np.array([0, 5, 3, len(tagged.token_columns) - 1])
    read = probes.hidden_rows(tagged, 2, rows)
    whole = np.concatenate([np.asarray(s.array("hidden")[2], np.float64) for s in tagged.shards])
    np.testing.assert_array_equal(read, whole[rows])


def test_the_control_task_keeps_the_tag_distribution_and_one_class_per_word_type():
    rng = np.random.default_rng(3)
    words = np.asarray([f"w{k}" for k in rng.integers(0, 4000, size=40_000)], dtype=object)
    y = rng.choice(4, size=len(words), p=[0.5, 0.3, 0.15, 0.05])
    control = probes.control_task(words, y, 4)
    for word in np.unique(words)[:200]:
        assert len(set(control[words == word])) == 1
    # the classes are drawn per word TYPE from the real distribution
    first = np.unique(words, return_index=True)[1]
    np.testing.assert_allclose(np.bincount(control[first], minlength=4) / len(first), [0.5, 0.3, 0.15, 0.05],
                               atol=0.03)
    np.testing.assert_array_equal(control, probes.control_task(words, y, 4))  # seeded


def test_targets_read_from_the_text(tagged):
    data = probes.probe_data(tagged, "recurs", max_items=10**9)
    sentence = tagged.token_columns[data.rows, 0]
    for s in np.unique(sentence)[:10]:
        words = list(data.words[sentence == s])
        expected = [w in words[:k] for k, w in enumerate(words)]
        assert list(data.y[sentence == s] == 1) == expected
    assert "the" in set(data.words) and "##" not in "".join(data.words)
    position = probes.probe_data(tagged, "position", max_items=10**9)
    assert position.classes[:4] == ["0", "1", "2", "3"] and position.classes[-1] == "64+"
    positions = tagged.token_columns[position.rows, 1]
    assert (position.y[positions == 1] == 1).all() and (position.y[positions == 5] == 4).all()  # bucket 4-5


def test_only_the_sampled_items_are_spelled(tagged, monkeypatch):
    """Spelling a word is Python work per item: a tag or position probe spells the items it drew, not every word of
    the corpus (recurs needs every word before the one it asks about)."""
    every = probing._word_types(tagged, probes.probe_data(tagged, "tag", max_items=10**9).rows)
    spelled = []
    real = probing._word_types
    monkeypatch.setattr(probing, "_word_types", lambda corpus, rows: spelled.append(len(rows)) or real(corpus, rows))
    for target in ("tag", "position"):
        spelled.clear()
        data = probes.probe_data(tagged, target, max_items=50)
        assert spelled == [50] and len(data.words) == 50
    data = probes.probe_data(tagged, "tag", max_items=50)
    whole = probes.probe_data(tagged, "tag", max_items=10**9)
    np.testing.assert_array_equal(data.words, every[np.searchsorted(whole.rows, data.rows)])


def test_a_figure_per_target(tagged):
    figure = tagged.plot.probe(("tag", "position"))
    names = [trace.name for trace in figure.data]
    assert names[:3] == ["tag: accuracy", "tag: selectivity", "tag: majority class"]
    assert "position: accuracy" in names
    np.testing.assert_allclose(figure.data[0].y, tagged.probe("tag")["accuracy"], atol=5e-5)  # drawn to 4 places


def test_bad_probes_are_one_sentence(tagged, explorer, tmp_path):
    for call in (lambda: tagged.probe("label"), lambda: tagged.probe("tag", layer=99),
                 lambda: tagged.probe("syntax")):
        with pytest.raises((CorpusError, ValueError)) as caught:
            call()
        assert "\n" not in str(caught.value) and "Traceback" not in str(caught.value)
    plain = tmp_path / "plain.txt"
    plain.write_text("One sentence here.\nAnother one there.\nAnd a third.\n", encoding="utf-8")
    small = open_corpus(build_corpus(plain, tmp_path / "small", explorer=explorer, say=lambda t: None),
                        explorer=explorer)
    one_label = tmp_path / "one.csv"
    one_label.write_text("text,label\n" + "".join(f"Sentence number {k} is here.,news\n" for k in range(8)))
    single = open_corpus(build_corpus(one_label, tmp_path / "one", explorer=explorer, say=lambda t: None),
                         explorer=explorer)
    with pytest.raises(CorpusError, match="'news' for this target: there is nothing to tell apart"):
        single.probe("label")
    with pytest.raises(CorpusError, match="3 sentences: a probe needs at least 5"):
        small.probe("position")
    with pytest.raises(CorpusError, match="no tags to probe"):
        small.probe("tag")
    with pytest.raises(CorpusError, match="no tags to probe"):
        small.plot.probe("tag")
