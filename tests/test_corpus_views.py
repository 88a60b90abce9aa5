"""What the corpus views are sent (corpus/browser.py, views/corpus_payload.py): the maps decode to the corpus's own
answers, a head's map is computed once and the cache is bounded, a search equals `corpus.search`, the subsets'
grids are the head summary's rows, the corpora of `serve --corpus` open with their model (or say in one sentence why
not), and the Corpus tab appears only with a corpus."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import json
import threading
from pathlib import Path

import httpx
import numpy as np
import pytest
from gradio_client import Client

from bertviz_app import app, load, open_corpus
from bertviz_app.corpus import CorpusError
from bertviz_app.corpus.browser import CorpusViews
from bertviz_app.views import corpus_payload
from bertviz_app.views.corpus_page import _json_script
from pages import serving

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def folder(small_corpus) -> Path:
    return small_corpus


@pytest.fixture(scope="module")
def explorer(tiny_mlm_folder):
    return load(tiny_mlm_folder, device="cpu")


@pytest.fixture(scope="module")
def views(folder, explorer) -> CorpusViews:
    return CorpusViews(open_corpus(folder, explorer), "small")


def test_a_heads_map_decodes_to_the_corpus_answer(views):
    corpus = views.corpus
    blob = views.qk_map(1, 2)
    decoded = corpus_payload.decode_map(blob)
    points = corpus.qk_map(1, 2, views.map_points // 2)
    x, y = corpus_payload.coordinates(decoded)
    span = np.ptp(points["x"].to_numpy()), np.ptp(points["y"].to_numpy())
    assert np.abs(x - points["x"].to_numpy()).max() <= span[0] / 65535
    assert np.abs(y - points["y"].to_numpy()).max() <= span[1] / 65535
    n = decoded.header["tokens"]
    assert n * 2 == len(points) and (decoded.header["layer"], decoded.header["head"]) == (1, 2)
    rows = points["row"].to_numpy()[:n]
    ids = decoded.arrays["sentence_ids"][decoded.arrays["sentence"]]
    assert (ids == corpus.token_columns[rows, 0]).all()
    assert (decoded.arrays["position"] == corpus.token_columns[rows, 1]).all()
    pieces = corpus_payload.strings(decoded, "pieces")
    assert [pieces[p] for p in decoded.arrays["piece"]] == list(points["piece"][:n])
    # each touched sentence's pieces travel once, for "the token in its sentence"
    at, context = decoded.arrays["context_at"], decoded.arrays["context"]
    s = decoded.arrays["sentence"][5]
    starts = corpus.sentence_starts
    sid = decoded.arrays["sentence_ids"][s]
    assert [pieces[p] for p in context[at[s]:at[s + 1]]] == list(corpus.pieces[corpus.token_columns[
        starts[sid]:starts[sid + 1], 2]])


def test_a_map_is_computed_once_and_the_cache_is_bounded(folder, explorer):
    views = CorpusViews(open_corpus(folder, explorer), cached_maps=2)
    first = views.qk_map(0, 0)
    assert views.qk_map(0, 0) is first
    views.qk_map(0, 1)
    views.qk_map(0, 2)  # three heads in a cache of two: the oldest goes
    assert views.qk_map(0, 0) is not first and views.qk_map(0, 0) == first


def test_a_map_of_100k_points_stays_under_2_mb_in_base64():
    """The worst case of the wire: 50,000 tokens in 5,000 sentences of 25 pieces, coordinates without any order."""
    rng = np.random.default_rng(0)
    n, sentences, length = 50_000, 5_000, 25
    sentence = np.sort(rng.integers(0, sentences, n))
    blob = corpus_payload.encode_qk_map(
        rng.normal(size=2 * n), rng.normal(size=2 * n), sentence=sentence, position=rng.integers(0, length, n),
        piece=rng.integers(0, 8000, n), tag=rng.integers(-1, 80, n), sentence_ids=np.arange(sentences) * 2,
        context_at=np.arange(sentences + 1) * length, context=rng.zipf(1.3, sentences * length) % 8000,
        pieces=[f"piece{k}" for k in range(8000)], tags=[f"t{k}" for k in range(80)], header={})
    assert len(blob) * 4 / 3 <= 2_000_000, f"{len(blob):,} bytes"


def test_a_search_equals_the_corpus_search(views, explorer):
    run = explorer.run("I paid at the bank.")
    mine = views.search_run(run, 5, 2, k=8)
    theirs = views.corpus.search("I paid at the bank.", 5, layer=2, k=8)
    assert [(h["sentence"], h["position"]) for h in mine["hits"]] == list(zip(theirs.table["sentence"],
                                                                             theirs.table["position"]))
    np.testing.assert_allclose([h["score"] for h in mine["hits"]], theirs.table["score"], atol=1e-4)
    hit = mine["hits"][0]
    assert hit["pieces"][hit["position"]] == hit["piece"]
    assert [w for w, _ in mine["words"]] == list(theirs.words.index[:len(mine["words"])])
    with pytest.raises(CorpusError, match="Select a token first"):
        views.search_run(run, None, 2)
    # true, "5", 1e308 and a 309-digit number from the page's JSON: one sentence, no echo of the number
    for bad in (40, -1, True, "5", 1e308, 10**308):
        with pytest.raises(CorpusError, match=r"^A token is named by its number .* from 0 to 7\.$"):
            views.search_run(run, bad, 2)


def test_a_search_asked_again_is_answered_from_the_cache(views, explorer, monkeypatch):
    """Each search read every token's state at its layer (0.3-0.95 s of CPU at 1.27M tokens): ten sessions could ask
    the same one without pause. The same token, layer and k is now answered once; another k is a new search."""
    made = []
    search = views.search
    monkeypatch.setattr(views, "search", lambda *args: made.append(args) or search(*args))
    run = explorer.run("The cat sat by the river bank.")
    first = views.search_run(run, 2, 1, k=5)
    again = views.search_run(explorer.run("The cat sat by the river bank."), 2, 1, k=5)
    assert again == first and len(made) == 1
    assert views.search_run(run, 2, 1, k=6) != first and len(made) == 2


def test_a_search_keeps_the_layers_it_searched_within_its_budget(folder, explorer, monkeypatch):
    corpus = open_corpus(folder, explorer)
    layer_bytes = corpus.manifest["tokens"] * corpus.hidden_size * 4
    read, real = [], corpus.unit_vectors
    monkeypatch.setattr(corpus, "unit_vectors", lambda layer: read.append(layer) or real(layer))
    cached = CorpusViews(corpus, "small", search_cache_bytes=2 * layer_bytes)  # two layers' float32 vectors
    chunked = CorpusViews(corpus, "small", search_cache_bytes=layer_bytes - 1)  # not one: a chunk at a time
    run = explorer.run("I sat by the bank of the river.")
    for i, layer in enumerate((2, 2, 1, 2, 0, 1)):
        # a k of its own each time, so that no search is answered from the searches' own cache
        mine, theirs = cached.search_run(run, 6, layer, k=10 + i), chunked.search_run(run, 6, layer, k=10 + i)
        assert [(h["sentence"], h["position"]) for h in mine["hits"]] == \
            [(h["sentence"], h["position"]) for h in theirs["hits"]]
        np.testing.assert_allclose([h["score"] for h in mine["hits"]], [h["score"] for h in theirs["hits"]],
                                   atol=1e-4)
    assert read == [2, 1, 0, 1]  # read once while kept; the least recently searched layer dropped past two


def test_a_subsets_grid_is_its_row_of_the_head_summary(views):
    info = views.info()
    assert info["subsets"]["label"][0][0] in ("animals", "money") and "tag" not in info["subsets"]
    grid = views.summary("label:money")
    frame = views.corpus.head_summary(by="label")
    frame = frame[frame["label"] == "money"].sort_values(["layer", "head"])
    np.testing.assert_allclose(grid["cls"], frame["cls"], atol=1e-5)
    assert grid["role"] == list(frame["role"]) and grid["tokens"] == frame["tokens"].max()
    assert len(views.summary()["entropy_ratio"]) == info["layers"] * info["heads"]
    for bad, words in (("label:poetry", "no label 'poetry'"), ("colour:red", "kind is one of"), (3, "KIND:NAME")):
        with pytest.raises(CorpusError, match=words):
            views.summary(bad)


def test_the_sentence_map_carries_labels_and_texts(views):
    decoded = corpus_payload.decode_map(views.sentence_map(-1, "mean"))
    labels = corpus_payload.strings(decoded, "labels")
    texts = corpus_payload.strings(decoded, "texts")
    sentences = views.corpus.sentences
    assert labels == ["animals", "money"] and len(texts) == len(sentences)
    assert [labels[k] for k in decoded.arrays["label"]] == list(sentences["label"])
    paired = int(np.flatnonzero(sentences["pair"].notna() & (sentences["pair"] != ""))[0])
    assert texts[paired] == "I paid at the bank. Really. | It was late."
    assert decoded.header["layer"] == views.corpus.num_layers and not decoded.header["predictions"]
    with pytest.raises(CorpusError, match="pooling"):
        views.sentence_map(1, "max")
    with pytest.raises(CorpusError, match=r"^pooling must be 'cls' or 'mean', not \"\['cls'\]\"$"):
        views.sentence_map_text(1, ["cls"])  # the page's JSON: a list was "Unhashable type: 'list'"


def test_a_heads_details(views):
    d = views.head(1, 3)
    assert d["offsets"] == list(range(-10, 11)) and len(d["profile"]) == 21
    assert d["links"] == [] and d["relations"] == []  # an untagged corpus
    with pytest.raises(ValueError, match="head"):
        views.head(1, 4)


def test_serve_corpora_open_with_their_model_or_say_why_not(folder, explorer, tmp_path):
    from bertviz_app.app.tabs.corpus import open_corpora

    served = {"tiny": explorer}
    loaded = []
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "corpus.json").write_text("{not json", encoding="utf-8")
    corpora, problems = open_corpora([str(folder), str(tmp_path / "missing"), str(damaged)], served,
                                     lambda source: loaded.append(source))
    assert list(corpora) == ["small"] and corpora["small"].model_name == "tiny" and not loaded
    assert corpora["small"].corpus.explorer is explorer
    assert len(problems) == 2
    assert problems[0].startswith("The corpus missing is not available: no corpus folder at")
    assert problems[1].startswith("The corpus damaged is not available:") and "cannot be read" in problems[1]
    # a corpus whose model the operator did not name: loaded, and offered with the others
    served = {}
    corpora, problems = open_corpora([str(folder)], served, lambda source: loaded.append(source) or explorer)
    assert loaded == [str(explorer.folder)] and served == {explorer.name: explorer}
    assert corpora["small"].model_name == explorer.name and not problems


def test_the_corpus_tab_shows_only_with_a_corpus(views, explorer):
    def tab_ids(demo):
        return {b.get("props", {}).get("id") for b in demo.config["components"] if b.get("type") == "tabitem"}

    plain = app.build_demo({"tiny": explorer})
    views.model_name = "tiny"
    with_corpus = app.build_demo({"tiny": explorer}, corpora={"small": views})
    broken = app.build_demo({"tiny": explorer}, corpus_problems=["The corpus x is not available: no corpus folder at /srv/x"])
    try:
        assert "corpus-tab" not in tab_ids(plain)
        assert "corpus-tab" in tab_ids(with_corpus) and "corpus-tab" in tab_ids(broken)
        value = next(b["props"]["value"] for b in broken.config["components"]
                     if b.get("props", {}).get("elem_id") == "corpus-host")
        assert value == {"corpora": [], "unavailable": ["x"]}  # corpus-host.mjs says so in the page's language
    finally:
        for demo in (plain, with_corpus, broken):
            demo.close()


def test_the_js_fixture_of_the_corpus_maps_is_current():
    spec = importlib.util.spec_from_file_location("make_corpus_fixture", ROOT / "tests" / "js" /
                                                  "make_corpus_fixture.py")
    fixture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fixture)
    stored = ROOT / "tests" / "js" / "fixtures"
    assert (stored / "corpus.qk.bvz").read_bytes() == fixture.qk_blob(), "run python tests/js/make_corpus_fixture.py"
    assert (stored / "corpus.sentences.bvz").read_bytes() == fixture.sentences_blob()


def test_corpus_show_is_one_isolated_frame_and_save_html_one_offline_page(views, tmp_path):
    corpus = views.corpus
    shown = corpus.show(heads=[(1, 2)])._repr_html_()
    assert shown.count("<iframe srcdoc=") == 1 and 'sandbox="allow-scripts allow-downloads"' in shown
    assert "data:image/png;base64," in shown  # the picture an untrusted notebook shows instead
    page = corpus.save_html(tmp_path / "c.html", heads=[(1, 2), (0, 1)]).read_text(encoding="utf-8")
    data = page.split('<script type="application/json" id="bertviz-corpus">')[1].split("</script>")[0]
    saved = json.loads(data)
    assert "/tmp" not in saved["info"]["model"]  # the model's name, never the folder's path on this machine
    assert sorted(saved["qk"]) == ["0,1", "1,2"] and saved["state"] == {"view": "heads", "layer": 1, "head": 2}
    assert sorted(saved["summaries"]) == ["all", "label:animals", "label:money"]
    with pytest.raises(ValueError, match="head"):
        corpus.show(heads=[(1, 9)])
    # text that would end the data's <script> element travels escaped
    assert "</script>" not in _json_script({"name": "</script><b>"}) and json.loads(_json_script({"a": "</b>"}))[
        "a"] == "</b>"


def test_serve_takes_several_corpora_and_says_which_cannot_be_read(folder, explorer, tmp_path, capsys):
    import argparse

    from bertviz_app.cli import build_parser, open_served_corpora

    parser, _ = build_parser()
    args = parser.parse_args(["serve", "--corpus", str(folder), "--corpus", str(tmp_path / "gone")])
    assert args.corpus == [str(folder), str(tmp_path / "gone")]
    assert parser.parse_args(["serve"]).corpus == []
    explorers = {explorer.name: explorer}
    corpora, problems = open_served_corpora(app, args, explorers)
    assert list(corpora) == ["small"] and len(problems) == 1
    assert capsys.readouterr().err.startswith("bertviz-app: warning: The corpus gone is not available: no corpus")
    assert open_served_corpora(app, argparse.Namespace(corpus=[]), explorers) == ({}, [])


def test_a_failed_answer_is_not_kept_and_the_next_good_one_is(views):
    with pytest.raises(ValueError):
        views.qk_map_text(0, 99)
    assert views._texts._making == {} and views._maps._making == {}
    assert views.qk_map_text(0, 1) is views.qk_map_text(0, 1)


# --- the Corpus tab on a served app: lanes, rates, a click on a point ----------------------------------------------
@pytest.fixture(scope="module")
def corpus_app(views, explorer):
    """(url, demo) of a served app with the small corpus."""
    views.model_name = "tiny"
    with serving({"tiny": explorer}, corpora={"small": views}) as served:
        yield served.url, served.demo


def corpus_call(url: str, demo, session: str, name: str, data, timeout: float = 60) -> dict:
    """One of the corpus views' server functions, called the way their script calls it."""
    (component,) = [i for i, b in demo.blocks.items() if getattr(b, "elem_id", None) == "corpus-host"]
    answer = httpx.post(url + "gradio_api/component_server", timeout=timeout,
                        json={"session_hash": session, "component_id": component, "fn_name": name, "data": data})
    assert answer.status_code == 200, answer.text[:200]
    return answer.json()


def analyzed(url: str, text: str) -> tuple[str, str]:
    """(session hash, the views' key) of a new visitor who analyzed `text` with the corpus's model."""
    client = Client(url, verbose=False)
    return client.session_hash, client.predict("tiny", text, "", api_name="/analyze")[2]["key"]


def test_answers_already_made_never_wait_behind_searches(corpus_app, monkeypatch):
    """One address searching from 100 threads took another visitor's summary from 0.01 s to 34 s: searches and
    answers made before waited in one lane. Searches now have a lane of their own: two held searches (the old lane's
    room) leave a summary and a head's details answered at once."""
    url, demo = corpus_app
    gate, started = threading.Event(), threading.Semaphore(0)
    search_run = CorpusViews.search_run

    def held(self, *args):
        started.release()
        gate.wait(60)
        return search_run(self, *args)

    monkeypatch.setattr(CorpusViews, "search_run", held)
    searchers = [analyzed(url, f"Search number {i} near the bank.") for i in range(2)]
    reader, _ = analyzed(url, "A reader of the corpus.")
    corpus_call(url, demo, reader, "corpus_summary", {"corpus": "small"})  # made once, before
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        searches = [pool.submit(corpus_call, url, demo, session, "corpus_search",
                                {"corpus": "small", "key": key, "token": 1, "layer": 1}) for session, key in searchers]
        assert started.acquire(timeout=60)
        try:
            summary = corpus_call(url, demo, reader, "corpus_summary", {"corpus": "small"}, timeout=10)
            head = corpus_call(url, demo, reader, "corpus_head", {"corpus": "small", "layer": 1, "head": 2},
                               timeout=10)
        finally:
            gate.set()
        answers = [f.result() for f in searches]
    assert "value" in summary and "value" in head
    # one search at a time: the second waited for the first, and both were answered
    assert all("value" in a for a in answers), answers


def test_one_address_is_limited_however_many_sessions_it_holds(monkeypatch):
    """An address may hold 100 sessions; each had the per-session rate. Now the address has a count of its own, and
    a refusal is answered after a pause (costing the server nothing) instead of inviting the next call at once."""
    import anyio

    from bertviz_app.app.server import guards
    from bertviz_app.app.views_host import ExportLane

    paused = []

    async def pause(seconds):
        paused.append(seconds)

    monkeypatch.setattr(anyio, "sleep", pause)
    now = [0.0]
    lane = ExportLane(1, 4, per_minute=3, per_address=5, clock=lambda: now[0], what="searches")

    def call(session: str, address: str) -> dict:
        async def asked():
            token = guards.CALLER.set(guards.Caller(address, False, session))
            try:
                return await lane.call(lambda s: s)
            finally:
                guards.CALLER.reset(token)
        return asyncio.run(asked())

    answers = [call(f"s{i % 3}", "203.0.113.9") for i in range(6)]
    assert [a.get("value") for a in answers[:5]] == ["s0", "s1", "s2", "s0", "s1"]
    assert answers[5]["error"].startswith("Pages from your network address (a class behind one school address "
                                          "shares it) asked the server for more than 5 searches in a minute")
    assert call("s9", "198.51.100.7") == {"value": "s9"}  # another address
    assert [call("s9", "198.51.100.7").get("value") for _ in range(3)] == ["s9", "s9", None]  # the page's own 3
    now[0] += 60
    assert call("s0", "203.0.113.9") == {"value": "s0"}
    assert paused == [5, 5]  # each refusal, up to REFUSAL_PAUSE_S


def test_a_spanish_page_reads_the_corpus_servers_refusals_in_spanish(monkeypatch):
    """The server functions know the page's language from the call's Referer (?lang=) or Accept-Language, which the
    guard in front of them keeps: a refused corpus name, a rate past its limit and the words for a missing script
    reach a Spanish page in Spanish, an English page as they were."""
    import anyio

    from bertviz_app.app.server import guards
    from bertviz_app.app.tabs.corpus import HOST_SCRIPT, CorpusTab
    from bertviz_app.app.views_host import ExportLane

    async def nothing(seconds):
        pass

    monkeypatch.setattr(anyio, "sleep", nothing)
    seen = []

    async def app_below(scope, receive, send):
        seen.append(guards.CALLER.get())

    scope = {"type": "http", "path": "/", "client": ("198.51.100.7", 1),
             "headers": [(b"referer", b"http://127.0.0.1:7860/?lang=es"), (b"cookie", b"x=1")]}
    asyncio.run(guards.ClientSessions(app_below)(scope, None, None))
    spanish = seen[0].headers
    assert spanish == {"referer": "http://127.0.0.1:7860/?lang=es"}  # what the language is read from, no more

    lane = ExportLane(1, 4, per_minute=1, per_address=None, what="corpus answers")
    unknown = type("Page", (), {"corpora": {"brown": None}})()

    def call(headers) -> dict:
        async def asked():
            token = guards.CALLER.set(guards.Caller("198.51.100.7", False, "s1", headers=headers))
            try:
                return await lane.call(lambda session: CorpusTab.corpus(unknown, "zz"))
            finally:
                guards.CALLER.reset(token)
        return asyncio.run(asked())

    assert call(spanish) == {"error": "Corpus desconocido 'zz'; este servidor tiene: brown."}
    assert call({"accept-language": "es-ES,es"})["error"].startswith("Esta página: más de 1 respuestas del corpus "
                                                                     "pedidas al servidor en un minuto")
    lane = ExportLane(1, 4, per_minute=5, per_address=None, what="corpus answers")
    assert call({"accept-language": "en-US"}) == {"error": "Unknown corpus 'zz'; this server has: brown."}
    assert "Las vistas del corpus no pueden arrancar" in HOST_SCRIPT and "The corpus views cannot start" in HOST_SCRIPT


@pytest.mark.parametrize("sentence", [-1, 10**9, 10**308, "3", True, None])
def test_a_click_on_a_point_with_a_bad_sentence_is_one_sentence_without_a_traceback(corpus_app, sentence, capfd):
    """`_corpus_open` with sentence -1 answered a bare 500 and logged a traceback per call (324 calls in 10 s grew
    the log by 796 kB)."""
    url, demo = corpus_app
    index = next(i for i, fn in demo.fns.items() if fn.api_name == "_corpus_open")
    session, _ = analyzed(url, "A visitor who clicks.")
    answer = httpx.post(url + "gradio_api/run/predict", timeout=60, json={
        "fn_index": index, "session_hash": session, "data": [],
        "event_data": {"corpus": "small", "sentence": sentence}})
    error = answer.json().get("error") or ""
    assert error.startswith(("Sentence ", "A sentence is named by its number")) and "\n" not in error, answer.text
    assert len(error) < 200
    assert "Traceback" not in capfd.readouterr().err


def test_clicks_on_points_get_the_polls_rate(corpus_app):
    url, demo = corpus_app
    index = next(i for i, fn in demo.fns.items() if fn.api_name == "_corpus_open")
    session, _ = analyzed(url, "A visitor who clicks fast.")
    with httpx.Client(base_url=url, timeout=60) as page:
        statuses = [page.post("gradio_api/run/predict", json={
            "fn_index": index, "session_hash": session, "data": [],
            "event_data": {"corpus": "small", "sentence": 0}}).status_code for _ in range(12)]
    assert statuses[0] == 200 and statuses.count(429) >= 6, statuses


def test_a_probe_answer_is_the_corpus_probe_and_a_missing_target_one_sentence(views):
    answer = views.probe("label")
    table = views.corpus.probe("label")
    assert answer["layer"] == list(range(views.corpus.num_layers + 1))
    assert np.allclose(answer["accuracy"], table["accuracy"], atol=1e-5)
    assert answer["control_accuracy"] == [None] * len(table)  # a sentence label has no word types to shuffle
    assert views.probe("label") is answer  # trained once per target
    recurs = views.probe("recurs")
    assert np.allclose(recurs["selectivity"], views.corpus.probe("recurs")["selectivity"], atol=1e-5)
    for target, words in (("tag", "no tags"), ("beauty", "one of"), (["tag"], "one of")):
        with pytest.raises(CorpusError, match=words) as caught:
            views.probe(target)
        assert "\n" not in str(caught.value)


def test_a_cards_examples_carry_their_sentences_attention_from_their_token(views):
    card = views.card(1, 2, "previous")
    assert card["ranked_by"] == "previous" and len(card["examples"]) == 6
    for e in card["examples"]:
        run = views.corpus.run(e["sentence"])
        assert e["pieces"] == list(run.labels)
        row = run.attention(layer=1, head=2)[e["position"]]
        assert np.abs(np.asarray(e["weights"]) - row).max() <= 5e-5  # kept to 4 decimals
        assert abs(e["weights"][e["position"] - 1] - e["value"]) <= 5e-5  # the picture shows the value it ranks by
    assert views.card(1, 2, "previous") is card
    for call, words in ((lambda: views.card(1, 2, "beauty"), "ranks its examples"), (lambda: views.card(9, 0), "layer")):
        with pytest.raises((CorpusError, ValueError), match=words):
            call()
