"""Beyond attention's contrastive mode (contrast.py): why the model answers A and not B at the analyzed input's [MASK],
integrated gradients and blank-out of logit(A) - logit(B); then the faithfulness curves (curves.py) of that metric
for every way of scoring the tokens, attention to blank-out, so that a student sees which explanation predicts the
model on this input."""

from __future__ import annotations

import time

import gradio as gr

from ... import figures
from ...attribution import PASSES_PER_STEP
from ...i18n import Translator, english
from ..common import MAX_CHARS, percent, plain, refuse, text_value, tr_of, user_errors

INTRO = ("**Why A and not B?** Integrated gradients and blank-out of the *difference* of two answers' logits at the "
         "[MASK] (empty boxes: the model's top two): a word scores high when it favours A over B, not any answer. "
         "Below, the **faithfulness curves**: the same difference as the words are removed in each method's order "
         "(deletion) or put back (insertion); the method whose curve falls (rises) first explains the model best here.")
REMOVALS = [("[MASK]", "mask"), ("[PAD]", "pad")]


class ContrastSection:
    """Built inside the Beyond attention tab, after its context mixing (`beyond.BeyondTab` calls it)."""

    def __init__(self, beyond):
        self.beyond, self.page = beyond, beyond.page
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            self.answer = gr.Textbox(label="Answer A (empty: the top prediction)", max_length=MAX_CHARS, scale=2,
                                     elem_id="contrast-answer")
            self.other = gr.Textbox(label="Answer B (empty: the second)", max_length=MAX_CHARS, scale=2,
                                    elem_id="contrast-other")
            self.removal = gr.Radio(REMOVALS, value="mask", label="A removed word becomes", scale=1,
                                    elem_id="contrast-removal")
            self.button = gr.Button("Why A and not B?", variant="primary", scale=1, elem_id="contrast")
        self.message = gr.Markdown(elem_id="contrast-message")
        self.chart = gr.Plot(label="Why A and not B", elem_id="contrast-chart")
        # no label: gradio's sat over the figure's own title on a phone
        self.curves = gr.Plot(label="Faithfulness curves", show_label=False, elem_id="faithfulness-curves")

    def contrast(self, session, answer, other, removal, steps, progress=gr.Progress(),  # noqa: B008 (gradio's way)
                 request: gr.Request = None):
        """A refusal is one sentence where the message goes, the figures cleared (never a red "Error" badge)."""
        try:
            return self._contrast(session, answer, other, removal, steps, progress, tr_of(request))
        except gr.Error as err:
            return f"<span class='bv-stale'>{plain(str(err.message))}</span>", None, None

    @user_errors
    def _contrast(self, session, answer, other, removal, steps, tell, tr: Translator = english):
        explorer, run = self.page.models.run_of(session)
        if not explorer.has_mlm_head:
            raise refuse(tr("This model has no masked-LM head, so there are no answers at a [MASK] to compare; load "
                            "a model with one (the default minilm-l6-mlm-nsp-en)."))
        if explorer.tokenizer.mask_token_id not in run.encoding.ids:
            raise refuse(tr("Put [MASK] where the two answers go and analyze the input again, e.g. “The keys to the "
                            "cabinet [MASK] on the table.”"))
        answer, other = text_value(answer, "Answer A").strip(), text_value(other, "Answer B").strip()
        if not answer or not other:
            top = [token for token, _ in explorer.fill_mask(run.encoding, top_k=3)[0]]
            answer = answer or top[0]
            other = other or next(token for token in top if token != answer)
        removal = removal if removal in dict(REMOVALS).values() else "mask"
        steps = int(steps) if isinstance(steps, (int, float)) and 2 <= steps <= 500 else 50
        start, done = time.perf_counter(), [0.0]
        total = PASSES_PER_STEP * steps + len(run.encoding)

        def report(passes: float) -> None:
            done[0] += passes
            tell(min(done[0] / total, 1.0), desc=tr("Integrated gradients and blank-out"))

        try:
            why = explorer.contrast(run, answer, other, steps=steps, report=report)
        except ValueError as err:  # an answer not in the vocabulary, the same answer twice
            raise refuse(tr("Not explained: {why}.", why=tr.message(str(err)))) from None
        tell(1.0, desc=tr("Faithfulness curves"))
        curves = explorer.faithfulness_curves(run, why.target, removal=removal, known=why.scores())
        seconds = time.perf_counter() - start
        best = curves.aopc["deletion"].idxmax()
        target, ig = why.target, why.integrated_gradients
        said = [f"**{plain(target.describe())}** = {why.value:+.2f}: " + tr(
            "between the two, the model gives **{token}** {share}. Integrated gradients ({steps} steps) add up to the "
            "change from a blank input within {delta} of it. Most faithful here by deletion: **{method}** (AOPC "
            "{aopc}). {seconds} s.", token=plain(target.token), share=percent(why.preference), steps=steps,
            delta=f"{ig.relative_delta:.1e}", method=plain(tr(best)), aopc=f"{curves.aopc.loc[best, 'deletion']:+.2f}",
            seconds=f"{seconds:.1f}")]
        said += [tr("{method}: not drawn, {why}.", method=plain(tr(name).capitalize()), why=plain(why_not))
                 for name, why_not in curves.skipped.items()]
        chart = figures.attribution_figure(why.tokens, why.scores(), ig.fixed, per_line=12, tr=tr,
                                           title=figures.contrast_title(target.token, target.other, tr))
        drawn = figures.faithfulness_curves_figure(curves.deletion, curves.insertion, curves.aopc,
                                                   metric=f"logit({target.token!r}) - logit({target.other!r})",
                                                   removal=f"[{removal.upper()}]", tr=tr)
        return " ".join(said), chart, drawn

    def wire(self) -> None:
        self.button.click(self.contrast, [self.page.session, self.answer, self.other, self.removal, self.beyond.steps],
                          [self.message, self.chart, self.curves], **self.page.api("contrast"))


__all__ = ["ContrastSection"]
