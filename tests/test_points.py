"""The model's named points (model/points.py): every point we capture is what transformers computes at the same place
(read with transformers' own forward hooks, for BERT and every family member), an identity intervention changes
nothing bit for bit, and an intervention changes what it names and nothing upstream."""

from __future__ import annotations

import re

import pytest
import torch

import family_models
from bertviz_app.checkpoint import load_model
from bertviz_app.model import POINTS, Edit
from oracle_models import oracle_pair

TOL = dict(atol=1e-5, rtol=1e-5)
MEMBERS = {"bert": None, "roberta": {}, "distilbert": {}, "albert": {}, "electra": {}, "deberta-v2": {}}

# Where each of our points is in transformers' modules, for every family (module names by regex): ("out", pattern)
# reads a module's output, ("in", pattern) its first input. ALBERT's shared modules fire once per layer they serve, in
# layer order, so a list per point is the layers in order for every family.
WHERE = {
    "attention.queries": ("out", r"\.(query|q_lin|query_proj)$"),
    "attention.keys": ("out", r"\.(key|k_lin|key_proj)$"),
    "attention.values": ("out", r"\.(value|v_lin|value_proj)$"),
    "attention.context": ("in", r"attention\.(output\.dense|out_lin|dense)$"),
    "attention.output": ("out", r"attention\.(output\.dense|out_lin|dense)$"),
    "mid": ("out", r"(attention\.output|sa_layer_norm|attention\.LayerNorm)$"),
    "ffn.hidden": ("in", r"((?<!attention)\.output\.dense|ffn\.lin2|ffn_output)$"),
    "ffn.output": ("out", r"((?<!attention)\.output\.dense|ffn\.lin2|ffn_output)$"),
    "output": ("out", r"((encoder|transformer)\.layer\.\d+|albert_layers\.\d+)$"),
}
EMBEDDINGS = r"(embeddings_project|embedding_hidden_mapping_in)$"


def _pair(member: str, folder):
    if member == "bert":
        ours, hf, _ = oracle_pair(folder, seed=5)
        return ours, hf
    hf = family_models.build(member, folder, seed=7)
    return load_model(folder)[0].eval(), hf


def _batch(config, seed: int = 0) -> tuple[dict, list[int]]:
    """test_family's two inputs (13 and 9 real tokens, the second padded) and their lengths."""
    return family_models.batch(config, seed), [13, 9]


def _transformers_points(hf, batch: dict, heads: int) -> tuple[dict[str, list], object]:
    """Each point's tensors in layer order, from forward hooks on transformers' modules; and its output."""
    found = {name: [] for name in WHERE}
    found["embeddings"] = []
    hooks = []
    modules = list(hf.named_modules())
    projected = any(re.search(EMBEDDINGS, name) for name, _ in modules)

    shape = tuple(batch["input_ids"].shape)

    def keep(point, side):
        def hook(module, args, output):
            value = args[0] if side == "in" else output
            value = value[0] if isinstance(value, tuple) else value
            if tuple(value.shape[:2]) == shape:  # DeBERTa's query_proj also projects its position table
                found[point].append(value)
        return hook

    for name, module in modules:
        for point, (side, pattern) in WHERE.items():
            if re.search(pattern, name) and ".embeddings" not in name:
                hooks.append(module.register_forward_hook(keep(point, side)))
        if re.search(EMBEDDINGS if projected else r"\.embeddings$", name):
            hooks.append(module.register_forward_hook(keep("embeddings", "out")))
    try:
        with torch.no_grad():
            out = hf(**batch, output_attentions=True)
    finally:
        for hook in hooks:
            hook.remove()
    for point in ("attention.queries", "attention.keys", "attention.values", "attention.context"):
        # (B, T, H) -> (B, h, T, d), our per-head layout
        found[point] = [x.view(*x.shape[:2], heads, -1).transpose(1, 2) for x in found[point]]
    return found, out


@pytest.fixture(scope="module", params=list(MEMBERS))
def member(request, tmp_path_factory):
    ours, hf = _pair(request.param, tmp_path_factory.mktemp(request.param))
    return request.param, ours, hf.eval()


def test_every_captured_point_is_what_transformers_computes_there(member):
    name, ours, hf = member
    config = ours.config
    batch, lengths = _batch(config)
    theirs, hf_out = _transformers_points(hf, batch, config.num_attention_heads)
    with torch.no_grad():
        mine = ours(**batch, capture={"embeddings", "layer.*"})
    L = config.num_hidden_layers
    theirs["attention.probs"] = list(hf_out.attentions)
    checked = 0
    for point, values in theirs.items():
        expected = values
        ours_values = [mine.captured["embeddings"]] if point == "embeddings" else list(mine.layers(point))
        assert len(ours_values) == len(expected) == (1 if point == "embeddings" else L), (name, point)
        for i, (a, e) in enumerate(zip(ours_values, expected)):
            for b, n in enumerate(lengths):
                if a.dim() == 4:  # (B, h, T, ...): the real queries (and keys where the last axis is tokens)
                    a_b, e_b = a[b, :, :n], e[b, :, :n]
                    if point == "attention.probs":
                        a_b, e_b = a_b[..., :n], e_b[..., :n]
                else:
                    a_b, e_b = a[b, :n], e[b, :n]
                torch.testing.assert_close(a_b, e_b, **TOL, msg=lambda m: f"{name} {point} layer {i}: {m}")
                checked += 1
    assert checked == 2 * (1 + L * (len(WHERE) + 1))


def test_the_table_names_every_point_the_pass_makes(member):
    _, ours, _ = member
    with torch.no_grad():
        out = ours(**_batch(ours.config)[0], capture={"*"})  # everything, the heads included
    made = {re.sub(r"^layer\.\d+\.", "layer.{i}.", n) for n in out.captured}
    made = {re.sub(r"score\..+$", "score.{term}", n) for n in made}
    table = {p.name for p in POINTS}
    assert made <= table
    absent = table - made  # only what this member lacks
    assert absent <= {"pooler", "mlm.logits", "nsp.logits", "replaced.logits"}


def test_an_identity_intervention_changes_nothing_bit_for_bit(member):
    _, ours, _ = member
    batch, _ = _batch(ours.config, seed=1)
    names = [n for n in ours.bert.point_names() if not any(n.endswith(s) for s in ("value_grams", "attention.bias"))
             and ".score." not in n]
    with torch.no_grad():
        plain = ours(**batch, capture={"layer.*.attention.probs"})
        same = ours(**batch, capture={"layer.*.attention.probs"}, intervene={n: (lambda x: x) for n in names})
        scaled = ours(**batch, capture={"layer.*.attention.probs"},
                      intervene={n: Edit(factor=1.0) for n in names})
    for other in (same, scaled):
        assert torch.equal(other.last_hidden_state, plain.last_hidden_state)
        for name, value in plain.captured.items():
            assert torch.equal(other.captured[name], value), name


def test_an_intervention_changes_its_heads_and_positions_only(member):
    _, ours, _ = member
    batch, _ = _batch(ours.config, seed=2)
    with torch.no_grad():
        plain = ours.bert(**batch, capture={"layer.*.attention.context", "layer.0.attention.queries"})
        edited = ours.bert(**batch, capture={"layer.*.attention.context", "layer.0.attention.queries"},
                           intervene={"layer.1.attention.context": Edit(factor=0.0, heads=[2], positions=[0, 3])})
    before, after = plain.captured["layer.1.attention.context"], edited.captured["layer.1.attention.context"]
    assert after[:, 2, [0, 3]].abs().max() == 0 and before[:, 2, [0, 3]].abs().max() > 0
    keep = torch.ones_like(before, dtype=torch.bool)
    keep[:, 2, [0, 3]] = False
    assert torch.equal(after[keep], before[keep])
    # upstream untouched, downstream changed
    assert torch.equal(edited.captured["layer.0.attention.queries"], plain.captured["layer.0.attention.queries"])
    assert not torch.equal(edited.captured["layer.2.attention.context"], plain.captured["layer.2.attention.context"])


def test_a_replacement_puts_another_inputs_activation_in_place(member):
    _, ours, _ = member
    batch, _ = _batch(ours.config, seed=3)
    clean = {k: v[:1] for k, v in batch.items()}
    other = {k: v[1:] for k, v in batch.items()}
    with torch.no_grad():
        source = ours.bert(**clean, capture={"layer.0.output"}).captured["layer.0.output"]
        patched = ours.bert(**{**other, "attention_mask": clean["attention_mask"], "input_ids": other["input_ids"]},
                            intervene={"layer.0.output": Edit(value=source)})
        whole = ours.bert(**clean)
    # Replacing the whole residual stream after layer 0 gives the clean run from there on (the mask is the clean one).
    torch.testing.assert_close(patched.last_hidden_state, whole.last_hidden_state, rtol=0, atol=0)


@pytest.mark.parametrize("bad, sentence", [
    ({"capture": {"layer.9.output"}}, "names no point of this model"),
    ({"capture": {"layer.0.attention.weights"}}, "is not a point of the model"),
    ({"intervene": {"layer.0.attention.value_grams": Edit(factor=0.0)}}, "cannot be changed"),
])
def test_a_wrong_name_is_one_sentence(member, bad, sentence):
    _, ours, _ = member
    with pytest.raises(ValueError, match=sentence):
        ours.bert(**_batch(ours.config)[0], **bad)


def test_the_architecture_page_shows_the_table():
    """docs/ARCHITECTURE.md's table of points is POINTS, row for row."""
    from pathlib import Path
    page = (Path(__file__).parent.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    rows = [line for line in page.splitlines() if line.startswith("| `") and "(B," in line]
    assert [row.split("`")[1] for row in rows] == [p.name for p in POINTS]
