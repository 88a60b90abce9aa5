"""Figure builders: valid plotly, tokens shown literally, repeated tokens kept apart, light payloads,
self-contained HTML."""

import dataclasses
import json
import re

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from bertviz_app import BertConfig, BertForPreTraining, Explorer, Tokenizer, figures
from bertviz_app.catalog import minilm_path
from bertviz_app.run import ModelTables

FIGURE_METHODS = {
    "attention": lambda r: r.plot.attention(layer=1, head=2),
    "attention_mean_filtered": lambda r: r.plot.attention(layer=0, head=None, hide_special=True, segments="A->B"),
    "overview": lambda r: r.plot.head_overview(),
    "token_attention": lambda r: r.plot.token_attention(layer=1, token=2),
    "rollout": lambda r: r.plot.rollout(segments="B->A"),
    "head_map": lambda r: r.plot.head_map("sep"),
    "query_key": lambda r: r.plot.query_key(layer=1, head=1, token=3),
    "embedding": lambda r: r.plot.embedding_parts(),
    "position_similarity": lambda r: r.plot.position_similarity(n=20),
    "position_path": lambda r: r.plot.position_path(n=20),
    "segment": lambda r: r.plot.segment_comparison(),
    "hidden_norms": lambda r: r.plot.hidden_norms(),
    "layer_similarity": lambda r: r.plot.layer_similarity(),
    "token_similarity": lambda r: r.plot.token_similarity(layer=1),
    "hidden_projection": lambda r: r.plot.hidden_projection(),
}


@pytest.fixture(scope="module")
def run():
    torch.manual_seed(0)
    config = BertConfig.preset("tiny", vocab_size=30522)
    explorer = Explorer(BertForPreTraining(config), Tokenizer.from_folder(minilm_path()),
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
    fig = run.plot.attention(layer=0, head=0)
    n = len(run)
    assert list(fig.layout.xaxis.tickvals) == list(range(n))
    assert list(fig.layout.xaxis.ticktext) == run.tokens  # duplicates kept, one tick each
    assert run.tokens.count("cat") == 2
    z = np.asarray(fig.data[0].z)
    assert z.shape == (n, n)
    np.testing.assert_allclose(z, run.attention(0, 0), atol=1e-4)


def test_segment_filter_shows_the_block_and_boundary(run):
    fig = run.plot.attention(layer=0, head=1, segments="A->B")
    rows = int((run.segment_ids == 0).sum())
    cols = int((run.segment_ids == 1).sum())
    assert np.asarray(fig.data[0].z).shape == (rows, cols)
    assert not fig.layout.shapes  # one segment per axis: no boundary inside
    full = run.plot.attention(layer=0, head=1)
    lines = [s for s in full.layout.shapes if s.type == "line"]
    assert len(lines) == 2 and {s.x0 for s in lines if s.x0 == s.x1} == {rows - 0.5}


def test_overview_is_one_light_image(run):
    fig = run.plot.head_overview()
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
    path = figures.save_html(run.plot.attention(layer=0, head=0), tmp_path / "fig.html")
    text = path.read_text(encoding="utf-8")
    assert not re.findall(r"<script[^>]*\bsrc=", text)  # nothing fetched: every script is inline
    assert "Plotly.newPlot" in text and len(text) > 1_000_000  # plotly.js is inlined


def test_builders_reject_mismatched_labels():
    with pytest.raises(ValueError, match="do not match"):
        figures.attention_heatmap(np.zeros((3, 3)), ["a", "b"], ["a", "b", "c"])


# ----------------------------------------------------------------------------------------------------------------
# Masked-LM figures: built from hand-made plain data, so each expectation is stated independently of the model
# ----------------------------------------------------------------------------------------------------------------
def _mlm_figures(token):
    corrupted_kinds = ["", "mask", "random", "kept", ""]
    return [
        figures.fill_mask_figure([[(token, 0.6), ("dog", 0.3)], [("a", 0.9), (token, 0.05)]]),
        figures.masked_token_figure(token, [("dog", 0.5), (token, 0.2)], 0.2, 2),
        figures.masked_token_figure(token, [("dog", 0.5), ("cow", 0.2)], 0.001, 40),
        figures.logit_lens_figure([[(token, 0.1), ("x", 0.05)], [("x", 0.3), (token, 0.2)], [(token, 0.8), ("x", 0.1)]],
                                  token, [0.1, 0.2, 0.8], f"{token} (3)"),
        figures.corruption_figure(["[CLS]", token, "sat", "on", "[SEP]"], ["[CLS]", "[MASK]", "dog", "on", "[SEP]"],
                                  ["", token, "sat", "on", ""], corrupted_kinds),
    ]


@pytest.mark.parametrize("token", ["<b>", "<script>", "&lt;"])
def test_mlm_figures_show_tokens_literally(token):
    escaped = token.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for fig in _mlm_figures(token):
        spec = json.loads(fig.to_json())
        go.Figure(spec)  # full validation
        strings = list(_all_strings(spec["data"])) + [a.get("ticktext") and " ".join(a["ticktext"]) or ""
                                                       for k, a in spec["layout"].items() if k.startswith("yaxis")]
        assert any(escaped in s for s in strings), fig.layout.title.text
        assert not any(token in _without_our_bold(s.replace(escaped, "")) for s in strings), \
            "raw markup reached the figure"


def _without_our_bold(s: str) -> str:
    """Drop the <b>..</b> pairs the builders add for emphasis; a leaked raw '<b>' token would be unpaired."""
    return re.sub(r"</?b>", "", s) if s.count("<b>") == s.count("</b>") else s


def test_fill_mask_figure_has_one_panel_per_mask_best_on_top():
    preds = [[("paris", 0.7), ("lyon", 0.2), ("nice", 0.05)], [("is", 0.9), ("was", 0.1)],
             [("a", 0.5)], [("b", 0.4)]]
    fig = figures.fill_mask_figure(preds, labels=["first", "second", "third", "<b>"])
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 4
    assert [a.text for a in fig.layout.annotations] == ["first", "second", "third", "&lt;b&gt;"]
    first = bars[0]
    np.testing.assert_allclose(first.x, [0.7, 0.2, 0.05], atol=1e-4)
    yaxis = fig.layout["yaxis" + first.yaxis[1:]] if first.yaxis != "y" else fig.layout.yaxis
    assert list(yaxis.ticktext) == ["paris", "lyon", "nice"]
    assert yaxis.range[0] > yaxis.range[1]  # reversed: rank 1 (y = 0) at the top
    def xaxis(bar):
        return fig.layout["xaxis" + bar.xaxis[1:]] if bar.xaxis != "x" else fig.layout.xaxis

    # one scale for every mask (comparable between them), ending past the largest bar (0.9) with room for its label
    assert {tuple(xaxis(b).range) for b in bars} == {tuple(xaxis(first).range)}
    assert xaxis(first).range[0] == 0 and 0.9 < xaxis(first).range[1] <= 1.3
    with pytest.raises(ValueError, match="labels"):
        figures.fill_mask_figure(preds, labels=["only one"])
    with pytest.raises(ValueError, match="MASK"):
        figures.fill_mask_figure([])


def test_masked_token_figure_highlights_the_original():
    inside = figures.masked_token_figure("cat", [("dog", 0.5), ("cat", 0.3), ("cow", 0.1)], 0.3, 2)
    colors = list(inside.data[0].marker.color)
    assert colors[1] != colors[0] and colors[0] == colors[2]  # only the original's bar stands out
    assert len(inside.data[0].x) == 3
    outside = figures.masked_token_figure("cat", [("dog", 0.5), ("cow", 0.1)], 0.0123, 57)
    assert len(outside.data[0].x) == 3  # the original gets its own bar after the top k
    assert outside.data[0].x[-1] == pytest.approx(0.0123, abs=1e-4)
    assert "57" in outside.layout.yaxis.ticktext[-1] and "57" in outside.layout.title.text
    assert outside.data[0].marker.color[-1] == colors[1]
    with pytest.raises(ValueError, match="rank"):
        figures.masked_token_figure("cat", [("dog", 0.5)], 0.1, 0)


def test_logit_lens_figure_rows_are_layers():
    layers = [[("a", 0.1), ("b", 0.05)], [("b", 0.4), ("a", 0.3)], [("a", 0.9), ("b", 0.05)]]
    fig = figures.logit_lens_figure(layers, "a", [0.1, 0.3, 0.9], "[MASK] (4)")
    heat, line = fig.data[0], fig.data[1]
    z = np.asarray(heat.z)
    assert z.shape == (3, 2)
    np.testing.assert_allclose(z[:, 0], [0.1, 0.4, 0.9], atol=1e-4)
    assert list(fig.layout.yaxis.ticktext) == ["embeddings", "layer 1", "layer 2"]
    np.testing.assert_allclose(line.x, [0.1, 0.3, 0.9], atol=1e-4)
    assert "<b>a</b>" in heat.text[2][0] and "<b>" not in heat.text[1][0]  # the final answer stands out
    assert "[MASK] (4)" in fig.layout.title.text
    with pytest.raises(ValueError, match="layers"):
        figures.logit_lens_figure(layers, "a", [0.1, 0.9], "x")


def test_corruption_figure_colors_by_kind_and_wraps():
    n = 20
    tokens = [f"t{i}" for i in range(n)]
    kinds = ["mask" if i % 5 == 1 else "random" if i == 7 else "kept" if i == 12 else "" for i in range(n)]
    inputs = ["[MASK]" if k == "mask" else "zz" if k == "random" else t for t, k in zip(tokens, kinds)]
    labels = [t if k else "" for t, k in zip(tokens, kinds)]
    fig = figures.corruption_figure(tokens, inputs, labels, kinds, per_line=8)
    heat = fig.data[0]
    z = np.asarray(heat.z, dtype=float)
    assert z.shape == (3 * 4 - 1, 8)  # 3 lines of 8 tokens, three rows each and a gap row between lines
    # token 7 (random) is line 0, column 7; token 12 (kept) is line 1, column 4
    assert len({z[0, 7], z[4, 4], z[0, 1], z[0, 0]}) == 4  # four kinds, four colors
    assert z[1, 7] == z[0, 7] and heat.text[1][7] == "zz" and heat.text[2][7] == "t7"
    assert np.isnan(z[2, 0])  # no label, no color
    assert np.isnan(z[3]).all()  # the gap row
    assert {t.name for t in fig.data[1:]} >= {"not chosen"} and len(fig.data) == 5  # a legend entry per kind
    with pytest.raises(ValueError, match="one entry per token"):
        figures.corruption_figure(tokens, inputs[:-1], labels, kinds)
    with pytest.raises(ValueError, match="unknown kinds"):
        figures.corruption_figure(tokens[:1], inputs[:1], labels[:1], ["masked"])


def test_corruption_figure_from_the_pretraining_rule():
    from bertviz_app import masked_lm
    tokenizer = Tokenizer.from_folder(minilm_path())
    example = masked_lm.corrupt_example(tokenizer, tokenizer.encode("the quick brown fox jumps over the lazy dog " * 3),
                                       seed=1)
    labels = ["" if i not in example.chosen else tokenizer.id_to_token(example.labels[i])
              for i in range(len(example.tokens))]
    fig = figures.corruption_figure(example.tokens, example.input_tokens, labels, example.kinds)
    colored = np.asarray(fig.data[0].z, dtype=float)
    label_rows = colored[2::4]
    assert int((~np.isnan(label_rows)).sum()) == len(example.chosen)


# ----------------------------------------------------------------------------------------------------------------
# Sizing, position axes, overview contrast
# ----------------------------------------------------------------------------------------------------------------
def _heatmap_for(n):
    labels = [f"w{i}" for i in range(n)]
    return figures.attention_heatmap(np.full((n, n), 1.0 / n), labels, labels)


def test_attention_heatmap_sizes_itself_to_the_token_count():
    sizes = {n: _heatmap_for(n) for n in (5, 19, 40, 64, 128)}
    heights = [f.layout.height for f in sizes.values()]
    assert heights == sorted(heights) and heights[0] < heights[-1] <= 1200  # grows, up to a cap
    for n, fig in sizes.items():
        plot = fig.layout.height - fig.layout.margin.t - fig.layout.margin.b
        plot_w = fig.layout.width - fig.layout.margin.l - fig.layout.margin.r - 120  # 120: the color bar
        ticks = len(fig.layout.yaxis.tickvals)
        font = fig.layout.yaxis.tickfont.size
        assert plot / ticks >= font + 2, f"{n} tokens: labels {plot / ticks:.1f} px apart at font {font}"
        assert 0.75 <= plot_w / plot <= 1.5  # square-ish
        if n <= 64:
            assert ticks == n  # every token labeled
    assert len(sizes[128].layout.yaxis.tickvals) < 128  # thinned past 64 tokens
    assert sizes[5].layout.yaxis.tickfont.size > sizes[128].layout.yaxis.tickfont.size


def with_positions(run, table):
    """The Run as a model with this position table would have made it."""
    return dataclasses.replace(run, tables=ModelTables(table, run.tables.segments))


def test_position_similarity_shows_exactly_n_positions(run):
    run = with_positions(run, np.random.default_rng(0).standard_normal((200, 16)))
    for n in (20, 128):
        fig = run.plot.position_similarity(n)
        z = np.asarray(fig.data[0].z)
        assert z.shape == (n, n)
        assert f"first {n} " in fig.layout.title.text and f"0–{n - 1}" in fig.layout.title.text
        assert max(fig.data[0].x) == n - 1
        assert fig.layout.xaxis.range[1] == pytest.approx(n - 0.5)
        path = run.plot.position_path(n)
        assert len(path.data[0].x) == n and f"first {n} " in path.layout.title.text


def test_position_path_is_not_dominated_by_one_long_vector(run):
    rng = np.random.default_rng(1)
    angles = np.linspace(0, np.pi, 50)
    table = np.stack([np.cos(angles), np.sin(angles)], 1) @ rng.standard_normal((2, 16))
    table += 0.01 * rng.standard_normal(table.shape)
    long0 = table.copy()
    long0[0] *= 25  # like position 0 in many BERTs
    path = with_positions(run, long0).plot.position_path(50)
    xy = np.column_stack([path.data[0].x, path.data[0].y])
    spread = np.ptp(xy[1:], axis=0)
    assert spread.min() > 0.2 * np.ptp(xy, axis=0).max()  # the other 49 points still spread out in 2-D


def test_overview_scale_is_stated_and_changes_contrast():
    rng = np.random.default_rng(0)
    att = rng.dirichlet(np.full(16, 0.5), size=(2, 3, 16)).astype(np.float32)
    figs = {s: figures.head_overview_figure(att, scale=s) for s in figures.OVERVIEW_SCALES}
    assert "sqrt" in figs["sqrt"].data[1].marker.colorbar.title.text
    assert "√" in figs["sqrt"].layout.title.text
    assert "head max" in figs["head_max"].data[1].marker.colorbar.title.text
    # the color bar ticks of the sqrt scale are weights placed at their square roots
    bar = figs["sqrt"].data[1].marker.colorbar
    assert list(bar.ticktext)[bar.tickvals.index(0.5)] == "0.25"
    with pytest.raises(ValueError, match="unknown scale"):
        figures.head_overview_figure(att, scale="log")


def test_overview_default_payload_for_a_12x12_model_at_128_tokens():
    rng = np.random.default_rng(1)
    att = rng.dirichlet(np.full(128, 0.1), size=(12, 12, 128)).astype(np.float32)
    for scale in figures.OVERVIEW_SCALES:
        assert len(figures.head_overview_figure(att, scale=scale).to_json()) <= 1_000_000, scale


def test_cosine_maps_show_their_contrast():
    """Late hidden states point roughly one way (cosines 0.4-0.9): the color range follows the values, not [-1, 1],
    and a map with both signs stays centered at 0."""
    rng = np.random.default_rng(0)
    all_positive = 0.4 + 0.5 * rng.random((6, 6))
    np.fill_diagonal(all_positive, 1.0)
    heat = figures.similarity_heatmap(all_positive, list("abcdef")).data[0]
    off = all_positive[~np.eye(6, dtype=bool)]
    assert heat.zmin == pytest.approx(off.min()) and heat.zmax == pytest.approx(off.max())
    assert heat.zmid is None  # sequential: no fake midpoint at 0
    mixed = np.array([[1, -0.5, 0.2], [-0.5, 1, 0.8], [0.2, 0.8, 1]])
    heat = figures.similarity_heatmap(mixed, ["a", "b", "c"]).data[0]
    assert (heat.zmin, heat.zmax, heat.zmid) == (-0.5, 0.8, 0)


def test_small_probabilities_get_bars_one_can_see():
    fig = figures.fill_mask_figure([[("paris", 0.054), ("capital", 0.049), ("city", 0.012)]])
    top = fig.layout.xaxis.range[1]
    assert 0.054 < top <= 0.1  # the best answer's bar spans most of the panel, its label beside it
    sure = figures.fill_mask_figure([[("days", 0.99)]])
    assert sure.layout.xaxis.range[1] >= 0.99


def test_the_confusion_matrix_counts_gold_down_the_rows_and_predictions_across():
    from bertviz_app.figures.training import confusion_matrix_figure

    # 3 negatives (one called positive), 4 positives, 1 held-out "<b>neutral" the training never showed
    matrix = [[2, 1, 0], [0, 4, 0], [1, 0, 0]]
    fig = confusion_matrix_figure(matrix, ["negative", "positive", "<b>neutral"])
    go.Figure(fig.to_dict())  # valid plotly: the builder skips validation
    heat = fig.data[0]
    assert heat.z.tolist() == matrix and heat.text.tolist() == [["2", "1", "0"], ["0", "4", "0"], ["1", "0", "0"]]
    assert heat.texttemplate == "%{text}" and heat.zmin == 0 and heat.zmax == 4
    assert fig.layout.yaxis.title.text == "gold label" and fig.layout.xaxis.title.text == "predicted label"
    assert list(fig.layout.yaxis.ticktext) == ["negative", "positive", "&lt;b&gt;neutral"]  # shown literally
    assert tuple(fig.layout.yaxis.range) == (2.5, -0.5)  # the first label on top, as a table reads
    assert heat.customdata[1][0].tolist() == ["positive", "negative"]  # the hover names gold, then predicted
    with pytest.raises(ValueError):
        confusion_matrix_figure([[1, 2], [3, 4]], ["one", "two", "three"])


def test_the_layer_to_layer_change_map_has_a_scale_fitted_to_its_values_and_a_title_that_reads_the_right_way():
    """The cosines of a trained model lie between 0.8 and 1: on a -1..1 scale the map was one colour, and a title of
    "how much each layer turns a token" read the opposite of a high cosine."""
    from bertviz_app.figures import layer_similarity_figure

    similarity = np.array([[0.83, 0.91, 0.97], [0.88, 0.99, 0.95]], dtype=np.float32)
    heat = layer_similarity_figure(similarity, ["a", "b", "c"]).data[0]
    assert heat.zmin == pytest.approx(0.8) and heat.zmax == 1
    title = layer_similarity_figure(similarity, ["a", "b", "c"]).layout.title.text
    assert "1 = unchanged" in title and "turns" not in title


def _cell_colour(trace, z: float) -> tuple[int, int, int]:
    """The colour a heatmap draws a cell of value z in: z placed on [zmin, zmax], read off the trace's own scale."""
    from plotly.colors import sample_colorscale, unlabel_rgb

    scale = [[float(stop), colour] for stop, colour in trace.colorscale]
    where = float((z - trace.zmin) / (trace.zmax - trace.zmin))
    return tuple(round(c) for c in unlabel_rgb(sample_colorscale(scale, where, colortype="rgb")[0]))


def test_blue_raises_the_prediction_in_the_word_chart_and_in_the_head_map_and_each_legend_says_so():
    """One colour meaning across Beyond attention: in the head map, blue meant that silencing the head raised the
    prediction (a head working against it), the opposite of the word chart's blue."""
    from bertviz_app.figures import attribution_figure, head_effects_figure

    words = attribution_figure(["[CLS]", "up", "down", "[SEP]"], {"integrated gradients": np.array([0, 2.0, -1.0, 0])},
                               np.array([True, False, False, True]))
    raises, lowers = (_cell_colour(words.data[0], words.data[0].z[0][i]) for i in (1, 2))
    # a head without which the prediction falls by 0.5 raises it by 0.5; one without which it rises lowers it
    heads = head_effects_figure(np.array([[-0.5, 0.25]]), target="“is” at [MASK] 1").data[0]
    helps, hinders = (_cell_colour(heads, heads.z[0][j]) for j in (0, 1))
    for colour in (raises, helps):
        assert colour[2] > colour[0] + 80, colour  # blue
    for colour in (lowers, hinders):
        assert colour[0] > colour[2] + 80, colour  # red
    assert "blue: raises it, red: lowers it" in words.layout.title.text
    assert "blue: raises it, red: lowers it" in heads.colorbar.title.text


def test_titles_wrap_to_a_phone_and_scatter_labels_keep_apart():
    """Titles of more than 44 characters ran off a 390 px phone ("...P(IsNext)/P(NotNex"); the words written at the
    ends of the hidden-state paths landed on each other ("the" three times)."""
    from bertviz_app.figures import hidden_projection_figure
    from bertviz_app.figures._base import placed_labels, wrap_title

    wrapped = wrap_title("What each head does to log P(IsNext)/P(NotNext) (found by silencing it)<br><sup>a "
                         "subtitle long enough to need two lines of its own here</sup>")
    lines = wrapped.split("<br>")
    assert all(len(re.sub(r"</?sup>", "", line)) <= 44 for line in lines) and len(lines) == 4
    assert lines[-1].startswith("<sup>") and lines[-1].endswith("</sup>")  # a subtitle stays small on each line
    # two points a pixel apart: the second's label has no free place and is left out (the hover names it); a third
    # point 20 px under the first has room for its own
    text, where = placed_labels([0.5, 0.505, 0.5], [0.5, 0.5, 0.4], ["the", "the", "table"], [0, 1], [0, 1],
                                (200, 200), 14)
    assert text == ["the", "", "table"] and where[0] == where[2] == "top center"
    xy = np.zeros((3, 4, 2), dtype=np.float32)
    xy[:, :, 0] = np.linspace(0, 1, 4)  # four tokens far apart: every one written
    assert list(hidden_projection_figure(xy, ["a", "b", "c", "d"]).data[2].text) == ["a", "b", "c", "d"]
