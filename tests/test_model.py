"""Our BERT on its own (tiny preset): shapes, invariants, the fused and eager paths, head masks, losses and the
errors a caller can cause. Parity with transformers is in test_parity.py."""

import pytest
import torch
import torch.nn.functional as F

from bertviz_app.config import BertConfig
from bertviz_app.model import (BertForPreTraining, BertForQuestionAnswering, BertForSequenceClassification,
                               BertForTokenClassification, BertModel)

TOL = dict(atol=1e-5, rtol=1e-5)
L, HEADS, H, D = 2, 4, 32, 8  # the tiny preset


@pytest.fixture(scope="module")
def config() -> BertConfig:
    return BertConfig.preset("tiny", type_vocab_size=3)


@pytest.fixture(scope="module")
def model(config) -> BertForPreTraining:
    torch.manual_seed(0)
    model = BertForPreTraining(config).eval()
    with torch.no_grad():  # LayerNorms and biases away from their initial 1 and 0
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    return model


@pytest.fixture(scope="module")
def batch() -> dict:
    """Two pairs, the second padded by 3."""
    ids = torch.randint(5, 100, (2, 9), generator=torch.Generator().manual_seed(1))
    ids[1, 6:] = 0
    types = torch.tensor([[0, 0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 0, 0, 0]])
    return dict(input_ids=ids, token_type_ids=types, attention_mask=(ids != 0).long())


EAGER = ("layer.*.attention.probs",)  # probabilities asked for: the explicit path, not the fused kernel

def full(model, batch, **kwargs):
    with torch.no_grad():
        return model(**batch, capture=("embeddings*", "layer.*.output", "layer.*.attention.probs",
                                       "layer.*.attention.queries", "layer.*.attention.keys"), **kwargs)


def hidden_states(out) -> tuple:
    return (out.captured["embeddings"], *out.layers("output"))


def test_output_shapes(model, batch):
    out = full(model, batch)
    B, T = batch["input_ids"].shape
    assert out.last_hidden_state.shape == (B, T, H) and out.pooler_output.shape == (B, H)
    assert len(hidden_states(out)) == L + 1 and all(h.shape == (B, T, H) for h in hidden_states(out))
    probs = out.layers("attention.probs")
    assert len(probs) == L and all(a.shape == (B, HEADS, T, T) for a in probs)
    assert all(q.shape == (B, HEADS, T, D) for q in out.layers("attention.queries") + out.layers("attention.keys"))
    assert out.captured["embeddings.token"].shape == out.captured["embeddings.position"].shape == (B, T, H)
    assert out.prediction_logits.shape == (B, T, 100) and out.seq_relationship_logits.shape == (B, 2)
    assert out.loss is None and out.mlm_loss is None and out.nsp_loss is None
    torch.testing.assert_close(hidden_states(out)[-1], out.last_hidden_state, rtol=0, atol=0)


def test_nothing_extra_unless_asked(model, batch):
    with torch.no_grad():
        out = model(**batch)
    assert out.captured == {}


def test_attention_rows_sum_to_one_and_ignore_padding(model, batch):
    out = full(model, batch)
    for probs in out.layers("attention.probs"):
        torch.testing.assert_close(probs.sum(-1), torch.ones(probs.shape[:-1]), **TOL)
        assert (probs >= 0).all()
        assert probs[1, :, :, 6:].abs().max().item() == 0.0  # nobody attends to the padding


def test_attention_recomputed_from_queries_and_keys(model, batch):
    out = full(model, batch)
    bias = (1.0 - batch["attention_mask"][:, None, None, :].float()) * torch.finfo(torch.float32).min
    for q, k, probs in zip(*(out.layers(f"attention.{p}") for p in ("queries", "keys", "probs")), strict=True):
        torch.testing.assert_close((q @ k.transpose(-1, -2) / D ** 0.5 + bias).softmax(-1), probs, **TOL)


def test_embedding_parts_rebuild_the_first_hidden_state(model, batch):
    out = full(model, batch)
    token, segment, position = (out.captured[f"embeddings.{part}"] for part in ("token", "segment", "position"))
    emb = model.bert.embeddings
    torch.testing.assert_close(token, emb.word_embeddings.weight[batch["input_ids"]], rtol=0, atol=0)
    torch.testing.assert_close(segment, emb.token_type_embeddings.weight[batch["token_type_ids"]], rtol=0, atol=0)
    torch.testing.assert_close(position[1], emb.position_embeddings.weight[:9], rtol=0, atol=0)
    with torch.no_grad():
        torch.testing.assert_close(emb.LayerNorm(token + segment + position), out.captured["embeddings"], rtol=0,
                                   atol=0)


@pytest.mark.parametrize("model_class", [BertForPreTraining, BertForSequenceClassification,
                                         BertForTokenClassification, BertForQuestionAnswering])
def test_fused_path_equals_eager_path(config, batch, model_class):
    torch.manual_seed(2)
    model = model_class(config).eval()
    with torch.no_grad():
        fused = model(**batch)
        eager = model(**batch, capture=EAGER)
    real = batch["attention_mask"].bool()
    compared = 0
    for name in ("last_hidden_state", "pooler_output", "prediction_logits", "seq_relationship_logits", "logits",
                 "start_logits", "end_logits"):
        a, b = getattr(fused, name, None), getattr(eager, name, None)
        if a is None:
            assert b is None
            continue
        per_token = a.shape[:2] == real.shape  # (B, T, ...): compare real tokens only
        torch.testing.assert_close(a[real] if per_token else a, b[real] if per_token else b, **TOL)
        compared += 1
    assert compared >= 2


def test_fused_and_eager_gradients_agree(config, batch):
    """Training runs on the fused path; its backward pass must be the eager one's."""
    torch.manual_seed(3)
    model = BertForPreTraining(config).eval()  # eval: no dropout, so the two passes are comparable
    labels = torch.where(batch["attention_mask"].bool(), batch["input_ids"], -100)
    grads = []
    for capture in ((), EAGER):
        model.zero_grad()
        model(**batch, labels=labels, next_sentence_label=torch.tensor([0, 1]), capture=capture).loss.backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], atol=1e-5, rtol=1e-4, msg=name)


def test_padding_does_not_change_real_tokens(model, batch):
    """The second example alone, unpadded, gives what it gives inside the padded batch."""
    alone = {k: v[1:, :6] for k, v in batch.items()}
    with torch.no_grad():
        a = model(**alone)
        b = model(**batch)
    torch.testing.assert_close(a.last_hidden_state[0], b.last_hidden_state[1, :6], **TOL)
    torch.testing.assert_close(a.prediction_logits[0], b.prediction_logits[1, :6], **TOL)
    torch.testing.assert_close(a.seq_relationship_logits[0], b.seq_relationship_logits[1], **TOL)


def test_defaults_for_segments_and_mask(model, batch):
    ids = batch["input_ids"][:1]
    with torch.no_grad():
        implicit = model(ids)
        explicit = model(ids, token_type_ids=torch.zeros_like(ids), attention_mask=torch.ones_like(ids))
        boolean = model(ids, attention_mask=torch.ones_like(ids, dtype=torch.bool))
    torch.testing.assert_close(implicit.prediction_logits, explicit.prediction_logits, rtol=0, atol=0)
    torch.testing.assert_close(boolean.prediction_logits, explicit.prediction_logits, rtol=0, atol=0)


def test_dropout_only_in_training(config, batch):
    torch.manual_seed(4)
    model = BertForPreTraining(config)
    model.train()
    a, b = model(**batch).last_hidden_state, model(**batch).last_hidden_state
    assert not torch.allclose(a, b)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(**batch).last_hidden_state, model(**batch).last_hidden_state,
                                   rtol=0, atol=0)


# ------------------------------------------------------------------------------------------------------------------
# Head mask
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("capture", [EAGER, ()], ids=["eager", "fused"])
def test_head_mask_of_ones_changes_nothing(model, batch, capture):
    with torch.no_grad():
        plain = model(**batch, capture=capture)
        masked = model(**batch, head_mask=torch.ones(L, HEADS), capture=capture)
    torch.testing.assert_close(masked.prediction_logits, plain.prediction_logits, rtol=0, atol=0)


def test_silenced_head_is_zero_and_equal_on_both_paths(model, batch):
    head_mask = torch.ones(L, HEADS)
    head_mask[1, 3] = 0.0
    with torch.no_grad():
        eager = model(**batch, head_mask=head_mask, capture=EAGER)
        fused = model(**batch, head_mask=head_mask)
        plain = model(**batch)
    assert eager.captured["layer.1.attention.probs"][:, 3].abs().max().item() == 0.0
    assert eager.captured["layer.0.attention.probs"].sum(-1).min().item() > 0.99  # the first layer is untouched
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(fused.prediction_logits[real], eager.prediction_logits[real], **TOL)
    assert not torch.allclose(plain.prediction_logits, eager.prediction_logits)


def test_head_mask_with_the_wrong_number_of_layers(model, batch):
    with pytest.raises(ValueError, match=r"head_mask must have one row per layer \(2\), got shape \(3, 4\)"):
        model(**batch, head_mask=torch.ones(3, HEADS))


# ------------------------------------------------------------------------------------------------------------------
# Heads and losses
# ------------------------------------------------------------------------------------------------------------------
def test_decoder_is_tied_and_learns_with_the_embeddings(config, batch):
    model = BertForPreTraining(config)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    labels = torch.where(batch["attention_mask"].bool(), batch["input_ids"], -100)
    model(**batch, labels=labels).loss.backward()
    assert model.bert.embeddings.word_embeddings.weight.grad.abs().sum() > 0
    # The tied matrix is one parameter, counted once.
    state = model.state_dict()
    tied = state["cls.predictions.decoder.weight"].numel()
    assert model.num_parameters() == sum(v.numel() for v in state.values()) - tied


def test_untied_decoder_when_the_config_says_so(batch):
    model = BertForPreTraining(BertConfig.preset("tiny", tie_word_embeddings=False))
    assert model.cls.predictions.decoder.weight is not model.bert.embeddings.word_embeddings.weight
    tied = BertForPreTraining(BertConfig.preset("tiny"))
    assert model.num_parameters() == tied.num_parameters() + 100 * H


def test_pretraining_loss_is_the_sum_of_both(model, batch):
    labels = torch.full_like(batch["input_ids"], -100)
    labels[:, 2] = batch["input_ids"][:, 2]
    nsp = torch.tensor([1, 0])
    with torch.no_grad():
        out = model(**batch, labels=labels, next_sentence_label=nsp)
    mlm = F.cross_entropy(out.prediction_logits[:, 2], batch["input_ids"][:, 2])
    torch.testing.assert_close(out.mlm_loss, mlm, **TOL)
    torch.testing.assert_close(out.nsp_loss, F.cross_entropy(out.seq_relationship_logits, nsp), **TOL)
    torch.testing.assert_close(out.loss, out.mlm_loss + out.nsp_loss, **TOL)
    with torch.no_grad():
        only_mlm = model(**batch, labels=labels)
    torch.testing.assert_close(only_mlm.loss, mlm, **TOL)


@pytest.mark.parametrize("mlm, nsp, pooler", [(False, False, True), (True, False, False), (False, True, True),
                                              (False, False, False)])
def test_pretraining_model_without_some_heads(config, batch, mlm, nsp, pooler):
    model = BertForPreTraining(config, mlm_head=mlm, nsp_head=nsp, pooler=pooler).eval()
    assert (model.has_mlm_head, model.has_nsp_head) == (mlm, nsp)
    with torch.no_grad():
        out = model(**batch)
    assert (out.prediction_logits is not None, out.seq_relationship_logits is not None) == (mlm, nsp)
    assert (out.pooler_output is not None) == pooler
    assert any(k.startswith("cls.predictions.") for k in model.state_dict()) == mlm  # no untrained stand-in


def test_next_sentence_head_needs_the_pooler(config):
    with pytest.raises(ValueError, match=r"the next-sentence head reads the pooler output: it needs pooler=True"):
        BertForPreTraining(config, nsp_head=True, pooler=False)


@pytest.mark.parametrize("labels", [torch.tensor([0.5, -2.0]), torch.tensor([[0.5], [-2.0]])])
def test_regression_loss_does_not_broadcast(batch, labels):
    torch.manual_seed(5)
    model = BertForSequenceClassification(BertConfig.preset("tiny", num_labels=1)).eval()
    with torch.no_grad():
        out = model(**batch, labels=labels)
    assert out.logits.shape == (2, 1)
    torch.testing.assert_close(out.loss, ((out.logits.view(-1) - labels.view(-1)) ** 2).mean(), **TOL)


def test_classification_losses(config, batch):
    torch.manual_seed(6)
    seq = BertForSequenceClassification(config).eval()
    tok = BertForTokenClassification(config).eval()
    with torch.no_grad():
        out = seq(**batch, labels=torch.tensor([1, 0]))
        multi = seq(**batch, labels=torch.tensor([[1.0, 0.0], [1.0, 1.0]]))
        tags = torch.where(batch["attention_mask"].bool(), 1, -100)
        tagged = tok(**batch, labels=tags)
    torch.testing.assert_close(out.loss, F.cross_entropy(out.logits, torch.tensor([1, 0])), **TOL)
    torch.testing.assert_close(multi.loss, F.binary_cross_entropy_with_logits(
        multi.logits, torch.tensor([[1.0, 0.0], [1.0, 1.0]])), **TOL)
    real = batch["attention_mask"].bool()
    torch.testing.assert_close(tagged.loss, F.cross_entropy(tagged.logits[real], torch.ones(int(real.sum()),
                                                                                            dtype=torch.long)), **TOL)
    assert tagged.logits.shape == (2, 9, 2) and tok.bert.pooler is None


def test_question_answering_ignores_positions_outside_the_input(config, batch):
    torch.manual_seed(7)
    model = BertForQuestionAnswering(config).eval()
    with torch.no_grad():
        out = model(**batch, start_positions=torch.tensor([1, 50]), end_positions=torch.tensor([3, 50]))
    assert out.start_logits.shape == out.end_logits.shape == (2, 9)
    expected = (F.cross_entropy(out.start_logits[:1], torch.tensor([1]))
                + F.cross_entropy(out.end_logits[:1], torch.tensor([3]))) / 2
    torch.testing.assert_close(out.loss, expected, **TOL)


# ------------------------------------------------------------------------------------------------------------------
# Errors a caller can cause
# ------------------------------------------------------------------------------------------------------------------
def test_input_longer_than_the_positions(model):
    with pytest.raises(ValueError, match=r"the input has 65 tokens but this model accepts at most 64; truncate it"):
        model(torch.ones(1, 65, dtype=torch.long))


def test_input_ids_must_be_a_batch(model):
    with pytest.raises(ValueError, match=r"input_ids must have shape \(batch, tokens\), got \(9,\)"):
        model(torch.ones(9, dtype=torch.long))


@pytest.mark.parametrize("name", ["token_type_ids", "attention_mask"])
def test_companions_must_match_input_ids(model, batch, name):
    wrong = {**batch, name: batch[name][:, :5]}
    with pytest.raises(ValueError, match=rf"{name} must have the shape of input_ids \(2, 9\), got \(2, 5\)"):
        model(**wrong)


def test_bert_model_alone(config, batch):
    torch.manual_seed(8)
    model = BertModel(config, add_pooling_layer=False).eval()
    with torch.no_grad():
        out = model(**batch, capture=("embeddings", "layer.*.output"))
    assert out.pooler_output is None and len(hidden_states(out)) == L + 1
