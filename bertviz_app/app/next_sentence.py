"""The Next sentence tab: P(B follows A) for the analyzed pair, from the next-sentence head."""

from __future__ import annotations

import gradio as gr

from ..run import Run
from .common import Page, api, plain, user_errors

NO_NSP_HEAD = ("**{name} has no next-sentence head**, so it cannot say whether sentence B follows sentence A: its "
               "checkpoint was saved without the `cls.seq_relationship` weights. A checkpoint from BERT's "
               "pre-training (e.g. `bert-base-uncased`) has them.")


def next_sentence_view(explorer, run: Run) -> tuple[str, dict | None]:
    """(message, {label: probability} for gr.Label or None)."""
    if not explorer.has_nsp_head:
        return NO_NSP_HEAD.format(name=plain(explorer.name)), None
    if not run.encoding.is_pair:
        return ("**A pair is needed:** type a sentence B as well (and press Analyze); the next-sentence head judges "
                "whether B follows A."), None
    p = run.is_next_probability
    return (f"**P(B follows A) = {p:.1%}** according to {plain(explorer.name)}'s next-sentence head "
            f"({'IsNext' if p >= 0.5 else 'NotNext'}).", {"IsNext": p, "NotNext": 1 - p})


class NextSentenceTab:
    def __init__(self, page: Page):
        self.page = page
        self.message = gr.Markdown(elem_id="next-sentence")
        self.label = gr.Label(num_top_classes=2, label="Does B follow A?", elem_id="next-sentence-label")

    @user_errors
    def show(self, session):
        return next_sentence_view(*self.page.models.run_of(session))

    def wire(self) -> None:
        pass  # nothing to change here but the input

    def after_analysis(self, event, public: bool):
        return event.then(self.show, [self.page.session], [self.message, self.label],
                          **api("next_sentence", public))
