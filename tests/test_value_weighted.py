"""Value-weighted attention ||alpha_ij f(x_j)|| (Kobayashi et al. 2020): the model's per-token Gram matrices, the
analysis that turns them into (T, T) norms, and an independent computation of the same norms as vectors from the
checkpoint's weights through transformers (the oracle), in float64."""

import numpy as np
import pytest
import torch
import transformers

from bertviz_app.analysis.value_weighted import value_norms, value_weighted_attention, value_weighted_shares
from bertviz_app.catalog import ENGLISH_MLM_PATH
from oracle_models import oracle_pair

TOL = dict(rtol=1e-5, atol=1e-5)


def ours_stacked(model, ids, types):
    """(attentions (L, h, T, T), value_grams (L, T, h, h)) of one unpadded input, float32 numpy."""
    with torch.no_grad():
        out = model.bert(ids, types, capture={"layer.*.attention.probs", "layer.*.attention.value_grams"})
    return (torch.stack([a[0] for a in out.layers("attention.probs")]).numpy(),
            torch.stack([g[0] for g in out.layers("attention.value_grams")]).numpy())


def independent(hf_bert, ids, types):
    """Per layer: (per-head norms (h, T, T), summed-over-heads norms (T, T)), from transformers' hidden states,
    attentions and weights: f_h(x_j) built as vectors, alpha-weighted, then the norm taken. No Gram matrices."""
    with torch.no_grad():
        ref = hf_bert(input_ids=ids, token_type_ids=types, output_hidden_states=True, output_attentions=True)
    config = hf_bert.config
    h, d = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    out = []
    for layer, module in enumerate(hf_bert.encoder.layer):
        module = module.attention
        value, w_o = module.self.value, module.output.dense.weight.detach().double()  # w_o: (H_out, H_in)
        x = ref.hidden_states[layer][0].double()  # (T, H), the layer's input
        alpha = ref.attentions[layer][0].double()  # (h, T, T)
        v = x @ value.weight.detach().double().T + value.bias.detach().double()  # (T, H)
        f = torch.stack([v[:, k * d:(k + 1) * d] @ w_o[:, k * d:(k + 1) * d].T for k in range(h)])  # (h, T, H)
        weighted = alpha[..., None] * f[:, None, :, :]  # (h, T_i, T_j, H): alpha^h_ij f_h(x_j)
        out.append((weighted.norm(dim=-1).numpy(), weighted.sum(0).norm(dim=-1).numpy()))
    return out


def compare(model, hf_bert, ids, types) -> float:
    """Assert ours equals the independent computation everywhere; return the largest absolute difference."""
    attentions, grams = ours_stacked(model, ids, types)
    worst = 0.0
    for layer, (per_head, summed) in enumerate(independent(hf_bert, ids, types)):
        mine = value_weighted_attention(attentions, grams, layer)
        np.testing.assert_allclose(mine, summed, **TOL)
        worst = max(worst, float(np.abs(mine - summed).max()))
        for head in range(attentions.shape[1]):
            mine = value_weighted_attention(attentions, grams, layer, head)
            np.testing.assert_allclose(mine, per_head[head], **TOL)
            worst = max(worst, float(np.abs(mine - per_head[head]).max()))
    return worst


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return oracle_pair(tmp_path_factory.mktemp("vw"), seed=3)


@pytest.fixture(scope="module")
def encoded(pair):
    _, _, tokenizer = pair
    enc = tokenizer.encode("the cat sat on the mat .", "she poured a cup of tea .")
    return torch.tensor([enc.ids]), torch.tensor([enc.segment_ids])


def test_equals_an_independent_computation_from_the_weights(pair, encoded):
    model, hf, _ = pair
    assert compare(model, hf.bert, *encoded) < 1e-5


@pytest.mark.real_weights
def test_equals_an_independent_computation_on_the_default_model():
    from bertviz_app.checkpoint import load_model
    from bertviz_app.tokenizer import Tokenizer
    model, _ = load_model(ENGLISH_MLM_PATH)
    hf = transformers.BertModel.from_pretrained(ENGLISH_MLM_PATH, dtype=torch.float32,
                                                attn_implementation="eager").eval()
    enc = Tokenizer.from_folder(ENGLISH_MLM_PATH).encode("The keys to the cabinet [MASK] on the table.",
                                                         "They were lost yesterday.")
    assert compare(model.eval(), hf, torch.tensor([enc.ids]), torch.tensor([enc.segment_ids])) < 1e-5


def test_grams_are_symmetric_with_a_non_negative_diagonal_and_cost_nothing_unasked(pair):
    model, _, _ = pair
    ids = torch.tensor([[2, 7, 8, 9, 3, 10, 11, 3], [2, 12, 13, 3, 14, 3, 0, 0]])
    mask = (ids != 0).long()
    with torch.no_grad():
        plain = model(ids, attention_mask=mask, capture={"layer.*.attention.probs"})
        asked = model(ids, attention_mask=mask, capture={"layer.*.attention.probs", "layer.*.attention.value_grams"})
        fused = model(ids, attention_mask=mask)
    assert not any("value_grams" in name for name in plain.captured) and fused.captured == {}
    L, h = model.config.num_hidden_layers, model.config.num_attention_heads
    grams = asked.layers("attention.value_grams")
    assert len(grams) == L and grams[0].shape == (2, 8, h, h)
    for gram in grams:
        torch.testing.assert_close(gram, gram.transpose(-1, -2), rtol=1e-5, atol=1e-6)
        assert (torch.diagonal(gram, dim1=-2, dim2=-1) >= 0).all()
    # Asking for the Grams leaves every other output exactly as it was.
    torch.testing.assert_close(asked.prediction_logits, plain.prediction_logits, rtol=0, atol=0)
    for a, b in zip(asked.layers("attention.probs"), plain.layers("attention.probs"), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_invariants(pair, encoded):
    model, _, _ = pair
    attentions, grams = ours_stacked(model, *encoded)
    norms = value_norms(grams)  # (L, h, T)
    shares = value_weighted_shares(attentions, grams)  # what the views draw: each head's rows scaled to one
    L, h, T, _ = attentions.shape
    assert norms.shape == (L, h, T) and (norms >= 0).all()
    for layer in range(L):
        per_head = np.stack([value_weighted_attention(attentions, grams, layer, k) for k in range(h)])
        summed = value_weighted_attention(attentions, grams, layer)
        assert (per_head >= 0).all() and (summed >= 0).all()
        # One head: the attention weight scaled by the sending token's value norm, column by column.
        np.testing.assert_allclose(per_head, attentions[layer] * norms[layer][:, None, :], rtol=1e-6, atol=1e-7)
        # The norm of a sum is at most the sum of the norms, and the bound is not met in general.
        assert (summed <= per_head.sum(0) + 1e-5).all()
        assert (summed < per_head.sum(0) - 1e-4).any()
        np.testing.assert_allclose(shares[layer], per_head / per_head.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(shares.sum(-1), 1.0, atol=1e-6)


def test_shape_and_index_errors(pair, encoded):
    model, _, _ = pair
    attentions, grams = ours_stacked(model, *encoded)
    with pytest.raises(ValueError, match="capture the model's layer.*.attention.value_grams on the same input"):
        value_weighted_attention(attentions, grams[:, :-1], 0)
    with pytest.raises(ValueError, match="layer 3 is out of range"):
        value_weighted_attention(attentions, grams, 3)
    with pytest.raises(ValueError, match="head 6 is out of range"):
        value_weighted_attention(attentions, grams, 0, 6)
