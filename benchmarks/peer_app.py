"""The peer of the class figure (issue #42): the attention app a user writes in an afternoon, with Gradio, Hugging Face
`transformers` and plotly, on the same default model. bench_app.py serves it as its own process and sends it the
same burst of visitors as ours (`--peer`). Written the plain way on purpose (defaults everywhere: gradio's queue,
torch's threads, one plotly heatmap per head in one figure); it is not part of the package.

    .venv/bin/python benchmarks/peer_app.py MODEL_FOLDER PORT
"""

from __future__ import annotations

import sys

import gradio as gr
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots
from transformers import BertModel, BertTokenizerFast

folder, port = sys.argv[1], int(sys.argv[2])
tokenizer = BertTokenizerFast.from_pretrained(folder)
model = BertModel.from_pretrained(folder, output_attentions=True).eval()


def attention(text: str):
    inputs = tokenizer(text, return_tensors="pt", truncation=True, max_length=256)
    with torch.no_grad():
        attentions = model(**inputs).attentions  # layers x (1, heads, T, T)
    tokens = tokenizer.convert_ids_to_tokens(inputs["input_ids"][0])
    layers, heads = len(attentions), attentions[0].shape[1]
    figure = make_subplots(rows=layers, cols=heads,
                           subplot_titles=[f"layer {l} head {h}" for l in range(layers) for h in range(heads)])
    for l, layer in enumerate(attentions):
        for h in range(heads):
            figure.add_trace(go.Heatmap(z=layer[0, h].numpy(), x=tokens, y=tokens, coloraxis="coloraxis"),
                             row=l + 1, col=h + 1)
    figure.update_layout(height=220 * layers, width=220 * heads, coloraxis={"colorscale": "Blues"})
    return figure


demo = gr.Interface(attention, gr.Textbox(label="Sentence"), gr.Plot(label="Attention, every head"))

if __name__ == "__main__":
    demo.launch(server_name="127.0.0.1", server_port=port)
