"""Gradio UI: wiring only."""

from __future__ import annotations

import gradio as gr
import pandas as pd

from .explorer import load


def build_demo(model: str | None = None, device: str = "auto") -> gr.Blocks:
    explorer = load(model, device)

    def analyze(text: str, text_pair: str):
        try:
            run = explorer.run(text, text_pair or None)
        except (ValueError, TypeError) as err:
            raise gr.Error(str(err)) from None
        enc = run.encoding
        return pd.DataFrame({"position": enc.positions, "token": enc.tokens, "id": enc.ids,
                             "segment": ["A" if t == 0 else "B" for t in enc.type_ids]})

    with gr.Blocks(title="bertviz-app") as demo:
        gr.Markdown(f"# bertviz-app\nModel: {explorer.name}")
        a = gr.Textbox(label="Sentence A", value="The cat sat on the mat.", elem_id="sentence-a")
        b = gr.Textbox(label="Sentence B (optional)", value="It was tired.", elem_id="sentence-b")
        button = gr.Button("Analyze", elem_id="analyze")
        table = gr.Dataframe(elem_id="token-table")
        button.click(analyze, [a, b], table)
        demo.load(analyze, [a, b], table)
    return demo
