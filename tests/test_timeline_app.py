"""The Timeline tab through its own functions: a model folder with a timeline (conftest's fine-tuned classifier)
sends every snapshot of the chosen input with the stored payloads of one page, the others a page at a time (bounded,
encoded once, kept within a budget); the same again is not sent; a pretraining's probe figure is drawn first from
its first and last snapshots, then from all; a model without a timeline, or an input off the list, is one
sentence."""

from __future__ import annotations

import base64

import gradio as gr
import numpy as np
import pytest

import bertviz_app
from bertviz_app.app.common import Models
from bertviz_app.app.tabs import TabPage
from bertviz_app.app.tabs.timeline import TimelineTab, probe_steps, timeline_folder
from bertviz_app.app.views_host import TimelinePages, ViewsHost
from bertviz_app.timeline import open_timeline
from test_timeline import STEPS, probed_run


@pytest.fixture(scope="module")
def tab(finetuned_classifier, tiny_mlm_folder, tmp_path_factory):
    """The tab built in a page of its own: a model with a timeline, one without, and a pretraining whose timeline
    has a probe set."""
    run = probed_run(tmp_path_factory.mktemp("probed"))
    models = Models({"trained": bertviz_app.load(finetuned_classifier, device="cpu", name="trained"),
                     "plain": bertviz_app.load(tiny_mlm_folder, device="cpu", name="plain"),
                     "pretrained": bertviz_app.load(run / f"step-{STEPS:07d}", device="cpu", name="pretrained")})
    with gr.Blocks():
        picker = gr.Dropdown(models.names, value="trained")
        page = TabPage(models, gr.State(None), picker, host=ViewsHost(models))
        with gr.Tab("Timeline") as page.items[TimelineTab.id]:
            tab = TimelineTab(page)
        tab.wire()
    return tab


def test_every_snapshot_arrives_with_the_page_of_the_last(tab, finetuned_classifier):
    timeline = open_timeline(finetuned_classifier)
    status, inputs, value, shown = tab.opened("trained", None)
    assert f"{len(timeline.steps)} snapshots" in status
    assert [c[1] for c in inputs["choices"]] == list(range(len(timeline.inputs))) and inputs["value"] == 0
    data = value["timeline"]
    assert data["steps"] == timeline.steps and len(data["snapshots"]) == len(timeline.steps)
    assert data["page_size"] == len(timeline.steps)  # ten small snapshots: one page holds them all
    window = data["window"]
    assert window["steps"] == timeline.steps and "payloads" not in data
    for step, encoded in zip(window["steps"], window["payloads"]):  # the stored bytes, which the views' mount reads
        assert base64.b64decode(encoded) == timeline.payload(step, 0)
    assert data["snapshots"][-1]["roles"] == timeline.snapshot(timeline.steps[-1])["roles"]
    assert data["snapshots"][-1]["item"]["prediction"]["probabilities"]  # the classifier's answer at each step
    # the same input again, nothing new: not sent; another input is
    assert tab.chosen("trained", 0, shown) == (gr.skip(), shown)
    other, _ = tab.chosen("trained", 1, shown)
    assert other["timeline"]["input"] == timeline.inputs[1].as_dict()
    # a page in Spanish reads the status and a refusal in Spanish; the model's name as it is
    spanish = gr.Request(headers={"accept-language": "es"})
    status = tab.opened("trained", None, request=spanish)[0]
    assert status.startswith(f"**trained**: ajuste fino, {len(timeline.steps)} instantáneas del paso ")
    with pytest.raises(gr.Error, match="Elige una de las"):
        tab.chosen("trained", 99, shown, request=spanish)


def test_pages_are_bounded_encoded_once_and_kept_within_a_budget(finetuned_classifier):
    timeline = open_timeline(finetuned_classifier)
    size = max(len(timeline.payload(s, 0)) for s in timeline.steps)
    encoded = sum(len(base64.b64encode(timeline.payload(s, 0))) for s in timeline.steps)
    pages = TimelinePages(page_bytes=3 * size, budget=encoded // 2)  # about two of its four pages
    value = pages.value(timeline, 0, "trained")
    data = value["timeline"]
    assert data["page_size"] == 3 and data["window"] == pages.page({"pages": value["pages"], "page": 3})
    assert data["window"]["steps"] == timeline.steps[9:]  # the last page: the trained model
    seen = []
    for number in range(4):
        page = pages.page({"pages": value["pages"], "page": number})
        assert page["steps"] == timeline.steps[3 * number:3 * number + 3]
        assert sum(len(base64.b64decode(p)) for p in page["payloads"]) <= 3 * size  # each answer within a page
        seen += page["payloads"]
    assert [base64.b64decode(p) for p in seen] == [timeline.payload(s, 0) for s in timeline.steps]
    assert pages.cached_bytes <= pages.budget and len(pages._pages) < 4  # the least recently used went
    again = pages.page({"pages": value["pages"], "page": 3})["payloads"]
    assert all(a is b for a, b in zip(again, seen[9:]))  # encoded once: the same strings
    for bad in ({"pages": "made up", "page": 0}, {"page": 0}, "x", None):
        with pytest.raises(gr.Error, match="no longer in the server's memory"):
            pages.page(bad)
    assert pages.page({"pages": value["pages"], "page": 99})["page"] == 3  # clipped to the timeline


def test_the_probe_figure_comes_first_from_the_first_and_last_snapshots_then_from_all(tab):
    # A first open used to fit every probed snapshot (36 fits on a classroom run) before the figure showed anything.
    timeline = tab.timeline("pretrained")
    steps = probe_steps(timeline.steps)
    assert len(steps) == 6
    box, draft = tab.probed("pretrained")
    assert box["visible"] and [list(t.x) for t in draft.data] == [[steps[0], steps[-1]]] * 4  # 3 layers, majority
    assert set(timeline._probes) == {(steps[0], "tag", False), (steps[-1], "tag", False)}  # only those two fitted
    # the rest a snapshot at a time, the lock let go between them: another visitor's first figure waits for one
    held, lock = [], tab._probing

    class Counting:
        def __enter__(self):
            lock.acquire()
            held.append(sorted({k[0] for k in timeline._probes}))

        def __exit__(self, *exc):
            lock.release()

    tab._probing = Counting()
    try:
        box, full = tab.probed_all("pretrained")
    finally:
        tab._probing = lock
    assert len(held) == len(steps) + 1 and [len(h) for h in held[:-1]] == [2, 2, 3, 4, 5, 6]  # one new fit at most
    assert box["visible"] and [list(t.x) for t in full.data] == [steps] * 4
    expected = timeline.probe("tag", control=False)
    for layer in range(3):
        np.testing.assert_allclose(full.data[layer].y, expected[expected["layer"] == layer]["accuracy"], atol=5e-5)
    # a timeline without a probe set (a fine-tuning's): hidden, and nothing more after
    assert tab.probed("trained") == (gr.update(visible=False), None)
    assert tab.probed_all("trained") == (gr.skip(), gr.skip())


def test_a_model_without_a_timeline_or_an_input_off_the_list_is_one_sentence(tab):
    status, inputs, value, shown = tab.opened("plain", None)
    assert "has no training timeline" in status and value == {"timeline": None, "key": ""} and shown is None
    with pytest.raises(gr.Error, match="has no training timeline"):
        tab.chosen("plain", 0, None)
    for bad in (99, -1, "0", True, None):
        with pytest.raises(gr.Error, match="Choose one of the timeline's"):
            tab.chosen("trained", bad, None)


def test_a_pretraining_checkpoint_finds_its_runs_timeline(tmp_path):
    (tmp_path / "run" / "timeline").mkdir(parents=True)
    (tmp_path / "run" / "timeline" / "timeline.json").write_text("{}")
    (tmp_path / "run" / "step-0000012").mkdir()
    assert timeline_folder(tmp_path / "run" / "step-0000012") == tmp_path / "run" / "timeline"
    assert timeline_folder(tmp_path / "run") == tmp_path / "run" / "timeline"
    assert timeline_folder(tmp_path) is None and timeline_folder(None) is None
