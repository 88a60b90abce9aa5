"""Activation patching (causal/patching.py) against a hand-written loop of forward hooks on transformers' BertModel:
the same two inputs, one transformers pass per cell, every cell within 1e-5; and its refusals, one sentence each."""

from __future__ import annotations

import numpy as np
import pytest
import torch


CLEAN, CORRUPTED = "The keys to the cabinet [MASK] on the table.", "The key to the cabinet [MASK] on the table."
ATOL = 1e-5


@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer


class Transformers:
    """Patching done by hand on transformers' model: forward hooks record each run's activations, and one pass per cell
    puts the other run's activation in place."""

    def __init__(self, hf, clean, corrupted, a: int, b: int, position: int):
        self.hf, self.a, self.b, self.position = hf, a, b, position
        self.inputs = [(torch.tensor([e.ids]), torch.tensor([e.segment_ids])) for e in (clean, corrupted)]
        self.layers = hf.bert.encoder.layer
        self.heads = hf.config.num_attention_heads
        self.recorded = [self._record(i) for i in range(2)]

    def _modules(self, layer):
        block = self.layers[layer]
        return {"input": (block, "pre"), "context": (block.attention.output.dense, "pre"),
                "attention": (block.attention.output.dense, "out"), "ffn": (block.output.dense, "out")}

    def metric(self, which: int) -> float:
        ids, segments = self.inputs[which]
        with torch.no_grad():
            logits = self.hf(input_ids=ids, token_type_ids=segments).prediction_logits[0, self.position]
        return float(logits[self.a] - logits[self.b])

    def _record(self, which: int) -> list[dict]:
        found = [{} for _ in self.layers]
        hooks = []
        for layer in range(len(self.layers)):
            for name, (module, side) in self._modules(layer).items():
                def hook(module, args, kwargs_or_out=None, *rest, layer=layer, name=name, side=side):
                    value = args[0] if side == "pre" else kwargs_or_out
                    found[layer][name] = (value[0] if isinstance(value, tuple) else value).clone()
                hooks.append(module.register_forward_pre_hook(hook) if side == "pre" else
                             module.register_forward_hook(hook))
        try:
            self.metric(which)
        finally:
            for h in hooks:
                h.remove()
        return found

    def patched(self, base: int, layer: int, name: str, change) -> float:
        """The metric of run `base` with `change(value, source_value)` applied at (layer, name), source = the other."""
        source = self.recorded[1 - base][layer][name]
        module, side = self._modules(layer)[name]
        if side == "pre":
            hook = module.register_forward_pre_hook(lambda m, args: (change(args[0], source), *args[1:]))
        else:
            hook = module.register_forward_hook(lambda m, args, out: change(out, source))
        try:
            return self.metric(base)
        finally:
            hook.remove()


def _by_hand(ref: Transformers, over: str, base: int, T: int) -> np.ndarray:
    L, h = len(ref.layers), ref.heads
    d = ref.hf.config.hidden_size // h
    if over == "heads":
        def head(k):
            def change(x, source):
                x = x.clone()
                x[..., k * d:(k + 1) * d] = source[..., k * d:(k + 1) * d]  # (1, T, H): head k's d columns
                return x
            return change
        return np.array([[ref.patched(base, l, "context", head(k)) for k in range(h)] for l in range(L)])
    if over == "positions":
        def position(p):
            def change(x, source):
                x = x.clone()
                x[:, p] = source[:, p]
                return x
            return change
        return np.array([[ref.patched(base, l, "input", position(p)) for p in range(T)] for l in range(L)])
    whole = lambda x, source: source.clone()  # noqa: E731
    return np.array([[ref.patched(base, l, name, whole) for name in ("attention", "ffn")] for l in range(L)])


@pytest.mark.parametrize("over, direction", [("heads", "denoise"), ("positions", "denoise"), ("layers", "denoise"),
                                             ("heads", "noise"), ("layers", "noise")])
def test_every_cell_equals_hooks_on_transformers(explorer, hf, over, direction):
    clean, corrupted = explorer.run(CLEAN), explorer.run(CORRUPTED)
    frame = clean.patch(corrupted, metric=("are", "is"), over=over, direction=direction)
    tok = explorer.tokenizer
    position = clean.tokens.index("[MASK]")
    ref = Transformers(hf, clean.encoding, corrupted.encoding, tok.token_to_id("are"), tok.token_to_id("is"),
                       position)
    end_clean, end_corrupted = ref.metric(0), ref.metric(1)
    assert abs(frame.attrs["clean"] - end_clean) <= ATOL and abs(frame.attrs["corrupted"] - end_corrupted) <= ATOL
    assert end_clean - end_corrupted > 1  # the pair moves the metric: "are" for keys, "is" for key
    raw = _by_hand(ref, over, 1 if direction == "denoise" else 0, len(clean))
    np.testing.assert_allclose(frame.attrs["raw"], raw, atol=ATOL, rtol=0)
    np.testing.assert_allclose(frame.to_numpy(), (raw - end_corrupted) / (end_clean - end_corrupted),
                               atol=ATOL / (end_clean - end_corrupted) * 2, rtol=0)
    assert frame.shape == raw.shape and frame.index.name == "layer"


def test_the_two_ends_are_the_two_runs(explorer):
    """Restoring the whole residual stream before layer 0 at every position is the clean run (denoising's row 0 of
    positions sums to the clean run only position by position, so check the defining values instead): the clean and
    corrupted metrics of the frame are the two runs' own."""
    clean, corrupted = explorer.run(CLEAN), explorer.run(CORRUPTED)
    frame = clean.patch(corrupted, over="positions")
    keys = list(frame.columns).index("2 keys")
    assert frame.iloc[0, keys] == pytest.approx(1.0, abs=1e-5)  # the only token that differs, at the embeddings
    others = np.delete(frame.iloc[0].to_numpy(), keys)
    assert np.abs(others).max() <= 1e-5  # the other positions are the same in both inputs


def test_inputs_of_different_lengths_are_refused_with_both_tokenizations(explorer):
    with pytest.raises(ValueError, match=r"same number of tokens.*the clean one has 12 \(\[CLS\] the keys.*the "
                                         r"corrupted one 13 \(\[CLS\] the keys .* change a word"):
        explorer.patch(CLEAN, "The keys to the big cabinet [MASK] on the table.")


@pytest.mark.parametrize("metric, sentence", [
    (("are", "zzzqqq"), "'zzzqqq' is not one word piece"),
    ("loss", "metric must be two answers for the \\[MASK\\]"),
])
def test_a_metric_it_cannot_measure_is_one_sentence(explorer, metric, sentence):
    with pytest.raises(ValueError, match=sentence):
        explorer.patch(CLEAN, CORRUPTED, metric=metric)


def test_without_a_mask_it_says_where_to_write_one(explorer):
    with pytest.raises(ValueError, match="the clean input has no \\[MASK\\]"):
        explorer.patch("The keys to the cabinet are on the table.", "The key to the cabinet are on the table.")
