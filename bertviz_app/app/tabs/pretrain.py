"""The Pretrain tab: a class watches a tiny BERT learn from nothing. It starts from random weights (the default model's
tokenizer) on a built-in text (Python's help topics, or Debian's fortune cookies where installed) or a text the
operator named at launch with `--pretrain-data` (a visitor never sends a file or a path); the class types its own
sentence with [MASK], which is the timeline's input 0. While it trains the page shows the loss of every step, the
model's top 5 for each [MASK] of that sentence at the latest snapshot, and the attention views of every snapshot so
far under a slider that grows in place as snapshots arrive. Stop ends it after the step under way; the model at that
step joins every model list of the page, like a fine-tuned one, and the Timeline tab replays its training.

It runs in the same training lane as the Fine-tune tab (lane/training.py, a `PretrainJob`): one training at a
time, whichever tab started it. The tab is shown only where the app may train, by the Fine-tune tab's rule; it holds
the same services as that tab (trained.py: `TrainedModels` offers its models in every list, `PollPace` paces its
progress polls: the page's own timer, gr.skip() when nothing changed, PollRate's bucket for `pretrain_progress`).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import gradio as gr

from ...explorer import load
from ...figures.training import loss_curve_figure
from ...heads import CLEAR_ROLES
from ...timeline import open_timeline
from ...i18n import Translator, english, said, translator
from ..common import api, language_of, plain, refuse, text_value, tr_of, user_errors
from ..lane.pretraining import (BUILTIN_TEXT, BUILTIN_TEXTS, PRETRAIN_MINUTES, PRETRAIN_PRESETS, PretrainJob,
                                class_sentence, pretrain_choices, pretrain_settings, pretraining_root, text_problem)
from ..lane.training import STOPPED_BY, Progress
from .base import Gate, TabPage
from .trained import MAX_TRAINED, POLL_S, PollPace, Refusals, TrainedModels, client_address, not_started

log = logging.getLogger("bertviz_app.app")

SENTENCE = "The capital of France is [MASK]."
NO_VIEWS = {"timeline": None, "key": ""}


def roles_text(roles, tr: Translator = english) -> str:
    """' Heads with a clear role: layer 1, head 3 (previous token), ...' (a space first), or ''."""
    named = [tr("layer {layer}, head {head} ({role})", layer=l + 1, head=h + 1, role=tr(role))
             for l, row in enumerate(roles or []) for h, role in enumerate(row) if role in CLEAR_ROLES]
    heads = sum(len(row) for row in roles or [])
    if not heads:
        return ""
    return " " + (tr("{n} of {heads} heads have a clear role (over half their attention on one place): {named}.",
                     n=len(named), heads=heads, named=", ".join(named)) if named else
                  tr("{n} of {heads} heads have a clear role (over half their attention on one place).",
                     n=len(named), heads=heads))


def top5_text(p: Progress, tr: Translator = english) -> str:
    """The class's sentence's top 5 at each [MASK] at the latest snapshot, as Markdown ('“the” 5.3% · “,” 5.2%')."""
    snap = p.timeline if isinstance(p.job, PretrainJob) else None
    if not snap:
        return ""
    lines = [tr("**Top 5 for [MASK] at step {step}** (snapshot {count}):", step=snap["step"], count=snap["count"])]
    for k, mask in enumerate(snap["masks"]):
        # each token in quotes: bare, a comma or a period among the separators did not read as a guess
        guesses = " · ".join(f"“{plain(token)}” {100 * prob:.1f}%" for token, prob in mask["top"])
        lines.append(f"{k + 1}. {guesses}" if len(snap["masks"]) > 1 else guesses)
    return "\n\n".join(lines)


def status_text(p: Progress, tr: Translator = english) -> str:
    """The status line, the lane's own messages (p.message) translated; the library's as it wrote them."""
    if p.job is None:
        return tr("Pick the text, the model's size and the minutes, type the class's sentence with [MASK] where the "
                "model should guess a word, then press **Start**: a BERT with random weights learns to fill in "
                "masked words. The loss appears after each step, its guesses and its attention at each snapshot. "
                "Press **Stop** at any time: the model as it is then joins the model list at the top.")
    if not isinstance(p.job, PretrainJob):  # the lane's last job was a fine-tuning
        if not p.running:
            return status_text(Progress(), tr)
        return tr("The training lane is busy fine-tuning **{name}** (the Fine-tune tab); one training runs at a time. "
                  "Start yours when it is done.", name=plain(p.job.name))
    job = p.job
    what = tr("**{name}** (from scratch on {text})", name=plain(job.name), text=plain(job.data.key))
    if p.state == "failed":
        return tr("**The pretraining could not run.**") + f" {plain(said(p.message, tr))}"
    step = p.steps[-1] if p.steps else 0
    roles = roles_text((p.timeline or {}).get("roles"), tr)
    heldout = (" " + tr("Held-out masked-token top-1 {top1}, top-5 {top5}.", top1=f"{p.heldout['mlm_top1']:.3f}",
                        top5=f"{p.heldout['mlm_top5']:.3f}") if p.heldout else "")
    if p.state in ("done", "cancelled") and p.model is not None:
        how = "" if p.state == "done" else tr("{how} at step {step}: ", how=tr(STOPPED_BY.get(p.stopped_by, "Stopped")),
                                              step=step)
        joined = (tr("{what} **joined the model list**, in place of **{old}**, the oldest of the {most} models "
                     "pretrained here that the server keeps, after {step} steps in {seconds} s.", what=what,
                     old=plain(p.replaced), most=MAX_TRAINED, step=step, seconds=f"{p.seconds:.0f}") if p.replaced else
                  tr("{what} **joined the model list** after {step} steps in {seconds} s.", what=what, step=step,
                     seconds=f"{p.seconds:.0f}"))
        return how + joined + heldout + roles + " " + tr("Pick it in the model list and press Analyze: every tab "
                                                         "works on it, and the Timeline tab replays its training.")
    if p.state == "cancelled":
        return f"{what}: {plain(said(p.message, tr))}"
    if p.message:
        return tr("Pretraining {what}: {message}", what=what, message=plain(said(p.message, tr)))
    loss = tr("loss {loss}", loss=f"{p.losses[-1]:.3f}") if p.losses else ""
    return tr("Pretraining {what}: **step {step}** of at most {total} (it stops after {minutes} minutes), {loss} · "
              "{seconds} s.", what=what, step=step, total=p.total, minutes=f"{job.minutes:g}", loss=loss,
              seconds=f"{p.seconds:.0f}") + roles


def curve(p: Progress, tr: Translator = english):
    if not isinstance(p.job, PretrainJob) or not p.steps:
        return None
    # the whole run's axis while it trains (the curve grows from the left); once stopped, the steps it made
    return loss_curve_figure(p.steps, p.losses, None, total=(p.total or None) if p.running else None,
                             title=tr("Masked-LM + next-sentence loss per step"), tr=tr)


class PretrainTab:
    """Builds the tab in the current gr.Tab (hidden where the app may not train); `wire` connects it. It shares the
    page's one lane with the Fine-tune tab, and the same services (trained.py): its models offered in every list, its
    polls paced."""
    id, title = "pretrain-tab", "Pretrain"

    def __init__(self, page: TabPage):
        self.page = page
        self.settings = settings = page.training
        self.lane = page.training_lane
        self.trained = TrainedModels(page.models, "{} BERT from scratch {}")  # its models, oldest first
        self._pickers: list[gr.Dropdown] = []
        self._drawn = None  # ((progress version, language), figure)
        self._views: tuple[str, dict] | None = None  # (views key, the views' value)
        self.pace = PollPace()
        self.refusals = Refusals()  # why each page's last Start was refused
        if not settings.enabled:
            # the same rule as the Fine-tune tab, which says why it is off; this one is simply not in the tab bar
            page.items[self.id].visible = False
            return
        self.choices = pretrain_choices(settings.pretrain_files)
        self.minutes_offered = [m for m in PRETRAIN_MINUTES if not settings.max_minutes or m <= settings.max_minutes]
        if not self.minutes_offered:  # a server bound below the shortest choice: that bound is the one choice
            self.minutes_offered = [settings.max_minutes]
        with gr.Row(equal_height=True, elem_id="pretrain-controls"):
            first = next((k for k, c in self.choices.items() if not c.builtin), BUILTIN_TEXT)
            self.data = gr.Dropdown([(c.label, k) for k, c in self.choices.items()], value=first, label="Text",
                                    scale=3, min_width=220, elem_id="pretrain-data")
            self.preset = gr.Dropdown([(p.label, k) for k, p in PRETRAIN_PRESETS.items()], value="classroom",
                                      label="Model", scale=3, min_width=220, elem_id="pretrain-preset")
            default = 10 if 10 in self.minutes_offered else self.minutes_offered[-1]
            self.minutes = gr.Dropdown(self.minutes_offered, value=default, label="Minutes", scale=1, min_width=110,
                                       elem_id="pretrain-minutes")
        with gr.Row(equal_height=True, elem_id="pretrain-sentence-row"):
            self.sentence = gr.Textbox(SENTENCE, label="The class's sentence ([MASK] where the model guesses)",
                                       scale=4, min_width=220, max_lines=1, elem_id="pretrain-sentence")
            self.start_button = gr.Button("Start", variant="primary", scale=1, min_width=90, elem_id="pretrain-start")
            self.cancel_button = gr.Button("Stop", scale=1, min_width=90, interactive=False, elem_id="pretrain-stop")
        self.status = gr.Markdown(status_text(Progress()), elem_id="pretrain-status")  # gradio translates it
        with gr.Row(elem_id="pretrain-results"):
            self.curve = gr.Plot(label="Training loss", scale=5, elem_id="pretrain-curve")
            self.top5 = gr.Markdown("", elem_id="pretrain-top5")
        self.views = page.host.component("pretrain-views", id_prefix="pt-")
        # Which snapshots the views should show ("name\0count"): the poll changes this hidden box, and its change
        # sends the views. The views themselves are never in the poll's outputs: an unchanged output is gr.skip(),
        # and a gr.skip() given to a views host made gradio's front end drop its props (its id prefix: the views
        # then took the ids of the views under the input).
        self.views_key = gr.Textbox("", visible=False, elem_id="pretrain-views-key")
        self.timer = gr.Timer(POLL_S, active=False)
        self.seen = gr.State((len(page.models.names), False, None))  # (models listed, running, views shown)

    # handlers ----------------------------------------------------------------------------------------------------
    def start(self, data, preset, minutes, sentence, request: gr.Request = None):
        """Start a pretraining in the lane; a refusal is said in the status line, as the Fine-tune tab's."""
        try:
            return self._start(data, preset, minutes, sentence, request)
        except gr.Error as err:
            raise self.refusals.refuse(request, err.message) from None

    def start_refused(self, request: gr.Request = None) -> str:
        """After a refused Start: why, in the status line."""
        tr = tr_of(request)
        return not_started(self.refusals.pop(request, tr("Press Start again.")), tr)

    @user_errors
    def _start(self, data, preset, minutes, sentence, request):
        tr = tr_of(request)
        choice = self.choices.get(data) if isinstance(data, str) else None
        if choice is None:
            raise refuse(tr("Choose the text in the list."))
        if preset not in PRETRAIN_PRESETS:
            raise refuse(tr("Choose the model in the list ({choices}).", choices=", ".join(PRETRAIN_PRESETS)))
        if isinstance(minutes, bool) or minutes not in self.minutes_offered:
            raise refuse(tr("Choose the minutes in the list ({choices}).",
                            choices=", ".join(f"{m:g}" for m in self.minutes_offered)))
        try:
            item = class_sentence(text_value(sentence, "The sentence"))  # the library's sentence, in English
        except ValueError as err:  # ours translated, the timeline reader's as it wrote it
            raise refuse(said(err.args[0], tr)) from None
        if choice.builtin:
            if not BUILTIN_TEXTS[choice.source].present():
                raise refuse(said(BUILTIN_TEXTS[choice.source].missing, tr))
        elif not Path(choice.source).is_file():
            raise refuse(tr("{name}, the text named when the server started, is no longer there; whoever runs the "
                            "server can put it back. Pick another text meanwhile.", name=Path(choice.source).name))
        else:
            problem = text_problem(choice.source)
            if problem:
                raise refuse(said(problem, tr) + " " + tr("Pick another text; whoever runs the server can replace "
                                                          "it."))
        session, address = getattr(request, "session_hash", None), client_address(request)
        base = self.page.models.first
        name = self.trained.new_name(preset)
        output = pretraining_root() / f"{preset}-{time.strftime('%Y%m%d-%H%M%S')}"
        while output.exists():
            output = output.with_name(output.name + "-1")
        settings = pretrain_settings(preset, float(minutes), choice, output, str(base.device))
        job = PretrainJob(choice, item, name, settings, limit_s=self.settings.max_minutes * 60 or None)
        try:
            self.lane.start(job, self._join, owner=session,
                            charge=(session, address) if self.settings.shared else None)
        except ValueError as err:  # another training runs, or this page's share of the lane is used: the lane's words
            raise refuse(said(err.args[0], tr)) from None
        return (status_text(self.lane.snapshot(), tr), gr.Timer(active=True), gr.Button(interactive=False),
                gr.Button(interactive=True))

    def poll(self, seen, request: gr.Request = None):
        """As the Fine-tune tab's: only what changed is sent; the views only when a snapshot arrived (every
        snapshot so far in one value, keyed by the run, so the slider grows in place)."""
        page = getattr(request, "session_hash", None) or (f"address {client_address(request)}" if request else None)
        shown = self.pace.last(page)
        if shown is None:
            return (gr.skip(),) * (8 + len(self._pickers))
        p = self.lane.snapshot()
        mine = p.running and self.lane.started_by(getattr(request, "session_hash", None))
        names = self.page.models.names
        models, running, views = seen if isinstance(seen, tuple) and len(seen) == 3 else (None, None, None)
        lists = ([gr.update(choices=list(names), interactive=len(names) > 1) for _ in self._pickers]
                 if models != len(names) + self.trained.replaced else [gr.skip()] * len(self._pickers))
        switches = ((gr.Button(interactive=not p.running), gr.Button(interactive=mine), gr.Timer(active=p.running))
                    if running != (p.running, mine) else (gr.skip(),) * 3)
        lang = language_of(request)
        tr = translator(lang)
        drawn = ((gr.skip(),) * 3 if shown == p.version
                 else (status_text(p, tr), self._figure(p, lang), top5_text(p, tr)))
        key = self._views_key(p)
        view = gr.skip() if key == views else key
        self.pace.sent(page, p.version)
        return (*drawn, view, *switches, (len(names) + self.trained.replaced, (p.running, mine), key), *lists)

    def _figure(self, p: Progress, lang: str):  # built once per progress version for every page in a language
        if self._drawn is None or self._drawn[0] != (p.version, lang):
            self._drawn = ((p.version, lang), curve(p, translator(lang)))
        return self._drawn[1]

    @staticmethod
    def _views_key(p: Progress) -> str:
        return f"{p.job.name}\u0000{p.timeline['count']}" if isinstance(p.job, PretrainJob) and p.timeline else ""

    def views_value(self, key=None) -> dict:
        """The views' value of the lane's pretraining, every snapshot so far (keyed by the run: the slider grows in
        place), built once per new snapshot for every page."""
        p = self.lane.snapshot()
        key = self._views_key(p)
        if not key:
            return NO_VIEWS
        if self._views is None or self._views[0] != key:
            try:
                value = self.page.host.timelines.value(open_timeline(p.job.output), 0, p.job.name)
            except (OSError, ValueError, gr.Error) as err:  # the folder went (a failed run removes it): nothing to show
                log.warning("pretraining timeline of %s unreadable: %s", p.job.name, err)
                return NO_VIEWS
            self._views = (key, value)
        return self._views[1]

    def _join(self, job: PretrainJob, folder: Path):
        """Load the checkpoint at the last step as the other models were loaded and offer it in every model list."""
        base = self.page.models.first
        return self.trained.offer(job.name, folder, load(folder, device=job.device, name=job.name,
                                                         cache_mb=self.settings.cache_mb,
                                                         cache_dtype=base.cache_dtype))

    def cancel(self, request: gr.Request = None) -> str:
        return f"**{said(self.lane.cancel(getattr(request, 'session_hash', None)), tr_of(request))}**"

    def wire(self) -> None:
        if not self.settings.enabled:
            return
        self._pickers = self.trained.pickers = list(self.page.model_pickers)
        outputs = self._poll_outputs()
        quiet = dict(queue=False, show_progress="hidden")
        started = self.start_button.click(self.start, [self.data, self.preset, self.minutes, self.sentence],
                                          [self.status, self.timer, self.start_button, self.cancel_button],
                                          **api("pretrain_start"), **quiet)
        started.failure(self.start_refused, None, [self.status], **api("pretrain_start_refused", False), queue=False)
        self.cancel_button.click(self.cancel, None, [self.status], **api("pretrain_stop"), **quiet)
        self.timer.tick(self.poll, [self.seen], outputs, **api("pretrain_progress"), **quiet)
        self.page.items[self.id].select(self.poll, [self.seen], outputs, **api("pretrain_progress", False), **quiet)
        self.views_key.change(self.views_value, [self.views_key], [self.views], **api("pretrain_views", False),
                              **quiet)

    def _poll_outputs(self) -> list:
        return [self.status, self.curve, self.top5, self.views_key, self.start_button, self.cancel_button, self.timer,
                self.seen, *self._pickers]

    def after_analysis(self, event: Gate, public: bool) -> None:
        pass  # the tab follows the training lane, not the analysis

    def on_load(self, demo: gr.Blocks) -> None:
        if self.settings.enabled:
            demo.load(self.poll, [self.seen], self._poll_outputs(), **api("pretrain_progress_load", False),
                      queue=False, show_progress="hidden")


