"""What the timeline reader and the Timeline tab read for a visitor stays inside the timeline's folder and is what it
says it is: a payload linked to a file outside, a step folder linked to another tree, a payload with the wrong magic
bytes or a step number no browser reads are refused (the notebook's save_html writes nothing, the tab sends nothing
of them); the same rule for a corpus folder's files. Each case is a copy of conftest's fine-tuned classifier (or the
small corpus) with one file planted."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import gradio as gr
import orjson
import pytest

import bertviz_app
from bertviz_app.app.common import Models
from bertviz_app.app.tabs import TabPage
from bertviz_app.app.tabs.timeline import TimelineTab
from bertviz_app.app.views_host import TimelinePages, ViewsHost
from bertviz_app.corpus import CorpusError, open_corpus
from bertviz_app.timeline import TimelineError, open_timeline


SECRET = "root:x:0:0:the secret outside the timeline\n"


@pytest.fixture
def copied(finetuned_classifier, tmp_path) -> Path:
    """A copy of the fine-tuned model folder (timeline inside), and a secret file beside it, outside it."""
    shutil.copytree(finetuned_classifier, tmp_path / "model")
    (tmp_path / "secret.txt").write_text(SECRET)
    return tmp_path / "model"


def _last_step(folder: Path) -> Path:
    return sorted((folder / "timeline").glob("step-*"))[-1]


def _tab(folder: Path) -> TimelineTab:
    models = Models({"trained": bertviz_app.load(folder, device="cpu", name="trained")})
    with gr.Blocks():
        picker = gr.Dropdown(models.names, value="trained")
        page = TabPage(models, gr.State(None), picker, host=ViewsHost(models))
        with gr.Tab("Timeline") as page.items[TimelineTab.id]:
            tab = TimelineTab(page)
    return tab


def test_a_payload_linked_outside_is_refused_and_never_written(copied, tmp_path):
    payload = _last_step(copied) / "input-00.bviz"
    payload.unlink()
    payload.symlink_to(tmp_path / "secret.txt")
    timeline = open_timeline(copied)
    step = timeline.steps[-1]
    with pytest.raises(TimelineError, match="leads out of"):
        timeline.run(step, 0).save_html(tmp_path / "page.html")
    assert not (tmp_path / "page.html").exists()
    with pytest.raises(TimelineError, match="leads out of"):
        timeline.payloads([step], 0)
    # a link that stays inside the timeline's folder is followed
    payload.unlink()
    payload.symlink_to(_last_step(copied).parent / f"step-{timeline.steps[0]:07d}" / "input-00.bviz")
    assert timeline.payload(step, 0) == timeline.payload(timeline.steps[0], 0)


def test_a_step_folder_linked_outside_is_not_listed(copied, tmp_path, caplog):
    outside = tmp_path / "elsewhere"
    shutil.copytree(_last_step(copied), outside)
    (outside / "input-00.bviz").write_text(SECRET)
    (copied / "timeline" / "step-9000000").symlink_to(outside, target_is_directory=True)
    with caplog.at_level(logging.WARNING):
        timeline = open_timeline(copied)
    assert 9000000 not in timeline.steps and len(timeline.steps) == 10
    assert "step-9000000 skipped: it is a link out of the timeline's folder" in caplog.text
    pages = TimelinePages()
    value = pages.value(timeline, 0, "m")
    assert SECRET not in json.dumps(value) and 9000000 not in value["timeline"]["window"]["steps"]


def test_a_payload_that_is_not_one_is_refused(copied, tmp_path):
    (_last_step(copied) / "input-00.bviz").write_bytes(b"PK\x03\x04" + b"\0" * 64)  # a zip, say
    timeline = open_timeline(copied)
    with pytest.raises(TimelineError, match="wrong magic bytes"):
        timeline.run(timeline.steps[-1], 0).save_html(tmp_path / "page.html")
    assert not (tmp_path / "page.html").exists()
    blob = timeline.payload(timeline.steps[0], 0)
    (_last_step(copied) / "input-00.bviz").write_bytes(blob[:-10])  # cut short
    with pytest.raises(TimelineError, match="beyond its end"):
        timeline.payload(timeline.steps[-1], 0)


def test_a_step_no_browser_reads_is_skipped_with_a_warning(copied, caplog):
    shutil.copytree(_last_step(copied), copied / "timeline" / "step-99999999999999999999")
    with caplog.at_level(logging.WARNING):
        timeline = open_timeline(copied)
    assert max(timeline.steps) < 2**53 and len(timeline.steps) == 10
    assert "step-99999999999999999999 skipped: its step is beyond" in caplog.text
    orjson.dumps(TimelinePages().value(timeline, 0, "m"))  # gradio's encoder, which stops at 64 bits


def test_the_tab_sends_nothing_from_outside(copied, tmp_path):
    payload = _last_step(copied) / "input-00.bviz"
    payload.unlink()
    payload.symlink_to(tmp_path / "secret.txt")
    tab = _tab(copied)
    with pytest.raises(gr.Error) as refused:
        tab.opened("trained", None)
    assert "cannot be sent" in refused.value.message and str(tmp_path) not in refused.value.message
    # the whole timeline folder linked elsewhere: no timeline
    shutil.move(copied / "timeline", tmp_path / "moved")
    (copied / "timeline").symlink_to(tmp_path / "moved", target_is_directory=True)
    status, _, value, _ = _tab(copied).opened("trained", None)
    assert "has no training timeline" in status and value["timeline"] is None


@pytest.fixture(scope="module")
def corpus(small_corpus) -> Path:
    return small_corpus


def test_a_corpus_file_linked_outside_is_refused(corpus, tmp_path):
    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    elsewhere = tmp_path / "hidden.npy"
    shutil.copy(copy / "shard-00000" / "hidden.npy", elsewhere)
    (copy / "shard-00000" / "hidden.npy").unlink()
    (copy / "shard-00000" / "hidden.npy").symlink_to(elsewhere)
    with pytest.raises(CorpusError, match="hidden.npy leads out of"):
        open_corpus(copy)
    (copy / "shard-00000" / "hidden.npy").unlink()
    shutil.copy(elsewhere, copy / "shard-00000" / "hidden.npy")
    (copy / "shard-00000" / "sentences.jsonl").rename(tmp_path / "sentences.jsonl")
    (copy / "shard-00000" / "sentences.jsonl").symlink_to(tmp_path / "sentences.jsonl")
    with pytest.raises(CorpusError, match="sentences.jsonl leads out of"):
        open_corpus(copy).sentences  # noqa: B018


def test_a_new_number_of_a_snapshot_is_its_line_in_format_and_its_value_in_the_record(copied, monkeypatch):
    # the "ways in" of a snapshot field (docs/ARCHITECTURE.md): a number the writer puts in snapshot.json and names in
    # format.SCALARS is a column of Timeline.frame(); a timeline written before it has the column, empty
    from bertviz_app.timeline import format as fmt

    last = _last_step(copied) / fmt.SNAPSHOT
    record = json.loads(last.read_text())
    record["weight_norm"] = 12.5
    last.write_text(json.dumps(record))
    monkeypatch.setattr(fmt, "SCALARS", (*fmt.SCALARS, "weight_norm"))
    frame = open_timeline(copied).frame()
    assert list(frame.columns[:6]) == ["step", "loss", "loss_mean", "lr", "seconds", "weight_norm"]
    assert frame["weight_norm"].iloc[-1] == 12.5
    assert frame["weight_norm"].iloc[:-1].isna().all()
