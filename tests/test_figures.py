"""Figure builders: valid plotly, tokens shown literally, repeated tokens kept apart, light payloads,
self-contained HTML."""

import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from bertviz_app import BertConfig, BertForPreTraining, Explorer, Tokenizer, figures
from bertviz_app.explorer import default_model_path

FIGURE_METHODS = {
    "attention": lambda r: r.attention_figure(layer=1, head=2),
    "attention_mean_filtered": lambda r: r.attention_figure(layer=0, head=None, hide_special=True, segments="A->B"),
    "overview": lambda r: r.head_overview_figure(),
    "token_attention": lambda r: r.token_attention_figure(layer=1, token=2),
    "rollout": lambda r: r.rollout_figure(segments="B->A"),
    "head_map": lambda r: r.head_map_figure("sep"),
    "query_key": lambda r: r.query_key_figure(layer=1, head=1, token=3),
    "embedding": lambda r: r.embedding_figure(),
    "position_similarity": lambda r: r.position_similarity_figure(n=20),
    "position_path": lambda r: r.position_path_figure(n=20),
    "segment": lambda r: r.segment_figure(),
    "hidden_norms": lambda r: r.hidden_norms_figure(),
    "layer_similarity": lambda r: r.layer_similarity_figure(),
    "token_similarity": lambda r: r.token_similarity_figure(layer=1),
    "hidden_projection": lambda r: r.hidden_projection_figure(),
}


@pytest.fixture(scope="module")
def run():
    torch.manual_seed(0)
    config = BertConfig.preset("tiny", vocab_size=30522)
    explorer = Explorer(BertForPreTraining(config), Tokenizer.from_folder(default_model_path()),
                        torch.device("cpu"), "tiny")
    return explorer.run("The cat sat on the mat, and the cat purred.", "It was tired.")


@pytest.mark.parametrize("name", FIGURE_METHODS)
def test_every_figure_is_valid_plotly_json(run, name):
    fig = FIGURE_METHODS[name](run)
    assert isinstance(fig, go.Figure)
    go.Figure(json.loads(fig.to_json()))  # full validation: raises on any unknown or out-of-range property
    assert fig.layout.title.text


def _all_strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):  # our own markup lives in templates and titles; labels live everywhere else
        for k, v in obj.items():
            if k not in ("hovertemplate", "title", "texttemplate"):
                yield from _all_strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _all_strings(v)


@pytest.mark.parametrize("token", ["<b>", "<script>", "&lt;", "<br>"])
def test_tokens_are_shown_literally(token):
    labels = ["[CLS]", token, "x", token, "[SEP]"]
    weights = np.full((5, 5), 0.2)
    figs = [figures.attention_heatmap(weights, labels, labels),
            figures.similarity_heatmap(np.eye(5), labels),
            figures.token_attention_figure(weights[:2], weights[:2], labels, 1),
            figures.hidden_norms_figure(np.ones((3, 5)), labels),
            figures.hidden_projection_figure(np.zeros((3, 5, 2)), labels)]
    escaped = token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for fig in figs:
        strings = list(_all_strings(json.loads(fig.to_json())["data"])) + list(
            _all_strings(json.loads(fig.to_json())["layout"].get("xaxis", {})))
        assert any(escaped in s for s in strings)
        assert not any(token in s.replace(escaped, "") for s in strings), "raw markup reached the figure"


def test_repeated_tokens_keep_their_own_rows_and_columns(run):
    fig = run.attention_figure(layer=0, head=0)
    n = len(run)
    assert list(fig.layout.xaxis.tickvals) == list(range(n))
    assert list(fig.layout.xaxis.ticktext) == run.tokens  # duplicates kept, one tick each
    assert run.tokens.count("cat") == 2
    z = np.asarray(fig.data[0].z)
    assert z.shape == (n, n)
    np.testing.assert_allclose(z, run.attention(0, 0), atol=1e-4)


def test_segment_filter_shows_the_block_and_boundary(run):
    fig = run.attention_figure(layer=0, head=1, segments="A->B")
    rows = int((run.segment_ids == 0).sum())
    cols = int((run.segment_ids == 1).sum())
    assert np.asarray(fig.data[0].z).shape == (rows, cols)
    assert not fig.layout.shapes  # one segment per axis: no boundary inside
    full = run.attention_figure(layer=0, head=1)
    lines = [s for s in full.layout.shapes if s.type == "line"]
    assert len(lines) == 2 and {s.x0 for s in lines if s.x0 == s.x1} == {rows - 0.5}


def test_overview_is_one_light_image(run):
    fig = run.head_overview_figure()
    assert [t.type for t in fig.data] == ["image", "scatter"]
    assert len(fig.data[1].x) == run.num_layers * run.num_heads


def test_overview_payload_for_a_12x12_model_at_128_tokens():
    rng = np.random.default_rng(0)
    att = rng.dirichlet(np.full(128, 0.1), size=(12, 12, 128)).astype(np.float32)
    fig = figures.head_overview_figure(att)
    assert len(fig.to_json()) <= 1_000_000
    one = figures.attention_heatmap(att[0, 0], ["tok"] * 128, ["tok"] * 128)
    assert len(one.to_json()) <= 150_000


def test_save_html_is_self_contained(run, tmp_path):
    path = figures.save_html(run.attention_figure(layer=0, head=0), tmp_path / "fig.html")
    text = path.read_text(encoding="utf-8")
    assert not re.findall(r"<script[^>]*\bsrc=", text)  # nothing fetched: every script is inline
    assert "Plotly.newPlot" in text and len(text) > 1_000_000  # plotly.js is inlined


def test_builders_reject_mismatched_labels():
    with pytest.raises(ValueError, match="do not match"):
        figures.attention_heatmap(np.zeros((3, 3)), ["a", "b"], ["a", "b", "c"])
