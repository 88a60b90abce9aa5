"""The Hidden states tab: each token's norm layer by layer, how much each layer turns it, token-to-token similarity
at one layer, and a 2-D projection of every token through the layers."""

from __future__ import annotations

import gradio as gr

from ..common import index_value, user_errors
from .base import FIT_ON_A_PHONE, Gate, TabPage, fit_figures_on_a_phone


def shared_layers_note(explorer) -> str:
    """ALBERT: layers compared here apply the same weights again (empty for the others)."""
    if not explorer.family.shared_layers:
        return ""
    return next(f"**{line}**" for line in explorer.family.lacks if "share" in line)


class HiddenTab:
    id, title = "hidden-tab", "Hidden states"

    def __init__(self, page: TabPage):
        self.page = page
        fits = [FIT_ON_A_PHONE]  # figures that fit their box on a phone (base.py)
        layers = page.models.first.config.num_hidden_layers
        self.note = gr.Markdown(shared_layers_note(page.models.first), elem_id="hidden-family-note")
        self.norms_plot = gr.Plot(label="Norms", elem_id="hidden-norms", elem_classes=fits)
        self.layer_plot = gr.Plot(label="Layer-to-layer change", elem_id="layer-similarity", elem_classes=fits)
        self.layer = gr.Slider(0, layers, value=layers, step=1, label="Layer for token similarity (0 = embeddings)",
                               elem_id="hidden-layer")
        self.similarity_plot = gr.Plot(label="Token similarity", elem_id="token-similarity", elem_classes=fits)
        self.projection_plot = gr.Plot(label="Tokens through the layers", elem_id="hidden-projection",
                                       elem_classes=fits)

    @user_errors
    def layer_range(self, session, layer):
        """The layer slider's range follows the model (another model may be shallower)."""
        _, run = self.page.models.run_of(session)
        return gr.update(maximum=run.num_layers, value=index_value(layer, run.num_layers + 1, "Layer"))

    @user_errors
    def draw(self, session, layer):
        _, run = self.page.models.run_of(session)
        layer = index_value(layer, run.num_layers + 1, "Layer")
        plot = run.plot
        return plot.hidden_norms(), plot.layer_similarity(), plot.token_similarity(layer), plot.hidden_projection()

    @user_errors
    def note_of(self, session):
        return shared_layers_note(self.page.models.run_of(session)[0])

    @user_errors
    def draw_similarity(self, session, layer):
        _, run = self.page.models.run_of(session)
        return run.plot.token_similarity(index_value(layer, run.num_layers + 1, "Layer"))

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
