"""The attention views under the input (views_host.py draws them), and under the views what silencing heads does:
a visitor picks heads in the views' overview, and the predictions of the analyzed input before and after appear
right below the picture."""

from __future__ import annotations

import gradio as gr

from ..run import Run
from .common import Page, api, percent, plain, refuse, say, user_errors
from .views_host import ViewsHost

SILENCE_HINT = ("Pick heads in **All heads** (*Pick heads to silence*) to see what this input's predictions lose "
                "without them: put **[MASK]** in a sentence for word predictions, or give a sentence B for "
                "next-sentence prediction.")


def ablation_view(explorer, run: Run, heads, request=None) -> str:
    """The predictions at every [MASK] of the analyzed input, and P(IsNext) of a pair, before and after silencing
    `heads`, in Markdown (tokens escaped), in the language of the visitor's page (`request`)."""
    if not heads:
        return say(request, SILENCE_HINT)
    able = (explorer.has_mlm_head and explorer.tokenizer.mask_token_id in run.encoding.ids) or (explorer.has_nsp_head and run.encoding.is_pair)
    if not able:
        needs = ("put **[MASK]** in a sentence (or give a sentence B) and analyze again" if explorer.has_mlm_head
                 else "give a sentence B and analyze again" if explorer.has_nsp_head
                 else "pick a model with a masked-LM or next-sentence head")
        return say(request, "Silencing heads changes what the model predicts, and this input asks for no "
                   "prediction: {needs}.", needs=say(request, needs))
    result = explorer.ablate(run.encoding, heads, top_k=5)
    names = ", ".join(f"{layer}.{head}" for layer, head in sorted(result.heads))
    # the wrapper lets the page's CSS bring a result (not the hint) into sight under the overview's buttons
    lines = ["<div class='bv-ablation'>", "",
             say(request, "**Silenced {n} of {all} heads** (layer.head: {names}). Their attention output is set to "
                 "zero in this forward pass; the rest of the model runs as before.", n=len(result.heads),
                 all=run.num_layers * run.num_heads, names=names)]
    if result.masks:
        lines += ["", say(request, "| [MASK] | before | after | top word before: probability |"), "|---|---|---|---|"]
        for k, m in enumerate(result.masks, 1):
            def row(predictions):
                return " · ".join(f"{plain(t)} {percent(p)}" for t, p in predictions[:3])
            moved = say(request, "still first") if m.rank_after == 1 else say(request, "now #{rank}",
                                                                               rank=m.rank_after)
            lines.append(f"| {k} (token {m.position}) | {row(m.before)} | {row(m.after)} | **{plain(m.token)}**: "
                         f"{percent(m.probability_before)} → {percent(m.probability_after)} ({moved}) |")
    if result.is_next_before is not None:
        lines += ["", f"P(B follows A): {percent(result.is_next_before)} → **{percent(result.is_next_after)}**"]
    return "\n".join(lines + ["", "</div>"])


class AttentionSection:
    """The main views host (permalink, picking heads to silence) and the ablation result under it."""

    def __init__(self, page: Page, host: ViewsHost):
        self.page, self.host = page, host
        self.view = host.component("attention-host", permalink=True, silence=True)
        self.ablation = gr.Markdown(elem_id="ablation-result")

    def first_paint(self, model: str, run: Run) -> dict:
        return self.host.value(model, run)

    @user_errors
    def silence(self, session, event: gr.EventData, request: gr.Request = None):
        """Heads picked in the overview: the analyzed input's predictions without them."""
        explorer, run = self.page.models.run_of(session)
        data = getattr(event, "_data", None) or {}
        heads = data.get("heads") if isinstance(data, dict) else None
        if not isinstance(heads, list) or not all(isinstance(h, list) and len(h) == 2 for h in heads):
            raise refuse(say(request, "Pick heads in the overview first."))
        return ablation_view(explorer, run, [tuple(h) for h in heads], request)

    def wire(self) -> None:
        self.view.submit(self.silence, [self.page.session], [self.ablation], **self.page.api("silence_heads"))

    def after_analysis(self, event, public: bool):
        # the result belonged to the last input: cleared (to the hint) with every new one
        def hint(request: gr.Request = None) -> str:
            return say(request, SILENCE_HINT)

        return event.then(hint, None, [self.ablation], **api("clear_ablation", False), queue=False)
