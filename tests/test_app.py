"""The app through its API, as gradio_client sees it: one server for the module, on a free 127.0.0.1 port."""

from __future__ import annotations

import types

import httpx
import pandas as pd
import pytest
from gradio_client import Client
from gradio_client.exceptions import AppError

from bertviz_app import app
from bertviz_app.explorer import load

pytestmark = pytest.mark.real_weights

MODEL = "all-MiniLM-L6-v2"
ATTENTION = dict(layer=0, head=0, segment="all", hide_special=False, token=0)
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


@pytest.fixture(scope="module")
def explorer():
    return load(device="cpu", max_tokens=128)


@pytest.fixture(scope="module")
def server(explorer):
    demo = app.build_demo({explorer.name: explorer})
    url = app.serve(demo, port=app.free_port(), block=False)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def client(server):
    return Client(server, verbose=False)


def analyze(client, a, b="", model=MODEL, **controls):
    c = {**ATTENTION, **controls}
    return client.predict(model, a, b, c["layer"], c["head"], c["segment"], c["hide_special"], c["token"],
                          api_name="/analyze")


def table_tokens(table: dict) -> list[str]:
    return [row[table["headers"].index("token")] for row in table["data"]]


def assert_still_serves(client):
    out = analyze(client, "Still here.")
    assert table_tokens(out[0]) == ["[CLS]", "still", "here", ".", "[SEP]"]


def test_every_named_endpoint_is_there(client):
    endpoints = set(client.view_api(return_format="dict", print_info=False)["named_endpoints"])
    assert {"/analyze", "/attention", "/attention_details", "/attention_overview", "/embeddings", "/hidden_states",
            "/token_similarity", "/mask_token", "/fill_mask"} <= endpoints


def test_analyze_a_pair(client):
    # gr.State is not part of the API: the session stays on the server
    table, notice, layer, head, segment, token, mask_choice, hidden_layer, heatmap, nsp, info = analyze(
        client, "The cat sat.", "It slept.")
    assert table_tokens(table) == ["[CLS]", "the", "cat", "sat", ".", "[SEP]", "it", "slept", ".", "[SEP]"]
    segments = [row[table["headers"].index("segment")] for row in table["data"]]
    assert segments == ["A"] * 6 + ["B"] * 4
    assert "10 tokens" in notice
    assert layer["maximum"] == 5 and head["maximum"] == 11
    assert heatmap["type"] == "plotly" and '"the"' in heatmap["plot"] and '"slept"' in heatmap["plot"]
    assert "no next-sentence head" in nsp
    assert "22,713,216" in info and "cpu" in info


def test_slider_redraws_without_a_forward_pass(client, explorer, monkeypatch):
    analyze(client, "Redraw me, please.")
    calls = []
    forward = explorer._forward
    monkeypatch.setattr(explorer, "_forward", lambda enc: calls.append(enc) or forward(enc))
    for layer, head in ((1, 2), (5, 11), (3, 0)):
        figure = client.predict(layer, head, "all", False, api_name="/attention")
        assert f"layer {layer}, head {head}" in figure["plot"]
    details = client.predict(2, 3, "all", True, 1, api_name="/attention_details")
    assert len(details) == 4 and all(d["type"] == "plotly" for d in details)
    assert calls == []


@pytest.mark.parametrize("endpoint, args", [
    ("/attention_overview", ()), ("/embeddings", (64,)), ("/hidden_states", (3,)), ("/token_similarity", (0,))])
def test_every_view_draws(client, endpoint, args):
    analyze(client, "The bank raised its rates.", "We sat on the river bank.")
    out = client.predict(*args, api_name=endpoint)
    figures = out if isinstance(out, tuple) else (out,)
    assert figures and all(f["type"] == "plotly" and len(f["plot"]) > 1000 for f in figures)


def test_segment_filter_on_a_single_sentence_falls_back(client):
    analyze(client, "Only one sentence here.")
    figure = client.predict(0, 0, "B->B", False, api_name="/attention")
    assert '"only"' in figure["plot"]  # the whole matrix, with a warning instead of an error


def test_long_input_is_truncated_with_a_notice(client):
    out = analyze(client, BAD_TEXTS["long"])
    assert len(out[0]["data"]) == 128
    assert "Truncated" in out[1] and "128" in out[1]


def test_a_book_is_refused_in_words(client):
    with pytest.raises(AppError, match="characters"):
        analyze(client, "x" * (app.MAX_CHARS + 1))
    assert_still_serves(client)


@pytest.mark.parametrize("name", list(BAD_TEXTS))
def test_bad_input_never_breaks_the_server(client, name):
    text = BAD_TEXTS[name]
    for call in (lambda: analyze(client, text), lambda: analyze(client, "Fine.", text),
                 lambda: client.predict(MODEL, text, 3, api_name="/fill_mask")):
        try:
            out = call()
        except AppError as err:  # refused in words: no traceback, no exception class name
            assert str(err).strip() and "Traceback" not in str(err)
        else:
            assert out is not None
    assert_still_serves(client)


def test_tokens_are_text_not_html(client):
    out = analyze(client, BAD_TEXTS["html"])
    tokens = table_tokens(out[0])
    assert "<" in tokens and "script" in tokens
    assert "<script>" not in out[8]["plot"] and "&lt;" in out[8]["plot"]  # plotly labels are escaped


def test_only_listed_models_can_be_picked(client):
    with pytest.raises(AppError):
        analyze(client, "Hello.", model="/etc/passwd")
    with pytest.raises(AppError):
        client.predict("../../secret", "a [MASK].", 3, api_name="/fill_mask")
    assert_still_serves(client)


def test_fill_mask_without_an_mlm_head_says_so(client):
    message, table, bars = client.predict(MODEL, "The cat sat on the [mask].", 5, api_name="/fill_mask")
    assert "has no masked-LM head" in message
    assert table["data"] == [] and bars is None


def test_masking_a_token_of_the_input(client):
    analyze(client, "The cat sat on the mat.", "Dogs bark.")
    assert client.predict(2, api_name="/mask_token") == "The [MASK] sat on the mat."
    assert client.predict(10, api_name="/mask_token") == "Dogs [MASK]."
    with pytest.raises(AppError, match="special token"):
        client.predict(0, api_name="/mask_token")


def test_redraw_before_any_analysis_asks_for_one(server):
    fresh = Client(server, verbose=False)
    with pytest.raises(AppError, match="Analyze"):
        fresh.predict(0, 0, "all", False, api_name="/attention")


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

    def fill_mask(self, text, top_k):
        self.calls.append((text, top_k))
        return [[("paris", 0.9), ("lyon", 0.05)][:top_k] for _ in range(text.count("[MASK]"))]


def test_fill_mask_handler_shape_with_an_mlm_head():
    stub = StubExplorer()
    message, table, bars = app.fill_mask_view(stub, "[mask] is the capital, [MASK] too.", 2)
    assert stub.calls == [("[MASK] is the capital, [MASK] too.", 2)]  # any case of [mask] is accepted
    assert list(table.columns) == ["mask", "rank", "token", "probability"]
    assert table.values.tolist() == [[1, 1, "paris", 0.9], [1, 2, "lyon", 0.05], [2, 1, "paris", 0.9],
                                     [2, 2, "lyon", 0.05]]
    assert list(bars["prediction"]) == ["1. paris", "1. lyon", "2. paris", "2. lyon"]
    assert "2 mask(s)" in message


def test_fill_mask_handler_wants_a_mask():
    import gradio as gr

    with pytest.raises(gr.Error, match=r"\[MASK\]"):
        app.fill_mask_view(StubExplorer(), "no mask here", 3)


def test_unexpected_errors_become_a_sentence():
    import gradio as gr

    @app.user_errors
    def broken():
        raise RuntimeError("internal detail /srv/secret")

    with pytest.raises(gr.Error) as info:
        broken()
    assert "secret" not in info.value.message and "server's log" in info.value.message


def test_examples_file_is_read():
    pairs, masked = app.read_examples()
    assert len(pairs) >= 3 and all(isinstance(a, str) and a for a, _ in pairs)
    assert all("[MASK]" in m for m in masked)
    pairs, masked = app.read_examples(app.ASSETS / "missing.json")
    assert pairs and masked  # a built-in example when the file is absent
