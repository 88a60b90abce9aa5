"""Beyond attention's context mixing, beside attention and rollout: value zeroing (Mohebbi et al. 2023, over every
layer, multiplied down the layers) and attention flow (Abnar & Zuidema 2020), each a token x token map of the analyzed
input, on request (value zeroing runs the model again; flow is a maximum flow per pair of tokens, refused in one
sentence above analysis.FLOW_MAX_TOKENS)."""

from __future__ import annotations

import time

import gradio as gr

from ... import analysis, causal, figures
from ..common import tr_of, user_errors

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
    def mixing(self, session, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        tr = tr_of(request)
        labels = run.labels
        start = time.perf_counter()
        zeroed = causal.aggregate(explorer.value_zeroing(run))[-1]  # (T, T) all layers
        said = [tr("Value zeroing: {layers} layers x {n} tokens in {seconds} s.", layers=run.num_layers, n=len(run),
                   seconds=f"{time.perf_counter() - start:.1f}")]
        zeroing = figures.attention_heatmap(zeroed, labels, labels, title=tr("Value zeroing, all layers"),
                                            colorbar_title=tr("share"), tr=tr)
        flow = None
        if len(run) > analysis.FLOW_MAX_TOKENS:
            said.append(tr("Attention flow not computed: it is exact up to {most} tokens (one maximum flow per pair "
                           "of tokens) and this input has {n}; rollout, in the Matrix view, is its fast relative.",
                           most=analysis.FLOW_MAX_TOKENS, n=len(run)))
        else:
            start = time.perf_counter()
            flows = run.attention_flow()
            said.append(tr("Attention flow: {flows} maximum flows in {seconds} s.", flows=len(run) ** 2,
                           seconds=f"{time.perf_counter() - start:.1f}"))
            flow = figures.attention_heatmap(flows, labels, labels, title=tr("Attention flow"),
                                             colorbar_title=tr("flow"), tr=tr)
        for figure in (zeroing, flow):
            if figure is not None:  # the box's width, not the tokens' (a phone cut the map at its right edge)
                figure.update_layout(width=None, autosize=True)
        return " ".join(said), zeroing, flow

    def wire(self) -> None:
        self.button.click(self.mixing, [self.page.session], [self.message, self.zeroing, self.flow],
                          **self.page.api("mixing"))
