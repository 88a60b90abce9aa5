"""The Model tab: name, parameters, device, load time, heads and the configuration of the analyzed model."""

from __future__ import annotations

import gradio as gr

from ...config import FIELD_WORDS, fields_that_apply
from ...explorer import Explorer
from ..common import api, user_errors
from .base import Gate, TabPage


def model_text(explorer: Explorer) -> str:
    c = explorer.config
    # the fine-tuning heads' fields mean nothing for a model without one (its num_labels is the default 2)
    shown = fields_that_apply(c, head=getattr(explorer, "task", None) is not None)
    rows = "\n".join(f"| `{k}` | {_value(getattr(c, k))} | {FIELD_WORDS[k]} |" for k in shown)
    name = explorer.name.replace("`", "")
    return (f"### `{name}`\n\n"
            f"| what | value |\n|---|---|\n"
            f"| parameters | {explorer.model.num_parameters():,} |\n"
            f"| device | `{explorer.device}` |\n"
            f"| load time | {explorer.load_seconds:.2f} s |\n"
            f"| masked-LM head | {'yes' if explorer.has_mlm_head else 'no'} |\n"
            f"| family | {explorer.family.name} |\n"
            f"| {explorer.family.sentence_head or 'next-sentence prediction'} head | "
            f"{'yes' if explorer.has_nsp_head else 'no'} |\n"
            f"| replaced-token head (ELECTRA) | {'yes' if explorer.has_replaced_head else 'no'} |\n"
            f"| longest input | {explorer.max_tokens} tokens (longer inputs are truncated) |\n\n"
            + ("#### What this family does differently from BERT\n\n" if explorer.family.lacks else "")
            + "".join(f"- {line}\n" for line in explorer.family.lacks) + "\n"
            f"#### Configuration\n\n| field | value | what it means |\n|---|---|---|\n{rows}\n")


def _value(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    return "not set" if value is None else f"`{value}`"


class ModelTab:
    id, title = "model-tab", "Model"

    def __init__(self, page: TabPage):
        self.page = page
        self.info = gr.Markdown(model_text(page.models.first), elem_id="model-info")

    @user_errors
    def show(self, model):
        return model_text(self.page.models.get(model))

    def wire(self) -> None:
        pass

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.show, [self.page.model], [self.info], **api("show", False))
