"""Parity with the oracle, transformers' BERT, in float32: piece by piece and whole, on the shipped all-MiniLM-L6-v2
weights and on a random BertForPreTraining with a config unlike MiniLM's and perturbed LayerNorms and biases.

Every comparison runs on a padded batch of two sentence pairs of different lengths; positions that exist only as
padding are left out where padding makes their values meaningless (hidden states and logits of padded tokens).
"""

from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import torch
import transformers
from torch import Tensor

from bertviz_app import model as ours
from bertviz_app.checkpoint import load_model
from bertviz_app.catalog import minilm_path
from captured import ATTENTION, BOTH, STATES, attentions, hidden_states
from conftest import perturb_

TOL = dict(atol=1e-5, rtol=1e-5)  # float32; both sides are the same arithmetic, ordered a little differently


# ------------------------------------------------------------------------------------------------------------------
# Inputs and comparisons
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class PairBatch:
    """Two [CLS] A [SEP] B [SEP] inputs of different lengths, right-padded to the longer one."""

    input_ids: Tensor  # (2, T)
    token_type_ids: Tensor  # (2, T), 0 for A, 1 for B, 0 on padding
    attention_mask: Tensor  # (2, T), 0 on padding
    lengths: list[int]

    def kwargs(self) -> dict:
        """The same keywords for our models and transformers' (positionally the two orders differ)."""
        return dict(input_ids=self.input_ids, token_type_ids=self.token_type_ids, attention_mask=self.attention_mask)


def make_pair_batch(pairs: list[tuple[list[int], list[int]]], cls: int, sep: int, pad: int) -> PairBatch:
    rows = [([cls, *a, sep, *b, sep], [0] * (len(a) + 2) + [1] * (len(b) + 1)) for a, b in pairs]
    T = max(len(ids) for ids, _ in rows)
    ids = torch.full((len(rows), T), pad)
    types = torch.zeros(len(rows), T, dtype=torch.long)
    mask = torch.zeros(len(rows), T, dtype=torch.long)
    for i, (row_ids, row_types) in enumerate(rows):
        ids[i, :len(row_ids)] = torch.tensor(row_ids)
        types[i, :len(row_types)] = torch.tensor(row_types)
        mask[i, :len(row_ids)] = 1
    lengths = [len(r) for r, _ in rows]
    assert len(set(lengths)) == len(lengths), "the two inputs must differ in length so that one is padded"
    return PairBatch(ids, types, mask, lengths)


def assert_tokens_close(actual: Tensor, expected: Tensor, batch: PairBatch) -> None:
    """(B, T, ...) tensors, compared at real tokens only."""
    assert actual.shape == expected.shape
    for b, n in enumerate(batch.lengths):
        torch.testing.assert_close(actual[b, :n], expected[b, :n], **TOL)


def assert_attention_close(actual: Tensor, expected: Tensor, batch: PairBatch) -> None:
    """(B, h, T, T): every real query row, over all keys (padded keys must get 0 on both sides)."""
    assert actual.shape == expected.shape
    for b, n in enumerate(batch.lengths):
        torch.testing.assert_close(actual[b, :, :n], expected[b, :, :n], **TOL)
        if n < actual.shape[-1]:
            assert actual[b, :, :n, n:].abs().max().item() == 0.0


def hf_attention_bias(batch: PairBatch) -> Tensor:
    """The additive (B, 1, 1, T) padding mask, for calling single layers of either implementation."""
    return (1.0 - batch.attention_mask[:, None, None, :].float()) * torch.finfo(torch.float32).min




# ------------------------------------------------------------------------------------------------------------------
# Fixtures
# ------------------------------------------------------------------------------------------------------------------
RANDOM_CONFIG = dict(vocab_size=120, hidden_size=48, num_hidden_layers=3, num_attention_heads=6,
                     intermediate_size=80, type_vocab_size=3, max_position_embeddings=40, layer_norm_eps=1e-7,
                     hidden_act="gelu_new", pad_token_id=0, initializer_range=0.05)


@pytest.fixture(scope="module")
def random_folder(tmp_path_factory):
    """A randomly initialized transformers.BertForPreTraining, perturbed and saved with save_pretrained."""
    torch.manual_seed(1)
    hf = transformers.BertForPreTraining(
        transformers.BertConfig(**RANDOM_CONFIG, attn_implementation="eager")).eval()
    perturb_(hf)
    folder = tmp_path_factory.mktemp("random_bert")
    hf.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def random_pair(random_folder):
    hf = transformers.BertForPreTraining.from_pretrained(random_folder, attn_implementation="eager").eval()
    model, report = load_model(random_folder)
    assert report.absent_heads == [] and report.ignored == [] and report.initialized == []
    return model, hf


@pytest.fixture(scope="module")
def random_batch() -> PairBatch:
    gen = torch.Generator().manual_seed(2)
    words = lambda n: torch.randint(5, RANDOM_CONFIG["vocab_size"], (n,), generator=gen).tolist()  # noqa: E731
    return make_pair_batch([(words(7), words(5)), (words(4), words(3))], cls=2, sep=3, pad=0)


@pytest.fixture(scope="module")
def minilm_folder():
    return minilm_path()


@pytest.fixture(scope="module")
def minilm_pair(minilm_folder):
    model, report = load_model(minilm_folder)
    hf = transformers.BertModel.from_pretrained(minilm_folder, attn_implementation="eager").eval()
    return model, hf


@pytest.fixture(scope="module")
def minilm_batch(minilm_folder) -> PairBatch:
    vocab = {w: i for i, w in enumerate((minilm_folder / "vocab.txt").read_text(encoding="utf-8").splitlines())}
    ids = lambda text: [vocab[w] for w in text.split()]  # noqa: E731
    return make_pair_batch([(ids("the cat sat on the mat ."), ids("it was tired .")),
                            (ids("the dog barked at the man"), ids("it was loud ."))],
                           cls=vocab["[CLS]"], sep=vocab["[SEP]"], pad=vocab["[PAD]"])


# ------------------------------------------------------------------------------------------------------------------
# The whole model
# ------------------------------------------------------------------------------------------------------------------
def compare_encoder(out, ref, batch: PairBatch, num_layers: int) -> None:
    assert len(hidden_states(out)) == len(ref.hidden_states) == num_layers + 1
    assert len(attentions(out)) == len(ref.attentions) == num_layers
    for mine, theirs in zip(hidden_states(out), ref.hidden_states):
        assert_tokens_close(mine, theirs, batch)
    for mine, theirs in zip(attentions(out), ref.attentions):
        assert_attention_close(mine, theirs, batch)
    assert_tokens_close(out.last_hidden_state, ref.last_hidden_state, batch)
    torch.testing.assert_close(out.pooler_output, ref.pooler_output, **TOL)  # reads [CLS] only


@pytest.mark.real_weights
def test_minilm_matches_transformers(minilm_pair, minilm_batch):
    model, hf = minilm_pair
    assert not model.has_mlm_head and not model.has_nsp_head  # sentence-transformers keeps the encoder only
    with torch.no_grad():
        out = model(**minilm_batch.kwargs(), capture=BOTH)
        ref = hf(**minilm_batch.kwargs(), output_attentions=True, output_hidden_states=True)
    compare_encoder(out, ref, minilm_batch, num_layers=6)
    assert out.prediction_logits is None and out.seq_relationship_logits is None


@pytest.mark.real_weights
def test_minilm_as_bert_model_matches_transformers(minilm_folder, minilm_pair, minilm_batch):
    _, hf = minilm_pair
    model, _ = load_model(minilm_folder, model_class=ours.BertModel)
    with torch.no_grad():
        out = model(**minilm_batch.kwargs(), capture=BOTH)
        ref = hf(**minilm_batch.kwargs(), output_attentions=True, output_hidden_states=True)
    compare_encoder(out, ref, minilm_batch, num_layers=6)


@pytest.mark.real_weights
def test_minilm_queries_keys_and_embedding_parts(minilm_pair, minilm_batch):
    check_queries_keys_and_parts(*minilm_pair, minilm_batch)


@pytest.mark.real_weights
def test_minilm_fused_path_equals_eager_path(minilm_pair, minilm_batch):
    check_fused_equals_eager(minilm_pair[0], minilm_batch)


def test_random_pretraining_model_matches_transformers(random_pair, random_batch):
    model, hf = random_pair
    assert model.has_mlm_head and model.has_nsp_head
    assert model.config.hidden_act == "gelu_new" and model.config.type_vocab_size == 3
    labels = torch.where(random_batch.attention_mask.bool(), random_batch.input_ids, -100)
    labels[:, ::2] = -100  # only some positions are predicted
    nsp = torch.tensor([0, 1])
    with torch.no_grad():
        out = model(**random_batch.kwargs(), labels=labels, next_sentence_label=nsp, capture=BOTH)
        ref = hf(**random_batch.kwargs(), labels=labels, next_sentence_label=nsp,
                 output_attentions=True, output_hidden_states=True)
        base = hf.bert(**random_batch.kwargs())  # transformers' pretraining output has no pooler output
    compare_encoder(out, SimpleNamespace(hidden_states=ref.hidden_states, attentions=ref.attentions,
                                         last_hidden_state=base.last_hidden_state, pooler_output=base.pooler_output),
                    random_batch, num_layers=3)
    assert_tokens_close(out.prediction_logits, ref.prediction_logits, random_batch)
    torch.testing.assert_close(out.seq_relationship_logits, ref.seq_relationship_logits, **TOL)
    torch.testing.assert_close(out.loss, ref.loss, **TOL)
    torch.testing.assert_close(out.mlm_loss + out.nsp_loss, out.loss, **TOL)


def test_random_queries_keys_and_embedding_parts(random_pair, random_batch):
    model, hf = random_pair
    check_queries_keys_and_parts(model, hf.bert, random_batch)


def test_random_fused_path_equals_eager_path(random_pair, random_batch):
    check_fused_equals_eager(random_pair[0], random_batch)


def check_queries_keys_and_parts(model, hf_bert, batch: PairBatch) -> None:
    """Queries and keys are transformers' query/key projections split into heads; the embedding parts are the three
    table look-ups, and their sum through embeddings.LayerNorm is hidden_states[0]."""
    with torch.no_grad():
        out = model(**batch.kwargs(), capture=("embeddings*", "layer.*.attention.queries", "layer.*.attention.keys"))
        ref = hf_bert(**batch.kwargs(), output_hidden_states=True)
    config = model.config
    B, T = batch.input_ids.shape
    h, d = config.num_attention_heads, config.head_dim
    queries, keys = out.layers("attention.queries"), out.layers("attention.keys")
    assert len(queries) == len(keys) == config.num_hidden_layers
    for i, layer in enumerate(hf_bert.encoder.layer):
        with torch.no_grad():
            q = layer.attention.self.query(ref.hidden_states[i]).view(B, T, h, d).transpose(1, 2)  # (B, h, T, d)
            k = layer.attention.self.key(ref.hidden_states[i]).view(B, T, h, d).transpose(1, 2)  # (B, h, T, d)
        assert queries[i].shape == keys[i].shape == (B, h, T, d)
        assert_tokens_close(queries[i].transpose(1, 2), q.transpose(1, 2), batch)  # (B, T, h, d)
        assert_tokens_close(keys[i].transpose(1, 2), k.transpose(1, 2), batch)

    token, segment, position = (out.captured[f"embeddings.{part}"] for part in ("token", "segment", "position"))
    emb = hf_bert.embeddings
    positions = torch.arange(T).expand(B, T)
    torch.testing.assert_close(token, emb.word_embeddings(batch.input_ids), rtol=0, atol=0)
    torch.testing.assert_close(segment, emb.token_type_embeddings(batch.token_type_ids), rtol=0, atol=0)
    torch.testing.assert_close(position, emb.position_embeddings(positions), rtol=0, atol=0)
    with torch.no_grad():
        summed = model_embeddings(model).LayerNorm(token + segment + position)
    torch.testing.assert_close(summed, out.captured["embeddings"], rtol=0, atol=0)
    torch.testing.assert_close(summed, ref.hidden_states[0], **TOL)


def check_fused_equals_eager(model, batch: PairBatch) -> None:
    """Nothing requested: scaled_dot_product_attention. Attentions requested: the explicit softmax. Same numbers."""
    with torch.no_grad():
        fused = model(**batch.kwargs())
        eager = model(**batch.kwargs(), capture=ATTENTION)
    assert fused.captured == {} and len(attentions(eager)) == model.config.num_hidden_layers
    assert_tokens_close(fused.last_hidden_state, eager.last_hidden_state, batch)
    torch.testing.assert_close(fused.pooler_output, eager.pooler_output, **TOL)
    if getattr(fused, "prediction_logits", None) is not None:
        assert_tokens_close(fused.prediction_logits, eager.prediction_logits, batch)
    if getattr(fused, "seq_relationship_logits", None) is not None:
        torch.testing.assert_close(fused.seq_relationship_logits, eager.seq_relationship_logits, **TOL)


def model_embeddings(model) -> ours.BertEmbeddings:
    return (model.bert if hasattr(model, "bert") else model).embeddings


# ------------------------------------------------------------------------------------------------------------------
# Piece by piece
# ------------------------------------------------------------------------------------------------------------------
def test_embeddings_piece(random_pair, random_batch):
    model, hf = random_pair
    # The third segment row of type_vocab_size 3 is used too.
    types = random_batch.token_type_ids.clone()
    types[1, -1] = 2
    T = types.shape[1]
    with torch.no_grad():
        mine = model.bert.embeddings(random_batch.input_ids, types, torch.arange(T)[None], ours.Points())
        theirs = hf.bert.embeddings(input_ids=random_batch.input_ids, token_type_ids=types)
    torch.testing.assert_close(mine, theirs, **TOL)  # every position, padding included: no mask is involved


def test_every_layer_norm_has_the_checkpoint_eps(random_pair):
    """At activations of ordinary size eps 1e-7 and 1e-12 give the same numbers, so the parity above cannot see a
    LayerNorm that ignores layer_norm_eps: compare each module with transformers' of the same name, and once on an
    input whose variance is of the order of eps."""
    model, hf = random_pair
    theirs = dict(hf.named_modules())
    norms = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.LayerNorm)]
    assert len(norms) == 2 * RANDOM_CONFIG["num_hidden_layers"] + 2  # two per layer, embeddings, MLM transform
    for name, norm in norms:
        assert norm.eps == theirs[name].eps == RANDOM_CONFIG["layer_norm_eps"], name
        tiny = 1e-4 * torch.randn(4, RANDOM_CONFIG["hidden_size"])  # variance 1e-8, below eps
        with torch.no_grad():
            torch.testing.assert_close(norm(tiny), theirs[name](tiny), **TOL)


@pytest.mark.parametrize("index", [0, 2])
def test_one_layer_piece(random_pair, random_batch, index):
    model, hf = random_pair
    hidden = torch.randn(*random_batch.input_ids.shape, RANDOM_CONFIG["hidden_size"])
    bias = hf_attention_bias(random_batch)
    with torch.no_grad():
        points = ours.Points(capture={f"layer.{index}.attention.probs"})
        mine = model.bert.encoder.layer[index](hidden, bias, points, index)
        probs = points.captured[f"layer.{index}.attention.probs"]
        fused_points = ours.Points()
        fused = model.bert.encoder.layer[index](hidden, bias, fused_points, index)
        theirs = hf.bert.encoder.layer[index](hidden, bias)
        _, their_probs = hf.bert.encoder.layer[index].attention.self(hidden, attention_mask=bias)
    assert fused_points.captured == {}
    assert_tokens_close(mine, theirs, random_batch)
    assert_tokens_close(fused, theirs, random_batch)
    assert_attention_close(probs, their_probs, random_batch)


def test_pooler_piece(random_pair):
    model, hf = random_pair
    hidden = torch.randn(3, 5, RANDOM_CONFIG["hidden_size"])
    with torch.no_grad():
        torch.testing.assert_close(model.bert.pooler(hidden), hf.bert.pooler(hidden), **TOL)


def test_head_pieces(random_pair):
    model, hf = random_pair
    hidden = torch.randn(2, 5, RANDOM_CONFIG["hidden_size"])
    pooled = torch.randn(2, RANDOM_CONFIG["hidden_size"])
    with torch.no_grad():
        torch.testing.assert_close(model.cls.predictions.transform(hidden), hf.cls.predictions.transform(hidden),
                                   **TOL)
        torch.testing.assert_close(model.cls.predictions(hidden), hf.cls.predictions(hidden), **TOL)
        torch.testing.assert_close(model.cls.seq_relationship(pooled), hf.cls.seq_relationship(pooled), **TOL)
    # The decoder is the word-embedding tensor itself, and its bias the checkpoint's MLM bias.
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(model.cls.predictions.bias, hf.cls.predictions.bias, rtol=0, atol=0)


@pytest.mark.parametrize("act", ["gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "relu", "silu", "swish",
                                 "tanh"])
def test_every_activation_matches_transformers(act, tmp_path, random_batch):
    hf = transformers.BertForPreTraining(transformers.BertConfig(
        **{**RANDOM_CONFIG, "num_hidden_layers": 1, "hidden_act": act}, attn_implementation="eager")).eval()
    perturb_(hf, seed=3)
    hf.save_pretrained(tmp_path)
    model, _ = load_model(tmp_path)
    with torch.no_grad():
        out = model(**random_batch.kwargs())
        ref = hf(**random_batch.kwargs())
    assert_tokens_close(out.prediction_logits, ref.prediction_logits, random_batch)
    torch.testing.assert_close(out.seq_relationship_logits, ref.seq_relationship_logits, **TOL)


# ------------------------------------------------------------------------------------------------------------------
# Fine-tuning heads
# ------------------------------------------------------------------------------------------------------------------
FINE_TUNING = {
    "sequence": (transformers.BertForSequenceClassification, ours.BertForSequenceClassification),
    "token": (transformers.BertForTokenClassification, ours.BertForTokenClassification),
    "qa": (transformers.BertForQuestionAnswering, ours.BertForQuestionAnswering),
}


def fine_tuned_pair(kind: str, folder, **config):
    hf_class, our_class = FINE_TUNING[kind]
    torch.manual_seed(4)
    hf = hf_class(transformers.BertConfig(**{**RANDOM_CONFIG, **config}, attn_implementation="eager")).eval()
    perturb_(hf, seed=5)
    hf.save_pretrained(folder)
    model, report = load_model(folder, model_class=our_class)
    assert isinstance(model, our_class) and not model.training
    assert report.initialized == [] and report.ignored == [] and report.model_class == our_class.__name__
    return model, hf


@pytest.mark.parametrize("num_labels, problem_type, labels", [
    (3, None, torch.tensor([2, 0])),  # integer labels: cross entropy
    (1, None, torch.tensor([0.5, -1.25])),  # one label: regression (mean squared error)
    (1, None, torch.tensor([[0.5], [-1.25]])),  # (B, 1) labels: the same, not a (B, B) broadcast
    (2, "regression", torch.tensor([[0.5, 1.0], [-1.25, 0.0]])),
    (4, None, torch.tensor([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])),  # float multi-hot: multi-label
])
def test_sequence_classification_matches_transformers(tmp_path, random_batch, num_labels, problem_type, labels):
    extra = dict(problem_type=problem_type) if problem_type else {}
    model, hf = fine_tuned_pair("sequence", tmp_path, num_labels=num_labels, **extra)
    assert model.config.num_labels == num_labels
    with torch.no_grad():
        out = model(**random_batch.kwargs(), labels=labels)
        ref = hf(**random_batch.kwargs(), labels=labels)
    assert out.logits.shape == (2, num_labels)
    torch.testing.assert_close(out.logits, ref.logits, **TOL)
    torch.testing.assert_close(out.loss, ref.loss, **TOL)


def test_token_classification_matches_transformers(tmp_path, random_batch):
    model, hf = fine_tuned_pair("token", tmp_path, num_labels=5)
    labels = torch.randint(0, 5, random_batch.input_ids.shape)
    labels[random_batch.attention_mask == 0] = -100  # padding is not tagged
    with torch.no_grad():
        out = model(**random_batch.kwargs(), labels=labels)
        ref = hf(**random_batch.kwargs(), labels=labels)
    assert model.bert.pooler is None  # transformers' token classifier has no pooler either
    assert_tokens_close(out.logits, ref.logits, random_batch)
    torch.testing.assert_close(out.loss, ref.loss, **TOL)


@pytest.mark.parametrize("start, end", [([1, 3], [2, 5]), ([0, 40], [2, 99])])  # the second: outside the input
def test_question_answering_matches_transformers(tmp_path, random_batch, start, end):
    model, hf = fine_tuned_pair("qa", tmp_path)
    start, end = torch.tensor(start), torch.tensor(end)
    with torch.no_grad():
        out = model(**random_batch.kwargs(), start_positions=start, end_positions=end)
        ref = hf(**random_batch.kwargs(), start_positions=start, end_positions=end)
    for mine, theirs in ((out.start_logits, ref.start_logits), (out.end_logits, ref.end_logits)):
        for b, n in enumerate(random_batch.lengths):
            torch.testing.assert_close(mine[b, :n], theirs[b, :n], **TOL)
    torch.testing.assert_close(out.loss, ref.loss, **TOL)


# ------------------------------------------------------------------------------------------------------------------
# Head mask (transformers 5 has none: silencing a head equals zeroing its columns of attention.output.dense)
# ------------------------------------------------------------------------------------------------------------------
SILENCED = [(0, 2), (2, 0), (2, 5)]  # (layer, head)


@pytest.fixture(scope="module")
def hf_silenced(random_folder):
    hf = transformers.BertForPreTraining.from_pretrained(random_folder, attn_implementation="eager").eval()
    d = RANDOM_CONFIG["hidden_size"] // RANDOM_CONFIG["num_attention_heads"]
    with torch.no_grad():
        for layer, head in SILENCED:
            hf.bert.encoder.layer[layer].attention.output.dense.weight[:, head * d:(head + 1) * d] = 0.0
    return hf


@pytest.mark.parametrize("output_attentions", [True, False], ids=["eager", "fused"])
def test_head_mask_equals_zeroed_output_columns(random_pair, hf_silenced, random_batch, output_attentions):
    # (the eager path: the probabilities captured; fused: only the hidden states, so the kernel runs)
    model, _ = random_pair
    head_mask = torch.ones(RANDOM_CONFIG["num_hidden_layers"], RANDOM_CONFIG["num_attention_heads"])
    for layer, head in SILENCED:
        head_mask[layer, head] = 0.0
    with torch.no_grad():
        out = model(**random_batch.kwargs(), head_mask=head_mask, capture=BOTH if output_attentions else STATES)
        ref = hf_silenced(**random_batch.kwargs(), output_attentions=True, output_hidden_states=True)
    for mine, theirs in zip(hidden_states(out), ref.hidden_states, strict=True):
        assert_tokens_close(mine, theirs, random_batch)
    assert_tokens_close(out.prediction_logits, ref.prediction_logits, random_batch)
    torch.testing.assert_close(out.seq_relationship_logits, ref.seq_relationship_logits, **TOL)
    if output_attentions:  # silenced heads show no attention; the others are transformers' probabilities
        keep = head_mask.bool()
        for i, (mine, theirs) in enumerate(zip(attentions(out), ref.attentions)):
            assert_attention_close(mine[:, keep[i]], theirs[:, keep[i]], random_batch)
            if not keep[i].all():
                assert mine[:, ~keep[i]].abs().max().item() == 0.0


@pytest.mark.parametrize("output_attentions", [True, False], ids=["eager", "fused"])
def test_per_example_head_mask(random_pair, hf_silenced, random_batch, output_attentions):
    """A (L, B, h) mask silences heads in the first example only; the second is the unmasked model's."""
    model, hf = random_pair
    L, h = RANDOM_CONFIG["num_hidden_layers"], RANDOM_CONFIG["num_attention_heads"]
    head_mask = torch.ones(L, 2, h)
    for layer, head in SILENCED:
        head_mask[layer, 0, head] = 0.0
    with torch.no_grad():
        out = model(**random_batch.kwargs(), head_mask=head_mask, capture=ATTENTION if output_attentions else ())
        silenced = hf_silenced(**random_batch.kwargs())
        plain = hf(**random_batch.kwargs())
    n0, n1 = random_batch.lengths
    torch.testing.assert_close(out.prediction_logits[0, :n0], silenced.prediction_logits[0, :n0], **TOL)
    torch.testing.assert_close(out.prediction_logits[1, :n1], plain.prediction_logits[1, :n1], **TOL)
