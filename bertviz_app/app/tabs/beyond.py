"""The "Beyond attention" tab: what one prediction of the analyzed input really depends on. Integrated gradients
and blank-out color the tokens; the faithfulness chart says how well attention, rollout and value-weighted attention
rank the same tokens; silencing each head in turn shows which heads the prediction needs (pick them in the attention
views' overview to silence them together)."""

from __future__ import annotations

import time

import gradio as gr
import pandas as pd

from ... import figures
from ...figures import escape_label
from ...ablation import ablation_passes
from ...i18n import Translator, english
from ...attribution import PASSES_PER_STEP, blank_out_passes, faithfulness_passes, seconds_per_pass
from ...run import Run
from ...spare_cores import workers_now
from ..common import percent, plain, refuse, text_value, tr_of, user_errors
from .base import FIT_ON_A_PHONE, Gate, TabPage, fit_figures_on_a_phone
from .beyond_contrast import ContrastSection
from .beyond_mixing import MixingSection

INTRO = ("**Attention is not explanation**, a careful reader objects: a head may look at a word without using it. "
         "Here one prediction of the analyzed input is explained by what it *depends on*: integrated gradients (start "
         "from an input with every word blanked, bring the words back little by little, and give each word its share "
         "of how the prediction changes) and blank-out (blank one word at a time and see how far the prediction "
         "moves). The faithfulness chart then asks whether attention ranks the words the same way, and silencing one "
         "head at a time shows which heads the prediction needs. In every chart, blue raises the prediction and red "
         "lowers it.")
NO_TARGET = ("Nothing to explain in this input yet: put **[MASK]** in a sentence (e.g. *The keys to the cabinet "
             "[MASK] on the table.*) and analyze it, or give a sentence B for next-sentence prediction.")


def targets_of(explorer, run: Run, tr: Translator = english) -> list[tuple[str, str]]:
    """The predictions of the analyzed input that can be explained, as (label, value) choices."""
    choices = []
    if explorer.has_mlm_head:
        masks = [i for i, t in enumerate(run.encoding.ids) if t == explorer.tokenizer.mask_token_id]
        choices += [(tr("[MASK] {n} (token {position})", n=k + 1, position=i), f"mask:{k}")
                    for k, i in enumerate(masks)]
    if explorer.has_nsp_head and run.encoding.is_pair:
        choices.append((tr("IsNext: does B follow A?"), "is_next"))
    return choices


# Blank-out's passes at most: a longer input is blanked in runs of whole words. One pass per word piece was 60% of an
# explanation at 256 tokens (253 of ~420 passes); with 128 the whole fits 15 s on 2 idle cores (docs/speed.md).
EXPLAIN_BLANK_OUT_PASSES = 128


def explanation_passes(explorer, run: Run, steps: int) -> float:
    """An explanation's work in forward passes of the input: integrated gradients, blank-out, every head silenced."""
    return (faithfulness_passes(explorer.tokenizer, run.encoding, steps, EXPLAIN_BLANK_OUT_PASSES)
            + ablation_passes(explorer.config))


def blank_out_plan(explorer, run: Run, tr: Translator = english) -> str:
    """What blank-out blanks at a time for this input, in words ("" when one word piece at a time)."""
    pieces = blank_out_passes(explorer.tokenizer, run.encoding)
    runs = blank_out_passes(explorer.tokenizer, run.encoding, EXPLAIN_BLANK_OUT_PASSES)
    if runs == pieces:
        return ""
    return tr("the input is long, so blank-out blanks runs of whole words, about {size} word pieces at a time ({runs} "
              "runs for {pieces} word pieces; each piece shows its run's score)", size=f"{pieces / runs:.1f}",
              runs=runs, pieces=pieces)


# seconds per pass and token of the last explanation on this server, by model: what the next one forecasts from
RATES: dict[str, float] = {}


def explanation_forecast(explorer, run: Run, steps: int, tr: Translator = english) -> str:
    """What an explanation of this input will cost, said before it starts when it takes long: the passes it needs
    times a pass of this input, at the rate of the last explanation with this model (or, before any, one batched
    pass timed now)."""
    tokens = len(run.encoding)
    rate = RATES.get(explorer.name)
    # before any: one pass timed now, shared with a helper as far as the other cores are idle (spare_cores)
    per_pass = rate * tokens if rate else seconds_per_pass(explorer.model, run.encoding) / workers_now()
    seconds = explanation_passes(explorer, run, steps) * per_pass
    if seconds < LONG_S:
        return ""
    runs = blank_out_passes(explorer.tokenizer, run.encoding, EXPLAIN_BLANK_OUT_PASSES)
    heads = explorer.config.num_hidden_layers * explorer.config.num_attention_heads
    plan = blank_out_plan(explorer, run, tr)
    blanked = (tr("{runs} runs of words blanked in turn", runs=runs) if plan
               else tr("each of the {runs} word pieces blanked in turn", runs=runs))
    return (" " + tr("At {n} tokens this takes long: about **{seconds} s** here (integrated gradients' {steps} steps, "
                     "{blanked}, {heads} heads silenced); fewer integration steps make it quicker.",
                     n=len(run.encoding), seconds=f"{seconds:.0f}", steps=steps, blanked=blanked, heads=heads)
            + (f" {plan[0].upper()}{plan[1:]}." if plan else ""))


LONG_S = 10.0  # an explanation expected to take longer is announced before it starts


class Progress:
    """An explanation's progress told to `tell(fraction, desc)` as its passes are done, with the time left estimated
    from the rate so far (never from a previous input's run)."""

    def __init__(self, total: float, steps: int, faithfulness: float, tell, blanked: str = "one word piece",
                 tr: Translator = english):
        self.total, self.tell, self.done, self.start, self.tr = total, tell, 0.0, time.perf_counter(), tr
        self.stages = ((PASSES_PER_STEP * steps, tr("Integrated gradients ({steps} steps)", steps=steps)),
                       (faithfulness, tr("Blank-out ({blanked} at a time)", blanked=tr(blanked))),
                       (total, tr("Silencing each head")))

    def __call__(self, passes: float) -> None:
        self.done += passes
        stage = next((name for end, name in self.stages if self.done < end), self.stages[-1][1])
        left = (time.perf_counter() - self.start) * max(self.total - self.done, 0.0) / max(self.done, 1e-9)
        self.tell(min(self.done / self.total, 1.0), desc=self.tr("{stage}: about {seconds} s left", stage=stage,
                                                                   seconds=f"{left:.0f}"))


def _excerpt(run: Run, limit: int = 60) -> str:
    """The explained input as a visitor typed it, shortened."""
    enc = run.encoding
    text = enc.text if not enc.is_pair else f"{enc.text} | {enc.text_pair}"
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def explain_view(explorer, run: Run, target: str, token: str, steps: int, tell=None, tr: Translator = english):
    """(message, attribution figure, faithfulness table, faithfulness figure, head effects figure). tell: a
    gr.Progress (fraction, desc=...) kept informed as the passes go."""
    if target == "is_next":
        kind, mask_index = "is_next", 0
    elif isinstance(target, str) and target.startswith("mask:") and target[5:].isdigit():
        kind, mask_index = "mask", int(target[5:])
    else:
        raise refuse(tr("Choose the prediction to explain."))
    enc = run.encoding
    token = token.strip() or None
    report, start = None, time.perf_counter()
    plan = blank_out_plan(explorer, run, tr)
    if tell is not None:
        report = Progress(explanation_passes(explorer, run, steps), steps,
                          faithfulness_passes(explorer.tokenizer, enc, steps, EXPLAIN_BLANK_OUT_PASSES), tell,
                          "a run of words" if plan else "one word piece", tr)
    faith = explorer.faithfulness(enc.text, enc.text_pair, mask_index, token, steps, target=kind, report=report,
                                  max_passes=EXPLAIN_BLANK_OUT_PASSES)
    ig, blank = faith.attribution, faith.blank_out
    ranking = explorer.rank_heads(enc.text, enc.text_pair, mask_index, ig.target.token_id, target=kind,
                                  report=report)
    RATES[explorer.name] = (time.perf_counter() - start) / (explanation_passes(explorer, run, steps) * len(enc))
    said = plain_target(ig.target, tr)
    message = (tr("Explaining how sure {name} is of **{target}** in “{text}”: **{share}**.", name=plain(explorer.name),
                  target=plain(said), text=plain(_excerpt(run)), share=percent(ig.target.probability(ig.f_input)))
               + f" {_measured(ig.target, tr)}\n\n"
               + tr("With every word blanked, it would say {share}. Integrated gradients shares the difference "
                    "between the two out over the words, in {steps} steps (the word chart colours each word by its "
                    "share); the shares add up to the whole difference within {delta} of it, so the steps were "
                    "enough (the convergence check).", share=percent(ig.target.probability(ig.f_baseline)),
                    steps=ig.steps, delta=f"{ig.relative_delta:.1e}")
               + (f" {plan[0].upper()}{plan[1:]}." if plan else "") + "\n\n"
               f"{faithfulness_reading(faith.table, tr)}\n\n{_top_heads(ranking, tr)}")
    return (message,
            figures.attribution_figure(faith.tokens, {"integrated gradients": ig.scores, "blank-out": blank.scores},
                                       ig.fixed, per_line=12, tr=tr,
                                       title=tr("What {target} depends on", target=escape_label(said))),
            faithfulness_table(faith.table, tr), figures.faithfulness_figure(faith.table, agreement=faith.agreement,
                                                                             tr=tr),
            figures.head_effects_figure(ranking.effects, target=said, tr=tr))


FAITHFULNESS_COLUMNS = ("attention measure", "integrated gradients", "blank-out")


def faithfulness_table(table: pd.DataFrame, tr: Translator = english) -> pd.DataFrame:
    """The faithfulness numbers as the tab's table: one row per attention measure, its names in the visitor's
    language."""
    shown = table.astype(float).round(2).reset_index()
    shown.iloc[:, 0] = [tr(str(name)) for name in shown.iloc[:, 0]]
    shown.columns = [tr(FAITHFULNESS_COLUMNS[0]), *(tr(str(c)) for c in table.columns)]
    return shown


def plain_target(target, tr: Translator = english) -> str:
    """The prediction explained, in a student's words (the tab's titles); `_measured` names the number behind it."""
    if target.kind == "mask":
        return tr("“{token}” at [MASK] {n}", token=target.token, n=target.mask_index + 1)
    return tr("“B follows A”")


def _measured(target, tr: Translator = english) -> str:
    if target.kind == "mask":
        return tr("(Measured as {measure}, the logarithm of that probability: the higher, the surer.)",
                  measure=plain(target.describe()))
    return tr("(Measured as the {measure}: the next-sentence head's score for “B follows A” against “it does not”; "
              "above 0 it says B follows.)", measure=plain(target.describe()))


def faithfulness_reading(table: pd.DataFrame, tr: Translator = english) -> str:
    """What the faithfulness chart's numbers mean for this input, in words: how closely the best attention-based
    ranking of the words follows integrated gradients' ranking."""
    column = table["integrated gradients"].astype(float)
    best, r = column.idxmax(), float(column.max())
    strength = (tr("attention follows closely what the prediction depends on.") if r >= 0.7
                else tr("attention follows only in part what the prediction depends on.") if r >= 0.4
                else tr("attention follows only weakly what the prediction depends on.") if r >= 0.1
                else tr("attention follows not at all what the prediction depends on."))
    return tr("**Faithfulness:** the best of the attention measures here ({measure}) ranks the words the way "
              "integrated gradients does at {r} (Spearman correlation: 1 is the same order, 0 unrelated, −1 the "
              "reverse): {verdict}", measure=plain(tr(str(best))), r=f"{r:+.2f}", verdict=strength)


def _top_heads(ranking, tr: Translator = english) -> str:
    """The three heads whose silencing moves the prediction most, in words that follow the sign: a head without
    which the probability falls supports the prediction; one without which it rises works against it."""
    top = list(ranking.ranking().head(3).itertuples())
    before = percent(ranking.target.probability(ranking.f_input))

    def heads(rows) -> str:
        return ", ".join(f"{int(r.layer)}.{int(r.head)} (→ {percent(r.probability_after)})" for r in rows)

    falls, rises = [r for r in top if r.effect < 0], [r for r in top if r.effect > 0]
    said = []
    if falls:
        said.append(tr("it falls without {heads}, a head that supports it", heads=heads(falls)) if len(falls) == 1
                    else tr("it falls without {heads}, heads that support it", heads=heads(falls)))
    if rises:
        said.append(tr("it rises without {heads}, a head that works against it", heads=heads(rises))
                    if len(rises) == 1 else tr("it rises without {heads}, heads that work against it",
                                               heads=heads(rises)))
    if not said:
        return tr("Silencing any one head leaves it at {share}.", share=before)
    return tr("Silencing the heads one at a time (from {share}; layer.head → the probability without it): {said}. "
              "Pick them in **All heads** of the attention views to silence them together.", share=before,
              said="; ".join(said))


class BeyondTab:
    id, title = "beyond-tab", "Beyond attention"

    def __init__(self, page: TabPage):
        self.page = page
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            # custom values allowed: the choices change with every input, and explain_view checks the value
            self.target = gr.Dropdown([], value=None, label="Prediction to explain", scale=3, allow_custom_value=True,
                                      elem_id="explain-target")
            self.token = gr.Textbox(label="Word to explain (empty: the model's top prediction)", scale=3,
                                    max_length=100, elem_id="explain-token")
            self.steps = gr.Slider(10, 200, value=50, step=10, label="Integration steps", scale=2,
                                   elem_id="explain-steps")
            self.button = gr.Button("Explain", variant="primary", scale=1, elem_id="explain")
        self.message = gr.Markdown(NO_TARGET, elem_id="explain-message")
        # the word chart keeps its width on a phone (a word needs its cell) and scrolls in its box; the others fit it
        self.attribution = gr.Plot(label="What the prediction depends on", elem_id="attribution")
        fits = [FIT_ON_A_PHONE]
        with gr.Row():
            # half the row each: at 1280 px a third hid the blank-out column behind a sideways scroll (the table needs
            # 552 px, the chart 600)
            self.table = gr.Dataframe(interactive=False, scale=1,
                                      label="Do they rank the words alike? (Spearman correlation, 1: the same order)",
                                      elem_id="faithfulness-table")
            self.faithfulness = gr.Plot(label="Faithfulness", scale=1, elem_id="faithfulness", elem_classes=fits)
        self.ranking = gr.Plot(label="Each head's effect when silenced", elem_id="head-effects", elem_classes=fits)
        self.outputs = [self.message, self.attribution, self.table, self.faithfulness, self.ranking]
        self.mixing = MixingSection(self)  # value zeroing and attention flow: beyond_mixing.py
        self.contrast = ContrastSection(self)  # why A and not B, and the faithfulness curves: beyond_contrast.py

    @user_errors
    def choices(self, session, request: gr.Request = None):
        """The new input's predictions to explain; its old results cleared."""
        explorer, run = self.page.models.run_of(session)
        tr = tr_of(request)
        options = targets_of(explorer, run, tr)
        empty = self.empty_table(tr)
        message = (tr("Choose the prediction to explain and press **Explain**.") +
                   explanation_forecast(explorer, run, 50, tr)) if options else tr(NO_TARGET)
        return (gr.update(choices=options, value=options[0][1] if options else None), message, None, empty, None,
                None)

    def explain(self, session, target, token, steps, progress=gr.Progress(),  # noqa: B008 (gradio's way)
                request: gr.Request = None):
        """A refusal (nothing to explain, a word not in the vocabulary) is said alone where the message goes, the
        last figures cleared: a raised error put a red "Error" badge over the sentence and every figure."""
        tr = tr_of(request)
        try:
            return self._explain(session, target, token, steps, progress, tr)
        except gr.Error as err:
            return (f"<span class='bv-stale'>{plain(str(err.message))}</span>", None, self.empty_table(tr), None,
                    None)

    @staticmethod
    def empty_table(tr: Translator = english) -> pd.DataFrame:
        return pd.DataFrame(columns=[tr(name) for name in FAITHFULNESS_COLUMNS])

    @user_errors
    def _explain(self, session, target, token, steps, progress, tr: Translator = english):
        explorer, run = self.page.models.run_of(session)
        if not targets_of(explorer, run):
            raise refuse(tr(NO_TARGET).replace("**", ""))
        steps = int(steps) if isinstance(steps, (int, float)) and 2 <= steps <= 500 else 50
        return explain_view(explorer, run, target, text_value(token, "The word to explain"), steps, progress, tr)

    def on_load(self, demo: gr.Blocks) -> None:
        fit_figures_on_a_phone(demo)

    def wire(self) -> None:
        self.button.click(self.explain, [self.page.session, self.target, self.token, self.steps], self.outputs,
                          **self.page.api("explain"))
        self.mixing.wire()
        self.contrast.wire()

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.choices, [self.page.session], [self.target, *self.outputs],
                   **self.page.api("explain_choices", False))
