"""The Hidden states tab: each token's norm layer by layer, how much each layer turns it, token-to-token similarity
at one layer, and a 2-D projection of every token through the layers."""

from __future__ import annotations

import gradio as gr

from ...i18n import Translator, english
from ..common import figure_reading, index_value, tr_of, user_errors
from .base import FIT_ON_A_PHONE, Gate, TabPage, fit_figures_on_a_phone

INTRO = ("Each layer of the model rewrites every token's vector, mixing in what it takes from the other tokens. These "
         "figures follow the vectors through the layers: how long they are, how much each layer changes them, and "
         "how alike the tokens become.")
READINGS = {
    "norms": ("How long each token's vector is after each layer (yellow: longer).",
              "The L2 norm of each token's hidden state; the first row is the embeddings, before any layer."),
    "change": ("How much of each token's direction a layer keeps: 1 means the layer left it pointing the same way, "
               "lower means the layer turned it more.",
               "The cosine between a token's vector before and after the layer; the colours start at this map's "
               "lowest value, not at −1."),
    "similarity": ("How alike the tokens' vectors are at the layer picked above: the darker the red, the more "
                   "alike.",
                   "Cosine similarity between the tokens' hidden states at that layer; the colours span this map's "
                   "own range of values."),
    "projection": ("Each token's path through the layers, drawn flat: dark dots are the embeddings (layer 0) and the "
                   "first layers, yellow the last; "
                   "tokens that end close together are read alike. A word is written where it has room: hover a dot "
                   "for the others.",
                   "The hidden states of every layer, scaled to length 1 and projected on the two main directions "
                   "they share (PCA); each axis says how much of their spread it keeps."),
}


def shared_layers_note(explorer, tr: Translator = english) -> str:
    """ALBERT: layers compared here apply the same weights again (empty for the others)."""
    if not explorer.family.shared_layers:
        return ""
    return next(f"**{tr(line)}**" for line in explorer.family.lacks if "share" in line)


class HiddenTab:
    id, title = "hidden-tab", "Hidden states"

    def __init__(self, page: TabPage):
        self.page = page
        fits = [FIT_ON_A_PHONE]  # figures that fit their box on a phone (base.py)
        layers = page.models.first.config.num_hidden_layers
        gr.Markdown(INTRO, elem_id="hidden-intro")
        self.note = gr.Markdown(shared_layers_note(page.models.first), elem_id="hidden-family-note")
        figure_reading("hidden-norms-reading", *READINGS["norms"])
        self.norms_plot = gr.Plot(label="Norms", elem_id="hidden-norms", elem_classes=fits)
        figure_reading("layer-similarity-reading", *READINGS["change"])
        self.layer_plot = gr.Plot(label="Layer-to-layer change", elem_id="layer-similarity", elem_classes=fits)
        self.layer = gr.Slider(0, layers, value=layers, step=1, label="Layer for token similarity (0 = embeddings)",
                               elem_id="hidden-layer")
        figure_reading("token-similarity-reading", *READINGS["similarity"])
        self.similarity_plot = gr.Plot(label="Token similarity", elem_id="token-similarity", elem_classes=fits)
        figure_reading("hidden-projection-reading", *READINGS["projection"])
        self.projection_plot = gr.Plot(label="Tokens through the layers", elem_id="hidden-projection",
                                       elem_classes=fits)

    @user_errors
    def layer_range(self, session, layer):
        """The layer slider's range follows the model (another model may be shallower)."""
        _, run = self.page.models.run_of(session)
        return gr.update(maximum=run.num_layers, value=index_value(layer, run.num_layers + 1, "Layer"))

    @user_errors
    def draw(self, session, layer, request: gr.Request = None):
        _, run = self.page.models.run_of(session)
        layer = index_value(layer, run.num_layers + 1, "Layer")
        plot = run.plot.speaking(tr_of(request))
        return plot.hidden_norms(), plot.layer_similarity(), plot.token_similarity(layer), plot.hidden_projection()

    @user_errors
    def note_of(self, session, request: gr.Request = None):
        return shared_layers_note(self.page.models.run_of(session)[0], tr_of(request))

    @user_errors
    def draw_similarity(self, session, layer, request: gr.Request = None):
        _, run = self.page.models.run_of(session)
        return run.plot.speaking(tr_of(request)).token_similarity(index_value(layer, run.num_layers + 1, "Layer"))

    def on_load(self, demo: gr.Blocks) -> None:
        fit_figures_on_a_phone(demo)

    def wire(self) -> None:
        self.layer.input(self.draw_similarity, [self.page.session, self.layer], [self.similarity_plot],
                         **self.page.api("token_similarity"), trigger_mode="always_last")

    def after_analysis(self, event: Gate, public: bool) -> None:
        inputs = [self.page.session, self.layer]
        outputs = [self.norms_plot, self.layer_plot, self.similarity_plot, self.projection_plot]
        (event.then(self.layer_range, inputs, [self.layer], **self.page.api("layer_range", False))
         .then(self.note_of, [self.page.session], [self.note], **self.page.api("hidden_note", False))
         .then(self.draw, inputs, outputs, **self.page.api("hidden_states", public)))
