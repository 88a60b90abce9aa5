"""The page: the input (sentences, model picker, Analyze), the token table and examples, then one tab per group of
views. A new input runs one forward pass in `analyze`, which also draws the attention heatmap; every tab then adds
its own steps after it (cheap views first, the heavy figures last)."""

from __future__ import annotations

from collections.abc import Mapping

import gradio as gr

from ..catalog import builtin_models, read_examples
from ..explorer import Explorer, load
from . import gradio_internals
from .attention import AttentionTab
from .common import MAX_CHARS, Models, Page, api, refuse, text_value, user_errors
from .embeddings import EmbeddingsTab
from .hidden import HiddenTab
from .masked_lm import MaskedLMTab
from .model_info import ModelTab
from .next_sentence import NextSentenceTab

INTRO = ("# bertviz-app\nSee what BERT reads and computes: tokens, embeddings, attention, hidden states and its "
         "predictions. Type one sentence, or two to see how BERT relates a pair.")


def load_models(sources, device: str = "auto", max_tokens: int | None = None, cache_mb: float | None = None
                ) -> dict[str, Explorer]:
    """Load every model the operator named, once, keyed by the name the model picker shows (None: the default).
    Raises ValueError (CheckpointError, a missing GPU...) with a message for the command line."""
    explorers: dict[str, Explorer] = {}
    extra = {} if cache_mb is None else {"cache_mb": cache_mb}
    for source in sources:
        explorer = load(source, device=device, max_tokens=max_tokens, **extra)
        explorers.setdefault(explorer.name, explorer)  # the same model named twice is offered once
    return explorers


class InputArea:
    """The sentences, the model picker, Analyze, the notice under it, the examples and the token table; its
    `analyze` handler runs the forward pass of a new input and draws the first view of the attention tab."""

    def __init__(self, models: Models, pairs: list[list[str]]):
        self.models = models
        with gr.Row():
            with gr.Column(scale=3):
                self.sentence_a = gr.Textbox(label="Sentence A", value=pairs[0][0], lines=2, max_length=MAX_CHARS,
                                             elem_id="sentence-a")
                self.sentence_b = gr.Textbox(label="Sentence B (optional)", value=pairs[0][1], lines=2,
                                             max_length=MAX_CHARS, elem_id="sentence-b")
            with gr.Column(scale=1, min_width=220):
                self.model = gr.Dropdown(models.names, value=models.names[0], label="Model",
                                         interactive=len(models.names) > 1, elem_id="model")
                self.button = gr.Button("Analyze", variant="primary", elem_id="analyze")
                self.notice = gr.Markdown(elem_id="notice")
        self.examples = gr.Examples(pairs, [self.sentence_a, self.sentence_b], label="Examples", examples_per_page=4)
        with gr.Accordion("Tokens: what BERT actually reads", open=True):
            self.token_table = gr.Dataframe(label="Tokens with segment and position ids", interactive=False,
                                            datatype="str", max_height=360, elem_id="token-table")

    def analysis(self, demo: gr.Blocks, page: Page, attention: AttentionTab) -> dict:
        """The keyword arguments of the analyze event: one forward pass, the token table, the notice, and the
        attention tab's first paint."""

        @user_errors
        def analyze(model, text, text_pair, layer, head, segment, hide_special, token, request: gr.Request = None):
            gradio_internals.forget_replaced_components(demo, request)
            explorer = self.models.get(model)
            text, text_pair = text_value(text, "Sentence A"), text_value(text_pair, "Sentence B")
            if not text.strip():
                raise refuse("Sentence A is empty: type a sentence (sentence B is optional).")
            run = explorer.run(text, text_pair or None)
            notice = f"{len(run)} tokens · forward pass {run.seconds * 1000:.0f} ms on {explorer.device}"
            if run.encoding.truncation is not None:
                gr.Warning(f"Input truncated: {run.encoding.truncation}.")
                notice += f"  \n**Truncated:** {run.encoding.truncation}."
            return ({"model": model, "text": text, "pair": text_pair}, run.token_table(), notice,
                    *attention.first_paint(run, layer, head, segment, hide_special, token))

        return dict(fn=analyze, inputs=[self.model, self.sentence_a, self.sentence_b, *attention.controls],
                    outputs=[page.session, self.token_table, self.notice, *attention.first_outputs],
                    **page.model_events)


def build_demo(explorers: Mapping[str, Explorer] | Explorer | None = None, *, concurrency: int = 1,
               examples: tuple[list[list[str]], list[str]] | None = None) -> gr.Blocks:
    """The app. `explorers`: name -> loaded model, as `load_models` returns (the model picker offers exactly these);
    one Explorer; or None for the built-in models on the best device. `concurrency`: forward passes at once."""
    if explorers is None:
        explorers = load_models(list(builtin_models()))
    elif isinstance(explorers, Explorer):
        explorers = {explorers.name: explorers}
    models = Models(explorers)
    pairs, masked_examples = examples or read_examples()
    with gr.Blocks(title="bertviz-app: see inside BERT", analytics_enabled=False) as demo:
        gr.Markdown(INTRO, elem_id="intro")
        inputs = InputArea(models, pairs)
        page = Page(models, gr.State(None), inputs.model, concurrency)
        with gr.Tabs():
            with gr.Tab("Attention", id="attention-tab"):
                attention = AttentionTab(page)
            with gr.Tab("Embeddings", id="embeddings-tab"):
                embeddings = EmbeddingsTab(page)
            with gr.Tab("Hidden states", id="hidden-tab"):
                hidden = HiddenTab(page)
            with gr.Tab("Masked LM", id="mlm-tab"):
                masked_lm = MaskedLMTab(page, masked_examples)
            with gr.Tab("Next sentence", id="nsp-tab"):
                next_sentence = NextSentenceTab(page)
            with gr.Tab("Model", id="model-tab"):
                model_tab = ModelTab(page)
        # The order of the steps after an analysis: the pretraining heads' cheap views first, heavy figures last.
        tabs = [masked_lm, next_sentence, model_tab, attention, embeddings, hidden]
        analysis = inputs.analysis(demo, page, attention)

        def follow(event, public: bool) -> None:
            for tab in tabs:
                event = tab.after_analysis(event, public)

        for tab in tabs:  # before `follow`: an endpoint is named after its first, public use
            tab.wire()
        follow(gr.on([inputs.button.click, inputs.sentence_a.submit, inputs.sentence_b.submit, inputs.model.change,
                      demo.load], **api("analyze"), **analysis), public=True)
        # An example click fills the boxes, then analyzes like the button (without a second API name).
        follow(inputs.examples.load_input_event.then(**api("analyze", False), **analysis), public=False)
    return demo
