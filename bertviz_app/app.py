"""The Gradio UI: layout and event wiring only. Numbers come from `Run` (explorer.py) and `analysis`, pictures
from `figures`; every handler here is a few lines that pick the Run, call them and turn errors into words.

Models are global (loaded once in `load_models`, shared by every visitor); what belongs to one visitor is the key of
their current Run, kept in `gr.State` (the Run itself stays in the Explorer's LRU cache, so a slider redraws
without a forward pass and a session holds a few strings, not megabytes of arrays).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import html
import io
import json
import logging
import socket
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import gradio as gr
import pandas as pd

from . import figures
from .explorer import ASSETS, Explorer, Run, builtin_models, load
from .masked_lm import normalise_mask

log = logging.getLogger(__name__)

MAX_CHARS = 20_000  # per box; the tokenizer is fast, but a pasted book should not reach it
MAX_MASKS = 20
MAX_TOP_K = 20
SEGMENT_CHOICES = [("all tokens", "all"), ("A → A", "A->A"), ("A → B", "A->B"), ("B → A", "B->A"), ("B → B", "B->B")]
NO_MLM_HEAD = ("**{name} has no masked-LM head**, so it cannot predict masked tokens: its checkpoint was saved "
               "without the `cls.predictions` weights (sentence-embedding models such as all-MiniLM-L6-v2 drop "
               "them). Start the app with a checkpoint that has them, e.g. `bertviz-app --model "
               "bert-base-uncased`, and pick it in the model list.")
NO_NSP_HEAD = ("**{name} has no next-sentence head**, so it cannot say whether sentence B follows sentence A: its "
               "checkpoint was saved without the `cls.seq_relationship` weights. A checkpoint from BERT's "
               "pre-training (e.g. `bert-base-uncased`) has them.")


# --- models --------------------------------------------------------------------------------------------------------
def load_models(sources: Sequence[str | None], device: str = "auto", max_tokens: int | None = None
                ) -> dict[str, Explorer]:
    """Load every model the operator named, once, keyed by the name the model picker shows (None: the default).
    Raises ValueError (CheckpointError, a missing GPU...) with a message for the command line."""
    explorers: dict[str, Explorer] = {}
    for source in sources:
        explorer = load(source, device=device, max_tokens=max_tokens)
        if explorer.name in explorers:
            continue  # the same model named twice is offered once
        explorers[explorer.name] = explorer
    return explorers


def read_examples(path: Path = ASSETS / "examples.json") -> tuple[list[list[str]], list[str]]:
    """(sentence pairs, masked sentences) from assets/examples.json; one built-in pair when the file is absent
    (an installed wheel without the assets folder still opens with something to look at)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        pairs = [[str(p["a"]), str(p.get("b") or "")] for p in doc["pairs"]]
        masked = [str(m) for m in doc.get("masked", [])]
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("could not read the examples in %s (%s); using one built-in example", path, err)
        pairs, masked = [], []
    return (pairs or [["The cat sat on the mat.", "It was tired."]],
            masked or ["The capital of France is [MASK]."])


# --- errors --------------------------------------------------------------------------------------------------------
def user_errors(fn: Callable) -> Callable:
    """Every failure reaches the visitor as a sentence in a gr.Error, never as a traceback. ValueError and TypeError
    are the library's way of saying "this input cannot work" and are shown as they are; anything else is our bug:
    logged with its traceback on the server, shown as a short apology."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except (ValueError, TypeError, KeyError, IndexError) as err:
            message = str(err).strip("'\"") or type(err).__name__
            raise gr.Error(message[:1].upper() + message[1:], print_exception=False) from None
        except Exception:
            log.exception("%s failed", fn.__name__)
            raise gr.Error("Something went wrong on the server while drawing this view; the details are in the "
                           "server's log. Try another input.", print_exception=False) from None

    return wrapper


def _text(value, what: str) -> str:
    """A text box's value, checked at the boundary (the API accepts anything JSON can carry)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise gr.Error(f"{what} must be text.", print_exception=False)
    if len(value) > MAX_CHARS:
        raise gr.Error(f"{what} has {len(value):,} characters; paste at most {MAX_CHARS:,} (the model reads only "
                       "the first few hundred tokens anyway).", print_exception=False)
    return value


def _top_k(value) -> int:
    return max(1, _index(value if value is not None else 5, MAX_TOP_K + 1, "Predictions per mask"))


def _index(value, upper: int, what: str) -> int:
    """A slider or dropdown value as an index in [0, upper), clipped: a model switch can shrink the range."""
    try:
        index = int(value)
    except (TypeError, ValueError):
        raise gr.Error(f"{what} must be a whole number.", print_exception=False) from None
    return min(max(index, 0), upper - 1)


# --- the views: Run + controls -> figures ------------------------------------------------------------------------
# Each returns the figures of one part of a tab, in the order of that part's outputs. The heatmap comes back on its
# own so that a slider answers at once; the slower companions follow in a chained event.
def heatmap_view(run: Run, layer: int, head: int, segment: str, hide_special: bool):
    try:
        return run.attention_figure(layer, head, hide_special=hide_special, segments=segment)
    except ValueError as err:  # an empty block (B -> B of a single sentence): say so, show the whole matrix
        gr.Warning(f"{str(err)[:1].upper()}{str(err)[1:]}.")
        return run.attention_figure(layer, head)


def attention_detail_views(run: Run, layer: int, head: int, segment: str, hide_special: bool, token: int):
    """Mean over the layer's heads, rollout up to the layer, one token to and from every head, query x key."""
    try:
        mean = run.attention_figure(layer, None, hide_special=hide_special, segments=segment)
        rollout = run.rollout_figure(layer, hide_special=hide_special, segments=segment)
    except ValueError:  # the empty block was already reported by heatmap_view
        mean, rollout = run.attention_figure(layer, None), run.rollout_figure(layer)
    return mean, rollout, run.token_attention_figure(layer, token), run.query_key_figure(layer, head, token)


def overview_views(run: Run):
    return run.head_overview_figure(), run.head_map_figure()


def embedding_views(run: Run):
    return run.embedding_figure(), run.segment_figure()


def hidden_views(run: Run, layer: int):
    return (run.hidden_norms_figure(), run.layer_similarity_figure(), run.token_similarity_figure(layer),
            run.hidden_projection_figure())


def fill_mask_view(explorer, text: str, top_k: int):
    """(message, table with one row per mask and rank, bar chart or None). `explorer` needs has_mlm_head, name and
    fill_mask(text, top_k=k) -> one list of (token, probability) per [MASK], in order."""
    text = normalise_mask(text)
    empty = pd.DataFrame(columns=["mask", "rank", "token", "probability"])
    if not explorer.has_mlm_head:
        return NO_MLM_HEAD.format(name=_plain(explorer.name)), empty, None
    count = text.count("[MASK]")
    if count == 0:
        raise gr.Error("Put [MASK] where a word should be predicted, e.g. 'The cat sat on the [MASK].'",
                       print_exception=False)
    if count > MAX_MASKS:
        raise gr.Error(f"{count} masks is too many; use at most {MAX_MASKS}.", print_exception=False)
    predictions = explorer.fill_mask(text, top_k=top_k)
    rows = [(m + 1, r + 1, str(token), _significant(p)) for m, best in enumerate(predictions)
            for r, (token, p) in enumerate(best)]
    table = pd.DataFrame(rows, columns=["mask", "rank", "token", "probability"])
    return (f"Top {top_k} predictions for each of the {len(predictions)} mask(s), by {_plain(explorer.name)}.",
            table, figures.fill_mask_figure(predictions))


def logit_lens_view(explorer, text: str, mask_number: int, top_k: int = 3):
    """(message, one row per layer, figure or None): the MLM head read out of every layer at one [MASK]."""
    empty = pd.DataFrame(columns=["layer", "top predictions", "P(final answer)"])
    if not explorer.has_mlm_head:
        return NO_MLM_HEAD.format(name=_plain(explorer.name)), empty, None
    count = normalise_mask(text).count("[MASK]")
    if count == 0:
        raise gr.Error("The logit lens looks at a [MASK]: put one in the text.", print_exception=False)
    mask_number = min(max(mask_number, 1), count)  # the slider may point past the masks of a new text
    lens = explorer.logit_lens(text, top_k=top_k, mask_index=mask_number - 1)
    names = ["embeddings"] + [f"layer {i}" for i in range(1, len(lens.layers))]
    table = pd.DataFrame(
        [(name, "  ·  ".join(f"{t} {_percent(p)}" for t, p in best), _percent(p_final))
         for name, best, p_final in zip(names, lens.layers, lens.final_token_probability)],
        columns=empty.columns)
    label = f"mask {mask_number} (token {lens.position})"
    figure = figures.logit_lens_figure(lens.layers, lens.final_token, lens.final_token_probability, label)
    return (f"Logit lens at {label}: the masked-LM head applied to each layer's output. The final answer is "
            f"**{_plain(lens.final_token)}**; the last column shows how sure each layer already is of it.",
            table, figure)


def masked_token_view(explorer, run: Run, index: int | None, top_k: int):
    """(message, predictions table, figure or None) after masking token `index` of the analyzed input; an empty
    result while no token is chosen."""
    empty = pd.DataFrame(columns=["rank", "token", "probability"])
    if not explorer.has_mlm_head:
        return NO_MLM_HEAD.format(name=_plain(explorer.name)), empty, None
    if index is None:
        return "", empty, None
    enc = run.encoding
    # explorer.mask_token encodes with the explorer's own --max-tokens, so `index` names the same token as in run
    result = explorer.mask_token(enc.text, index, enc.text_pair, top_k=top_k)
    table = pd.DataFrame([(r + 1, t, _significant(p)) for r, (t, p) in enumerate(result.predictions)],
                         columns=empty.columns)
    figure = figures.masked_token_figure(result.original, result.predictions, result.original_probability,
                                         result.original_rank)
    return (f"Token {index}, **{_plain(result.original)}**, replaced by [MASK]: the model gives the original token "
            f"**{_percent(result.original_probability)}** (rank {result.original_rank:,} of "
            f"{explorer.config.vocab_size:,}).", table, figure)


def corruption_view(explorer, run: Run, seed: int):
    """(message, one row per token, figure): the analyzed input as one pretraining example (80/10/10 rule)."""
    enc = run.encoding
    ex = explorer.corrupt_example(enc.text, enc.text_pair, seed=seed)
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


def next_sentence_view(explorer, run: Run) -> tuple[str, dict | None]:
    """(message, {label: probability} for gr.Label or None)."""
    if not explorer.has_nsp_head:
        return NO_NSP_HEAD.format(name=_plain(explorer.name)), None
    if not run.encoding.is_pair:
        return ("**A pair is needed:** type a sentence B as well (and press Analyze); the next-sentence head judges "
                "whether B follows A."), None
    p = run.is_next_probability
    return (f"**P(B follows A) = {p:.1%}** according to {_plain(explorer.name)}'s next-sentence head "
            f"({'IsNext' if p >= 0.5 else 'NotNext'}).", {"IsNext": p, "NotNext": 1 - p})


def _significant(p: float) -> float:
    # four significant digits: an untrained model's 0.00003 must not read as 0
    return float(f"{float(p):.4g}")


def _percent(p: float) -> str:
    return f"{float(p) * 100:.3g}%"


def _plain(token: str) -> str:
    """A token inside Markdown, shown as the characters it is (a token may be '*', '<' or '`')."""
    return html.escape(token).replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_").replace("`", "\\`")


def build_demo(explorers: Mapping[str, Explorer] | Explorer | None = None, *, concurrency: int = 1,
               examples: tuple[list[list[str]], list[str]] | None = None) -> gr.Blocks:
    """The app. `explorers`: name -> loaded model, as `load_models` returns (the model picker offers exactly these);
    one Explorer; or None for the built-in models on the best device. `concurrency`: forward passes at once."""
    if explorers is None:
        explorers = load_models(list(builtin_models()))
    elif isinstance(explorers, Explorer):
        explorers = {explorers.name: explorers}
    explorers = dict(explorers)
    if not explorers:
        raise ValueError("build_demo needs at least one model")
    pairs, masked_examples = examples or read_examples()
    names = list(explorers)
    first = explorers[names[0]]

    def explorer_for(name) -> Explorer:
        # gradio checks the picker's value against its choices too; this also covers every other endpoint
        if not isinstance(name, str) or name not in explorers:
            raise gr.Error(f"Unknown model {str(name)[:80]!r}; choose one of: {', '.join(names)}.",
                           print_exception=False)
        return explorers[name]

    def run_of(session) -> Run:
        if not isinstance(session, dict):
            raise gr.Error("Nothing analyzed yet: type a sentence and press Analyze.", print_exception=False)
        return explorer_for(session["model"]).run(session["text"], session["pair"] or None)

    drawn: dict[tuple[str, int], tuple] = {}

    def position_figures(model_name: str, run: Run, n: int):
        # pictures of the model's position table, the same for every input: drawn once per model and size
        key = (model_name, n)
        if key not in drawn:
            if len(drawn) > 32:
                drawn.clear()
            drawn[key] = (run.position_similarity_figure(n), run.position_path_figure(n))
        return drawn[key]

    def controls(run: Run, layer, head, token):
        return (_index(layer, run.num_layers, "Layer"), _index(head, run.num_heads, "Head"),
                _index(token if token is not None else 0, len(run), "Token"))

    def forget_replaced_components(request: gr.Request | None) -> None:
        # A prop update (gr.update(choices=...)) makes gradio build a new component for this session. Gradio 6.31
        # then files that component under its own new id as well, the next time it is an input, and never drops
        # it: a session grew by about three components (~15 kB) per analysis, for as long as it lived. Gradio looks
        # components up by the page's own ids, and files the current replacement of each under its new id while it
        # prepares an event, so only replacements that have since been replaced again can go. Reaching into
        # gradio's session internals is best effort: if they change shape, the session grows as before.
        try:
            state = demo.state_holder.session_data.get(getattr(request, "session_hash", None))
            if state is None:
                return
            blocks = state.blocks_config.blocks
            live = {id(blocks[k]) for k in demo.blocks if k in blocks}
            for key in [k for k, block in blocks.items() if k not in demo.blocks and id(block) not in live]:
                blocks.pop(key, None)
                state.config_values.pop(key, None)
        except (AttributeError, KeyError, RuntimeError):  # RuntimeError: another event changed the dict meanwhile
            pass

    # --- handlers ------------------------------------------------------------------------------------------------
    @user_errors
    def analyze(model, text, text_pair, layer, head, segment, hide_special, token, request: gr.Request = None):
        forget_replaced_components(request)
        explorer = explorer_for(model)
        text, text_pair = _text(text, "Sentence A"), _text(text_pair, "Sentence B")
        if not text.strip():
            raise gr.Error("Sentence A is empty: type a sentence (sentence B is optional).", print_exception=False)
        run = explorer.run(text, text_pair or None)
        layer, head, token = controls(run, layer, head, token)
        if not run.encoding.is_pair and segment not in ("all", "A->A"):
            segment = "all"  # a single sentence has no B block
        notice = f"{len(run)} tokens · forward pass {run.seconds * 1000:.0f} ms on {explorer.device}"
        if run.encoding.truncation is not None:
            gr.Warning(f"Input truncated: {run.encoding.truncation}.")
            notice += f"  \n**Truncated:** {run.encoding.truncation}."
        token_choices = [(f"{i}: {t}", i) for i, t in enumerate(run.tokens)]
        return ({"model": model, "text": text, "pair": text_pair}, run.token_table(), notice,
                # gr.update, not gr.Slider(...): a component built per request costs gradio ~10 ms of signature checks
                gr.update(maximum=run.num_layers - 1, value=layer), gr.update(maximum=run.num_heads - 1, value=head),
                segment, gr.update(choices=token_choices, value=token),
                gr.update(choices=token_choices, value=None),
                gr.update(maximum=run.num_layers, value=run.num_layers),  # another model may be shallower
                heatmap_view(run, layer, head, segment, bool(hide_special)),
                mlm_status(explorer), model_text(explorer))

    @user_errors
    def redraw_heatmap(session, layer, head, segment, hide_special):
        run = run_of(session)
        layer, head, _ = controls(run, layer, head, 0)
        return heatmap_view(run, layer, head, segment, bool(hide_special))

    @user_errors
    def redraw_attention_details(session, layer, head, segment, hide_special, token):
        run = run_of(session)
        layer, head, token = controls(run, layer, head, token)
        return attention_detail_views(run, layer, head, segment, bool(hide_special), token)

    @user_errors
    def redraw_overview(session):
        return overview_views(run_of(session))

    @user_errors
    def redraw_embeddings(session, positions):
        run = run_of(session)
        n = _index(positions, run.position_table().shape[0], "Positions") + 1
        return (*embedding_views(run), *position_figures(session["model"], run, max(n, 2)))

    @user_errors
    def redraw_hidden(session, layer):
        run = run_of(session)
        return hidden_views(run, _index(layer, run.num_layers + 1, "Layer"))

    @user_errors
    def redraw_token_similarity(session, layer):
        run = run_of(session)
        return run.token_similarity_figure(_index(layer, run.num_layers + 1, "Layer"))

    @user_errors
    def mask_token(session, token, top_k):
        run = run_of(session)
        index = None if token is None or token == "" else _index(token, len(run), "Token")
        return masked_token_view(explorer_for(session["model"]), run, index, _top_k(top_k))

    @user_errors
    def fill_mask(model, text, top_k):
        return fill_mask_view(explorer_for(model), _text(text, "The masked text"), _top_k(top_k))

    @user_errors
    def logit_lens(model, text, mask_number):
        return logit_lens_view(explorer_for(model), _text(text, "The masked text"),
                               _index(mask_number if mask_number is not None else 1, MAX_MASKS + 1, "Mask"))

    @user_errors
    def corrupt(session, seed):
        run = run_of(session)
        return corruption_view(explorer_for(session["model"]), run,
                               _index(seed if seed is not None else 0, 2**31, "Sample"))

    @user_errors
    def show_mlm_views(model):
        return gr.update(visible=explorer_for(model).has_mlm_head)

    @user_errors
    def next_sentence(session):
        run = run_of(session)
        return next_sentence_view(explorer_for(session["model"]), run)

    # --- layout --------------------------------------------------------------------------------------------------
    max_positions = first.config.max_position_embeddings
    with gr.Blocks(title="bertviz-app: see inside BERT", analytics_enabled=False) as demo:
        session = gr.State(None)
        gr.Markdown("# bertviz-app\nSee what BERT reads and computes: tokens, embeddings, attention, hidden states "
                    "and its predictions. Type one sentence, or two to see how BERT relates a pair.",
                    elem_id="intro")
        with gr.Row():
            with gr.Column(scale=3):
                sentence_a = gr.Textbox(label="Sentence A", value=pairs[0][0], lines=2, max_length=MAX_CHARS,
                                        elem_id="sentence-a")
                sentence_b = gr.Textbox(label="Sentence B (optional)", value=pairs[0][1], lines=2,
                                        max_length=MAX_CHARS, elem_id="sentence-b")
            with gr.Column(scale=1, min_width=220):
                model = gr.Dropdown(names, value=names[0], label="Model", interactive=len(names) > 1,
                                    elem_id="model")
                analyze_button = gr.Button("Analyze", variant="primary", elem_id="analyze")
                notice = gr.Markdown(elem_id="notice")
        example_list = gr.Examples(pairs, [sentence_a, sentence_b], label="Examples", examples_per_page=4)
        with gr.Accordion("Tokens: what BERT actually reads", open=True):
            token_table = gr.Dataframe(label="Tokens with segment and position ids", interactive=False,
                                       datatype="str", max_height=360, elem_id="token-table")

        with gr.Tabs():
            with gr.Tab("Attention", id="attention-tab"):
                with gr.Row():
                    layer = gr.Slider(0, first.config.num_hidden_layers - 1, value=0, step=1, label="Layer",
                                      elem_id="layer")
                    head = gr.Slider(0, first.config.num_attention_heads - 1, value=0, step=1, label="Head",
                                     elem_id="head")
                with gr.Row():
                    segment = gr.Radio(SEGMENT_CHOICES, value="all", label="Segments (from → to)",
                                       elem_id="segment-filter")
                    hide_special = gr.Checkbox(False, label="Hide [CLS] and [SEP]", elem_id="hide-special")
                    # custom values allowed: the choices change with every input, and _index checks the value
                    token = gr.Dropdown([], value=None, label="Token (attention to and from it)",
                                        allow_custom_value=True, elem_id="attention-token")
                heatmap = gr.Plot(label="One head", elem_id="attention-heatmap")
                with gr.Row():
                    mean_plot = gr.Plot(label="Mean over the layer's heads", elem_id="attention-mean")
                    rollout_plot = gr.Plot(label="Rollout up to this layer", elem_id="attention-rollout")
                token_plot = gr.Plot(label="Attention to and from the chosen token", elem_id="token-attention")
                query_key_plot = gr.Plot(label="Query · key: how the chosen token's row is made",
                                         elem_id="query-key")
                overview_plot = gr.Plot(label="Overview: every layer and head", elem_id="attention-overview")
                head_map_plot = gr.Plot(label="Head map: what each head does", elem_id="head-map")
            with gr.Tab("Embeddings", id="embeddings-tab"):
                embedding_plot = gr.Plot(label="Token + segment + position", elem_id="embedding-parts")
                segment_plot = gr.Plot(label="Segment embeddings", elem_id="segment-embeddings")
                positions = gr.Slider(2, max_positions, value=min(128, max_positions), step=1,
                                      label="Positions to compare", elem_id="positions")
                # one below the other: these figures have a fixed width that half a row would crop
                position_sim_plot = gr.Plot(label="Position similarity", elem_id="position-similarity")
                position_path_plot = gr.Plot(label="Position path", elem_id="position-path")
            with gr.Tab("Hidden states", id="hidden-tab"):
                norms_plot = gr.Plot(label="Norms", elem_id="hidden-norms")
                layer_sim_plot = gr.Plot(label="Layer-to-layer change", elem_id="layer-similarity")
                hidden_layer = gr.Slider(0, first.config.num_hidden_layers, value=first.config.num_hidden_layers,
                                         step=1, label="Layer for token similarity (0 = embeddings)",
                                         elem_id="hidden-layer")
                token_sim_plot = gr.Plot(label="Token similarity", elem_id="token-similarity")
                projection_plot = gr.Plot(label="Tokens through the layers", elem_id="hidden-projection")
            with gr.Tab("Masked LM", id="mlm-tab"):
                mlm_explainer = gr.Markdown(mlm_status(first), elem_id="mlm-explainer")
                # Hidden for a model without the head: its explainer above says why, instead of empty views.
                with gr.Column(visible=first.has_mlm_head, elem_id="mlm-views") as mlm_views:
                    gr.Markdown("### Fill in [MASK]")
                    with gr.Row():
                        mask_text = gr.Textbox(label="Text with one or more [MASK] (any case)",
                                               value=masked_examples[0], max_length=MAX_CHARS, scale=3,
                                               elem_id="mask-text")
                        with gr.Column(scale=1, min_width=200):
                            top_k = gr.Slider(1, MAX_TOP_K, value=5, step=1, label="Predictions per mask",
                                              elem_id="top-k")
                            mask_predict = gr.Button("Predict", variant="primary", elem_id="mask-predict")
                    gr.Examples([[m] for m in masked_examples], [mask_text], label="Masked examples")
                    with gr.Column(elem_id="mask-results"):
                        mask_message = gr.Markdown(elem_id="mask-message")
                        mask_plot = gr.Plot(label="Top predictions per mask", elem_id="mask-bars")
                        mask_table = gr.Dataframe(interactive=False, datatype="str", label="The same as a table",
                                                  max_height=300, elem_id="mask-table",
                                                  headers=["mask", "rank", "token", "probability"])
                    gr.Markdown("### Logit lens: how the answer forms through the layers")
                    lens_mask = gr.Slider(1, MAX_MASKS, value=1, step=1, label="Which [MASK] of the text",
                                          elem_id="lens-mask")
                    lens_message = gr.Markdown(elem_id="lens-message")
                    lens_plot = gr.Plot(label="Logit lens", elem_id="logit-lens")
                    lens_table = gr.Dataframe(interactive=False, datatype="str", label="Top predictions per layer",
                                              max_height=300, elem_id="lens-table",
                                              headers=["layer", "top predictions", "P(final answer)"])
                    gr.Markdown("### Mask one token of the analyzed input")
                    mask_choice = gr.Dropdown([], value=None, label="Token to mask (from the analyzed sentences)",
                                              allow_custom_value=True, elem_id="mask-token")
                    masked_message = gr.Markdown(elem_id="masked-message")
                    masked_plot = gr.Plot(label="Predictions at the masked token", elem_id="masked-token")
                    masked_table = gr.Dataframe(interactive=False, datatype="str", label="Predictions",
                                                max_height=300, elem_id="masked-table",
                                                headers=["rank", "token", "probability"])
                gr.Markdown("### What pretraining sees\nBERT learned by guessing hidden tokens: about 15% of the "
                            "word pieces are chosen; of those, 80% become [MASK], 10% a random token and 10% stay "
                            "unchanged. Here is the analyzed input as one such training example.")
                with gr.Row():
                    seed = gr.Number(0, precision=0, minimum=0, label="Sample (random seed)", elem_id="corrupt-seed")
                    another = gr.Button("Another sample", elem_id="corrupt-again")
                corruption_message = gr.Markdown(elem_id="corruption-message")
                corruption_plot = gr.Plot(label="One pretraining example", elem_id="corruption")
                corruption_table = gr.Dataframe(interactive=False, datatype="str", label="Token by token",
                                                max_height=300, elem_id="corruption-table",
                                                    headers=["position", "token", "the model reads", "change",
                                                             "to predict"])
            with gr.Tab("Next sentence", id="nsp-tab"):
                nsp = gr.Markdown(elem_id="next-sentence")
                nsp_label = gr.Label(num_top_classes=2, label="Does B follow A?", elem_id="next-sentence-label")
            with gr.Tab("Model", id="model-tab"):
                model_info = gr.Markdown(elem_id="model-info")

        # --- events ----------------------------------------------------------------------------------------------
        # A new input: one forward pass, then each group of views in its own step, so the heatmap shows first.
        model_events = dict(concurrency_id="model", concurrency_limit=concurrency)
        attention_controls = [layer, head, segment, hide_special, token]
        analyze_io = ([model, sentence_a, sentence_b, *attention_controls],
                      [session, token_table, notice, layer, head, segment, token, mask_choice, hidden_layer, heatmap,
                       mlm_explainer, model_info])
        details_io = ([session, *attention_controls], [mean_plot, rollout_plot, token_plot, query_key_plot])

        def views_after(event, public: bool):
            """The steps that follow a new input; the cheap pretraining-head views first, the heavy figures last.
            Named API endpoints once; the example click repeats the chain privately."""
            def named(name):
                return dict(api_name=name) if public else dict(api_visibility="private")
            (event
             .then(show_mlm_views, [model], [mlm_views], api_visibility="private")
             # analyze has just reset the token choice: this clears a token masked in the previous input or model
             .then(mask_token, [session, mask_choice, top_k], [masked_message, masked_table, masked_plot],
                   api_visibility="private")
             .then(next_sentence, [session], [nsp, nsp_label], **named("next_sentence"))
             .then(corrupt, [session, seed], [corruption_message, corruption_table, corruption_plot],
                   **named("corrupt"))
             .then(redraw_attention_details, *details_io, **named("attention_details"))
             .then(redraw_overview, [session], [overview_plot, head_map_plot], **named("attention_overview"))
             .then(redraw_embeddings, [session, positions],
                   [embedding_plot, segment_plot, position_sim_plot, position_path_plot], **named("embeddings"))
             .then(redraw_hidden, [session, hidden_layer],
                   [norms_plot, layer_sim_plot, token_sim_plot, projection_plot], **named("hidden_states")))

        # Before views_after, which reuses mask_token privately: gradio names an endpoint after its first use.
        mask_choice.input(mask_token, [session, mask_choice, top_k], [masked_message, masked_table, masked_plot],
                          api_name="mask_token", **model_events)
        views_after(gr.on([analyze_button.click, sentence_a.submit, sentence_b.submit, model.change, demo.load],
                          analyze, *analyze_io, api_name="analyze", **model_events), public=True)
        # An example click fills the boxes, then analyzes like the button (without a second API name).
        views_after(example_list.load_input_event.then(analyze, *analyze_io, api_visibility="private",
                                                       **model_events), public=False)

        # Sliders and toggles only redraw from the cached Run.
        (gr.on([c.input for c in (layer, head)] + [segment.input, hide_special.input],
               redraw_heatmap, [session, layer, head, segment, hide_special], [heatmap], api_name="attention",
               trigger_mode="always_last")
         .then(redraw_attention_details, *details_io, api_visibility="private", trigger_mode="always_last"))
        token.input(redraw_attention_details, *details_io, api_visibility="private", trigger_mode="always_last")
        positions.release(redraw_embeddings, [session, positions],
                          [embedding_plot, segment_plot, position_sim_plot, position_path_plot],
                          api_visibility="private")
        hidden_layer.input(redraw_token_similarity, [session, hidden_layer], [token_sim_plot],
                           api_name="token_similarity", trigger_mode="always_last")

        # The masked-LM views: each its own forward pass on demand (the Run holds no masked copies).
        lens_io = ([model, mask_text, lens_mask], [lens_message, lens_table, lens_plot])
        (gr.on([mask_predict.click, mask_text.submit], fill_mask, [model, mask_text, top_k],
               [mask_message, mask_table, mask_plot], api_name="fill_mask", **model_events)
         .success(logit_lens, *lens_io, api_name="logit_lens", **model_events))
        lens_mask.release(logit_lens, *lens_io, api_visibility="private", **model_events)
        (another.click(lambda n: (n or 0) + 1, [seed], [seed], api_visibility="private", queue=False)
         .then(corrupt, [session, seed], [corruption_message, corruption_table, corruption_plot],
               api_visibility="private"))
        seed.submit(corrupt, [session, seed], [corruption_message, corruption_table, corruption_plot],
                    api_visibility="private")
    return demo


def mlm_status(explorer: Explorer) -> str:
    if not explorer.has_mlm_head:
        return NO_MLM_HEAD.format(name=_plain(explorer.name))
    return (f"{_plain(explorer.name)} has a masked-LM head: it guesses the token hidden behind each [MASK], the task "
            "BERT was pre-trained on.")


def model_text(explorer: Explorer) -> str:
    c = explorer.config
    rows = "\n".join(f"| `{k}` | `{v}` |" for k, v in dataclasses.asdict(c).items())
    name = explorer.name.replace("`", "")
    return (f"### `{name}`\n\n"
            f"| | |\n|---|---|\n"
            f"| parameters | {explorer.model.num_parameters():,} |\n"
            f"| device | `{explorer.device}` |\n"
            f"| load time | {explorer.load_seconds:.2f} s |\n"
            f"| masked-LM head | {'yes' if explorer.has_mlm_head else 'no'} |\n"
            f"| next-sentence head | {'yes' if explorer.has_nsp_head else 'no'} |\n"
            f"| longest input | {explorer.max_tokens} tokens (longer inputs are truncated) |\n\n"
            f"#### Configuration\n\n| field | value |\n|---|---|\n{rows}\n")


# --- serving -------------------------------------------------------------------------------------------------------
def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serve(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int = 7860, share: bool = False,
          auth: list[tuple[str, str]] | None = None, block: bool = True, max_queue: int = 64) -> str:
    """Launch `demo` with safe defaults and return the local URL; with `block`, serve until Ctrl-C.

    Safe defaults: bound to 127.0.0.1 unless told otherwise; no run history (gradio 6 would otherwise record
    every call in the visitor's browser and offer a /gradio_api/runs page), no monitoring page, no MCP server,
    no extra file paths (gradio serves only its own cache of files our handlers return, and we return none).
    A --share link that cannot be made (offline) is reported in one clear line while the local server goes on."""
    demo.queue(max_size=max_queue, default_concurrency_limit=4)
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):  # gradio's banner and its long share advice: we say it shorter
        demo.launch(server_name=host, server_port=port or free_port(host), share=share, auth=auth,
                    prevent_thread_lock=True, quiet=True, show_error=False, run_history=False, ssr_mode=False,
                    mcp_server=False, enable_monitoring=False, footer_links=["api", "settings"],
                    css_paths=[ASSETS / "app.css"] if (ASSETS / "app.css").exists() else None)
    log.debug("gradio said: %s", captured.getvalue())
    url = demo.local_url
    print(f"bertviz-app: serving on {url} (Ctrl-C stops)", flush=True)
    if share:
        if demo.share_url:
            print(f"bertviz-app: public link {demo.share_url}", flush=True)
        else:
            print(f"bertviz-app: could not create the public --share link: gradio.live cannot be reached (no "
                  f"internet connection, or a firewall blocks it). The app keeps serving locally on {url}",
                  file=sys.stderr, flush=True)
    if block:
        demo.block_thread()
    return url
