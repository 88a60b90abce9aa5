"""The Embeddings tab: token + segment + position parts of every token, the learned position table (similarity and
a PCA path) and the two segment vectors."""

from __future__ import annotations

import gradio as gr

from ...i18n import Translator, english
from ..common import figure_reading, index_value, tr_of, user_errors
from .base import FIT_ON_A_PHONE, Gate, TabPage, fit_figures_on_a_phone

INTRO = ("Before its first layer, the model turns each token into a vector: the sum of a vector for the word piece, "
         "one for its sentence (A or B) and one for its place in the input. These figures show those parts, and what "
         "the model learned about places.")
READINGS = {
    "parts": ("How each token's starting vector is made: how long each of its three parts is (top) and how much of "
              "the sum each part makes (bottom).",
              "Lengths are L2 norms. A part's share of the sum is part·sum / |sum|², so the three shares add up to 1 "
              "(a part that points against the sum has a negative share). The diamonds, on the right-hand axis, are "
              "the length after LayerNorm, which the first layer reads."),
    "segments": ("The two vectors that mark a token of sentence A or of sentence B, dimension by dimension; the last "
                 "row is their difference, all the model has to tell the two sentences apart.",
                 "|A| is a vector's length (L2 norm); cos(A, B) is the cosine of the angle between them (1: the same "
                 "direction)."),
    "similarity": ("How alike the model's vectors for two places in the input are: the darker the red, the more "
                   "alike (blue: pointing apart); neighbouring places are usually the most alike.",
                   "Cosine similarity of the learned position vectors 0 to N − 1; the colours span this map's own "
                   "range of values, not −1 to 1."),
    "path": ("The position vectors drawn flat, one dot per place, joined in order: a smooth path means that "
             "neighbouring places get similar vectors.",
             "The vectors are scaled to length 1 and projected on their two main directions (PCA); each axis says how "
             "much of the vectors' spread it keeps."),
}


def family_note(explorer, tr: Translator = english) -> str:
    """What this family's embeddings lack, in words (empty for BERT)."""
    lines = [tr(line) for line in explorer.family.lacks if "segment" in line or "position" in line or "embed" in line]
    return "\n".join(f"**{line}**" if i == 0 else line for i, line in enumerate(lines))


class EmbeddingsTab:
    id, title = "embeddings-tab", "Embeddings"

    def __init__(self, page: TabPage):
        self.page = page
        fits = [FIT_ON_A_PHONE]  # figures that fit their box on a phone (base.py)
        max_positions = page.models.first.config.max_tokens
        gr.Markdown(INTRO, elem_id="embeddings-intro")
        self.note = gr.Markdown(family_note(page.models.first), elem_id="embeddings-family-note")
        figure_reading("embedding-parts-reading", *READINGS["parts"])
        self.parts_plot = gr.Plot(label="Token + segment + position", elem_id="embedding-parts", elem_classes=fits)
        figure_reading("segment-embeddings-reading", *READINGS["segments"])
        self.segment_plot = gr.Plot(label="Segment embeddings", elem_id="segment-embeddings", elem_classes=fits)
        self.positions = gr.Slider(2, max_positions, value=min(128, max_positions), step=1,
                                   label="Positions to compare", elem_id="positions")
        # one below the other: these figures have a fixed width that half a row would crop
        figure_reading("position-similarity-reading", *READINGS["similarity"])
        self.similarity_plot = gr.Plot(label="Position similarity", elem_id="position-similarity", elem_classes=fits)
        figure_reading("position-path-reading", *READINGS["path"])
        self.path_plot = gr.Plot(label="Position path", elem_id="position-path", elem_classes=fits)
        self.outputs = [self.parts_plot, self.segment_plot, self.similarity_plot, self.path_plot]

    @user_errors
    def draw(self, session, positions, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        plot = run.plot.speaking(tr_of(request))
        segments = plot.segment_comparison() if explorer.config.type_vocab_size >= 2 else None
        if not explorer.config.position_biased_input:  # DeBERTa v3: no table to compare (the note says why)
            return plot.embedding_parts(), segments, None, None
        n = max(index_value(positions, len(run.position_table()), "Positions") + 1, 2)
        return plot.embedding_parts(), segments, plot.position_similarity(n), plot.position_path(n)

    @user_errors
    def note_of(self, session, request: gr.Request = None):
        return family_note(self.page.models.run_of(session)[0], tr_of(request))

    def on_load(self, demo: gr.Blocks) -> None:
        fit_figures_on_a_phone(demo)

    def wire(self) -> None:
        self.positions.release(self.draw, [self.page.session, self.positions], self.outputs,
                               **self.page.api("draw", False))

    def after_analysis(self, event: Gate, public: bool) -> None:
        (event.then(self.note_of, [self.page.session], [self.note], **self.page.api("embeddings_note", False))
         .then(self.draw, [self.page.session, self.positions], self.outputs,
               **self.page.api("embeddings", public)))
