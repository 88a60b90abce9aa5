"""The Next sentence tab: P(B follows A) for the analyzed pair, from the next-sentence head."""

from __future__ import annotations

from collections.abc import Sequence

import gradio as gr

from ...i18n import Translator, english
from ...run import Run
from ..common import plain, tr_of, user_errors
from .base import Gate, TabPage

NO_NSP_HEAD = ("**{name} has no next-sentence head.** BERT was also trained to guess whether sentence B really "
               "follows sentence A; the part of the model that makes that guess (the next-sentence head) was left "
               "out when {name} was saved. So it cannot say whether B follows A.{other}")


def next_sentence_view(explorer, run: Run, alternatives: Sequence[str] = (),
                       tr: Translator = english) -> tuple[str, dict | None]:
    """(message, {label: probability} for gr.Label or None); alternatives: models of the page with the head."""
    family = getattr(explorer, "family", None)
    if not explorer.has_nsp_head:
        other = (" " + tr("Pick **{name}** in the model list to see its answer.", name=plain(alternatives[0]))
                 if alternatives else "")
        said = [line for line in (family.lacks if family else ()) if "next-sentence" in line]
        if said:  # a family that never had the head (RoBERTa, DistilBERT, ELECTRA, DeBERTa) says so, not "left out"
            return f"**{tr(said[0])}**{other}", None
        return tr(NO_NSP_HEAD, name=plain(explorer.name), other=other), None
    if family is not None and family.sentence_head == "sentence-order prediction":
        if not run.encoding.is_pair:
            return tr("**A pair is needed:** type a sentence B as well (and press Analyze); ALBERT's sentence-order "
                      "head judges whether A and B are in their original order."), None
        p = run.is_next_probability
        return (tr("**P(A then B is the original order) = {share}** according to {name}'s sentence-order head (ALBERT "
                   "predicts sentence order, not whether B follows A at all: swap the two sentences to see it "
                   "change).", share=f"{p:.1%}", name=plain(explorer.name)),
                {tr("In order"): p, tr("Swapped"): 1 - p})
    if not run.encoding.is_pair:
        return tr("**A pair is needed:** type a sentence B as well (and press Analyze); the next-sentence head judges "
                  "whether B follows A."), None
    p = run.is_next_probability
    # IsNext and NotNext are the head's own names for its two classes, as the papers write them: not translated
    return (tr("**P(B follows A) = {share}** according to {name}'s next-sentence head ({label}).", share=f"{p:.1%}",
               name=plain(explorer.name), label="IsNext" if p >= 0.5 else "NotNext"),
            {"IsNext": p, "NotNext": 1 - p})


class NextSentenceTab:
    id, title = "nsp-tab", "Next sentence"

    def __init__(self, page: TabPage):
        self.page = page
        self.message = gr.Markdown(elem_id="next-sentence")
        self.label = gr.Label(num_top_classes=2, label="Does B follow A?", elem_id="next-sentence-label")

    @user_errors
    def show(self, session, request: gr.Request = None):
        alternatives = [name for name, e in self.page.models.explorers.items() if e.has_nsp_head]
        return next_sentence_view(*self.page.models.run_of(session), alternatives, tr_of(request))

    def wire(self) -> None:
        pass  # nothing to change here but the input

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.show, [self.page.session], [self.message, self.label],
                   **self.page.api("next_sentence", public))
