"""The app through its API, as gradio_client sees it: one server for the module, on a free 127.0.0.1 port, offering
the default model (no pretraining heads) and a tiny random BERT with both heads, saved and loaded like any other
checkpoint, so that every masked-LM and next-sentence view is exercised with and without its head."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from bertviz_app import app, catalog, views

pytestmark = pytest.mark.real_weights

MODEL = "all-MiniLM-L6-v2"
BAD_TEXTS = {
    "empty": "",
    "whitespace": " \t\n  ",
    "long": "word " * 2000,  # 10 000 characters
    "only-mask": "[MASK]",
    "html": "<b>bold</b> <script>alert('x')</script> <img src=x onerror=alert(1)>",
    "emoji": "😀🙈 🚀 naïve café",
    "cjk": "我爱自然语言处理。東京は日本の首都です。",
    "control": "a\x00b\x01c\x07\x1b[31m\u200b\ufeff\x7f",
}


DEFAULT = "minilm-l6-mlm-nsp-en"


@pytest.fixture(scope="module")
def served(serve_app, tiny_mlm_folder):
    # as the command line does it: `bertviz-app --model all-MiniLM-L6-v2 --model <folder> --model minilm-...`
    return serve_app(MODEL, tiny_mlm_folder, DEFAULT, max_tokens=128)


@pytest.fixture(scope="module")
def explorers(served):
    return served.explorers


@pytest.fixture(scope="module")
def explorer(explorers):
    return explorers[MODEL]


@pytest.fixture(scope="module")
def tiny(explorers):
    (name,) = [n for n in explorers if n not in (MODEL, DEFAULT)]
    return explorers[name]


@pytest.fixture(scope="module")
def demo(served):
    return served.demo


@pytest.fixture(scope="module")
def server(served):
    return served.url


@pytest.fixture(scope="module")
def client(server):
    return Client(server, verbose=False)


def analyze(client, a, b="", model=MODEL):
    return client.predict(model, a, b, api_name="/analyze")


def token_table(value: dict) -> dict:
    """The token table of an analysis (its {headers, data} travel as one JSON string)."""
    return json.loads(value["table"])


def table_tokens(value: dict) -> list[str]:
    table = token_table(value)
    return [row[table["headers"].index("token")] for row in table["data"]]


def views_of(out) -> views.Decoded:
    """The attention views' payload an analysis sent to the page, decoded."""
    value = out[2]
    return views.decode_payload(base64.b64decode(value["payload"]))


def assert_still_serves(client):
    out = analyze(client, "Still here.")
    assert table_tokens(out[0]) == ["[CLS]", "still", "here", ".", "[SEP]"]


def server_function(server: str, demo, session_hash: str, name: str, data):
    """Call one of the attention views' server functions the way their script does (no gradio_client support)."""
    (component_id,) = [i for i, b in demo.blocks.items() if getattr(b, "elem_id", None) == "attention-host"]
    return httpx.post(server + "gradio_api/component_server", timeout=60,
                      json={"session_hash": session_hash, "component_id": component_id, "fn_name": name,
                            "data": data})


def test_every_named_endpoint_is_there(client):
    endpoints = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert {"/analyze", "/embeddings", "/hidden_states", "/token_similarity", "/mask_token", "/fill_mask",
            "/logit_lens", "/corrupt", "/next_sentence"} <= endpoints
    # browsing the attention of an analysis happens in the page: no endpoint redraws it
    assert not endpoints & {"/attention", "/attention_details", "/attention_overview"}


def test_the_picker_offers_exactly_the_given_models(client, explorers):
    info = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/analyze"]
    model = next(p for p in info["parameters"] if p["parameter_name"] == "model")
    assert model["type"]["enum"] == list(explorers)


def test_analyze_a_pair(client, explorer):
    # gr.State is not part of the API: the session stays on the server
    out = analyze(client, "The cat sat.", "It slept.")
    table, notice, value = out
    assert table_tokens(table) == ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "slept", ".", "[SEP]"]
    segments = [row[token_table(table)["headers"].index("segment")] for row in token_table(table)["data"]]
    assert segments == ["A"] * 6 + ["B"] * 4
    assert "10 tokens" in notice
    nsp = client.predict(api_name="/next_sentence")[0]
    # in words for a student, pointing at the model of this page that has the head, not at a command line
    assert nsp.startswith("**all-MiniLM-L6-v2 has no next-sentence head.**") and "--model" not in nsp
    assert "Pick **" in nsp
    # the Masked LM and Model tabs update in private steps of the same analysis; their texts:
    assert "no masked-LM head" in app.tabs.masked_lm.mlm_status(explorer)
    info = app.tabs.model_info.model_text(explorer)
    assert "22,713,216" in info and "cpu" in info
    # no empty header row, and no classifier's label count for a model without a classifier
    assert "| | |" not in info and "num_labels" not in info and "`num_hidden_layers`" in info
    # what a permalink needs, beside the payload
    assert (value["a"], value["b"], value["model"]) == ("The cat sat.", "It slept.", MODEL)


def test_the_views_get_every_layer_and_head_in_one_payload(client, explorer):
    decoded = views_of(analyze(client, "The cat sat.", "It slept."))
    run = explorer.run("The cat sat.", "It slept.")
    header = decoded.header
    assert header["tokens"] == run.tokens and (header["layers"], header["heads"]) == (6, 12)
    assert header["key"] == views.run_key(run.model_name, run.tokens)
    attention = decoded.values("attention")  # (L, h, T, T) from 8-bit codes
    assert attention.shape == run.attentions.shape
    np.testing.assert_allclose(attention, run.attentions.astype(np.float32), atol=2 / 255)
    assert set(header["matrix_sets"]) >= {"attention", "rollout"}



def test_the_page_carries_the_views_script_once_and_a_plain_config(server, demo):
    """The views' script sits once in the page's head, not in each of its three hosts; and the config holds only
    plain data. (A host's js_on_load with the whole script made gradio turn every quoted word of it into an event
    trigger attribute: a `self` prop that cannot be deep-copied, which sent every /config request down gradio's
    slow element-by-element copy; that and 3 x 135 kB of script made /config 560 kB and a 20-visitor burst slower.)"""
    import copy

    page = httpx.get(server).text
    marker = "function mountPage("  # once per copy of the views' script
    assert page.count(marker) == 1
    config = demo.config
    copy.deepcopy(config)  # raises on a prop that is not plain data
    hosts = [c for c in config["components"] if c["props"].get("elem_id", "").endswith("attention-host")
             or c["props"].get("elem_id", "").startswith("compare-")]
    assert len([h for h in hosts if h["type"] == "html"]) == 3
    assert all(marker not in h["props"].get("js_on_load", "") for h in hosts)
    # each host's js_on_load only hands Gradio's arguments to the host in the page's script (gradio-host.mjs)
    assert all("BertvizViews.gradioHost({ element, props, server, trigger, watch })" in h["props"]["js_on_load"]
               for h in hosts if h["type"] == "html")
    assert "function gradioHost(" in page and "function startGradioHost(" in page

def test_the_views_server_functions_read_the_cached_run_without_a_forward_pass(client, server, demo, explorer,
                                                                              monkeypatch):
    out = analyze(client, "Redraw me, please.")
    key = out[2]["key"]
    calls = []
    forward = explorer._batches.run_many  # every new input's forward pass goes through it
    monkeypatch.setattr(explorer._batches, "run_many", lambda items: calls.append(items) or forward(items))
    session = client.session_hash
    blob = server_function(server, demo, session, "query_key", key)
    assert blob.status_code == 200
    qk = views.decode_query_key(base64.b64decode(blob.json()["value"]))
    assert qk.header["key"] == views_of(out).header["key"] and qk.arrays["queries"].shape[:2] == (6, 12)
    page = server_function(server, demo, session, "offline_page", key).json()["value"]
    assert page.startswith("<!DOCTYPE html>") and "bertviz-payload" in page and "https://" not in page
    csv = server_function(server, demo, session, "attention_csv", {"key": key, "matrix": "attention", "layer": 2,
                                                                    "head": 3}).json()["value"]
    frame = pd.read_csv(io.StringIO(csv), keep_default_na=False)
    run = explorer.run("Redraw me, please.")
    assert len(frame) == len(run) ** 2 and set(frame["layer"]) == {2} and set(frame["head"]) == {3}
    np.testing.assert_allclose(frame["weight"].to_numpy().reshape(len(run), len(run)),
                               run.attentions[2, 3].astype(np.float32), atol=1e-6)
    rollout = server_function(server, demo, session, "attention_csv",
                              {"key": key, "matrix": "rollout", "layer": 5, "head": 0}).json()["value"]
    assert len(pd.read_csv(io.StringIO(rollout))) == len(run) ** 2
    assert calls == []  # every answer came from the cached Run
    missing = server_function(server, demo, session, "query_key", "0" * 16).json()
    assert "press Analyze" in missing["error"] and "value" not in missing
    too_many = server_function(server, demo, session, "attention_csv", {"key": key, "matrix": "attention",
                                                                         "layer": 99, "head": "all"}).json()
    assert "value" in too_many  # a layer past the last is the last one (the page's slider cannot ask for more)
    bad = server_function(server, demo, session, "attention_csv", {"key": key, "matrix": "<b>x</b>"}).json()
    assert bad["error"].startswith("Unknown matrix")
    # server functions get the browser's JSON as it is, unchecked by gradio: any type must get words
    for wrong in ({"key": key, "matrix": ["attention"]}, {"key": key, "matrix": "attention", "layer": {"a": 1}},
                  {"key": key, "matrix": "attention", "layer": 0, "head": [1]}, [key], None):
        answer = server_function(server, demo, session, "attention_csv", wrong).json()
        assert answer.get("error") and "went wrong" not in answer["error"], (wrong, answer)
    for wrong in ([key], {"key": key}, 7, None):
        for name in ("query_key", "offline_page"):
            answer = server_function(server, demo, session, name, wrong).json()
            assert "press Analyze" in answer.get("error", ""), (name, wrong, answer)


@pytest.mark.parametrize("endpoint, args", [("/embeddings", (64,)), ("/hidden_states", (3,)),
                                            ("/token_similarity", (0,))])
def test_every_view_draws(client, endpoint, args):
    analyze(client, "The bank raised its rates.", "We sat on the river bank.")
    out = client.predict(*args, api_name=endpoint)
    figures = out if isinstance(out, tuple) else (out,)
    assert figures and all(f["type"] == "plotly" and len(f["plot"]) > 1000 for f in figures)


def test_long_input_is_truncated_with_a_notice(client):
    out = analyze(client, BAD_TEXTS["long"])
    assert len(token_table(out[0])["data"]) == 128
    assert "truncated" in out[1] and "128" in out[1]


def test_a_book_is_refused_in_words(client):
    with pytest.raises(AppError, match="characters"):
        analyze(client, "x" * (app.MAX_CHARS + 1))
    assert_still_serves(client)


REFUSED = {"empty": ("", ""), "spaces": (" \t\n  ", ""), "a book": ("x" * (app.MAX_CHARS + 1), ""),
           "a control character": ("the cat\x07 sat", ""), "a control character in B": ("Fine.", "a\x00b")}


@pytest.mark.parametrize("name", list(REFUSED))
def test_the_app_and_the_explorer_refuse_in_the_same_sentence(client, explorer, name):
    """One check of the text (bertviz_app.inputs): a visitor reads the sentence a notebook's explorer raises."""
    text, pair = REFUSED[name]
    with pytest.raises(ValueError) as in_a_notebook:
        explorer.run(text, pair or None)
    with pytest.raises(AppError) as on_the_page:
        analyze(client, text, pair)
    sentence = str(in_a_notebook.value)
    assert sentence[:1].isupper() and sentence.endswith(".")
    assert str(on_the_page.value) == sentence


def is_analysis(out) -> bool:
    return table_tokens(out[0])[0] == "[CLS]" and views_of(out).header["tokens"] == table_tokens(out[0])


def is_message_table_figure(out) -> bool:
    message, table, figure = out
    return isinstance(message, str) and set(table) >= {"headers", "data"} and (figure is None or
                                                                              figure["type"] == "plotly")


@pytest.mark.parametrize("name", list(BAD_TEXTS))
def test_bad_input_never_breaks_the_server(client, tiny, name):
    """Every endpoint either answers with its usual shape or refuses in words; nothing else (no traceback, no
    exception class name, no None where a view belongs)."""
    text = BAD_TEXTS[name]
    calls = [(lambda: analyze(client, text), is_analysis), (lambda: analyze(client, "Fine.", text), is_analysis),
             (lambda: client.predict(MODEL, text, 3, api_name="/fill_mask"), is_message_table_figure)]
    for model in (MODEL, tiny.name):  # the pretraining views of the analyzed input, with and without the heads
        calls += [(lambda m=model: analyze(client, text, text, model=m), is_analysis),
                  (lambda: client.predict(api_name="/next_sentence"), lambda out: isinstance(out[0], str) and out[0]),
                  (lambda: client.predict(1, api_name="/corrupt"), is_message_table_figure),
                  (lambda: client.predict(1, 3, api_name="/mask_token"), is_message_table_figure)]
    calls += [(lambda: client.predict(tiny.name, text, 3, api_name="/fill_mask"), is_message_table_figure),
              (lambda: client.predict(tiny.name, text + " [mask]", 3, api_name="/fill_mask"),
               lambda out: is_message_table_figure(out) and len(out[1]["data"]) >= 3),
              (lambda: client.predict(tiny.name, text, 1, api_name="/logit_lens"), is_message_table_figure),
              (lambda: client.predict(tiny.name, "[MASK] " + text, 2, api_name="/logit_lens"),
               is_message_table_figure)]
    answered, refusals = 0, []
    for call, well_formed in calls:
        try:
            out = call()
        except AppError as err:  # refused in words: no traceback, no exception class name
            assert str(err).strip() and "Traceback" not in str(err) and "Error:" not in str(err)
            refusals.append(str(err))
        else:
            assert well_formed(out), out
            answered += 1
    if name == "control":
        # the one input check (bertviz_app.inputs) refuses it in every box it is typed into: the two analyses with
        # it, the three of both sentences, the four of the masked text (the other six read the session's Run)
        assert sum("contains a control character (U+0000" in r for r in refusals) == 9, refusals
    else:
        assert answered >= 2  # the pair with a good sentence A and the fill-mask without a head always answer
    assert_still_serves(client)


def test_tokens_are_text_not_html(client):
    out = analyze(client, BAD_TEXTS["html"])
    tokens = table_tokens(out[0])
    assert "<" in tokens and "script" in tokens
    # the views get tokens as JSON strings in their payload, and draw them with textContent (test_views_browser)
    assert views_of(out).header["tokens"] == tokens


def test_only_listed_models_can_be_picked(client):
    with pytest.raises(AppError):
        analyze(client, "Hello.", model="/etc/passwd")
    with pytest.raises(AppError):
        client.predict("../../secret", "a [MASK].", 3, api_name="/fill_mask")
    assert_still_serves(client)


NO_MLM = "**all-MiniLM-L6-v2 has no masked-LM head.**"


def test_every_masked_lm_view_without_the_head_says_so(client):
    message, table, figure = client.predict(MODEL, "The cat sat on the [mask].", 5, api_name="/fill_mask")
    assert message.startswith(NO_MLM) and table["data"] == [] and figure is None
    message, table, figure = client.predict(MODEL, "The cat sat on the [mask].", 1, api_name="/logit_lens")
    assert message.startswith(NO_MLM) and table["data"] == [] and figure is None
    analyze(client, "The cat sat on the mat.")
    message, table, figure = client.predict(2, 5, api_name="/mask_token")
    assert message.startswith(NO_MLM) and table["data"] == [] and figure is None


def test_pretraining_corruption_needs_no_head(client):
    analyze(client, "The quick brown fox jumps over the lazy dog near the quiet river bank today.")
    first = client.predict(3, api_name="/corrupt")
    assert first == client.predict(3, api_name="/corrupt")  # a seed is a sample that can be shown again
    message, table, figure = first
    cols = {h: i for i, h in enumerate(table["headers"])}
    rows = table["data"]
    assert [r[cols["token"]] for r in rows][:3] == ["[CLS]", "the", "quick"]
    for row in rows:
        change, token, reads = row[cols["change"]], row[cols["token"]], row[cols["the model reads"]]
        assert change in ("", "mask", "random", "kept")
        assert (reads == "[MASK]") == (change == "mask") or token == "[MASK]"
        assert (row[cols["to predict"]] == token) if change else row[cols["to predict"]] == ""
        if token in ("[CLS]", "[SEP]"):
            assert change == ""
    chosen = sum(1 for r in rows if r[cols["change"]])
    assert f"{chosen} of {len(rows)} tokens chosen" in message and figure["type"] == "plotly"
    samples = {tuple(r[cols["change"]] for r in client.predict(s, api_name="/corrupt")[1]["data"])
               for s in range(5)}
    assert len(samples) > 1  # another sample is another corruption


# --- with the masked-LM and next-sentence heads: the tiny random model --------------------------------------
def predictions_of(table: dict) -> list[list[tuple[str, float]]]:
    """The fill-mask table back into one list of (token, probability) per mask, in mask order."""
    cols = {h: i for i, h in enumerate(table["headers"])}
    blocks: dict[int, list] = {}
    for row in table["data"]:
        blocks.setdefault(int(row[cols["mask"]]), []).append(
            (int(row[cols["rank"]]), row[cols["token"]], float(row[cols["probability"]])))
    assert list(blocks) == sorted(blocks)
    return [[(t, p) for r, t, p in sorted(rows)] for _, rows in sorted(blocks.items())]


def test_fill_mask_gives_one_block_per_mask_in_order(client, tiny):
    text = "The [MASK] sat on the [mask] with a [Mask] hat."
    message, table, figure = client.predict(tiny.name, text, 4, api_name="/fill_mask")
    blocks = predictions_of(table)
    expected = tiny.fill_mask(text.replace("[mask]", "[MASK]").replace("[Mask]", "[MASK]"), top_k=4)
    assert len(blocks) == 3 and [[t for t, _ in b] for b in blocks] == [[t for t, _ in b] for b in expected]
    for block, want in zip(blocks, expected):
        probs = [p for _, p in block]
        assert probs == sorted(probs, reverse=True) and all(0 <= p <= 1 for p in probs)
        assert probs == pytest.approx([p for _, p in want], rel=1e-3)
    assert "each of the 3 masks" in message and figure["type"] == "plotly" and "[MASK] 3" in figure["plot"]


def test_every_spelling_of_mask_works(client, tiny):
    tables = [client.predict(tiny.name, f"Paris is the {m} of France.", 3, api_name="/fill_mask")[1]["data"]
              for m in ("[MASK]", "[mask]", "[Mask]", "[ mask ]")]
    assert len(tables[0]) == 3 and all(t == tables[0] for t in tables)


def test_only_a_mask_and_no_mask(client, tiny):
    message, table, _ = client.predict(tiny.name, "[MASK]", 5, api_name="/fill_mask")
    assert len(predictions_of(table)) == 1 and len(table["data"]) == 5
    with pytest.raises(AppError, match=r"has no \[MASK\]; write \[MASK\] where the model should guess a word"):
        client.predict(tiny.name, "No mask in here.", 5, api_name="/fill_mask")
    assert_still_serves(client)


def test_html_in_the_masked_text_stays_text(client, tiny):
    message, table, figure = client.predict(tiny.name, BAD_TEXTS["html"] + " [MASK]", 3, api_name="/fill_mask")
    assert len(table["data"]) == 3
    assert "<script>" not in figure["plot"] and "<img" not in figure["plot"] and "<script>" not in message
    lens = client.predict(tiny.name, "<b>[MASK]</b> <script>x</script>", 1, api_name="/logit_lens")
    assert "<script>" not in lens[0] and "<script>" not in lens[2]["plot"]


def test_logit_lens_has_a_row_per_layer_and_the_embeddings(client, tiny):
    text = "The cat sat on the [MASK] and the [MASK]."
    message, table, figure = client.predict(tiny.name, text, 2, api_name="/logit_lens")
    layers = tiny.config.num_hidden_layers
    assert len(table["data"]) == layers + 1
    assert [r[0] for r in table["data"]] == ["embeddings"] + [f"layer {i}" for i in range(1, layers + 1)]
    lens = tiny.logit_lens(text, top_k=3, mask_index=1)
    assert f"token {lens.position}" in message and "mask 2" in message
    assert table["data"][-1][2] == app.percent(lens.final_token_probability[-1])
    assert figure["type"] == "plotly"
    # a mask number past the text's masks is refused in words (the page's slider offers only the text's masks)
    with pytest.raises(AppError, match="out of range: the text has 2"):
        client.predict(tiny.name, text, 9, api_name="/logit_lens")


def test_masking_a_token_of_the_input(client, tiny):
    analyze(client, "The cat sat on the mat.", "Dogs bark.", model=tiny.name)
    message, table, figure = client.predict(2, 5, api_name="/mask_token")
    direct = tiny.mask_token("The cat sat on the mat.", 2, "Dogs bark.", top_k=5)
    assert direct.original == "cat" and "**cat**" in message
    assert f"**{app.percent(direct.original_probability)}** (rank {direct.original_rank:,} of 30,522)" in message
    assert [float(r[2]) for r in table["data"]] == pytest.approx([p for _, p in direct.predictions], rel=1e-3)
    assert [r[1] for r in table["data"]] == [t for t, _ in direct.predictions]
    assert figure["type"] == "plotly" and "cat" in figure["plot"]
    assert "**bark**" in client.predict(10, 5, api_name="/mask_token")[0]
    with pytest.raises(AppError, match="special token"):
        client.predict(0, 5, api_name="/mask_token")
    message, table, figure = client.predict(None, 5, api_name="/mask_token")  # no token chosen: nothing shown
    assert message == "" and table["data"] == [] and figure is None


def test_next_sentence_probability_matches_the_explorer(client, tiny):
    a, b = "The cat sat on the mat.", "It was tired after chasing the mouse."
    analyze(client, a, b, model=tiny.name)
    message, label = client.predict(api_name="/next_sentence")
    p = {c["label"]: c["confidence"] for c in label["confidences"]}
    assert 0 <= p["IsNext"] <= 1 and p["IsNext"] + p["NotNext"] == pytest.approx(1)
    assert p["IsNext"] == pytest.approx(tiny.next_sentence(a, b), abs=1e-5)
    assert f"{p['IsNext']:.1%}" in message
    analyze(client, a, model=tiny.name)
    message, label = client.predict(api_name="/next_sentence")
    assert "A pair is needed" in message and not label  # an empty label, no stale probability


def test_a_view_before_any_analysis_asks_for_one(server):
    fresh = Client(server, verbose=False)
    with pytest.raises(AppError, match="Analyze"):
        fresh.predict(64, api_name="/embeddings")


def test_run_history_is_off_and_no_file_can_be_read(server):
    assert httpx.get(server + "gradio_api/runs").status_code == 404
    for path in ("/etc/passwd", __file__):
        response = httpx.get(server + f"gradio_api/file={path}")
        assert response.status_code in (403, 404) and "root:" not in response.text


# --- the masked-LM handler with a stand-in explorer (the real fill_mask lands with the MLM work) ---------------
class StubExplorer:
    name = "stub"
    has_mlm_head = True

    def __init__(self):
        self.calls = []

    def fill_mask(self, text, top_k, max_masks=None):
        self.calls.append((text, top_k))
        return [[("paris", 0.9), ("lyon", 0.05)][:top_k] for _ in range(text.count("[MASK]"))]


def test_fill_mask_handler_shape_with_an_mlm_head():
    stub = StubExplorer()
    message, table, figure = app.fill_mask_view(stub, "[mask] is the capital, [MASK] too.", 2)
    assert stub.calls == [("[MASK] is the capital, [MASK] too.", 2)]  # any case of [mask] is accepted
    assert list(table.columns) == ["mask", "rank", "token", "probability"]
    assert table.values.tolist() == [[1, 1, "paris", 0.9], [1, 2, "lyon", 0.05], [2, 1, "paris", 0.9],
                                     [2, 2, "lyon", 0.05]]
    assert [trace.y.tolist() for trace in figure.data] == [[0, 1], [0, 1]]  # one bar panel per mask
    assert "each of the 2 masks" in message


def test_unexpected_errors_become_a_sentence():
    import gradio as gr

    @app.user_errors
    def broken():
        raise RuntimeError("internal detail /srv/secret")

    with pytest.raises(gr.Error) as info:
        broken()
    assert "secret" not in info.value.message and "server's log" in info.value.message


def test_examples_file_is_read():
    pairs, masked = catalog.read_examples()
    assert len(pairs) >= 3 and all(isinstance(a, str) and a for a, _ in pairs)
    assert all("[MASK]" in m for m in masked)
    pairs, masked = catalog.read_examples(catalog.ASSETS / "missing.json")
    assert pairs and masked  # a built-in example when the file is absent


def test_a_session_does_not_grow_with_every_analysis(demo, server):
    """Gradio files each component rebuilt by a prop update (the token choices) under a new id and keeps it; the app
    drops those, so a visitor who analyzes all day holds no more components than the page has."""
    client = Client(server, verbose=False)
    for i in range(12):
        analyze(client, f"Sentence number {i} is new.")
        client.predict(i % 7, api_name="/token_similarity")
    session = demo.state_holder.session_data[client.session_hash]
    # The last request may have filed the few components the analysis before it rebuilt (the next analysis drops
    # them); without the app's clean-up there would be about three per analysis, 36 here.
    extra = set(session.blocks_config.blocks) - set(demo.blocks)
    assert len(extra) <= 6, sorted(extra)
    assert len(session.config_values) <= len(demo.blocks) + 6


def test_gradio_internals_are_as_the_workaround_expects(demo, server):
    """app/gradio_internals.py reaches into gradio's session state; if a gradio release changes it, this fails
    (instead of the workaround quietly doing nothing and sessions growing again)."""
    client = Client(server, verbose=False)
    analyze(client, "Internals, please.")
    found = app.server.gradio_internals.session_blocks(demo, client.session_hash)
    assert found is not None, "gradio keeps no session state where the workaround looks for it"
    blocks, config_values = found
    assert isinstance(blocks, dict) and isinstance(config_values, dict)
    assert set(demo.blocks) & set(blocks)  # the page's own components, by id
    assert app.server.gradio_internals.session_blocks(demo, "no-such-session") is None


# --- beyond raw attention: explain one prediction, compare two inputs or models, silence heads ----------------------
def test_explaining_a_prediction(client):
    analyze(client, "The keys to the cabinet [MASK] on the table.", model=DEFAULT)
    message, attribution, table, faithfulness, ranking = client.predict("mask:0", "", 20, api_name="/explain")
    assert "log P(" in message and "[MASK] 1" in message and "convergence check" in message
    assert "in “The keys to the cabinet [MASK] on the table.”" in message  # the input explained, named
    # in a student's words: what log P is, what "blank" the change runs from, what the faithfulness chart says here
    assert "the logarithm of that probability: the higher, the surer" in message
    assert "With every word blanked, it would say" in message and "so the steps were enough" in message
    assert "**Faithfulness:**" in message and "ranks the words the way integrated gradients does" in message
    assert all(f["type"] == "plotly" for f in (attribution, faithfulness, ranking))
    rows = {row[0]: row[1:] for row in table["data"]}
    assert set(rows) == {"attention, last layer", "attention, mean of all layers", "rollout",
                         "value-weighted, last layer"}
    assert all(-1 <= float(v) <= 1 for values in rows.values() for v in values)
    # a word of the model's choosing, and a word that is not one piece of the vocabulary
    assert "'is'" in client.predict("mask:0", "is", 10, api_name="/explain")[0]
    assert "not in the vocabulary" in client.predict("mask:0", "notaword123", 10, api_name="/explain")[0]


def test_the_faithfulness_numbers_and_the_target_are_said_in_words():
    """The faithfulness chart gave numbers without saying what they meant for this input; "log P(IsNext)/P(NotNext)"
    and "logit" came without a word a student knows."""
    from bertviz_app.app.tabs.beyond import _measured, faithfulness_reading, plain_target
    from bertviz_app.targets import Target

    table = pd.DataFrame({"integrated gradients": [0.21, -0.24], "blank-out": [0.0, 0.03]},
                         index=["value-weighted, last layer", "rollout"])
    said = faithfulness_reading(table)
    assert "(value-weighted, last layer)" in said and "+0.21" in said and "only weakly" in said
    assert "1 is the same order, 0 unrelated" in said
    assert "closely" in faithfulness_reading(table.assign(**{"integrated gradients": [0.9, 0.1]}))
    is_next = Target("is_next", 0)
    assert plain_target(is_next) == "“B follows A”" and "above 0 it says B follows" in _measured(is_next)
    assert plain_target(Target("mask", 6, 2024, "are", 0)) == "“are” at [MASK] 1"


def test_a_long_explanation_is_announced_before_it_starts(explorers, monkeypatch):
    """The tab says how long an explanation will take, before the visitor presses Explain, when that is long: from
    the passes it needs (integrated gradients' steps, one per word piece blanked, the heads) and a pass's time."""
    from bertviz_app.app.tabs import beyond

    explorer = explorers[DEFAULT]
    run = explorer.run("The keys to the cabinet [MASK] on the table.")
    monkeypatch.setattr(beyond, "RATES", {explorer.name: 1e-4})  # 0.1 ms per pass and token: 2.6 s, nothing said
    assert beyond.explanation_forecast(explorer, run, 50) == ""
    monkeypatch.setattr(beyond, "RATES", {explorer.name: 0.01})  # a slow machine: 10 ms per pass and token
    words = len(run.encoding) - 3  # [CLS], [SEP] and the [MASK] are never blanked
    passes = 3 * 50 + words + 12 * 7 / 2  # 12 heads a layer; those of layer l run L - l of the L = 6 layers
    forecast = beyond.explanation_forecast(explorer, run, 50)
    assert f"about **{passes * 0.01 * len(run.encoding):.0f} s**" in forecast, forecast
    assert f"each of the {words} word pieces blanked in turn, 72 heads silenced" in forecast


def test_explaining_needs_something_to_explain(client):
    analyze(client, "No mask and no second sentence here.", model=DEFAULT)
    # said alone where the message goes, not raised: a raised error put a red "Error" badge over it and the figures
    message, attribution, table, faithfulness, ranking = client.predict("mask:0", "", 10, api_name="/explain")
    assert "put [MASK] in a sentence" in message and "bv-stale" in message
    assert attribution is None and faithfulness is None and ranking is None and table["data"] in ([], [[]])
    analyze(client, "The cat sat.", "It slept.", model=DEFAULT)
    message = client.predict("is_next", "", 10, api_name="/explain")[0]
    assert "IsNext" in message


def test_comparing_a_minimal_pair_and_two_models(client):
    analyze(client, "The keys to the cabinet are on the table.", model=DEFAULT)
    message, left, right, change, table, layers = client.predict("The keys to the cabinet is on the table.", "",
                                                                  DEFAULT, api_name="/compare")
    assert "differ at are → is" in message and change["type"] == "plotly"
    assert left["key"] != right["key"] and views.decode_payload(base64.b64decode(right["payload"])).header[
        "tokens"][6] == "is"
    assert [r[table["headers"].index("rank")] for r in table["data"]][:3] == [1, 2, 3]
    assert layers["type"] == "plotly"
    message = client.predict("The keys to the cabinet are on the table.", "", MODEL, api_name="/compare")[0]
    assert "minilm-l6-mlm-nsp-en (left) against all-MiniLM-L6-v2 (right)" in message
    assert "Change per layer, first to last: attention" in message and "; weights " in message  # two models
    # different lengths: both views, no head-by-head difference, said in words
    message, left, right, change, _, _ = client.predict("Keys.", "", DEFAULT, api_name="/compare")
    assert "different numbers of tokens" in message and change is None and right["payload"]


def test_silencing_heads_in_words(explorers):
    explorer = explorers[DEFAULT]
    run = explorer.run("The capital of France is [MASK].", "It is a large city.")
    text = app.attention.ablation_view(explorer, run, [(2, 10), (1, 3)])
    assert "\n**Silenced 2 of 72 heads** (layer.head: 1.3, 2.10)" in text
    before = explorer.fill_mask("The capital of France is [MASK].", "It is a large city.", top_k=1)[0][0][0]
    assert "| 1 (token 6) |" in text and f"**{before}**" in text and "P(B follows A):" in text
    assert app.attention.ablation_view(explorer, run, []) == app.attention.SILENCE_HINT
    plain = explorer.run("Nothing to predict here.")
    assert "asks for no prediction" in app.attention.ablation_view(explorer, plain, [(0, 0)])


def test_a_truncation_says_which_limit_and_how_to_raise_it(client):
    # all-MiniLM-L6-v2 reads 512 tokens; this server was started with --max-tokens 128
    notice = analyze(client, BAD_TEXTS["long"])[1]
    assert "this server reads at most 128" in notice and "--max-tokens 512" in notice
    assert "the model reads at most 128" not in notice


@pytest.mark.parametrize("server_cut, advice", [
    (128, "this server reads at most 128 (its `--max-tokens`; the model itself reads up to 512: start the server "
          "with `--max-tokens 512`"),
    (512, "the model reads at most 512;")])
def test_a_roberta_truncation_names_the_limit_the_server_can_reach(server_cut, advice):
    # RoBERTa's position table has 514 rows, of which it reads 512: advice to start with --max-tokens 514 changes
    # nothing, and at 512 the server is not what cut the input
    from types import SimpleNamespace

    from bertviz_app.config import BertConfig
    from bertviz_app.tokenizer import Truncation
    config = BertConfig.from_hf_dict({"model_type": "roberta", "vocab_size": 100, "hidden_size": 32,
                                      "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37,
                                      "max_position_embeddings": 514, "pad_token_id": 1, "type_vocab_size": 1})
    cut = Truncation(max_tokens=server_cut, original_length=600, removed_a=600 - server_cut, removed_b=0)
    notice = app.layout.truncation_notice(SimpleNamespace(config=config), cut)
    assert advice in notice and "514" not in notice


def test_compare_starts_from_the_input_just_analyzed_until_the_visitor_types():
    from bertviz_app.app.tabs.compare import prefill_values
    first = {"model": MODEL, "text": "The cat sat.", "pair": "It slept."}
    a, b, prefilled = prefill_values(first, "", "", None)
    assert (a, b) == ("The cat sat.", "It slept.")
    # a new analysis (one sentence) replaces the prefill, sentence B included: no leftover B makes a pair
    second = {"model": MODEL, "text": "The keys are here.", "pair": ""}
    assert prefill_values(second, a, b, prefilled)[:2] == ("The keys are here.", "")
    # what the visitor typed stays
    kept = prefill_values(second, "The keys is here.", b, prefilled)
    assert kept[0] == kept[1] == {"__type__": "update"} and kept[2] == prefilled


def test_compare_without_a_head_by_head_difference_says_why_and_hides_the_empty_results(demo):
    (compare,) = [f.fn for f in demo.fns.values() if f.api_name == "compare"]
    session = {"model": DEFAULT, "text": "The keys to the cabinet are on the table.", "pair": ""}
    message, left, right, change, table, layers, results = compare(
        session, "The keys to the cabinet is on the table.", "It was late.", DEFAULT)
    assert "no head-by-head difference" in message and "the right input is a pair" in message
    assert "It was late." in message and change is None and layers is None and results["visible"] is False
    out = compare(session, "The keys to the cabinet is on the table.", "", DEFAULT)
    assert len(out[4]) and out[6]["visible"] is True and "pair" not in out[0]
    assert len(out[5].data[0].y) == 6 and "Change per layer" in out[0]  # one model: the attention's change alone


def test_the_words_about_silenced_heads_follow_the_sign():
    from bertviz_app.ablation import HeadRanking
    from bertviz_app.app.tabs.beyond import _top_heads
    from bertviz_app.targets import Target
    target = Target("is_next", 0)
    effects = np.zeros((2, 3), dtype=np.float32)
    effects[1, 2] = 2.0  # silencing head 1.2 raises the IsNext logit: the head works against IsNext
    effects[0, 1] = -1.0  # silencing head 0.1 lowers it: the head supports IsNext
    text = _top_heads(HeadRanking(["[CLS]"], target, "ablation", 3.0, effects))
    assert "it rises without 1.2 (→ 99.3%), a head that works against it" in text
    assert "it falls without 0.1 (→ 88.1%), a head that supports it" in text
    assert "needs" not in text
    assert "leaves it at 95.3%" in _top_heads(HeadRanking(["[CLS]"], target, "ablation", 3.0, np.zeros((2, 3))))


def test_a_folder_is_named_by_its_own_name_never_by_the_servers_path(tiny_mlm_folder, tmp_path):
    """`--model /srv/models/x`: the picker, the Model tab and the Task tab show `x`, not where the server keeps it; two
    folders of one name stay apart, and a folder given twice is offered once."""
    import shutil

    from bertviz_app.app.tabs.model_info import model_text

    twin = shutil.copytree(tiny_mlm_folder, tmp_path / "elsewhere" / Path(tiny_mlm_folder).name)
    loaded = app.load_models([tiny_mlm_folder, str(twin), tiny_mlm_folder, DEFAULT], device="cpu")
    name = Path(tiny_mlm_folder).name
    assert list(loaded) == [name, f"elsewhere/{name}", DEFAULT]
    for shown in [*loaded, *(model_text(e) for e in loaded.values())]:
        assert str(tmp_path) not in shown and str(Path(tiny_mlm_folder).parent) not in shown


def test_the_task_tab_names_a_missing_base_model_by_its_folder_name():
    from types import SimpleNamespace

    from bertviz_app.app.tabs.task import base_name

    tuned = SimpleNamespace(name="tuned", task="text-classification", base_model="/srv/secret/models/base-model")
    name, sentence = base_name(tuned, {"tuned": tuned})
    assert name is None and "**base-model**" in sentence and "/srv" not in sentence
