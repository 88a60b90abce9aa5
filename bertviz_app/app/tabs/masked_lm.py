"""The Masked LM tab: fill in [MASK], the logit lens, masking one token of the analyzed input, and the analyzed input
as pretraining corrupts it (80/10/10)."""

from __future__ import annotations

from collections.abc import Sequence

import gradio as gr
import pandas as pd

from ... import figures, i18n, limits
from ...catalog import read_example_notes
from ...explorer import Explorer
from ...i18n import Translator, english
from ...masked_lm import mask_positions, normalize_mask
from ...run import Run
from ..common import MAX_CHARS, api, index_value, percent, plain, significant, text_value, tr_of, user_errors
from .base import Gate, TabPage

MAX_MASKS = limits.MAX_MASKS
MAX_TOP_K = 20
NO_MLM_HEAD = ("**{name} has no masked-LM head.** BERT learned language by guessing hidden words; the part of the "
               "model that makes those guesses (the masked-LM head) was left out when {name} was saved, as "
               "sentence-embedding models do. So it can show what it computes, but not what word it would put in "
               "a [MASK].{other}")


def mlm_status(explorer: Explorer, alternatives: Sequence[str] = (), tr: Translator = english) -> str:
    """What the tab says about this model's head; without one, the models of the page that have it."""
    if not explorer.has_mlm_head:
        other = (" " + tr("Pick **{name}** in the model list to see its guesses.", name=plain(alternatives[0]))
                 if alternatives else "")
        if getattr(explorer, "has_replaced_head", False):  # ELECTRA: its family never had one
            return f"**{plain(explorer.name)}: {tr(explorer.family.lacks[0])}**{other}"
        return tr(NO_MLM_HEAD, name=plain(explorer.name), other=other)
    return tr("{name} has a masked-LM head: it guesses the token hidden behind each [MASK], the task BERT was "
              "pre-trained on.", name=plain(explorer.name))


def masked_sentence(explorer, run: Run) -> str | None:
    """The analyzed sentence that holds a [MASK] as the model read it (A's first, else B's), for the tab to start
    from; None when the input has none or the model no masked-LM head."""
    if not explorer.has_mlm_head:
        return None
    positions = mask_positions(explorer.tokenizer, run.encoding)
    if not positions:
        return None
    in_a = any(run.encoding.sequence_ids[p] == 0 for p in positions)
    return run.encoding.text if in_a else run.encoding.text_pair


def stale_notice(why: str, last: str | None, what: str) -> str:
    """A refusal in one sentence where the result is, and what the (dimmed, see app.css) result below still shows."""
    why = why if why.endswith((".", "!", "?")) else f"{why}."
    if not last:
        return f"<span class='bv-stale'>**{plain(why)}**</span>"
    last = last if len(last) <= 80 else last[:79] + "…"
    return f"<span class='bv-stale'>**{plain(why)}** {what}: “{plain(last)}”</span>"


def columns(tr: Translator, *english_names: str) -> list[str]:
    """A table's column names in the visitor's language (a token in a cell never is translated)."""
    return [tr(name) for name in english_names]


def top_k_value(value) -> int:
    return max(1, index_value(value if value is not None else 5, MAX_TOP_K + 1, "Predictions per mask"))


# --- the views: explorer (+ Run) + controls -> (message, table, figure) --------------------------------------------
def fill_mask_view(explorer, text: str, top_k: int, alternatives: Sequence[str] = (), tr: Translator = english):
    """(message, table with one row per mask and rank, bar chart or None). `explorer` needs has_mlm_head, name and
    fill_mask(text, top_k=k, max_masks=m) -> one list of (token, probability) per [MASK], in order. The table's
    first column numbers the masks (`lens_range` reads it)."""
    text = normalize_mask(text)
    names = columns(tr, "mask", "rank", "token", "probability")
    if not explorer.has_mlm_head:
        return mlm_status(explorer, alternatives, tr), pd.DataFrame(columns=names), None
    predictions = explorer.fill_mask(text, top_k=top_k, max_masks=MAX_MASKS)
    rows = [(m + 1, r + 1, str(token), significant(p)) for m, best in enumerate(predictions)
            for r, (token, p) in enumerate(best)]
    table = pd.DataFrame(rows, columns=names)
    message = (tr("Top {k} predictions for the [MASK], by {name}.", k=top_k, name=plain(explorer.name))
               if len(predictions) == 1 else
               tr("Top {k} predictions for each of the {masks} masks, by {name}.", k=top_k, masks=len(predictions),
                  name=plain(explorer.name)))
    return message, table, figures.fill_mask_figure(predictions, tr=tr)


def logit_lens_view(explorer, text: str, mask_number: int, top_k: int = 3, alternatives: Sequence[str] = (),
                    tr: Translator = english):
    """(message, one row per layer, figure or None): the MLM head read out of every layer at one [MASK]."""
    empty = pd.DataFrame(columns=columns(tr, "layer", "top predictions", "P(final answer)"))
    if not explorer.has_mlm_head:
        return mlm_status(explorer, alternatives, tr), empty, None
    lens = explorer.logit_lens(text, top_k=top_k, mask_index=mask_number - 1)
    names = [tr("embeddings")] + [tr("layer {n}", n=i) for i in range(1, len(lens.layers))]
    table = pd.DataFrame(
        [(name, "  ·  ".join(f"{t} {percent(p)}" for t, p in best), percent(p_final))
         for name, best, p_final in zip(names, lens.layers, lens.final_token_probability)],
        columns=empty.columns)
    label = tr("mask {n} (token {position})", n=mask_number, position=lens.position)
    figure = figures.logit_lens_figure(lens.layers, lens.final_token, lens.final_token_probability, label, tr=tr)
    return (tr("Logit lens at {where}: the masked-LM head applied to each layer's output. The final answer is "
               "**{token}**; the last column shows how sure each layer already is of it.", where=label,
               token=plain(lens.final_token)),
            table, figure)


def masked_token_view(explorer, run: Run, index: int | None, top_k: int, alternatives: Sequence[str] = (),
                      tr: Translator = english):
    """(message, predictions table, figure or None) after masking token `index` of the analyzed input; an empty
    result while no token is chosen."""
    empty = pd.DataFrame(columns=columns(tr, "rank", "token", "probability"))
    if not explorer.has_mlm_head:
        return mlm_status(explorer, alternatives, tr), empty, None
    if index is None:
        return "", empty, None
    result = explorer.mask_token(run.encoding, index, top_k=top_k)  # the Run's tokens, not tokenized again
    table = pd.DataFrame([(r + 1, t, significant(p)) for r, (t, p) in enumerate(result.predictions)],
                         columns=empty.columns)
    figure = figures.masked_token_figure(result.original, result.predictions, result.original_probability,
                                         result.original_rank, tr=tr)
    return (tr("Token {n}, **{token}**, replaced by [MASK]: the model gives the original token **{share}** (rank "
               "{rank} of {vocabulary}).", n=index, token=plain(result.original),
               share=percent(result.original_probability), rank=f"{result.original_rank:,}",
               vocabulary=f"{explorer.config.vocab_size:,}"), table, figure)


def corruption_view(explorer, run: Run, seed: int, tr: Translator = english):
    """(message, one row per token, figure): the analyzed input as one pretraining example (80/10/10 rule)."""
    ex = explorer.corrupt_example(run.encoding, seed=seed)
    chosen = set(ex.chosen)
    to_predict = [t if i in chosen else "" for i, t in enumerate(ex.tokens)]
    changes = [tr(kind) if kind else "" for kind in ex.kinds]  # "mask", "random", "kept": words, not tokens
    table = pd.DataFrame(dict(zip(columns(tr, "position", "token", "the model reads", "change", "to predict"),
                                  (range(len(ex.tokens)), ex.tokens, ex.input_tokens, changes, to_predict))))
    counts = {kind: ex.kinds.count(kind) for kind in ("mask", "random", "kept")}
    # 14 tokens a line: the figure's fixed width then fits the page's main column
    figure = figures.corruption_figure(ex.tokens, ex.input_tokens, to_predict, ex.kinds, per_line=14, tr=tr)
    return (tr("Sample {seed}: {chosen} of {n} tokens chosen (about 15% of the word pieces, never [CLS]/[SEP]): "
               "{masked} became [MASK], {random} a random token, {kept} stayed as they were. The model must predict "
               "the original token at every chosen position.", seed=seed, chosen=len(chosen), n=len(ex.tokens),
               masked=counts["mask"], random=counts["random"], kept=counts["kept"]),
            table, figure)


def replaced_view(explorer, run: Run, tr: Translator = english) -> tuple[str, pd.DataFrame]:
    """ELECTRA's "replaced?" view: (message, one row per token with the discriminator's P(replaced))."""
    names = columns(tr, "position", "token", "P(replaced)")
    if not getattr(explorer, "has_replaced_head", False):
        return "", pd.DataFrame(columns=names)
    probabilities = explorer.replaced(run.encoding.text, run.encoding.text_pair)
    rows = [(i, token, significant(p)) for i, (token, p) in enumerate(probabilities)]
    flagged = [f"**{plain(token)}** ({percent(p)})" for token, p in probabilities if p >= 0.5]
    summary = (tr("It flags {tokens} as replaced.", tokens=", ".join(flagged)) if flagged
               else tr("It flags no token as replaced (every probability is below 50%)."))
    return (tr("**Replaced?** {name}'s discriminator gives every token the probability that it is not the original "
               "word but one a generator put there. {summary} Type a sentence with a wrong word to watch it light "
               "up.", name=plain(explorer.name), summary=summary), pd.DataFrame(rows, columns=names))


# --- the tab -------------------------------------------------------------------------------------------------------
class MaskedLMTab:
    """Built inside `with gr.Tab(...)`; `wire()` connects its own controls, `after_analysis()` its steps after a new
    input."""
    id, title = "mlm-tab", "Masked LM"

    def __init__(self, page: TabPage):
        self.page = page
        self._refusals: dict[str | None, str] = {}  # session hash -> why its last request was refused
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
            noted = [m for m in masked_examples if m in notes]
            if noted:  # each note translated by gradio, the English sentence it is about kept as it is
                template = "\n".join(f"- {{example{i}}}: {{note{i}}}" for i in range(len(noted)))
                gr.Markdown(i18n.composed(template, names={f"example{i}": plain(m) for i, m in enumerate(noted)},
                                          **{f"note{i}": notes[m] for i, m in enumerate(noted)}),
                            elem_id="mask-example-notes")
            self.predicted = gr.State(None)  # the text whose predictions are on screen, to name under a refusal
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
            # what an analyzed input with a [MASK] fills (`from_analysis`)
            self.mask_start_outputs = [self.mask_text, *self.mask_out, self.predicted, self.lens_mask,
                                       *self.lens_out]
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
    def _fill_mask(self, model, text, top_k, tr: Translator = english):
        if isinstance(text, str) and not text.strip():  # the explorer's words would name sentence A
            raise ValueError(tr("The masked text is empty: type a sentence with [MASK] where the model should guess "
                                "a word."))
        return fill_mask_view(self.page.models.get(model), text_value(text, "The masked text"), top_k_value(top_k),
                              self.alternatives, tr)

    def fill_mask(self, model, text, top_k, request: gr.Request = None):
        """(message, table, figure, the text predicted). A refusal is an error without a toast (API clients read it
        as before); the page says it in one sentence where the message is (`refused`), over the last good result."""
        try:
            return (*self._fill_mask(model, text, top_k, tr_of(request)), text)
        except gr.Error as err:
            raise self._refuse(request, err.message) from None

    def _refuse(self, request, message: str) -> gr.Error:
        """Remember why this visitor's request was refused, for `refused` (a failure listener gets no error), and
        the error to raise: no toast, no traceback."""
        self._refusals[getattr(request, "session_hash", None)] = message
        while len(self._refusals) > 1000:  # a bound, as the sessions themselves have
            self._refusals.pop(next(iter(self._refusals)))
        return gr.Error(message, visible=False, print_exception=False)

    def refused(self, last, request: gr.Request = None) -> str:
        """After a refused prediction: why, and the text the dimmed result below still belongs to."""
        why = self._refusals.pop(getattr(request, "session_hash", None), None) or tr_of(request)(
            "The text was not predicted.")
        return stale_notice(why, last if isinstance(last, str) else None,
                            tr_of(request)("The predictions below are still those of the last text predicted"))

    def refused_lens(self, request: gr.Request = None) -> str:
        why = self._refusals.pop(getattr(request, "session_hash", None), None) or tr_of(request)(
            "The logit lens was not computed.")
        return stale_notice(why, None, "")

    def lens_of_box(self, model, text, mask_number, request: gr.Request = None):
        """The slider's logit lens: refused as a prediction is (one sentence in place, no toast)."""
        try:
            return self.logit_lens(model, text, mask_number, request)
        except gr.Error as err:
            raise self._refuse(request, err.message) from None

    @user_errors
    def from_analysis(self, session, top_k, predicted, request: gr.Request = None):
        """When the analyzed input has a [MASK]: that sentence in the fill box, its predictions and the logit lens at
        its first mask (what `mask_start_outputs` shows); otherwise the tab stays as it was."""
        explorer, run = self.page.models.run_of(session)
        text = masked_sentence(explorer, run)
        if text is None:
            return (gr.skip(),) * len(self.mask_start_outputs)
        k, tr = top_k_value(top_k), tr_of(request)
        try:
            message, table, bars = fill_mask_view(explorer, text, k, self.alternatives, tr)
        except ValueError as err:  # more masks than the tab reads: said in place, the last result dimmed
            why = tr.message(str(err))
            return (text, stale_notice(why[:1].upper() + why[1:], predicted,
                                       tr("The predictions below are still those of the last text predicted")),
                    *(gr.skip(),) * (len(self.mask_start_outputs) - 2))
        count = len(table.iloc[:, 0].unique()) if len(table) else 1  # the masks' numbers
        lens = logit_lens_view(explorer, text, 1, alternatives=self.alternatives, tr=tr)
        return (text, message, table, bars, text,
                gr.update(maximum=max(count, 2), value=1, visible=count > 1), *lens)

    @staticmethod
    def lens_range(table, mask_number):
        """The lens slider offers exactly the masks of the text just predicted (read off its table); with one mask
        there is nothing to choose, and no slider."""
        count = max([int(row[0]) for row in getattr(table, "values", [])] or [MAX_MASKS])
        value = min(max(int(mask_number or 1), 1), count)
        return gr.update(maximum=max(count, 2), value=value, visible=count > 1)

    @user_errors
    def logit_lens(self, model, text, mask_number, request: gr.Request = None):
        return logit_lens_view(self.page.models.get(model), text_value(text, "The masked text"),
                               index_value(mask_number if mask_number is not None else 1, MAX_MASKS + 1, "Mask"),
                               alternatives=self.alternatives, tr=tr_of(request))

    @user_errors
    def mask_token(self, session, token, top_k, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        index = None if token is None or token == "" else index_value(token, len(run), "Token")
        return masked_token_view(explorer, run, index, top_k_value(top_k), self.alternatives, tr_of(request))

    @user_errors
    def corrupt(self, session, seed, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        return corruption_view(explorer, run, index_value(seed if seed is not None else 0, 2**31, "Sample"),
                               tr_of(request))

    @user_errors
    def replaced(self, session, request: gr.Request = None):
        explorer, run = self.page.models.run_of(session)
        return (gr.update(visible=explorer.has_replaced_head), *replaced_view(explorer, run, tr_of(request)))

    @user_errors
    def new_analysis(self, session, request: gr.Request = None):
        """This model's explainer and views, and the new input's tokens to choose from."""
        explorer, run = self.page.models.run_of(session)
        choices = [(f"{i}: {t}", i) for i, t in enumerate(run.labels)]
        return (mlm_status(explorer, self.alternatives, tr_of(request)), gr.update(visible=explorer.has_mlm_head),
                gr.update(choices=choices, value=None))

    # --- events --------------------------------------------------------------------------------------------------
    def wire(self) -> None:
        page = self.page
        # Before after_analysis reuses mask_token privately: gradio names an endpoint after its first use.
        self.mask_choice.input(self.mask_token, [page.session, self.mask_choice, self.top_k], self.masked_out,
                               **page.api("mask_token"))
        lens_io = ([page.model, self.mask_text, self.lens_mask], self.lens_out)
        mask_table = self.mask_out[1]
        # A refusal (no [MASK], too many, an empty box) is said in place over the last good result, dimmed, as the
        # input's refusals are (layout.InputArea): no red "Error" over the results, no toast piling up.
        quiet = dict(show_progress="hidden")
        predicted = gr.on([self.predict.click, self.mask_text.submit], self.fill_mask,
                          [page.model, self.mask_text, self.top_k], [*self.mask_out, self.predicted],
                          **page.api("fill_mask"), **quiet)
        predicted.failure(self.refused, [self.predicted], [self.mask_out[0]], **api("fill_mask_refused", False),
                          queue=False)
        (predicted
         .success(self.lens_range, [mask_table, self.lens_mask], [self.lens_mask], **api("lens_range", False),
                  **quiet)
         .success(self.logit_lens, *lens_io, **page.api("logit_lens"), **quiet))
        lens = self.lens_mask.release(self.lens_of_box, *lens_io, **page.api("logit_lens", False), **quiet)
        lens.failure(self.refused_lens, None, [self.lens_out[0]], **api("lens_refused", False), queue=False)
        (self.another.click(lambda n: (n or 0) + 1, [self.seed], [self.seed], **api("next_seed", False), queue=False)
         .then(self.corrupt, [page.session, self.seed], self.corruption_out, **page.api("corrupt", False)))
        self.seed.submit(self.corrupt, [page.session, self.seed], self.corruption_out, **page.api("corrupt", False))

    def after_analysis(self, event: Gate, public: bool) -> None:
        """The new model's explainer and token choices; the analyzed sentence's [MASK], if it has one, in the fill
        box with its predictions and logit lens; a cleared masked-token result (it belonged to the last input); the
        new input as a pretraining example."""
        page, session = self.page, self.page.session
        (event
         .then(self.new_analysis, [session], [self.explainer, self.views, self.mask_choice],
               **page.api("new_analysis", False))
         .then(self.from_analysis, [session, self.top_k, self.predicted], self.mask_start_outputs,
               **page.api("mask_from_analysis", False))
         .then(self.mask_token, [session, self.mask_choice, self.top_k], self.masked_out,
               **page.api("mask_token", False))
         .then(self.replaced, [session], [self.replaced_views, *self.replaced_out],
               **page.api("replaced", False))
         .then(self.corrupt, [session, self.seed], self.corruption_out, **page.api("corrupt", public)))
