"""The Model tab: name, parameters, device, load time, heads and the configuration of the analyzed model."""

from __future__ import annotations

import gradio as gr

from ...config import FIELD_WORDS, fields_that_apply
from ...explorer import Explorer
from ...i18n import Translator, english
from ..common import api, tr_of, user_errors
from .base import Gate, TabPage


def model_text(explorer: Explorer, tr: Translator = english) -> str:
    """The model card in Markdown, its words in `tr`'s language (field names, values and the family's notes as the
    library writes them)."""
    c = explorer.config
    # the fine-tuning heads' fields mean nothing for a model without one (its num_labels is the default 2)
    shown = fields_that_apply(c, head=getattr(explorer, "task", None) is not None)
    rows = "\n".join(f"| `{k}` | {_value(getattr(c, k), tr)} | {tr(FIELD_WORDS[k])} |" for k in shown)
    name = explorer.name.replace("`", "")

    def has(yes: bool) -> str:
        return tr("yes") if yes else tr("no")

    sentence_head = (tr("{head} head", head=explorer.family.sentence_head) if explorer.family.sentence_head
                     else tr("next-sentence prediction head"))
    return (f"### `{name}`\n\n"
            f"| {tr('what')} | {tr('value')} |\n|---|---|\n"
            f"| {tr('parameters')} | {explorer.model.num_parameters():,} |\n"
            f"| {tr('device')} | `{explorer.device}` |\n"
            f"| {tr('load time')} | {explorer.load_seconds:.2f} s |\n"
            f"| {tr('masked-LM head')} | {has(explorer.has_mlm_head)} |\n"
            f"| {tr('family')} | {explorer.family.name} |\n"
            f"| {sentence_head} | {has(explorer.has_nsp_head)} |\n"
            f"| {tr('replaced-token head (ELECTRA)')} | {has(explorer.has_replaced_head)} |\n"
            f"| {tr('longest input')} | "
            f"{tr('{n} tokens (longer inputs are truncated)', n=explorer.max_tokens)} |\n\n"
            + ("#### " + tr("What this family does differently from BERT") + "\n\n" if explorer.family.lacks else "")
            + "".join(f"- {tr(line)}\n" for line in explorer.family.lacks) + "\n"
            f"#### {tr('Configuration')}\n\n| {tr('field')} | {tr('value')} | {tr('what it means')} |\n"
            f"|---|---|---|\n{rows}\n")


def _value(value, tr: Translator = english) -> str:
    if isinstance(value, bool):
        return tr("yes") if value else tr("no")
    if isinstance(value, tuple):
        return ", ".join(value) or tr("none")
    return tr("not set") if value is None else f"`{value}`"


class ModelTab:
    id, title = "model-tab", "Model"

    def __init__(self, page: TabPage):
        self.page = page
        self.info = gr.Markdown(model_text(page.models.first), elem_id="model-info")

    @user_errors
    def show(self, model, request: gr.Request = None):
        return model_text(self.page.models.get(model), tr_of(request))

    def wire(self) -> None:
        pass

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.show, [self.page.model], [self.info], **api("show", False))
