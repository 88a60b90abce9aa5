"""The Masked LM tab: fill in [MASK], the logit lens, masking one token of the analyzed input, and the analyzed input
as pretraining corrupts it (80/10/10)."""

from __future__ import annotations

from collections.abc import Sequence

import gradio as gr
import pandas as pd

from ... import figures
from ...catalog import read_example_notes
from ...explorer import Explorer
from ...masked_lm import normalize_mask
from ...run import Run
from ..common import MAX_CHARS, api, index_value, percent, plain, significant, text_value, user_errors
from .base import Gate, TabPage

MAX_MASKS = 20
MAX_TOP_K = 20
NO_MLM_HEAD = ("**{name} has no masked-LM head.** BERT learned language by guessing hidden words; the part of the "
               "model that makes those guesses (the masked-LM head) was left out when {name} was saved, as "
               "sentence-embedding models do. So it can show what it computes, but not what word it would put in "
               "a [MASK].{other}")


def mlm_status(explorer: Explorer, alternatives: Sequence[str] = ()) -> str:
    """What the tab says about this model's head; without one, the models of the page that have it."""
    if not explorer.has_mlm_head:
        other = f" Pick **{plain(alternatives[0])}** in the model list to see its guesses." if alternatives else ""
        if getattr(explorer, "has_replaced_head", False):  # ELECTRA: its family never had one
            return f"**{plain(explorer.name)}: {explorer.family.lacks[0]}**{other}"
        return NO_MLM_HEAD.format(name=plain(explorer.name), other=other)
    return (f"{plain(explorer.name)} has a masked-LM head: it guesses the token hidden behind each [MASK], the task "
            "BERT was pre-trained on.")


def top_k_value(value) -> int:
    return max(1, index_value(value if value is not None else 5, MAX_TOP_K + 1, "Predictions per mask"))


# --- the views: explorer (+ Run) + controls -> (message, table, figure) --------------------------------------------
def fill_mask_view(explorer, text: str, top_k: int, alternatives: Sequence[str] = ()):
    """(message, table with one row per mask and rank, bar chart or None). `explorer` needs has_mlm_head, name and
    fill_mask(text, top_k=k, max_masks=m) -> one list of (token, probability) per [MASK], in order."""
    text = normalize_mask(text)
    empty = pd.DataFrame(columns=["mask", "rank", "token", "probability"])
    if not explorer.has_mlm_head:
        return mlm_status(explorer, alternatives), empty, None
    predictions = explorer.fill_mask(text, top_k=top_k, max_masks=MAX_MASKS)
    rows = [(m + 1, r + 1, str(token), significant(p)) for m, best in enumerate(predictions)
            for r, (token, p) in enumerate(best)]
    table = pd.DataFrame(rows, columns=["mask", "rank", "token", "probability"])
    where = "the [MASK]" if len(predictions) == 1 else f"each of the {len(predictions)} masks"
    return (f"Top {top_k} predictions for {where}, by {plain(explorer.name)}.",
            table, figures.fill_mask_figure(predictions))


def logit_lens_view(explorer, text: str, mask_number: int, top_k: int = 3, alternatives: Sequence[str] = ()):
    """(message, one row per layer, figure or None): the MLM head read out of every layer at one [MASK]."""
    empty = pd.DataFrame(columns=["layer", "top predictions", "P(final answer)"])
    if not explorer.has_mlm_head:
        return mlm_status(explorer, alternatives), empty, None
    lens = explorer.logit_lens(text, top_k=top_k, mask_index=mask_number - 1)
    names = ["embeddings"] + [f"layer {i}" for i in range(1, len(lens.layers))]
    table = pd.DataFrame(
        [(name, "  ·  ".join(f"{t} {percent(p)}" for t, p in best), percent(p_final))
         for name, best, p_final in zip(names, lens.layers, lens.final_token_probability)],
        columns=empty.columns)
    label = f"mask {mask_number} (token {lens.position})"
    figure = figures.logit_lens_figure(lens.layers, lens.final_token, lens.final_token_probability, label)
    return (f"Logit lens at {label}: the masked-LM head applied to each layer's output. The final answer is "
            f"**{plain(lens.final_token)}**; the last column shows how sure each layer already is of it.",
            table, figure)


def masked_token_view(explorer, run: Run, index: int | None, top_k: int, alternatives: Sequence[str] = ()):
    """(message, predictions table, figure or None) after masking token `index` of the analyzed input; an empty
    result while no token is chosen."""
    empty = pd.DataFrame(columns=["rank", "token", "probability"])
    if not explorer.has_mlm_head:
        return mlm_status(explorer, alternatives), empty, None
    if index is None:
        return "", empty, None
    result = explorer.mask_token(run.encoding, index, top_k=top_k)  # the Run's tokens, not tokenized again
    table = pd.DataFrame([(r + 1, t, significant(p)) for r, (t, p) in enumerate(result.predictions)],
                         columns=empty.columns)
    figure = figures.masked_token_figure(result.original, result.predictions, result.original_probability,
                                         result.original_rank)
    return (f"Token {index}, **{plain(result.original)}**, replaced by [MASK]: the model gives the original token "
            f"**{percent(result.original_probability)}** (rank {result.original_rank:,} of "
            f"{explorer.config.vocab_size:,}).", table, figure)


def corruption_view(explorer, run: Run, seed: int):
    """(message, one row per token, figure): the analyzed input as one pretraining example (80/10/10 rule)."""
    ex = explorer.corrupt_example(run.encoding, seed=seed)
    chosen = set(ex.chosen)
    to_predict = [t if i in chosen else "" for i, t in enumerate(ex.tokens)]
    table = pd.DataFrame({"position": range(len(ex.tokens)), "token": ex.tokens, "the model reads": ex.input_tokens,
                          "change": ex.kinds, "to predict": to_predict})
    counts = {kind: ex.kinds.count(kind) for kind in ("mask", "random", "kept")}
    # 14 tokens a line: the figure's fixed width then fits the page's main column
    figure = figures.corruption_figure(ex.tokens, ex.input_tokens, to_predict, ex.kinds, per_line=14)
    return (f"Sample {seed}: {len(chosen)} of {len(ex.tokens)} tokens chosen (about 15% of the word pieces, never "
            f"[CLS]/[SEP]): {counts['mask']} became [MASK], {counts['random']} a random token, {counts['kept']} "
            "stayed as they were. The model must predict the original token at every chosen position.",
            table, figure)


def replaced_view(explorer, run: Run) -> tuple[str, pd.DataFrame]:
    """ELECTRA's "replaced?" view: (message, one row per token with the discriminator's P(replaced))."""
    empty = pd.DataFrame(columns=["position", "token", "P(replaced)"])
    if not getattr(explorer, "has_replaced_head", False):
        return "", empty
    probabilities = explorer.replaced(run.encoding.text, run.encoding.text_pair)
    rows = [(i, token, significant(p)) for i, (token, p) in enumerate(probabilities)]
    flagged = [f"**{plain(token)}** ({percent(p)})" for token, p in probabilities if p >= 0.5]
    summary = ("It flags " + ", ".join(flagged) + " as replaced." if flagged
               else "It flags no token as replaced (every probability is below 50%).")
    return (f"**Replaced?** {plain(explorer.name)}'s discriminator gives every token the probability that it is not "
            f"the original word but one a generator put there. {summary} Type a sentence with a wrong word to watch "
            "it light up.", pd.DataFrame(rows, columns=["position", "token", "P(replaced)"]))


# --- the tab -------------------------------------------------------------------------------------------------------
class MaskedLMTab:
    """Built inside `with gr.Tab(...)`; `wire()` connects its own controls, `after_analysis()` its steps after a new
    input."""
    id, title = "mlm-tab", "Masked LM"

    def __init__(self, page: TabPage):
        self.page = page
        masked_examples = list(page.masked_examples)
        first = page.models.first
        self.alternatives = [name for name, e in page.models.explorers.items() if e.has_mlm_head]
        self.explainer = gr.Markdown(mlm_status(first, self.alternatives), elem_id="mlm-explainer")
        with gr.Column(visible=first.has_replaced_head, elem_id="replaced-views") as self.replaced_views:
            self.replaced_out = [
                gr.Markdown(elem_id="replaced-message"),
                gr.Dataframe(interactive=False, datatype="str", label="Replaced? (per token)", max_height=300,
                             elem_id="replaced-table", headers=["position", "token", "P(replaced)"])]
        # Hidden for a model without the head: its explainer above says why, instead of empty views.
        with gr.Column(visible=first.has_mlm_head, elem_id="mlm-views") as self.views:
            gr.Markdown("### Fill in [MASK]")
            with gr.Row():
                self.mask_text = gr.Textbox(label="Text with one or more [MASK] (any case)", value=masked_examples[0],
                                            max_length=MAX_CHARS, scale=3, elem_id="mask-text")
                with gr.Column(scale=1, min_width=200):
                    self.top_k = gr.Slider(1, MAX_TOP_K, value=5, step=1, label="Predictions per mask",
                                           elem_id="top-k")
                    self.predict = gr.Button("Predict", variant="primary", elem_id="mask-predict")
            gr.Examples([[m] for m in masked_examples], [self.mask_text], label="Masked examples")
            notes = read_example_notes()
            if any(m in notes for m in masked_examples):
                gr.Markdown("\n".join(f"- {plain(m)}: {notes[m]}" for m in masked_examples if m in notes),
                            elem_id="mask-example-notes")
            with gr.Column(elem_id="mask-results"):
                message = gr.Markdown(elem_id="mask-message")
                bars = gr.Plot(label="Top predictions per mask", elem_id="mask-bars")
                table = gr.Dataframe(interactive=False, datatype="str", label="The same as a table", max_height=300,
                                     elem_id="mask-table", headers=["mask", "rank", "token", "probability"])
                self.mask_out = [message, table, bars]
            gr.Markdown("### Logit lens: how the answer forms through the layers")
            self.lens_mask = gr.Slider(1, MAX_MASKS, value=1, step=1, label="Which [MASK] of the text",
                                       elem_id="lens-mask")
            self.lens_out = [
                gr.Markdown(elem_id="lens-message"),
                gr.Dataframe(interactive=False, datatype="str", label="Top predictions per layer", max_height=300,
                             elem_id="lens-table", headers=["layer", "top predictions", "P(final answer)"]),
                gr.Plot(label="Logit lens", elem_id="logit-lens")]
            gr.Markdown("### Mask one token of the analyzed input")
            self.mask_choice = gr.Dropdown([], value=None, label="Token to mask (from the analyzed sentences)",
                                           allow_custom_value=True, elem_id="mask-token")
            self.masked_out = [
                gr.Markdown(elem_id="masked-message"),
                gr.Dataframe(interactive=False, datatype="str", label="Predictions", max_height=300,
                             elem_id="masked-table", headers=["rank", "token", "probability"]),
                gr.Plot(label="Predictions at the masked token", elem_id="masked-token")]
        gr.Markdown("### What pretraining sees\nBERT learned by guessing hidden tokens: about 15% of the word pieces "
                    "are chosen; of those, 80% become [MASK], 10% a random token and 10% stay unchanged. Here is the "
                    "analyzed input as one such training example.")
        with gr.Row():
            self.seed = gr.Number(0, precision=0, minimum=0, label="Sample (random seed)", elem_id="corrupt-seed")
            self.another = gr.Button("Another sample", elem_id="corrupt-again")
        self.corruption_out = [
            gr.Markdown(elem_id="corruption-message"),
            gr.Dataframe(interactive=False, datatype="str", label="Token by token", max_height=300,
                         elem_id="corruption-table",
                         headers=["position", "token", "the model reads", "change", "to predict"]),
            gr.Plot(label="One pretraining example", elem_id="corruption")]

    # --- handlers ------------------------------------------------------------------------------------------------
    @user_errors
    def fill_mask(self, model, text, top_k):
        return fill_mask_view(self.page.models.get(model), text_value(text, "The masked text"), top_k_value(top_k),
                              self.alternatives)

    @staticmethod
    def lens_range(table, mask_number):
        """The lens slider offers exactly the masks of the text just predicted (read off its table); with one mask
        there is nothing to choose, and no slider."""
        count = max([int(row[0]) for row in getattr(table, "values", [])] or [MAX_MASKS])
        value = min(max(int(mask_number or 1), 1), count)
        return gr.update(maximum=max(count, 2), value=value, visible=count > 1)

    @user_errors
    def logit_lens(self, model, text, mask_number):
        return logit_lens_view(self.page.models.get(model), text_value(text, "The masked text"),
                               index_value(mask_number if mask_number is not None else 1, MAX_MASKS + 1, "Mask"),
                               alternatives=self.alternatives)

    @user_errors
    def mask_token(self, session, token, top_k):
        explorer, run = self.page.models.run_of(session)
        index = None if token is None or token == "" else index_value(token, len(run), "Token")
        return masked_token_view(explorer, run, index, top_k_value(top_k), self.alternatives)

    @user_errors
    def corrupt(self, session, seed):
        explorer, run = self.page.models.run_of(session)
        return corruption_view(explorer, run, index_value(seed if seed is not None else 0, 2**31, "Sample"))

    @user_errors
    def replaced(self, session):
        explorer, run = self.page.models.run_of(session)
        return (gr.update(visible=explorer.has_replaced_head), *replaced_view(explorer, run))

    @user_errors
    def new_analysis(self, session):
        """This model's explainer and views, and the new input's tokens to choose from."""
        explorer, run = self.page.models.run_of(session)
        choices = [(f"{i}: {t}", i) for i, t in enumerate(run.labels)]
        return (mlm_status(explorer, self.alternatives), gr.update(visible=explorer.has_mlm_head),
                gr.update(choices=choices, value=None))

    # --- events --------------------------------------------------------------------------------------------------
    def wire(self) -> None:
        page = self.page
        # Before after_analysis reuses mask_token privately: gradio names an endpoint after its first use.
        self.mask_choice.input(self.mask_token, [page.session, self.mask_choice, self.top_k], self.masked_out,
                               **page.api("mask_token"))
        lens_io = ([page.model, self.mask_text, self.lens_mask], self.lens_out)
        mask_table = self.mask_out[1]
        (gr.on([self.predict.click, self.mask_text.submit], self.fill_mask, [page.model, self.mask_text, self.top_k],
               self.mask_out, **page.api("fill_mask"))
         .success(self.lens_range, [mask_table, self.lens_mask], [self.lens_mask], **api("lens_range", False))
         .success(self.logit_lens, *lens_io, **page.api("logit_lens")))
        self.lens_mask.release(self.logit_lens, *lens_io, **page.api("logit_lens", False))
        (self.another.click(lambda n: (n or 0) + 1, [self.seed], [self.seed], **api("next_seed", False), queue=False)
         .then(self.corrupt, [page.session, self.seed], self.corruption_out, **page.api("corrupt", False)))
        self.seed.submit(self.corrupt, [page.session, self.seed], self.corruption_out, **page.api("corrupt", False))

    def after_analysis(self, event: Gate, public: bool) -> None:
        """The new model's explainer and token choices; a cleared masked-token result (it belonged to the last
        input); the new input as a pretraining example."""
        page, session = self.page, self.page.session
        (event
         .then(self.new_analysis, [session], [self.explainer, self.views, self.mask_choice],
               **page.api("new_analysis", False))
         .then(self.mask_token, [session, self.mask_choice, self.top_k], self.masked_out,
               **page.api("mask_token", False))
         .then(self.replaced, [session], [self.replaced_views, *self.replaced_out],
               **page.api("replaced", False))
         .then(self.corrupt, [session, self.seed], self.corruption_out, **page.api("corrupt", public)))
