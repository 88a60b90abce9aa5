"""The Compare tab: the analyzed input beside a second one (a minimal pair: "The keys to the cabinet is/are ...")
or beside the same input in a second model (all-MiniLM-L6-v2 before our pretraining, the default model after),
in two copies of the attention views that follow each other's layer, head and token; under them, how much each
head changed, the heads that changed most, and each layer's change (with the weights' for two models: fine-tuning
moves the last layers most)."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from ... import analysis, figures
from ...i18n import Translator, english
from ..common import MAX_CHARS, api, plain, refuse, text_value, tr_of, user_errors
from .base import Gate, TabPage
from .compare_patch import PatchSection
from .hidden import shared_layers_note

INTRO = ("Compare the analyzed input (left) with a second input or a second model (right): change one word (*The "
         "keys to the cabinet **is** / **are** on the table*), or pick another model to see what training changed. "
         "The two views move together; under them, each head's change (total variation distance between the two "
         "attention rows, averaged over the rows: 0 the same, 1 nothing in common).")


class CompareTab:
    id, title = "compare-tab", "Compare"

    def __init__(self, page: TabPage):
        self.page, self.host = page, page.host
        host = page.host
        gr.Markdown(INTRO)
        with gr.Row(equal_height=True):
            self.other_a = gr.Textbox(label="Second input: sentence A", max_length=MAX_CHARS, scale=4,
                                      elem_id="compare-a")
            self.other_b = gr.Textbox(label="Sentence B (optional)", max_length=MAX_CHARS, scale=3,
                                      elem_id="compare-b")
            self.other_model = gr.Dropdown(page.models.names, value=page.models.names[-1], label="Its model",
                                           scale=2, min_width=200, elem_id="compare-model")
            page.model_pickers.append(self.other_model)  # a model fine-tuned in the app joins it too
            self.button = gr.Button("Compare", variant="primary", scale=1, elem_id="compare")
        self.prefilled = gr.State(None)  # the (a, b) prefill last put in the boxes: while they hold it, untouched
        self.picked = gr.State(False)  # the visitor chose the second model: it stays whatever the input
        self.message = gr.Markdown(elem_id="compare-message")
        with gr.Row(equal_height=False, elem_id="compare-views"):  # stacked on a phone (app.css)
            self.left = host.component("compare-left", id_prefix="cmp-a-", sync="compare")
            self.right = host.component("compare-right", id_prefix="cmp-b-", sync="compare")
        # shown only when the two sides can be compared head by head (the message says why not)
        with gr.Column(visible=False) as self.results:
            # the heat map wider than the table: 12 heads and its color scale fit at 1280 x 720; stacked on a phone
            with gr.Row(elem_id="compare-results-row"):
                self.change = gr.Plot(label="How much each head changed", scale=3, elem_id="compare-change")
                self.table = gr.Dataframe(interactive=False, label="The heads that changed most", max_height=420,
                                          scale=2, elem_id="compare-table")
            self.layers = gr.Plot(label="How much each layer changed", elem_id="compare-layers")
        self.patching = PatchSection(self)  # "Patch B into A": compare_patch.py
        # what `against` fills: the second input, its model, and the comparison
        self.against_outputs = [self.other_a, self.other_b, self.other_model, self.picked, self.prefilled,
                                self.message, self.left, self.right, self.change, self.table, self.layers, self.results]

    @user_errors
    def prefill(self, session, other_a, other_b, prefilled, picked):
        """The analyzed input as the starting point of the second one, for every new analysis, until the visitor
        types in the boxes (then theirs stays); and the second model that goes with it."""
        a, b, prefilled = prefill_values(session, other_a, other_b, prefilled)
        typed = (other_a if isinstance(a, dict) else a, other_b if isinstance(b, dict) else b)
        return a, b, prefilled, self.second_model(session, *typed, picked)

    def second_model(self, session, other_a, other_b, picked):
        """The second model while the visitor has not chosen one: the analyzed input's own when the second input
        differs from it (a minimal pair changes one thing, the word), the page's other model when it is the same
        input (what training changed)."""
        if picked or not isinstance(session, dict):
            return gr.update()
        same = ((other_a or "").strip(), (other_b or "").strip()) == (session["text"].strip(),
                                                                      (session["pair"] or "").strip())
        return self.page.models.names[-1] if same else session["model"]

    @user_errors
    def compare(self, session, other_a, other_b, other_model, request: gr.Request = None):
        explorer_a, run_a = self.page.models.run_of(session)
        tr = tr_of(request)
        explorer_b = self.page.models.get(other_model)
        other_a, other_b = text_value(other_a, "The second sentence A"), text_value(other_b, "The second sentence B")
        if not other_a.strip():
            raise refuse(tr("Type the second input (its sentence A), or keep the analyzed one and pick another "
                            "model."))
        run_b = explorer_b.run(other_a, other_b or None)
        left, right = self.host.value(session["model"], run_a), self.host.value(other_model, run_b)
        same_model = explorer_a.name == explorer_b.name
        shared = {shared_layers_note(explorer, tr) for explorer in (explorer_a, explorer_b)} - {""}  # ALBERT's layers
        pairs = _pairs(run_a, run_b, tr) + depth_note(run_a.num_layers, run_b.num_layers, tr) + "".join(
            f" {note}" for note in sorted(shared))
        if len(run_a) != len(run_b) or run_a.num_heads != run_b.num_heads:
            why = (tr("the two inputs have different numbers of tokens") if len(run_a) != len(run_b)
                   else tr("the two models have different numbers of heads per layer"))
            family_a, family_b = explorer_a.family.name, explorer_b.family.name
            if family_a != family_b:  # BERT beside RoBERTa: each reads the input with its own tokenizer
                why = tr("{why}: {left} (left) and {right} (right) each split the input with their own tokenizer, so "
                         "their tokens need not line up", why=why, left=family_a, right=family_b)
            return (tr("**Side by side below, but no head-by-head difference:** {why} ({n_a} against {n_b} tokens, "
                       "{heads_a} against {heads_b} heads): a head can be compared only between inputs of as many "
                       "tokens (change one word for one word).", why=why, n_a=len(run_a), n_b=len(run_b),
                       heads_a=f"{run_a.num_layers}x{run_a.num_heads}", heads_b=f"{run_b.num_layers}x{run_b.num_heads}")
                    + pairs,
                    left, right, None, pd.DataFrame(), None, gr.update(visible=False))
        difference = run_a.compare(run_b)
        ranking = difference.ranking().head(12).astype({"change": float, "max_difference": float}).round(3)
        if same_model:
            changed = ", ".join(f"{plain(run_a.labels[i])} → {plain(run_b.labels[i])}" for i in difference.differing)
            what = tr("the inputs differ at {changed}", changed=changed) if changed else tr("the inputs are the same")
        else:
            changed = ", ".join(f"{plain(run_a.labels[i])} → {plain(run_b.labels[i])}" for i in difference.differing)
            inputs = (tr(", and the inputs differ at {changed}", changed=changed) if changed
                      else " " + tr("on one input"))
            if not changed and (run_a.encoding.text, run_a.encoding.text_pair) != (run_b.encoding.text,
                                                                                  run_b.encoding.text_pair):
                inputs = " " + tr("on inputs that differ only in what the tokenizer drops (case, accents, spaces)")
            what = tr("{left} (left) against {right} (right)", left=plain(explorer_a.name),
                      right=plain(explorer_b.name)) + inputs
        top = ranking.iloc[0]
        row = int(difference.layer_change.argmax())
        where = (tr("layer {a} (left) ↔ {b} (right), head {head}", a=int(top["layer"]), b=int(top["layer_b"]),
                    head=int(top["head"])) if difference.paired_by_depth
                 else tr("layer {n}, head {head}", n=int(top["layer"]), head=int(top["head"])))
        layer = (tr("layer {a} ↔ {b}", a=difference.layers_a[row], b=difference.layers_b[row])
                 if difference.paired_by_depth else tr("layer {n}", n=row))
        layers = {"attention on this input (total variation)": difference.layer_change}
        if not same_model and explorer_a.config.num_hidden_layers == explorer_b.config.num_hidden_layers:
            try:
                layers["weights (relative change)"] = explorer_a.layer_change(explorer_b)
            except ValueError:  # the same numbers of layers and heads, other sizes: no weights to set side by side
                pass
        # both views open on the head the message names (the right one at its paired layer)
        left["open"] = {"layer": int(top["layer"]), "head": int(top["head"])}
        right["open"] = {"layer": int(top["layer_b"] if difference.paired_by_depth else top["layer"]),
                         "head": int(top["head"])}
        message = tr("Compared: {what}. The head that changed most is {where} (change {change}); the layer that "
                     "changed most is {layer}.", what=what, where=where, change=f"{top['change']:.2f}", layer=layer)
        message += f" {_per_layer(layers, tr)}{pairs}"
        change = figures.attention_change_figure(difference.head_change, layers_a=difference.layers_a,
                                                 layers_b=difference.layers_b, tr=tr)
        ranking.columns = [tr(str(name)) for name in ranking.columns]  # layer, head, change, ...: words, not tokens
        return (message, left, right, change, ranking, figures.layer_change_figure(layers, tr=tr),
                gr.update(visible=True))

    def against(self, session, other_model: str, request=None) -> tuple:
        """The values of `against_outputs`: the analyzed input compared with itself under `other_model`."""
        if not isinstance(session, dict):
            raise refuse("Nothing analyzed yet: type a sentence and press Analyze.")
        a, b = session["text"], session["pair"] or ""
        return (a, b, other_model, True, [a, b], *self.compare(session, a, b, other_model, request))

    def wire(self) -> None:
        self.button.click(self.compare, [self.page.session, self.other_a, self.other_b, self.other_model],
                          [self.message, self.left, self.right, self.change, self.table, self.layers,
                           self.results],
                          **self.page.api("compare"))
        self.other_model.input(lambda: True, None, self.picked, **api("compare_model_picked", False), queue=False)
        for box in (self.other_a, self.other_b):  # change, not input: a paste or a filled box counts too
            box.change(self.second_model, [self.page.session, self.other_a, self.other_b, self.picked],
                      self.other_model, **api("compare_second_model", False), queue=False)
        self.patching.wire()

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.prefill, [self.page.session, self.other_a, self.other_b, self.prefilled, self.picked],
                   [self.other_a, self.other_b, self.prefilled, self.other_model], **api("compare_prefill", False),
                   queue=False)


def prefill_values(session, other_a, other_b, prefilled):
    """(sentence A, sentence B, prefilled) of the second input after an analysis: the analyzed input while the boxes
    are empty or still hold the last prefill, whatever the visitor typed otherwise."""
    if not isinstance(session, dict):  # nothing analyzed (a refused first input)
        return gr.update(), gr.update(), prefilled
    typed = (other_a or "", other_b or "")
    if typed[0].strip() and (prefilled is None or typed != tuple(prefilled)):
        return gr.update(), gr.update(), prefilled
    new = (session["text"], session["pair"] or "")
    return new[0], new[1], list(new)


def _per_layer(layers: dict, tr: Translator = english) -> str:
    """Each layer's change, first layer to last, in words."""
    said = []
    for name, values in layers.items():
        percent = "weights" in name
        said.append(f"{tr(name).split(' (')[0]} " + ", ".join(f"{v:.2%}" if percent else f"{v:.3f}" for v in values))
    return tr("Change per layer, first to last: {changes}.", changes="; ".join(said))


def depth_note(layers_a: int, layers_b: int, tr: Translator = english) -> str:
    """In words, how layers are paired when the two models' depths differ (empty when they match)."""
    if layers_a == layers_b:
        return ""
    shallow, deep = sorted((layers_a, layers_b))
    pairs = ", ".join(f"{layer} \u2194 {analysis.paired_layer(layer, shallow, deep)}" for layer in range(shallow))
    return " " + (tr("The left model has {shallow} layers and the other {deep}: layers are paired by relative depth, "
                     "each layer of the left one with the layer as far through the deeper stack ({pairs}), and the "
                     "two views move together that way.", shallow=shallow, deep=deep, pairs=pairs)
                  if layers_a < layers_b else
                  tr("The right model has {shallow} layers and the other {deep}: layers are paired by relative depth, "
                     "each layer of the right one with the layer as far through the deeper stack ({pairs}), and the "
                     "two views move together that way.", shallow=shallow, deep=deep, pairs=pairs))


def _pairs(run_a, run_b, tr: Translator = english) -> str:
    """A sentence when one side is a pair and the other not: a sentence B left in a box changes every head."""
    a, b = run_a.encoding, run_b.encoding
    if a.is_pair == b.is_pair:
        return ""
    which = b if b.is_pair else a
    text = plain(which.text_pair[:80])
    return " " + (tr("Note: the right input is a pair (its sentence B: “{text}”) and the left one a single sentence; "
                     "empty sentence B to compare single sentences.", text=text) if b.is_pair else
                  tr("Note: the left input is a pair (its sentence B: “{text}”) and the right one a single sentence; "
                     "empty sentence B to compare single sentences.", text=text))
