"""The Timeline tab through its own functions: a model folder with a timeline (conftest's fine-tuned classifier)
sends every snapshot of the chosen input in one value, exactly the stored payloads; the same again is not sent; a
model without a timeline, or an input off the list, is one sentence."""

from __future__ import annotations

import base64

import gradio as gr
import pytest

import bertviz_app
from bertviz_app.app.common import Models
from bertviz_app.app.tabs import TabPage
from bertviz_app.app.tabs.timeline import TimelineTab, timeline_folder
from bertviz_app.app.views_host import ViewsHost
from bertviz_app.timeline import open_timeline


@pytest.fixture(scope="module")
def tab(finetuned_classifier, tiny_mlm_folder):
    """The tab built in a page of its own: a model with a timeline and one without."""
    models = Models({"trained": bertviz_app.load(finetuned_classifier, device="cpu", name="trained"),
                     "plain": bertviz_app.load(tiny_mlm_folder, device="cpu", name="plain")})
    with gr.Blocks():
        picker = gr.Dropdown(models.names, value="trained")
        page = TabPage(models, gr.State(None), picker, host=ViewsHost(models))
        with gr.Tab("Timeline") as page.items[TimelineTab.id]:
            tab = TimelineTab(page)
        tab.wire()
    return tab


def test_every_snapshot_of_the_input_arrives_in_one_value(tab, finetuned_classifier):
    timeline = open_timeline(finetuned_classifier)
    status, inputs, value, shown = tab.opened("trained", None)
    assert f"{len(timeline.steps)} snapshots" in status
    assert [c[1] for c in inputs["choices"]] == list(range(len(timeline.inputs))) and inputs["value"] == 0
    data = value["timeline"]
    assert data["steps"] == timeline.steps and len(data["snapshots"]) == len(timeline.steps)
    for step, encoded in zip(data["steps"], data["payloads"]):  # the stored bytes, which the views' mount reads
        assert base64.b64decode(encoded) == timeline.payload(step, 0)
    assert data["snapshots"][-1]["roles"] == timeline.snapshot(timeline.steps[-1])["roles"]
    assert data["snapshots"][-1]["item"]["prediction"]["probabilities"]  # the classifier's answer at each step
    # the same input again, nothing new: not sent; another input is
    assert tab.chosen("trained", 0, shown) == (gr.skip(), shown)
    other, _ = tab.chosen("trained", 1, shown)
    assert other["timeline"]["input"] == timeline.inputs[1].as_dict()


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
