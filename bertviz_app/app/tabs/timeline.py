"""The Timeline tab: how the model picked above learned, for a model whose folder holds a training timeline (every
model the Fine-tune and Pretrain tabs make, and a folder given at launch with --model that `bertviz-app pretrain` or
`finetune` wrote). The visitor picks one of the timeline's inputs; every snapshot's loss, roles and predictions
arrive in one value with the views of the page of snapshots the slider opens on, and the slider, Play and the
picture of roles over steps swap them in the browser (views/js/timeline-bar.mjs): moving within the pages it holds
asks the server for nothing, and another page is asked for when the slider reaches it (views_host.TimelinePages:
bounded answers, encoded once, cached within a budget). Computed only while the tab is open (the page's gate)."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

import gradio as gr
import numpy as np

from ...figures.timeline import probe_timeline_figure
from ...files import inside
from ...timeline import FOLDER, Timeline, TimelineError, open_timeline
from ..common import api, figure_reading, plain, refuse, tr_of, user_errors
from .base import FIT_ON_A_PHONE, Gate, TabPage, fit_figures_on_a_phone

log = logging.getLogger(__name__)
_CHECKPOINT = re.compile(r"step-\d{7,}$")
NO_TIMELINE = ("**{name}** has no training timeline. A model trained here (the Fine-tune or Pretrain tab) has one, "
               "and so does a folder that `bertviz-app pretrain` or `finetune` wrote, given to the server with "
               "`--model`: pick one in the model list above.")


def timeline_folder(folder: Path | None) -> Path | None:
    """The timeline of a model folder: its own (a fine-tuning's output), or its run's for a pretraining checkpoint
    (OUT/step-NNNNNNN beside OUT/timeline); None when there is none, or when it is a link out of that folder (the
    reader keeps every file inside the timeline's folder)."""
    if folder is None:
        return None
    for place in (folder, folder.parent if _CHECKPOINT.match(folder.name) else None):
        if place is not None and (place / FOLDER / "timeline.json").is_file():
            try:
                inside(place, place / FOLDER, TimelineError, kind="folder")
            except TimelineError as err:
                log.warning("%s", err)
                return None
            return place / FOLDER
    return None




PROBE_STEPS = 12  # snapshots probed for the figure, evenly spread (3 fits each: 12 s a fit at a load of 20)
PROBE_READING = (
    "Each line is one layer: how often a linear probe reads a held-out word's part of speech from that layer's "
    "vectors at each step of the training; where a line climbs above the dashed one (always guessing the commonest "
    "tag), that layer has learned something of grammar.",
    "Each snapshot stored the hidden states of a fixed set of held-out tagged sentences (the Brown corpus's, by "
    "default). A logistic regression per layer is trained on four fifths of those sentences and scored on the rest, "
    "with the same recipe as the Corpus tab's \"What each layer knows\"; at most 12 snapshots, evenly spread: the "
    "first and the last are drawn first, the others once they are fitted.")


def probe_steps(steps: list[int], most: int = PROBE_STEPS) -> list[int]:
    """At most `most` of `steps`, evenly spread, the first and the last among them."""
    if len(steps) <= most:
        return list(steps)
    return [steps[i] for i in sorted(set(np.linspace(0, len(steps) - 1, most).round().astype(int).tolist()))]


def input_label(timeline: Timeline, index: int) -> str:
    item = timeline.inputs[index]
    text = item.text if item.text_pair is None else f"{item.text} | {item.text_pair}"
    return text if len(text) <= 80 else text[:79] + "…"


class TimelineTab:
    id, title = "timeline-tab", "Timeline"

    def __init__(self, page: TabPage):
        self.page = page
        self._timelines: dict[Path, Timeline] = {}
        with gr.Row(equal_height=True):
            self.status = gr.Markdown(elem_id="timeline-status")
            self.input = gr.Dropdown([], value=None, label="Input (one of the timeline's)", allow_custom_value=True,
                                     elem_id="timeline-input")
        self.view = page.host.component("timeline-host", id_prefix="tl-")
        with gr.Column(visible=False, elem_id="timeline-probe-box") as self.probe_box:
            figure_reading("timeline-probe-reading", *PROBE_READING)
            self.probe_plot = gr.Plot(label="What each layer knew, step by step", elem_id="timeline-probe",
                                      elem_classes=[FIT_ON_A_PHONE])
        self._probing = threading.Lock()  # one probe at a time: its fits are kept (Timeline.probe), so the next is quick
        self.shown = gr.State(None)  # (model, input, snapshots) this page shows: the same again is not sent

    def timeline(self, model: str) -> Timeline | None:
        """The model's timeline, listed again (a training under way adds snapshots); None without one."""
        folder = timeline_folder(self.page.models.get(model).folder)
        if folder is None:
            return None
        if folder not in self._timelines:
            try:
                self._timelines[folder] = open_timeline(folder)
            except (TimelineError, OSError, ValueError):
                return None
        return self._timelines[folder].refresh()

    @user_errors
    def opened(self, model, shown, request: gr.Request = None):
        """The status, the inputs and the first input's snapshots of the model picked above."""
        tr = tr_of(request)
        timeline = self.timeline(model)
        if timeline is None or not timeline.steps:
            return (tr(NO_TIMELINE, name=plain(str(model))), gr.update(choices=[], value=None),
                    {"timeline": None, "key": ""}, None)
        choices = [(input_label(timeline, i), i) for i in range(len(timeline.inputs))]
        keep = shown[1] if isinstance(shown, tuple) and shown[0] == model else 0
        status = tr("**{model}**: {kind}, {n} snapshots from step {first} to {last}. Move the slider or press "
                    "**Play**; click a head in the picture of roles to follow it.", model=plain(model),
                    kind=tr(plain(str(timeline.kind))), n=len(timeline.steps), first=timeline.steps[0],
                    last=timeline.steps[-1])
        value, now = self._value(self.page.host.timelines, timeline, keep, model, shown)
        return status, gr.update(choices=choices, value=keep), value, now

    @user_errors
    def probed(self, model, request: gr.Request = None):
        """The probe figure of a timeline with a probe set (a pretraining's), first drawn from its first and last
        probed snapshots only (two of up to 12: on a first open of a `classroom` run the figure waited for 36 fits,
        minutes under load); hidden for one without. `probed_all` adds the rest."""
        return self._probe_figure(model, True, tr_of(request))

    @user_errors
    def probed_all(self, model, request: gr.Request = None):
        """The probe figure with every probed snapshot, after `probed`'s; nothing new when that one had them all."""
        return self._probe_figure(model, False, tr_of(request))

    def _probe_figure(self, model, draft: bool, tr):
        timeline = self.timeline(model)
        probe_set = timeline.probe_set if timeline is not None and timeline.steps else None
        if probe_set is None:
            return (gr.update(visible=False), None) if draft else (gr.skip(), gr.skip())
        steps = probe_steps(timeline.steps)
        if draft:
            steps = sorted({steps[0], steps[-1]})
        elif len(steps) <= 2:
            return gr.skip(), gr.skip()
        target = "tag" if probe_set.tags else "label" if probe_set.labels else "position"
        # A snapshot at a time (its fits are kept): another visitor's first figure waits for one snapshot's fits at
        # most, not for every snapshot of this one's.
        for step in steps:
            with self._probing:
                timeline.probe(target, control=False, steps=[step])
        with self._probing:
            frame = timeline.probe(target, control=False, steps=steps)
        return gr.update(visible=True), probe_timeline_figure(frame, probe_set.describe(tr), tr=tr)

    @user_errors
    def chosen(self, model, index, shown, request: gr.Request = None):
        tr = tr_of(request)
        timeline = self.timeline(model)
        if timeline is None:
            raise refuse(tr(NO_TIMELINE, name=plain(str(model))).replace("**", ""))
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(timeline.inputs):
            raise refuse(tr("Choose one of the timeline's {n} inputs in the list.", n=len(timeline.inputs)))
        return self._value(self.page.host.timelines, timeline, index, model, shown)

    @staticmethod
    def _value(pages, timeline: Timeline, index: int, model: str, shown):
        now = (model, index, len(timeline.steps))
        if shown == now:
            return gr.skip(), shown
        return pages.value(timeline, index, model), now

    def wire(self) -> None:
        self.input.input(self.chosen, [self.page.model, self.input, self.shown], [self.view, self.shown],
                         **api("timeline_input"), show_progress="hidden")

    def on_load(self, demo: gr.Blocks) -> None:
        fit_figures_on_a_phone(demo)

    def after_analysis(self, event: Gate, public: bool) -> None:
        # the model picked above may have changed, or a training added snapshots
        event.then(self.opened, [self.page.model, self.shown], [self.status, self.input, self.view, self.shown],
                   **api("timeline", public), show_progress="hidden"
                   ).then(self.probed, [self.page.model], [self.probe_box, self.probe_plot],
                          **api("timeline_probe", public), show_progress="hidden"
                          ).success(self.probed_all, [self.page.model], [self.probe_box, self.probe_plot],
                                    **api("timeline_probe_all", public), show_progress="hidden")
