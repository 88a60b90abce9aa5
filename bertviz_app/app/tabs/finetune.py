"""The Fine-tune tab: a class watches BERT learn a task. The data is a built-in recipe (movie-reviews, wsj-pos) or a
file the operator named at launch with `--data` (a visitor never sends a file or a path); epochs and learning rate
come from short lists. While it trains the page shows the loss of every step and each epoch's held-out score; when
it is done the new model joins every model list of the page, so that every view and the Task tab can look inside it
at once.

The training itself runs in the server's training lane (lane/training.py: one at a time, in a thread of its own);
this tab starts and cancels it and polls its progress. Cancel stops after the step under way; when at least one
epoch is complete, the best epoch so far is kept and joins the model lists.

On by default only where no one else can reach the server (127.0.0.1, no --share link); elsewhere the operator turns
it on with `--allow-training`, and until then the tab says why it is off and the server has no endpoint to start one.
There, one page and one client address may start only so many trainings an hour (limits.TRAININGS_PER_*). Every
training stops at the operator's `--max-training-minutes`, keeping its best complete epoch. The server keeps the
MAX_TRAINED latest models fine-tuned here: one more replaces the oldest.

The pages poll the lane's progress every POLL_S seconds, outside the queue: the figure and the table are built once
per change of the lane (its progress version), sent to a page only when it has not had them, and a page that asks
faster than its own timer would is answered with nothing new (gr.skip()).
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import gradio as gr
import pandas as pd

from ...explorer import load
from ...figures.training import confusion_matrix_figure, loss_curve_figure
from ...finetuning import RECIPES, FinetuneSettings
from ...i18n import Translator, english, said, translator
from ..common import api, language_of, plain, refuse, text_value, tr_of, user_errors
from ..lane.training import STOPPED_BY, Job, Progress, TrainingLane, data_choices, training_root
from .base import Gate, TabPage
from .trained import (MAX_TRAINED, MIN_POLL_S, POLL_S, PollPace, Refusals, TrainedModels, client_address,
                      not_started)

log = logging.getLogger("bertviz_app.app")

BATCH_SIZE = 32  # examples per step of every fine-tuning started here
EPOCHS = (1, 2, 3, 4, 5)
LEARNING_RATES = ("1e-5", "2e-5", "3e-5", "5e-5", "1e-4")
# The learning rate a data choice suggests (the visitor may change it): a tagging head over 44 tags learns slowly at
# BERT's 5e-5 (wsj-pos from the command line reached 0.933 in 2 epochs at 1e-4, batch 16: README)
SUGGESTED_RATE = {"token-classification": "1e-4"}
REPEAT_SEEDS = (0, 1, 2)  # "repeat 3 times": one seed is one draw


# --- what the page shows -------------------------------------------------------------------------------------------
def _score(evaluation: dict | None, tr: Translator = english) -> str:
    if not evaluation:
        return ""
    for key, words in (("accuracy", "accuracy"), ("f1", "F1"), ("exact_match", "exact match")):
        if key in evaluation:
            return f"{tr(words)} {evaluation[key]:.3f}"
    return ""


def status_text(p: Progress, tr: Translator = english) -> str:
    """The lane's state as Markdown (names and data as text, never markup), the lane's own messages (p.message)
    translated; the library's (a bad file's reason) as it wrote them."""
    if p.job is None:
        return tr("Pick the data, the model to start from, the epochs and the learning rate, then press **Start**. "
                  "The loss appears below after each step, the held-out score after each epoch; when it is done the "
                  "new model joins the model list at the top. The server keeps the {most} latest models fine-tuned "
                  "here: a newer one replaces the oldest.", most=MAX_TRAINED)
    job = p.job
    if not isinstance(job, Job):  # the lane's last job was a pretraining (the Pretrain tab)
        if not p.running:
            return status_text(Progress(), tr)
        return tr("The training lane is busy pretraining **{name}** (the Pretrain tab); one training runs at a time. "
                  "Start yours when it is done.", name=plain(job.name))
    what = tr("**{name}** (from {base} on {data})", name=plain(job.name), base=plain(job.base),
              data=plain(job.data.key))
    if p.state == "failed":
        return tr("**The training could not run.**") + f" {plain(said(p.message, tr))}"
    if p.state == "done":
        return (tr("{what} **joined the model list**{replaced}: held-out {score} ({before} before training), in "
                   "{seconds} s.", what=what, replaced=_replaced_text(p.replaced, tr), score=_score(p.best, tr),
                   before=_score(p.before, tr), seconds=f"{p.seconds:.0f}")
                + _seeds_text(p.seeds, tr) + _unseen_text(p.unseen, tr) + " "
                + tr("Pick it in the model list and press Analyze: every view shows the fine-tuned encoder, and the "
                     "Task tab what it predicts."))
    if p.state == "cancelled":
        how = tr(STOPPED_BY.get(p.stopped_by, "Cancelled"))
        if p.model is None:
            return f"{how}: {what}. {plain(said(p.message, tr))}"
        limit = (" " + tr("({minutes} minutes, whoever runs the server sets it)", minutes=f"{job.limit_s / 60:g}")
                 if p.stopped_by == "limit" and job.limit_s else "")
        return tr("{how}: {what}; the best epoch so far (held-out {score}) **joined the model list**{replaced}.",
                  how=how + limit, what=what, score=_score(p.best, tr), replaced=_replaced_text(p.replaced, tr))
    before = " " + tr("Before training: held-out {score}.", score=_score(p.before, tr)) if p.before else ""
    if p.message:
        return tr("Training {what}: {message}", what=what, message=plain(said(p.message, tr))) + before
    step = p.steps[-1] - p.run * p.run_steps if p.steps else 0
    epoch = step / p.steps_per_epoch if p.steps_per_epoch else 0.0
    last = (tr("; after epoch {epoch}: held-out {score}", epoch=p.epochs[-1]["epoch"],
               score=_score(p.epochs[-1]["eval"], tr)) if p.epochs else "")
    run = (tr("run {n} of {runs} (seed {seed}), ", n=p.run + 1, runs=len(job.seeds), seed=job.seeds[p.run])
           if len(job.seeds) > 1 else "")
    return tr("Training {what}: **{done}**{left} · {run}epoch {epoch} of {epochs}, step {step} of {steps}, loss "
              "{loss}{last} · {seconds} s.", what=what, done=_done_text(p, tr), left=_left_text(p, tr), run=run,
              epoch=f"{epoch:.2f}", epochs=job.epochs, step=step, steps=p.run_steps or p.total,
              loss=f"{p.losses[-1] if p.losses else float('nan'):.3f}", last=last,
              seconds=f"{p.seconds:.0f}") + before


def _done_text(p: Progress, tr: Translator = english) -> str:
    return tr("{percent}% done", percent=f"{100 * p.steps[-1] / p.total:.0f}" if p.steps and p.total else "0")


def _left_text(p: Progress, tr: Translator = english) -> str:
    """', about 2 min left' from the pace since the first step (reading and scoring before it are not steps; the
    evaluations after each epoch are, once one has passed), or '' until two steps are done."""
    done = p.steps[-1] if p.steps else 0
    if p.first_step is None or done < 2 or not p.total:
        return ""
    left = (p.seconds - p.first_step) / (done - 1) * max(p.total - done, 0)
    if left < 90:
        return tr(", about {seconds} s left", seconds=f"{left:.0f}")
    return tr(", about {minutes} min left", minutes=f"{left / 60:.0f}")


def _replaced_text(replaced: str | None, tr: Translator = english) -> str:
    if not replaced:
        return ""
    return tr(", in place of **{name}**, the oldest of the {most} models fine-tuned here that the server keeps",
              name=plain(replaced), most=MAX_TRAINED)


def _seeds_text(seeds: dict | None, tr: Translator = english) -> str:
    """' Over 3 seeds: accuracy 0.801 ± 0.012 ...' (a space first), or ''."""
    if not seeds or len(seeds["runs"]) < 2:
        return ""
    each = ", ".join(f"{r['score']:.3f}" for r in seeds["runs"])
    return " " + tr("Over {n} seeds, held-out {metric} {mean} ± {std} (mean ± standard deviation; each: {each}): one "
                    "seed is one draw, and this model is the best of them (seed {kept}).", n=len(seeds["runs"]),
                    metric=tr(seeds["metric"].replace("_", " ")), mean=f"{seeds['mean']:.3f}",
                    std=f"{seeds['std']:.3f}", each=each, kept=seeds["kept"])


def _unseen_text(unseen: dict | None, tr: Translator = english) -> str:
    if not unseen or not unseen.get("count"):
        return ""
    names = ", ".join(plain(str(label)) for label in list(unseen["labels"])[:8])
    return " " + tr("{count} of {of} held-out {unit} carry a label the training data never shows ({names}): the model "
                    "cannot predict them, and the score counts them as wrong.", count=unseen["count"],
                    of=unseen["of"], unit=tr(unseen["unit"]), names=names)


def epochs_frame(p: Progress, tr: Translator = english) -> pd.DataFrame:
    """One row per evaluation: before training (once known), then each epoch."""
    rows = []
    for label, train_loss, ev in ([(tr("before training"), None, p.before)] if p.before else []) + [
            (tr("seed {seed}, {epoch}", seed=r["seed"], epoch=f"{r['epoch']:g}") if "seed" in r
             else f"{r['epoch']:g}", r["train_loss"], r["eval"]) for r in p.epochs]:
        row = {tr("epoch"): label, tr("train loss"): "" if train_loss is None else f"{train_loss:.4f}",
               tr("held-out loss"): f"{ev['loss']:.4f}" if "loss" in ev else ""}
        row.update({name: f"{ev[key]:.4f}" for key, name in (
            ("accuracy", tr("held-out accuracy")), ("f1", tr("held-out F1")), ("exact_match", tr("exact match")))
            if key in ev})
        rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else [tr("epoch"), tr("train loss"), tr("held-out loss"),
                                                         tr("held-out accuracy")])


def classes_frame(p: Progress, tr: Translator = english) -> pd.DataFrame | None:
    """Per-class held-out precision and recall of the kept epoch (a sentence classifier's), or None."""
    per_class = (p.best or {}).get("per_class")
    if not per_class:
        return None

    def share(value):
        return tr("n/a") if value is None else f"{value:.3f}"  # never predicted, or never seen: no such rate

    return pd.DataFrame([{tr("class"): str(name), tr("precision"): share(s["precision"]),
                          tr("recall"): share(s["recall"]), tr("examples"): str(s["support"])}
                         for name, s in per_class.items()])


def confusion(p: Progress, tr: Translator = english):
    """The kept epoch's held-out confusion matrix (a sentence classifier's), or None."""
    matrix = (p.best or {}).get("confusion")
    if not matrix:
        return None
    return confusion_matrix_figure(matrix["matrix"], [str(label) for label in matrix["labels"]],
                                   title=tr("Held-out: gold × predicted"), tr=tr)


def curve(p: Progress, tr: Translator = english):
    if not isinstance(p.job, Job) or not p.steps:
        return None
    # the whole run's axis while it trains (the curve grows from the left); once stopped, the steps it made
    return loss_curve_figure(p.steps, p.losses, p.steps_per_epoch, total=(p.total or None) if p.running else None,
                             tr=tr)


# The loss curve and the confusion matrix take their box's width when drawn (autosize), but plotly keeps that width
# when the window narrows (a phone turned, a resized window): the curve's right edge and legend were cut. Redrawn at
# the box's width on every resize; the tables' cells wrap at words and shrink on a phone (styles/app.css).
FIT_PLOTS_JS = """() => {
  if (window.bvFitFinetune) return;
  window.bvFitFinetune = true;
  let pending = false;
  window.addEventListener("resize", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      document.querySelectorAll("#finetune-curve .js-plotly-plot, #finetune-confusion .js-plotly-plot")
        .forEach((plot) => plot.isConnected && window.Plotly && window.Plotly.Plots.resize(plot));
    });
  });
}"""


# --- the tab -------------------------------------------------------------------------------------------------------
class FineTuneTab:
    """Builds the tab's components in the current gr.Tab; `wire` connects them (nothing, when training is off).
    `page.training` says whether the app may train, and on what; `lane`: the training lane (a new one by default)."""
    id, title = "finetune-tab", "Fine-tune"

    def __init__(self, page: TabPage, lane: TrainingLane | None = None):
        self.page = page
        self.settings = settings = page.training
        self.lane = lane or page.training_lane  # shared with the Pretrain tab
        # models trained here and still offered, oldest first: name -> folder (those an earlier run of the server
        # trained too, which load_models offers newest first)
        earlier = [(name, e.folder) for name, e in page.models.explorers.items()
                   if e.folder is not None and e.folder.resolve().parent == training_root().resolve()]
        self.trained = TrainedModels(page.models, "{} fine-tuned {}", lambda: MAX_TRAINED, dict(reversed(earlier)))
        self._pickers: list[gr.Dropdown] = []
        self._drawn: tuple | None = None  # ((progress version, language), figure, tables...)
        self.pace = PollPace(lambda: MIN_POLL_S)
        self.refusals = Refusals()  # why each page's last start or try was refused
        if not settings.enabled:
            self.off = gr.Markdown(settings.why_off, elem_id="finetune-off")
            return
        self.choices = data_choices(settings.data_files)
        names = page.models.names
        with gr.Row(equal_height=True, elem_id="finetune-controls"):
            # the operator's own file first when there is one: that is why they named it
            first = list(self.choices)[len(RECIPES)] if settings.data_files else next(iter(self.choices))
            self.data = gr.Dropdown([(c.label, k) for k, c in self.choices.items()], value=first,
                                    label="Data", scale=4, min_width=240, elem_id="finetune-data")
            self.base = gr.Dropdown(names, value=_default_base(page), label="Start from", scale=2, min_width=180,
                                    elem_id="finetune-base")
            self.epochs = gr.Dropdown(list(EPOCHS), value=1, label="Epochs", scale=1, min_width=90,
                                      elem_id="finetune-epochs")
            self.rate = gr.Dropdown(list(LEARNING_RATES), value=self.suggest_rate(first), label="Learning rate",
                                    scale=1, min_width=120, elem_id="finetune-rate")
            self.repeat = gr.Checkbox(False, label=f"Repeat {len(REPEAT_SEEDS)} times (seeds "
                                      f"{', '.join(map(str, REPEAT_SEEDS))}: one seed is one draw)", scale=1,
                                      min_width=150, elem_id="finetune-repeat")
            self.start_button = gr.Button("Start", variant="primary", scale=1, min_width=90, elem_id="finetune-start")
            self.cancel_button = gr.Button("Cancel", scale=1, min_width=90, interactive=False,
                                           elem_id="finetune-cancel")
        self.status = gr.Markdown(status_text(Progress()), elem_id="finetune-status")
        with gr.Row(elem_id="finetune-results"):
            self.curve = gr.Plot(label="Training loss", scale=5, elem_id="finetune-curve")
            self.table = gr.Dataframe(epochs_frame(Progress()), label="Held-out score after each epoch",
                                      interactive=False, datatype="str", scale=4, wrap=True,
                                      elem_id="finetune-epochs-table")
        with gr.Row(elem_id="finetune-classes"):
            self.classes = gr.Dataframe(None, label="Held-out precision and recall per class", interactive=False,
                                        datatype="str", scale=4, wrap=True, visible=False,
                                        elem_id="finetune-classes-table")
            self.matrix = gr.Plot(label="Confusion matrix", scale=5, visible=False, elem_id="finetune-confusion")
        with gr.Row(equal_height=True, elem_id="finetune-try"):
            self.try_text = gr.Textbox(label="Try your own sentence on the new model", scale=4, min_width=200,
                                       interactive=False, placeholder="Once a model has joined the list",
                                       elem_id="finetune-try-text")
            self.try_button = gr.Button("Predict", scale=1, min_width=90, interactive=False,
                                        elem_id="finetune-try-button")
        self.try_out = gr.Markdown("", elem_id="finetune-try-out")
        self.timer = gr.Timer(POLL_S, active=False)
        self.seen = gr.State((len(names), False))  # what this page shows: (models in its lists, running)

    # handlers ----------------------------------------------------------------------------------------------------
    def start(self, data, base, epochs, rate, repeat=False, request: gr.Request = None):
        """Start a training in the lane. A refusal is an error without a toast (gradio shows none for these quiet
        events, only a hidden "Error"); the page says it in the status line (`start_refused`)."""
        try:
            return self._start(data, base, epochs, rate, repeat, request)
        except gr.Error as err:
            raise self.refusals.refuse(request, err.message) from None

    def start_refused(self, request: gr.Request = None) -> str:
        """After a refused Start: why, in the status line."""
        tr = tr_of(request)
        return not_started(self.refusals.pop(request, tr("Press Start again.")), tr)

    @user_errors
    def _start(self, data, base, epochs, rate, repeat, request):
        tr = tr_of(request)
        choice = self.choices.get(data) if isinstance(data, str) else None
        if choice is None:
            raise refuse(tr("Choose the data in the list."))
        if epochs not in EPOCHS or rate not in LEARNING_RATES or not isinstance(repeat, bool):
            raise refuse(tr("Choose the epochs ({epochs}) and the learning rate ({rates}) in their lists.",
                            epochs=", ".join(map(str, EPOCHS)), rates=", ".join(LEARNING_RATES)))
        explorer = self.page.models.get(base)  # one of the list's names, or a sentence
        source = explorer.folder
        if source is None:
            raise refuse(tr("{name} was not loaded from a folder, so it cannot be fine-tuned here; pick another "
                            "model.", name=base))
        if choice.source not in RECIPES and not Path(choice.source).is_file():
            raise refuse(tr("{name}, the file named when the server started, is no longer there; whoever runs the "
                            "server can put it back. Pick other data meanwhile.", name=Path(choice.source).name))
        session, address = getattr(request, "session_hash", None), client_address(request)
        name = self.trained.new_name(choice.key)
        output = training_root() / f"{_slug(choice.key)}-{time.strftime('%Y%m%d-%H%M%S')}"
        while output.exists():
            output = output.with_name(output.name + "-1")
        settings = FinetuneSettings(task=choice.task, train=choice.source, output=output, model=os.fspath(source),
                                    epochs=int(epochs), batch_size=BATCH_SIZE, learning_rate=float(rate),
                                    device=str(explorer.device), seeds=REPEAT_SEEDS if repeat else ())
        job = Job(choice, base, name, settings, limit_s=self.settings.max_minutes * 60 or None)
        try:
            self.lane.start(job, self._join, owner=session,
                            charge=(session, address) if self.settings.shared else None)
        except ValueError as err:  # another training runs, or this page's share of the lane is used: the lane's words
            raise refuse(said(err.args[0], tr)) from None
        return (status_text(self.lane.snapshot(), tr), gr.Timer(active=True), gr.Button(interactive=False),
                gr.Button(interactive=True))

    def suggest_rate(self, data) -> str:
        choice = self.choices.get(data) if isinstance(data, str) else None
        return SUGGESTED_RATE.get(choice.task, "5e-5") if choice else gr.skip()

    def cancel(self, request: gr.Request = None) -> str:
        return f"**{said(self.lane.cancel(getattr(request, 'session_hash', None)), tr_of(request))}**"

    def poll(self, seen, request: gr.Request = None):
        """The lane's state for this page; the model lists once a new model has joined; the buttons and the timer
        when the lane starts or stops (Cancel only on the page that started it). Each prop update makes gradio build
        a new component for the session, so only what changed is sent."""
        page = getattr(request, "session_hash", None) or (f"address {client_address(request)}" if request else None)
        shown = self.pace.last(page)
        if shown is None:  # sooner than the page's own timer asks: nothing new
            return (gr.skip(),) * (11 + len(self._pickers))
        p = self.lane.snapshot()
        mine = p.running and self.lane.started_by(getattr(request, "session_hash", None))
        names = self.page.models.names
        models, running = seen if isinstance(seen, tuple) else (None, None)
        # replaced models leave the length as it was: the count of replacements tells the page's lists apart
        lists = ([gr.update(choices=list(names), interactive=len(names) > 1) for _ in self._pickers]
                 if models != len(names) + self.trained.replaced else [gr.skip()] * len(self._pickers))
        switches = ((gr.Button(interactive=not p.running), gr.Button(interactive=mine), gr.Timer(active=p.running))
                    if running != (p.running, mine) else (gr.skip(),) * 3)
        if shown == p.version:
            drawn = (gr.skip(),) * 7
        else:
            lang = language_of(request)
            figure, table, classes, matrix = self._drawing(p, lang)
            trying = self._tried_model(p) is not None
            drawn = (status_text(p, translator(lang)), figure, table,
                     gr.update(value=classes, visible=classes is not None),
                     gr.update(value=matrix, visible=matrix is not None), gr.update(interactive=trying),
                     gr.update(interactive=trying))
        self.pace.sent(page, p.version)
        return (*drawn, *switches, (len(names) + self.trained.replaced, (p.running, mine)), *lists)

    def _drawing(self, p: Progress, lang: str):
        """The loss figure, the epochs' table, the per-class table and the confusion matrix of progress version
        `p.version`, built once for every page in a language."""
        drawn = self._drawn
        if drawn is None or drawn[0] != (p.version, lang):
            tr = translator(lang)
            drawn = self._drawn = ((p.version, lang), curve(p, tr), epochs_frame(p, tr), classes_frame(p, tr),
                                   confusion(p, tr))
        return drawn[1:]

    def _tried_model(self, p: Progress) -> str | None:
        """The model the try box asks: the lane's latest, while the lists still offer it."""
        return (p.model if isinstance(p.job, Job) and p.model is not None and p.model in self.page.models.names
                else None)

    # the try box -------------------------------------------------------------------------------------------------
    def try_sentence(self, text, request: gr.Request = None) -> str:
        """The latest fine-tuned model's answer to `text`, as Markdown. A refusal (no model yet, an empty or too long
        sentence) is an error without a toast; the page says it in place (`try_refused`)."""
        try:
            return self._try(text, tr_of(request))
        except gr.Error as err:
            raise self.refusals.refuse(request, err.message) from None
        except ValueError as err:  # the explorer's own limits (too many tokens): the visitor's input, in its words
            raise self.refusals.refuse(request, str(err).strip("'\"")) from None

    def _try(self, text, tr: Translator) -> str:
        from .task import task_view

        name = self._tried_model(self.lane.snapshot())
        if name is None:
            raise refuse(tr("No model has been fine-tuned here yet: press Start, and try a sentence once it has "
                            "joined the model list."))
        text = text_value(text, "The sentence")  # the library's sentence, in English
        if not text.strip():
            raise refuse(tr("Type a sentence first, then press Predict."))
        explorer = self.page.models.get(name)
        message, _ = task_view(explorer, explorer.run(text), tr=tr)
        return message

    def try_refused(self, request: gr.Request = None) -> str:
        """After a refused try: why, in one sentence where the answer goes."""
        return self.refusals.pop(request, tr_of(request)("The sentence was not predicted."))

    def _join(self, job: Job, folder: Path) -> tuple[str, str | None]:
        """Load the trained folder as the other models were loaded and offer it in every model list."""
        base = self.page.models.get(job.base)
        return self.trained.offer(job.name, folder, load(folder, device=base.device, max_tokens=base.max_tokens,
                                                         name=job.name, cache_mb=self.settings.cache_mb,
                                                         cache_dtype=base.cache_dtype))

    def wire(self) -> None:
        """The buttons, the timer and the tab's opening; a new model joins every model list of the page
        (`page.model_pickers`: the input's, Compare's) and this tab's own."""
        if not self.settings.enabled:
            return
        self._pickers = self.trained.pickers = [*self.page.model_pickers, self.base]
        outputs = self._poll_outputs()
        quiet = dict(queue=False, show_progress="hidden")
        started = self.start_button.click(self.start, [self.data, self.base, self.epochs, self.rate, self.repeat],
                                          [self.status, self.timer, self.start_button, self.cancel_button],
                                          **api("finetune_start"), **quiet)
        started.failure(self.start_refused, None, [self.status], **api("finetune_start_refused", False), queue=False)
        self.cancel_button.click(self.cancel, None, [self.status], **api("finetune_cancel"), **quiet)
        self.data.input(self.suggest_rate, [self.data], [self.rate], **api("finetune_rate", False), **quiet)
        self.timer.tick(self.poll, [self.seen], outputs, **api("finetune_progress"), **quiet)
        self.page.items[self.id].select(self.poll, [self.seen], outputs, **api("finetune_progress", False), **quiet)
        # a refusal is said in place, as the Masked LM tab's are: no red "Error" over the answer, no toast
        tried = gr.on([self.try_button.click, self.try_text.submit], self.try_sentence, [self.try_text],
                      [self.try_out], **self.page.api("finetune_try"), show_progress="hidden")
        tried.failure(self.try_refused, None, [self.try_out], **api("finetune_try_refused", False), queue=False)

    def _poll_outputs(self) -> list:
        return [self.status, self.curve, self.table, self.classes, self.matrix, self.try_text, self.try_button,
                self.start_button, self.cancel_button, self.timer, self.seen, *self._pickers]

    def after_analysis(self, event: Gate, public: bool) -> None:
        pass  # a new input changes nothing here: the tab follows the training lane, not the analysis

    def on_load(self, demo: gr.Blocks) -> None:
        """A page opened after a training finished offers its model too."""
        if self.settings.enabled:
            demo.load(self.poll, [self.seen], self._poll_outputs(),
                      **api("finetune_progress_load", False), queue=False, show_progress="hidden")
            demo.load(None, js=FIT_PLOTS_JS)


def _default_base(page: TabPage) -> str:
    from ...catalog import default_model_name

    names = page.models.names
    untrained = [n for n in names if page.models.explorers[n].task is None]
    default = default_model_name()
    return default if default in untrained else (untrained or names)[0]


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-")[:60] or "model"
