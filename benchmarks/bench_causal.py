"""Speed of activation patching (causal/patching.py) on the default model at 32 tokens, against a peer in the same
process: the same cells, one whole forward pass each with its intervention (the naive loop).

    heads      72 cells (6 layers x 12 heads), denoising (target: <= 2 s on 2 CPU cores)
    positions  6 layers x 32 positions (target: <= 2 s)
    zeroing    value zeroing of every layer at 32 tokens (target: <= 1 s), against one pass per (layer, token)
    flow       attention flow at 32 and at FLOW_MAX_TOKENS tokens (the bound, chosen from this measure)
    contrast   explorer.contrast's integrated gradients of logit(are) - logit(is), 50 steps, against captum's
               IntegratedGradients on transformers' BertForPreTraining (the test's oracle), the same 50 points in
               one batch
    curves     the deletion and insertion curves of six methods (the passes only, scores given), batched with each
               distinct input once, against one pass per curve point

Each pair runs alternately (A, B, A, B) so that a neighbour loading the machine hits both alike; the ratio reported is
the median of the per-repetition ratios, with the load average beside it.

    .venv/bin/python benchmarks/bench_causal.py [--threads 2] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bertviz_app  # noqa: E402
from bertviz_app.analysis import FLOW_MAX_TOKENS, attention_flow  # noqa: E402
from bertviz_app.causal import patch, value_zeroing  # noqa: E402
from bertviz_app.model import Edit  # noqa: E402

CLEAN = "The keys to the old wooden cabinet in the back room of the house by the lake [MASK] on the kitchen table"
CORRUPTED = CLEAN.replace("keys", "key", 1)
TOKENS = 32


def pair(explorer):
    """A minimal pair of exactly TOKENS tokens: words appended to both until the length is reached."""
    clean, corrupted = CLEAN, CORRUPTED
    filler = iter(" next to the lamp and the old clock , which had stopped long ago at noon .".split())
    while len(explorer.encode(clean)) < TOKENS:
        word = next(filler)
        clean, corrupted = clean + " " + word, corrupted + " " + word
    a, b = explorer.encode(clean), explorer.encode(corrupted)
    assert len(a) == len(b) == TOKENS, (len(a), len(b))
    return a, b


def naive(model, clean, corrupted, over: str, are: int, is_: int):
    """One whole pass of the corrupted input per cell, the clean activation put in by a named point."""
    config = model.config
    L, h = config.num_hidden_layers, config.num_attention_heads
    ids = torch.tensor([clean.ids, corrupted.ids])
    names = ("embeddings", "layer.*.output", "layer.*.attention.context")
    source = model.bert(ids, capture=names).captured
    position = clean.tokens.index("[MASK]")
    values = []
    for layer in range(L):
        for cell in range(h if over == "heads" else len(clean)):
            if over == "heads":
                edit = {f"layer.{layer}.attention.context": Edit(value=source[f"layer.{layer}.attention.context"][:1],
                                                                 heads=[cell])}
            else:
                name = "embeddings" if layer == 0 else f"layer.{layer - 1}.output"
                edit = {name: Edit(value=source[name][:1], positions=[cell])}
            out = model(ids[1:], intervene=edit)
            logits = out.prediction_logits[0, position]
            values.append(float(logits[are] - logits[is_]))
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="+", default=["heads", "positions", "zeroing", "flow", "contrast", "curves"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    explorer = bertviz_app.load(device="cpu")
    model, tok = explorer.model, explorer.tokenizer
    clean, corrupted = pair(explorer)
    are, is_ = tok.token_to_id("are"), tok.token_to_id("is")
    print(f"{os.cpu_count()} CPUs, torch.set_num_threads({args.threads}), torch {torch.__version__}; default model, "
          f"{len(clean)} tokens; load average {os.getloadavg()[0]:.1f}")
    with torch.inference_mode():
        patch(model, tok, clean, corrupted, over="heads")  # warm-up
        for over in [o for o in ("heads", "positions") if o in args.only]:
            ours, theirs = [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                patch(model, tok, clean, corrupted, over=over)
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                naive(model, clean, corrupted, over, are, is_)
                theirs.append(time.perf_counter() - start)
            ratios = [a / b for a, b in zip(ours, theirs)]
            cells = model.config.num_hidden_layers * (model.config.num_attention_heads if over == "heads"
                                                      else len(clean))
            print(f"{over}: {cells} cells, batched {statistics.median(ours):.2f} s, one pass per cell "
                  f"{statistics.median(theirs):.2f} s, ratio {statistics.median(ratios):.2f}; load average "
                  f"{os.getloadavg()[0]:.1f}")

        if "zeroing" in args.only:
            ours, theirs = [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                value_zeroing(model, clean)
                ours.append(time.perf_counter() - start)
                start = time.perf_counter()
                zeroing_one_by_one(model, clean)
                theirs.append(time.perf_counter() - start)
            print(f"value zeroing: batched {statistics.median(ours):.2f} s, one layer pass per token "
                  f"{statistics.median(theirs):.2f} s, ratio {statistics.median(ours) / statistics.median(theirs):.2f}"
                  f"; load average {os.getloadavg()[0]:.1f}")
    if "contrast" in args.only:
        alternate("contrast", args.repeats, lambda: explorer.contrast(clean, "are", "is"),
                  captum_peer(explorer, clean))
    if "curves" in args.only:
        ours, peer = curves_pair(explorer, clean)
        alternate("curves", args.repeats, ours, peer)
    if "flow" in args.only:
        for n in (32, FLOW_MAX_TOKENS):
            text = " ".join(["the keys to the cabinet are on the table ."] * 6)
            run = explorer.run(explorer.tokenizer.decode(explorer.encode(text).ids[1:n - 1]))
            start = time.perf_counter()
            attention_flow(run.attentions)
            print(f"attention flow at {len(run)} tokens ({len(run) ** 2} maximum flows): "
                  f"{time.perf_counter() - start:.2f} s; load average {os.getloadavg()[0]:.1f}")


def alternate(name: str, repeats: int, ours, peer) -> None:
    """Time `ours` and `peer` in turn, `repeats` times each; print the medians and the median ratio."""
    mine, theirs = [], []
    ours(), peer()  # warm-up
    for _ in range(repeats):
        start = time.perf_counter()
        ours()
        mine.append(time.perf_counter() - start)
        start = time.perf_counter()
        peer()
        theirs.append(time.perf_counter() - start)
    ratios = [a / b for a, b in zip(mine, theirs)]
    print(f"{name}: ours {statistics.median(mine):.2f} s, peer {statistics.median(theirs):.2f} s, ratio "
          f"{statistics.median(ratios):.2f}; load average {os.getloadavg()[0]:.1f}")


def captum_peer(explorer, encoding):
    """captum's integrated gradients of the same logit difference on transformers' model, 50 Gauss-Legendre points."""
    import transformers
    from captum.attr import IntegratedGradients

    from bertviz_app import catalog
    from bertviz_app.targets import resolve_contrast

    hf = transformers.BertForPreTraining.from_pretrained(catalog.default_model_path(), dtype=torch.float32).eval()
    target = resolve_contrast(explorer.model, explorer.tokenizer, encoding, "are", "is")
    types = torch.tensor([encoding.segment_ids])
    table = hf.bert.embeddings.word_embeddings.weight.detach()
    inputs = table[torch.tensor([encoding.ids])]
    fixed = torch.tensor(encoding.special_tokens_mask, dtype=torch.bool)
    fixed[target.position] = True
    baseline = torch.where(fixed[None, :, None], inputs, table[explorer.tokenizer.pad_token_id])

    def f(embeds):
        logits = hf(inputs_embeds=embeds, token_type_ids=types.expand(len(embeds), -1)).prediction_logits
        return logits[:, target.position, target.token_id] - logits[:, target.position, target.other_id]

    ig = IntegratedGradients(f)
    return lambda: ig.attribute(inputs, baselines=baseline, n_steps=50, method="gausslegendre", internal_batch_size=50)


def curves_pair(explorer, encoding):
    """(ours, peer): the curves' passes for six methods' scores (random here: the passes are the cost), batched with
    each distinct input once, against one pass per point of every curve."""
    from bertviz_app import analysis
    from bertviz_app.curves import evaluate, faithfulness_curves, fixed_positions, resolve

    model, tok = explorer.model, explorer.tokenizer
    target = resolve(model, tok, encoding, ("are", "is"))
    generator = torch.Generator().manual_seed(0)
    scores = {f"method {m}": torch.rand(len(encoding), generator=generator).numpy() for m in range(6)}
    keep = ~fixed_positions(tok, encoding)

    def peer():
        for values in scores.values():
            deletion, insertion = analysis.curve_inputs(encoding.ids, analysis.removal_order(values, keep),
                                                        tok.mask_token_id)
            for row in (*deletion, *insertion):
                evaluate(model, encoding, target, row[None])

    return lambda: faithfulness_curves(model, tok, encoding, target, scores=scores), peer


def zeroing_one_by_one(model, encoding) -> None:
    """Value zeroing's T passes per layer, one at a time (the naive loop)."""
    from bertviz_app.model import Edit, Points
    ids = torch.tensor([encoding.ids])
    captured = model.bert(ids, capture=("embeddings", "layer.*.output")).captured
    states = [captured["embeddings"], *(captured[f"layer.{i}.output"] for i in range(model.config.num_hidden_layers))]
    for layer in range(model.config.num_hidden_layers):
        for j in range(len(encoding)):
            zeroed = Points(intervene={f"layer.{layer}.attention.values": Edit(factor=0.0, positions=[j])})
            model.bert.encoder.apply_layer(layer, states[layer], None, zeroed)


if __name__ == "__main__":
    main()
