"""The Attention tab: one head as a heatmap (the first thing a new input draws), the layer's mean, rollout, one token
across the heads, the query/key arithmetic of its row, every head at a glance and the head map."""

from __future__ import annotations

import gradio as gr

from ..run import Run
from .common import Page, api, index_value, user_errors

SEGMENT_CHOICES = [("all tokens", "all"), ("A → A", "A->A"), ("A → B", "A->B"), ("B → A", "B->A"), ("B → B", "B->B")]


def heatmap_view(run: Run, layer: int, head: int, segment: str, hide_special: bool):
    try:
        return run.plot.attention(layer, head, hide_special=hide_special, segments=segment)
    except ValueError as err:  # an empty block (B -> B of a single sentence): say so, show the whole matrix
        gr.Warning(f"{str(err)[:1].upper()}{str(err)[1:]}.")
        return run.plot.attention(layer, head)


def detail_views(run: Run, layer: int, head: int, segment: str, hide_special: bool, token: int):
    """Mean over the layer's heads, rollout up to the layer, one token to and from every head, query x key."""
    plot = run.plot
    try:
        mean = plot.attention(layer, None, hide_special=hide_special, segments=segment)
        rollout = plot.rollout(layer, hide_special=hide_special, segments=segment)
    except ValueError:  # the empty block was already reported by heatmap_view
        mean, rollout = plot.attention(layer, None), plot.rollout(layer)
    return mean, rollout, plot.token_attention(layer, token), plot.query_key(layer, head, token)


def controls(run: Run, layer, head, token) -> tuple[int, int, int]:
    return (index_value(layer, run.num_layers, "Layer"), index_value(head, run.num_heads, "Head"),
            index_value(token if token is not None else 0, len(run), "Token"))


class AttentionTab:
    def __init__(self, page: Page):
        self.page = page
        config = page.models.first.config
        with gr.Row():
            self.layer = gr.Slider(0, config.num_hidden_layers - 1, value=0, step=1, label="Layer", elem_id="layer")
            self.head = gr.Slider(0, config.num_attention_heads - 1, value=0, step=1, label="Head", elem_id="head")
        with gr.Row():
            self.segment = gr.Radio(SEGMENT_CHOICES, value="all", label="Segments (from → to)",
                                    elem_id="segment-filter")
            self.hide_special = gr.Checkbox(False, label="Hide [CLS] and [SEP]", elem_id="hide-special")
            # custom values allowed: the choices change with every input, and index_value checks the value
            self.token = gr.Dropdown([], value=None, label="Token (attention to and from it)",
                                     allow_custom_value=True, elem_id="attention-token")
        self.heatmap = gr.Plot(label="One head", elem_id="attention-heatmap")
        with gr.Row():
            mean = gr.Plot(label="Mean over the layer's heads", elem_id="attention-mean")
            rollout = gr.Plot(label="Rollout up to this layer", elem_id="attention-rollout")
        self.details = [mean, rollout, gr.Plot(label="Attention to and from the chosen token",
                                               elem_id="token-attention"),
                        gr.Plot(label="Query · key: how the chosen token's row is made", elem_id="query-key")]
        self.overview = [gr.Plot(label="Overview: every layer and head", elem_id="attention-overview"),
                         gr.Plot(label="Head map: what each head does", elem_id="head-map")]
        self.controls = [self.layer, self.head, self.segment, self.hide_special, self.token]

    def first_paint(self, run: Run, layer, head, segment, hide_special, token) -> tuple:
        """For a new input: the controls fitted to it, and the heatmap (drawn in the analysis step itself)."""
        layer, head, token = controls(run, layer, head, token)
        if not run.encoding.is_pair and segment not in ("all", "A->A"):
            segment = "all"  # a single sentence has no B block
        choices = [(f"{i}: {t}", i) for i, t in enumerate(run.tokens)]
        # gr.update, not gr.Slider(...): a component built per request costs gradio ~10 ms of signature checks
        return (gr.update(maximum=run.num_layers - 1, value=layer), gr.update(maximum=run.num_heads - 1, value=head),
                segment, gr.update(choices=choices, value=token),
                heatmap_view(run, layer, head, segment, bool(hide_special)))

    @property
    def first_outputs(self) -> list:
        return [self.layer, self.head, self.segment, self.token, self.heatmap]

    @user_errors
    def redraw_heatmap(self, session, layer, head, segment, hide_special):
        _, run = self.page.models.run_of(session)
        layer, head, _ = controls(run, layer, head, 0)
        return heatmap_view(run, layer, head, segment, bool(hide_special))

    @user_errors
    def redraw_details(self, session, layer, head, segment, hide_special, token):
        _, run = self.page.models.run_of(session)
        layer, head, token = controls(run, layer, head, token)
        return detail_views(run, layer, head, segment, bool(hide_special), token)

    @user_errors
    def redraw_overview(self, session):
        _, run = self.page.models.run_of(session)
        return run.plot.head_overview(), run.plot.head_map()

    def wire(self) -> None:
        session = self.page.session
        details_io = ([session, *self.controls], self.details)
        # Sliders and toggles only redraw from the cached Run; the heatmap first, its companions after.
        (gr.on([self.layer.input, self.head.input, self.segment.input, self.hide_special.input], self.redraw_heatmap,
               [session, self.layer, self.head, self.segment, self.hide_special], [self.heatmap],
               **api("attention"), trigger_mode="always_last")
         .then(self.redraw_details, *details_io, **api("redraw_details", False), trigger_mode="always_last"))
        self.token.input(self.redraw_details, *details_io, **api("redraw_details", False),
                         trigger_mode="always_last")

    def after_analysis(self, event, public: bool):
        session = self.page.session
        return (event
                .then(self.redraw_details, [session, *self.controls], self.details,
                      **api("attention_details", public))
                .then(self.redraw_overview, [session], self.overview, **api("attention_overview", public)))
