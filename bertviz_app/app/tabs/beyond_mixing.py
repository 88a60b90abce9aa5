"""Beyond attention's context mixing, beside attention and rollout: value zeroing (Mohebbi et al. 2023, over every
layer, multiplied down the layers) and attention flow (Abnar & Zuidema 2020), each a token x token map of the analyzed
input, on request (value zeroing runs the model again; flow is a maximum flow per pair of tokens, refused in one
sentence above analysis.FLOW_MAX_TOKENS)."""

from __future__ import annotations

import time

import gradio as gr

from ... import analysis, causal, figures
from ..common import user_errors

INTRO = ("**Context mixing beyond raw attention.** *Value zeroing* zeroes one token's value vector in a layer and "
         "measures how far every other token's output moves (rows sum to 1; multiplied down the layers, like "
         "rollout). *Attention flow* is the maximum flow from each output token to each input token through every "
         "layer's attention with its residual. Both read the analyzed input.")


class MixingSection:
    """Built inside the Beyond attention tab, under its explanations (`beyond.BeyondTab` calls it)."""

    def __init__(self, beyond):
        self.beyond, self.page = beyond, beyond.page
        gr.Markdown(INTRO)
        self.button = gr.Button("Value zeroing and attention flow", elem_id="mixing")
        self.message = gr.Markdown(elem_id="mixing-message")
        with gr.Row():
            self.zeroing = gr.Plot(label="Value zeroing, all layers", elem_id="value-zeroing", min_width=320)
            self.flow = gr.Plot(label="Attention flow", elem_id="attention-flow", min_width=320)

    @user_errors
    def mixing(self, session):
        explorer, run = self.page.models.run_of(session)
        labels = run.labels
        start = time.perf_counter()
        zeroed = causal.aggregate(explorer.value_zeroing(run))[-1]  # (T, T) all layers
        said = [f"Value zeroing: {run.num_layers} layers x {len(run)} tokens in {time.perf_counter() - start:.1f} s."]
        zeroing = figures.attention_heatmap(zeroed, labels, labels, title="Value zeroing, all layers",
                                            colorbar_title="share")
        flow = None
        if len(run) > analysis.FLOW_MAX_TOKENS:
            said.append(f"Attention flow not computed: it is exact up to {analysis.FLOW_MAX_TOKENS} tokens (one "
                        f"maximum flow per pair of tokens) and this input has {len(run)}; rollout, in the Matrix "
                        "view, is its fast relative.")
        else:
            start = time.perf_counter()
            flows = run.attention_flow()
            said.append(f"Attention flow: {len(run) ** 2} maximum flows in {time.perf_counter() - start:.1f} s.")
            flow = figures.attention_heatmap(flows, labels, labels, title="Attention flow", colorbar_title="flow")
        for figure in (zeroing, flow):
            if figure is not None:  # the box's width, not the tokens' (a phone cut the map at its right edge)
                figure.update_layout(width=None, autosize=True)
        return " ".join(said), zeroing, flow

    def wire(self) -> None:
        self.button.click(self.mixing, [self.page.session], [self.message, self.zeroing, self.flow],
                          **self.page.api("mixing"))
