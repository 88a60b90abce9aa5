"""The "Beyond attention" tab: what one prediction of the analyzed input really depends on. Integrated gradients
and blank-out color the tokens; the faithfulness chart says how well attention, rollout and value-weighted attention
rank the same tokens; silencing each head in turn shows which heads the prediction needs (pick them in the attention
views' overview to silence them together)."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from ... import figures
from ...run import Run
from ..common import percent, plain, refuse, text_value, user_errors
from .base import Gate, TabPage
from .beyond_mixing import MixingSection

INTRO = ("**Attention is not explanation**, a careful reader objects: a head may look at a word without using it. "
         "Here the analyzed input's prediction is explained by what it *depends on*: integrated gradients (the "
         "change of the prediction, shared out over the words along a path from a blank input) and blank-out (the "
         "change when one word at a time is blanked). The chart below then asks how well attention agrees.")
NO_TARGET = ("Nothing to explain in this input yet: put **[MASK]** in a sentence (e.g. *The keys to the cabinet "
             "[MASK] on the table.*) and analyze it, or give a sentence B for next-sentence prediction.")


def targets_of(explorer, run: Run) -> list[tuple[str, str]]:
    """The predictions of the analyzed input that can be explained, as (label, value) choices."""
    choices = []
    if explorer.has_mlm_head:
        masks = [i for i, t in enumerate(run.encoding.ids) if t == explorer.tokenizer.mask_token_id]
        choices += [(f"[MASK] {k + 1} (token {i})", f"mask:{k}") for k, i in enumerate(masks)]
    if explorer.has_nsp_head and run.encoding.is_pair:
        choices.append(("IsNext: does B follow A?", "is_next"))
    return choices


def explain_view(explorer, run: Run, target: str, token: str, steps: int):
    """(message, attribution figure, faithfulness table, faithfulness figure, head effects figure)."""
    if target == "is_next":
        kind, mask_index = "is_next", 0
    elif isinstance(target, str) and target.startswith("mask:") and target[5:].isdigit():
        kind, mask_index = "mask", int(target[5:])
    else:
        raise refuse("Choose the prediction to explain.")
    enc = run.encoding
    token = token.strip() or None
    faith = explorer.faithfulness(enc.text, enc.text_pair, mask_index, token, steps, target=kind)
    ig, blank = faith.attribution, faith.blank_out
    ranking = explorer.rank_heads(enc.text, enc.text_pair, mask_index, ig.target.token_id, target=kind)
    what = ig.target.describe()
    message = (f"Explaining **{plain(what)}**: {plain(explorer.name)} gives it "
               f"**{percent(ig.target.probability(ig.f_input))}**. Integrated gradients shares out the change from a "
               f"blank input ({percent(ig.target.probability(ig.f_baseline))}) over the words in {ig.steps} steps; "
               f"the shares add up to that change within {ig.relative_delta:.1e} of it (the convergence check). "
               f"{_top_heads(ranking)}")
    table = faith.table.astype(float).round(2).reset_index().rename(columns={"index": "attention measure"})
    return (message,
            figures.attribution_figure(faith.tokens, {"integrated gradients": ig.scores, "blank-out": blank.scores},
                                       ig.fixed, per_line=12, title=f"What {what} depends on"),
            table, figures.faithfulness_figure(faith.table, agreement=faith.agreement),
            figures.head_effects_figure(ranking.effects, target=what))


def _top_heads(ranking) -> str:
    """The three heads whose silencing moves the prediction most, in words that follow the sign: a head without
    which the probability falls supports the prediction; one without which it rises works against it."""
    top = list(ranking.ranking().head(3).itertuples())
    before = percent(ranking.target.probability(ranking.f_input))

    def heads(rows, one: str, many: str) -> str:
        names = ", ".join(f"{int(r.layer)}.{int(r.head)} (→ {percent(r.probability_after)})" for r in rows)
        return f"{names}, {one if len(rows) == 1 else many}"

    falls, rises = [r for r in top if r.effect < 0], [r for r in top if r.effect > 0]
    said = []
    if falls:
        said.append(f"it falls without {heads(falls, 'a head that supports it', 'heads that support it')}")
    if rises:
        said.append(f"it rises without {heads(rises, 'a head that works against it', 'heads that work against it')}")
    if not said:
        return f"Silencing any one head leaves it at {before}."
    return (f"Silencing the heads one at a time (from {before}; layer.head → the probability without it): "
            f"{'; '.join(said)}. Pick them in **All heads** of the attention views to silence them together.")


class BeyondTab:
    id, title = "beyond-tab", "Beyond attention"

    def __init__(self, page: TabPage):
        self.page = page
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            # custom values allowed: the choices change with every input, and explain_view checks the value
            self.target = gr.Dropdown([], value=None, label="Prediction to explain", scale=3, allow_custom_value=True,
                                      elem_id="explain-target")
            self.token = gr.Textbox(label="Word to explain (empty: the model's top prediction)", scale=3,
                                    max_length=100, elem_id="explain-token")
            self.steps = gr.Slider(10, 200, value=50, step=10, label="Integration steps", scale=2,
                                   elem_id="explain-steps")
            self.button = gr.Button("Explain", variant="primary", scale=1, elem_id="explain")
        self.message = gr.Markdown(NO_TARGET, elem_id="explain-message")
        self.attribution = gr.Plot(label="What the prediction depends on", elem_id="attribution")
        with gr.Row():
            self.table = gr.Dataframe(interactive=False, label="Spearman correlation over the words", scale=1,
                                      elem_id="faithfulness-table")
            self.faithfulness = gr.Plot(label="Faithfulness", scale=2, elem_id="faithfulness")
        self.ranking = gr.Plot(label="Each head's effect when silenced", elem_id="head-effects")
        self.outputs = [self.message, self.attribution, self.table, self.faithfulness, self.ranking]
        self.mixing = MixingSection(self)  # value zeroing and attention flow: beyond_mixing.py

    @user_errors
    def choices(self, session):
        """The new input's predictions to explain; its old results cleared."""
        explorer, run = self.page.models.run_of(session)
        options = targets_of(explorer, run)
        empty = pd.DataFrame(columns=["attention measure", "integrated gradients", "blank-out"])
        message = "Choose the prediction to explain and press **Explain**." if options else NO_TARGET
        return (gr.update(choices=options, value=options[0][1] if options else None), message, None, empty, None,
                None)

    @user_errors
    def explain(self, session, target, token, steps):
        explorer, run = self.page.models.run_of(session)
        if not targets_of(explorer, run):
            raise refuse(NO_TARGET.replace("**", ""))
        steps = int(steps) if isinstance(steps, (int, float)) and 2 <= steps <= 500 else 50
        return explain_view(explorer, run, target, text_value(token, "The word to explain"), steps)

    def wire(self) -> None:
        self.button.click(self.explain, [self.page.session, self.target, self.token, self.steps], self.outputs,
                          **self.page.api("explain"))
        self.mixing.wire()

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.choices, [self.page.session], [self.target, *self.outputs],
                   **self.page.api("explain_choices", False))
