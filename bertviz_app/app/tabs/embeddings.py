"""The Embeddings tab: token + segment + position parts of every token, the learned position table (similarity and
a PCA path) and the two segment vectors."""

from __future__ import annotations

import gradio as gr

from ..common import index_value, user_errors
from .base import FIT_ON_A_PHONE, Gate, TabPage, fit_figures_on_a_phone


def family_note(explorer) -> str:
    """What this family's embeddings lack, in words (empty for BERT)."""
    lines = [line for line in explorer.family.lacks if "segment" in line or "position" in line or "embed" in line]
    return "\n".join(f"**{line}**" if i == 0 else line for i, line in enumerate(lines))


class EmbeddingsTab:
    id, title = "embeddings-tab", "Embeddings"

    def __init__(self, page: TabPage):
        self.page = page
        fits = [FIT_ON_A_PHONE]  # figures that fit their box on a phone (base.py)
        max_positions = page.models.first.config.max_tokens
        self.note = gr.Markdown(family_note(page.models.first), elem_id="embeddings-family-note")
        self.parts_plot = gr.Plot(label="Token + segment + position", elem_id="embedding-parts", elem_classes=fits)
        self.segment_plot = gr.Plot(label="Segment embeddings", elem_id="segment-embeddings", elem_classes=fits)
        self.positions = gr.Slider(2, max_positions, value=min(128, max_positions), step=1,
                                   label="Positions to compare", elem_id="positions")
        # one below the other: these figures have a fixed width that half a row would crop
        self.similarity_plot = gr.Plot(label="Position similarity", elem_id="position-similarity", elem_classes=fits)
        self.path_plot = gr.Plot(label="Position path", elem_id="position-path", elem_classes=fits)
        self.outputs = [self.parts_plot, self.segment_plot, self.similarity_plot, self.path_plot]

    @user_errors
    def draw(self, session, positions):
        explorer, run = self.page.models.run_of(session)
        plot = run.plot
        segments = plot.segment_comparison() if explorer.config.type_vocab_size >= 2 else None
        if not explorer.config.position_biased_input:  # DeBERTa v3: no table to compare (the note says why)
            return plot.embedding_parts(), segments, None, None
        n = max(index_value(positions, len(run.position_table()), "Positions") + 1, 2)
        return plot.embedding_parts(), segments, plot.position_similarity(n), plot.position_path(n)

    @user_errors
    def note_of(self, session):
        return family_note(self.page.models.run_of(session)[0])

    def on_load(self, demo: gr.Blocks) -> None:
        fit_figures_on_a_phone(demo)

    def wire(self) -> None:
        self.positions.release(self.draw, [self.page.session, self.positions], self.outputs,
                               **self.page.api("draw", False))

    def after_analysis(self, event: Gate, public: bool) -> None:
        (event.then(self.note_of, [self.page.session], [self.note], **self.page.api("embeddings_note", False))
         .then(self.draw, [self.page.session, self.positions], self.outputs,
               **self.page.api("embeddings", public)))
