"""The BERT family against the oracle: for each member, a checkpoint built by transformers itself (random weights,
small unusual sizes, a tokenizer trained by `tokenizers` and saved by transformers; tests/family_models.py) loaded into
our one encoder, then hidden states, attentions and head outputs compared at 1e-5, and tokenization compared token for
token with transformers' tokenizer of the same folder.

Inputs are a padded batch of two (different lengths), so the padding paths are compared too; padded positions are
left out where their values mean nothing (transformers' DeBERTa even gives padded queries a uniform row)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers

import family_models
from captured import ATTENTION, BOTH, attentions, hidden_states
from bertviz_app import load
from bertviz_app.checkpoint import CheckpointError, load_model
from bertviz_app.config import BertConfig, ConfigError
from bertviz_app.explorer import Explorer
from bertviz_app import views
from bertviz_app.analysis import group_words
from bertviz_app.model import BertSelfAttention
from bertviz_app.tokenizer import FamilyTokenizer, load_tokenizer

TOL = dict(atol=1e-5, rtol=1e-5)
# Each variant: the builder, its overrides, and what our loader must find in the checkpoint.
VARIANTS = {
    "roberta": ("roberta", {}, dict(mlm=True, nsp=False, replaced=False)),
    "distilbert": ("distilbert", {}, dict(mlm=True, nsp=False, replaced=False)),
    "albert": ("albert", {}, dict(mlm=True, nsp=True, replaced=False)),
    # ALBERT projects its embeddings even when they are as wide as the hidden states.
    "albert-square": ("albert", dict(embedding_size=36, num_hidden_groups=1), dict(mlm=True, nsp=True, replaced=False)),
    "electra": ("electra", {}, dict(mlm=False, nsp=False, replaced=True)),
    "electra-generator": ("electra-generator", {}, dict(mlm=True, nsp=False, replaced=False)),
    "deberta-v3": ("deberta-v2", {}, dict(mlm=True, nsp=False, replaced=False)),
    # DeBERTa v2's other settings: absolute positions too, exact (unbucketed) distances, segments, the newer head.
    "deberta-v2": ("deberta-v2", dict(position_biased_input=True, position_buckets=-1, max_relative_positions=12,
                                      type_vocab_size=2, norm_rel_ebd="none", legacy=False),
                   dict(mlm=True, nsp=False, replaced=False)),
}
TEXTS = [("The cat sat on the mat.", None),
         ("Paris is the [MASK] of France!", "Dogs bark, cats purr."),
         ("  héllo   wörld 42 -- naïve café ", "x"),
         ("Numbers like 1999 appear too.", "They walked home slowly through the rain, and the keys were lost.")]


@pytest.fixture(scope="module", params=list(VARIANTS))
def family(request, tmp_path_factory):
    """(name, folder, transformers' model, our model, our load report) for one variant, built once per module."""
    builder, overrides, _ = VARIANTS[request.param]
    folder = tmp_path_factory.mktemp(request.param)
    hf = family_models.build(builder, folder, seed=len(request.param), **overrides)
    ours, report = load_model(folder)
    return request.param, folder, hf, ours.eval(), report


def _real(x: torch.Tensor, b: int) -> torch.Tensor:
    return x[b, :(13 if b == 0 else 9)]


def test_the_checkpoint_loads_with_its_own_heads(family):
    name, _, _, ours, report = family
    expected = VARIANTS[name][2]
    assert (ours.has_mlm_head, ours.has_nsp_head, ours.has_replaced_head) == \
        (expected["mlm"], expected["nsp"], expected["replaced"])
    assert report.initialized == [] and report.ignored == []


def test_hidden_states_attentions_and_heads_match_transformers(family):
    name, _, hf, ours, _ = family
    batch = family_models.batch(ours.config)
    with torch.no_grad():
        mine = ours(**batch, capture=BOTH)
        theirs = hf(**batch, output_attentions=True, output_hidden_states=True)
    assert len(hidden_states(mine)) == len(theirs.hidden_states) == ours.config.num_hidden_layers + 1
    assert len(attentions(mine)) == len(theirs.attentions)
    for b in range(2):
        for layer, (a, e) in enumerate(zip(hidden_states(mine), theirs.hidden_states)):
            torch.testing.assert_close(_real(a, b), _real(e, b), **TOL, msg=lambda m: f"hidden {layer}: {m}")
        for layer, (a, e) in enumerate(zip(attentions(mine), theirs.attentions)):
            n = 13 if b == 0 else 9
            torch.testing.assert_close(a[b, :, :n, :n], e[b, :, :n, :n], **TOL, msg=lambda m: f"attn {layer}: {m}")
            assert float(a[b, :, :n, n:].abs().sum()) == 0.0  # padded keys get nothing
        if ours.has_mlm_head:
            logits = theirs.prediction_logits if name.startswith("albert") else theirs.logits
            torch.testing.assert_close(_real(mine.prediction_logits, b), _real(logits, b), **TOL)
        if ours.has_replaced_head:
            torch.testing.assert_close(_real(mine.replaced_logits, b), _real(theirs.logits, b), **TOL)
    if ours.has_nsp_head:  # ALBERT's sentence-order head
        torch.testing.assert_close(mine.seq_relationship_logits, theirs.sop_logits, **TOL)


def test_the_fused_path_gives_the_same_numbers(family):
    _, _, _, ours, _ = family
    batch = family_models.batch(ours.config, seed=3)
    with torch.no_grad():
        explicit = ours.bert(**batch, capture=ATTENTION).last_hidden_state
        fused = ours.bert(**batch).last_hidden_state
    for b in range(2):
        torch.testing.assert_close(_real(fused, b), _real(explicit, b), **TOL)


def test_tokenization_matches_transformers(family):
    name, folder, _, ours, _ = family
    tokenizer = load_tokenizer(folder, ours.config.model_type, max_tokens=512)  # the reference does not truncate
    assert isinstance(tokenizer, FamilyTokenizer)
    reference = transformers.AutoTokenizer.from_pretrained(folder)
    assert tokenizer.vocab_size == len(reference)
    for text, pair in TEXTS:
        typed = text.replace("[MASK]", reference.mask_token)
        encoding = tokenizer.encode(text, pair)  # [MASK] written as BERT writes it, whatever the family's spelling
        expected = reference(typed, pair, return_offsets_mapping=True, return_token_type_ids=True,
                             return_special_tokens_mask=True)
        assert encoding.ids == expected["input_ids"], (text, encoding.tokens, expected.tokens())
        assert encoding.tokens == expected.tokens()
        assert encoding.segment_ids == expected["token_type_ids"]
        assert encoding.special_tokens_mask == expected["special_tokens_mask"]
        assert encoding.offsets == [tuple(o) for o in expected["offset_mapping"]]
        for i, seq in enumerate(encoding.sequence_ids):  # offsets point into the sentence the token came from
            assert seq == expected.sequence_ids()[i] if expected["special_tokens_mask"][i] == 0 else seq is None


def test_tokens_read_as_words_the_way_transformers_decodes_them(family):
    """Labels drop the word-start marks ('Ġ', '▁') and write '##' before a piece that continues a word; words are the
    pre-tokenizer's (transformers' word_ids), and a word's labels joined read as transformers decodes its ids' tokens
    (a piece the vocabulary lacks reads as the unknown token the model received)."""
    name, folder, _, ours, _ = family
    tokenizer = load_tokenizer(folder, ours.config.model_type, max_tokens=512)
    reference = transformers.AutoTokenizer.from_pretrained(folder)
    for text, pair in TEXTS:
        encoding = tokenizer.encode(text, pair)
        expected = reference(text.replace("[MASK]", reference.mask_token), pair)
        keys = [None if s else (q, w) for q, w, s in zip(expected.sequence_ids(), expected.word_ids(),
                                                          encoding.special_tokens_mask)]
        same = [i > 0 and keys[i] is not None and keys[i] == keys[i - 1] for i in range(len(keys))]
        assert [i > 0 and encoding.word_ids[i] == encoding.word_ids[i - 1] for i in range(len(keys))] == same
        assert not any(mark in label for label in encoding.labels for mark in ("\u0120", "\u2581"))
        words = group_words(encoding.labels, encoding.special_tokens_mask, encoding.word_ids)
        for word, group in zip(words.words, words.groups):
            if not encoding.special_tokens_mask[group[0]]:
                # the model's tokens, as transformers names the ids (a piece the vocabulary lacks: its unknown token)
                pieces = reference.convert_ids_to_tokens([encoding.ids[i] for i in group])
                shown = "" if word == "\u2423" else word  # a word that is only a space (runs of spaces)
                assert shown == reference.convert_tokens_to_string(pieces).strip(), (name, pieces, word)
            starts = [encoding.labels[i] for i in group[:2]]  # '##' from the second piece on, after a lone space
            assert not starts[0].startswith("##") and all(label.startswith("##") for label in
                                                           [encoding.labels[i] for i in group[1:]][
                                                               1 if starts[0] == "\u2423" else 0:])


def test_predictions_and_split_characters_read_as_words(tmp_path):
    """A vocabulary entry alone reads by its own mark (fill-mask's answers): 'Ġcat' is 'cat', 's' continues a word;
    a character whose bytes byte-level BPE splits over pieces shows once, its other pieces only '##'."""
    family_models.build("roberta", tmp_path / "roberta")
    family_models.build("albert", tmp_path / "albert")
    roberta = load(tmp_path / "roberta", device="cpu")
    tokenizer = roberta.tokenizer
    assert [tokenizer.readable(t) for t in ("\u0120cat", "s", "<mask>", "\u0120")] == ["cat", "##s", "<mask>",
                                                                                        "\u2423"]
    albert = load_tokenizer(tmp_path / "albert", "albert")
    assert [albert.readable(t) for t in ("\u2581the", "s", "\u2581", "[MASK]")] == ["the", "##s", "\u2423", "[MASK]"]
    answers = roberta.fill_mask("The cat sat on the [MASK].")[0]
    assert answers and not any("\u0120" in token for token, _ in answers)
    encoding = tokenizer.encode("caf\u00e9 \U0001F600")  # é and 😀: bytes the tiny vocabulary has not merged
    labels = encoding.labels
    at = labels.index("\U0001F600")
    assert labels.count("\U0001F600") == 1 and len(labels[at + 1:-1]) >= 1 and set(labels[at + 1:-1]) == {"##"}
    assert words_of(encoding)[1:-1] == ["caf\u00e9", "\U0001F600"]


def test_whole_word_masking_takes_the_tokenizers_words(tmp_path):
    """RoBERTa's whole-word masking hides every piece of a word the pre-tokenizer made (' cats' as 'c', '##at', '##s'),
    never a part of one: the words come from Encoding.word_ids, not from WordPiece's '##'."""
    from bertviz_app.masked_lm import corrupt_example

    family_models.build("roberta", tmp_path)
    tokenizer = load_tokenizer(tmp_path, "roberta")
    text = "They walked home slowly through the rain, and the keys were lost."
    words = tokenizer.encode(text).word_ids
    split = 0
    for seed in range(8):
        example = corrupt_example(tokenizer, tokenizer.encode(text), seed=seed, whole_word=True, mlm_probability=0.3)
        chosen = set(example.chosen)
        for word in {words[i] for i in chosen}:
            pieces = {i for i, w in enumerate(words) if w == word}
            assert pieces <= chosen, (seed, word)  # the whole word or nothing of it
            split += len(pieces) > 1
    assert split  # words of several pieces were among those hidden


def words_of(encoding) -> list[str]:
    return group_words(encoding.labels, encoding.special_tokens_mask, encoding.word_ids).words


@pytest.mark.parametrize("max_tokens", [9, 14, 15, 30])
def test_truncation_matches_transformers_longest_first(family, max_tokens):
    name, folder, _, ours, _ = family
    tokenizer = load_tokenizer(folder, ours.config.model_type)
    reference = transformers.AutoTokenizer.from_pretrained(folder)
    text, pair = TEXTS[3]
    encoding = tokenizer.encode(text, pair, max_tokens=max_tokens)
    expected = reference(text, pair, truncation="longest_first", max_length=max_tokens)
    assert encoding.ids == expected["input_ids"]
    full = tokenizer.encode(text, pair)
    assert encoding.truncation.original_length == len(full)
    assert encoding.truncation.removed_a + encoding.truncation.removed_b == len(full) - max_tokens


def test_the_explorer_runs_every_family_with_what_the_views_need(family):
    name, folder, _, ours, _ = family
    explorer = load(folder, device="cpu")
    run = explorer.run("The cat sat on the mat.", "Dogs bark, cats purr.")
    config = ours.config
    T = len(run)
    assert run.attentions.shape == (config.num_hidden_layers, config.num_attention_heads, T, T)
    assert run.hidden_states.shape == (config.num_hidden_layers + 1, T, config.hidden_size)
    assert run.queries.shape == run.keys.shape == (config.num_hidden_layers, config.num_attention_heads, T,
                                                   config.head_dim)
    np.testing.assert_allclose(run.attentions.astype(np.float32).sum(-1), 1.0, atol=2e-3)
    assert run.token_embeddings.shape == (T, config.embedding_width)
    # The parts sum to the pre-LayerNorm embedding; a part the family lacks is zero.
    if not config.type_vocab_size:
        assert not run.segment_embeddings.any()
    if not config.position_biased_input:
        assert not run.position_embeddings.any()
    assert (run.is_next_probability is not None) == ours.has_nsp_head
    # The views tell A from B by where the tokens came from, even where the model reads one segment (RoBERTa).
    first_b = run.encoding.sequence_ids.index(1)
    assert run.segment_ids.tolist() == [0] * first_b + [1] * (T - first_b)
    assert explorer.family.lacks or name == "bert"


def test_electra_says_which_tokens_were_replaced(tmp_path):
    family_models.build("electra", tmp_path, seed=5)
    explorer = load(tmp_path, device="cpu")
    rows = explorer.replaced("The cat sat on the mat.")
    run = explorer.run("The cat sat on the mat.")
    assert [token for token, _ in rows] == run.labels
    hf = transformers.ElectraForPreTraining.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        expected = torch.sigmoid(hf(torch.tensor([run.encoding.ids])).logits[0]).numpy()
    np.testing.assert_allclose([p for _, p in rows], expected, atol=1e-5)
    family_models.build("roberta", tmp_path / "roberta")
    with pytest.raises(ValueError, match="only an ELECTRA discriminator checkpoint has one"):
        load(tmp_path / "roberta", device="cpu").replaced("a")


def test_albert_layers_share_their_weights(tmp_path):
    family_models.build("albert", tmp_path)
    model, _ = load_model(tmp_path)
    encoder = model.bert.encoder
    assert len(encoder.layer) == 2 and model.config.num_hidden_layers == 4
    assert encoder.layer_module(0) is encoder.layer_module(1) and encoder.layer_module(2) is encoder.layer_module(3)
    assert encoder.layer_module(1) is not encoder.layer_module(2)


@pytest.mark.parametrize("overrides", [{}, dict(pos_att_type=["c2p"], position_buckets=-1)])
def test_deberta_score_terms_match_transformers_and_add_up_to_its_attention(tmp_path, overrides):
    """Each of the model's terms of a Run (what the query x key view shows) equals transformers' own: its
    disentangled_attention_bias with one position term switched on at a time gives that term alone, and the
    content term is q.k over sqrt(d x (1 + the number of position terms)). A term the config leaves out is not
    there at all. The terms' sum is the score the softmax turns into the Run's attention."""
    hf = family_models.build("deberta-v2", tmp_path, **overrides)
    explorer = load(tmp_path, device="cpu")
    text, pair = "The keys to the cabinet were lost yesterday!", "Dogs bark."
    run = explorer.run(text, pair)
    encoder = hf.deberta.encoder
    with torch.no_grad():
        states = hf.deberta(torch.tensor([run.encoding.ids]), output_hidden_states=True).hidden_states
        rel_pos = encoder.get_rel_pos(states[0])
        rel_emb = encoder.get_rel_embedding()
        for layer in range(run.num_layers):
            terms = explorer.score_terms(text, pair, layer=layer)  # name -> (h, T, T)
            attention = encoder.layer[layer].attention.self
            assert sorted(terms) == sorted(["q.k", *attention.pos_att_type])
            factor = 1 + len(attention.pos_att_type)
            q = attention.transpose_for_scores(attention.query_proj(states[layer]), attention.num_attention_heads)
            k = attention.transpose_for_scores(attention.key_proj(states[layer]), attention.num_attention_heads)
            expected = {"q.k": (q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1] * factor)).numpy()}  # (h, T, T)
            for term in attention.pos_att_type:
                kept, attention.pos_att_type = attention.pos_att_type, [term]
                expected[term] = attention.disentangled_attention_bias(q, k, rel_pos, rel_emb, factor).numpy()
                attention.pos_att_type = kept
            for name in expected:
                np.testing.assert_allclose(terms[name], expected[name], atol=1e-5, rtol=1e-5)
            row = run.query_key(layer, 1, 3)  # the plotly picture's row: the same terms, the same weights
            np.testing.assert_allclose(row.weights, run.attentions[layer, 1, 3], atol=1e-5)
            assert list(row.terms) == list(terms)
            for name in terms:
                np.testing.assert_allclose(row.terms[name], terms[name][1, 3], atol=1e-6)
    assert all(np.abs(terms[name]).max() > 1e-3 for name in terms)  # every term says something


def terms_softmax(terms: dict, bias=None):
    """softmax(sum of the named terms + the padding bias) over the keys: what the view computes, in torch or numpy."""
    total = sum(terms.values())
    if isinstance(total, np.ndarray):
        total = torch.from_numpy(total)
    if bias is not None:
        total = total + bias
    return total.softmax(-1)


def assert_terms_make_the_attention(family_name, folder, atol_payload=0.03):
    """The check that a decomposition is right, on every path the numbers travel: the model's output (a padded
    batch: the terms' sum plus score_bias), a Run (its score_terms, its query_key rows), and the decoded payloads
    (the query/key blob's 8-bit terms against the attention payload the views draw)."""
    explorer = load(folder, device="cpu")
    texts = [("The cat sat on the mat.", "It purred."), ("Dogs bark!", None)]
    encodings = [explorer.tokenizer.encode(a, b) for a, b in texts]
    T = max(len(e) for e in encodings)
    pad = explorer.config.pad_token_id or 0
    ids = torch.tensor([e.ids + [pad] * (T - len(e)) for e in encodings])
    segments = torch.tensor([e.segment_ids + [0] * (T - len(e)) for e in encodings])
    mask = torch.tensor([[1] * len(e) + [0] * (T - len(e)) for e in encodings])
    with torch.no_grad():
        out = explorer.model.bert(ids, segments, mask, capture={"attention.bias", "layer.*.attention.probs",
                                                                 "layer.*.attention.score.*"})
    bias = out.captured["attention.bias"]
    assert bias.min() < 0  # the second input is padded
    for layer, attention in enumerate(attentions(out)):
        torch.testing.assert_close(terms_softmax(out.score_terms(layer), bias), attention, atol=1e-6, rtol=1e-5,
                                   msg=lambda m: f"{family_name} layer {layer}: {m}")
    for text, pair in texts:
        run = explorer.run(text, pair)
        attention = views.decode_payload(run.views_payload()).values("attention")  # (L, h, T, T) on screen
        blob = views.decode_query_key(run.query_key_payload())
        names = blob.header["score_terms"]["names"]
        decoded = blob.values("score_terms")  # (L, h, n, T, T)
        for layer in range(run.num_layers):
            terms = run.score_terms(layer)
            assert list(terms) == names
            np.testing.assert_allclose(terms_softmax(terms).numpy(), run.attentions[layer], atol=2e-6,
                                       err_msg=f"{family_name} layer {layer}: the Run's terms")
            row = run.query_key(layer, 0, 1)
            np.testing.assert_allclose(row.weights, run.attentions[layer, 0, 1], atol=2e-6)
            shown = terms_softmax({n: decoded[layer, :, k] for k, n in enumerate(names)}).numpy()
            np.testing.assert_allclose(shown, attention[layer], atol=atol_payload,
                                       err_msg=f"{family_name} layer {layer}: the decoded payloads")


def test_every_family_members_score_terms_make_the_attention_on_screen(family, tiny_mlm_folder):
    """For every member (BERT below, the family's variants here), the softmax of the model's named terms (their sum,
    masked) is the attention: in the model's output, in the Run, and between the decoded query/key blob and the
    attention payload the views draw. Nothing above the model assumes a rule, so a member with another score is
    checked here the moment it is added to VARIANTS."""
    name, folder, *_ = family
    assert_terms_make_the_attention(name, folder)
    if name == "roberta":  # BERT itself once, beside the first variant
        assert_terms_make_the_attention("bert", tiny_mlm_folder)


@pytest.mark.parametrize("builder", ["deberta-v2", "roberta"])
def test_a_wrong_decomposition_is_caught(tmp_path, monkeypatch, builder):
    """A member whose score_terms misses a term its forward pass adds (DeBERTa without its position-to-content term),
    or lists one the forward pass does not add (a term that grows with the key's position), shows arithmetic whose
    softmax is not the attention on screen: the check above fails, on the model's output and on the payloads."""
    family_models.build(builder, tmp_path)
    honest = BertSelfAttention.score_terms

    def broken(self, q, k, rel=None):
        terms = honest(self, q, k, rel)
        if "p2c" in terms:
            del terms["p2c"]
        else:
            terms["drift"] = torch.arange(k.shape[2], dtype=q.dtype).expand_as(terms["q.k"]) * 0.5
        return terms

    monkeypatch.setattr(BertSelfAttention, "score_terms", broken)
    with pytest.raises(AssertionError):
        assert_terms_make_the_attention(builder, tmp_path)


def test_score_terms_travel_only_within_their_budget(tmp_path, monkeypatch):
    """The terms grow with T²: beyond views.SCORE_TERMS_MAX_VALUES the query/key blob carries the vectors alone
    (the view then shows the model's own weights, tests/js), and within it every layer's terms, by the model's names."""
    family_models.build("deberta-v2", tmp_path)
    run = load(tmp_path, device="cpu").run("Dogs bark.")
    values = run.num_layers * run.num_heads * 3 * len(run) ** 2
    monkeypatch.setattr(views, "SCORE_TERMS_MAX_VALUES", values)
    header = views.decode_query_key(run.query_key_payload()).header
    assert header["score_terms"]["names"] == list(run.score_terms(0))
    monkeypatch.setattr(views, "SCORE_TERMS_MAX_VALUES", values - 1)
    assert "score_terms" not in views.decode_query_key(load(tmp_path, device="cpu").run("Dogs bark.")
                                                       .query_key_payload()).header


# --- bad input ------------------------------------------------------------------------------------------------------
def test_an_unknown_model_type_names_the_families_we_read(tmp_path):
    with pytest.raises(ConfigError, match=r"this checkpoint is a 'gpt2' model; bertviz-app reads BERT and its family, "
                                          r"whose config.json says model_type 'bert', 'roberta', 'distilbert', "
                                          r"'albert', 'electra', 'deberta-v2'"):
        BertConfig.from_hf_dict({"model_type": "gpt2"})


@pytest.mark.parametrize("data, message", [
    ({"model_type": "albert", "inner_group_num": 2}, r"inner_group_num 2 is not supported"),
    ({"model_type": "albert", "num_hidden_layers": 12, "num_hidden_groups": 5},
     r"num_hidden_groups \(5\) must divide num_hidden_layers \(12\)"),
    ({"model_type": "albert", "embedding_size": 10**6}, r"embedding_size is 1000000, above the limit of 16,384"),
    ({"model_type": "deberta-v2", "conv_kernel_size": 3}, r"convolution layer \(conv_kernel_size"),
    ({"model_type": "deberta-v2", "relative_attention": True, "share_att_key": False}, r"share_att_key false"),
    ({"model_type": "deberta-v2", "relative_attention": True, "share_att_key": True, "pos_att_type": ["c2c"]},
     r"pos_att_type must list some of c2p, p2c"),
    ({"model_type": "deberta-v2", "relative_attention": True, "share_att_key": True, "position_buckets": 10**6},
     r"position_buckets must be -1 \(off\) or a positive integer up to 65,536"),
    ({"model_type": "deberta-v2", "position_biased_input": False}, r"cannot tell word order"),
    ({"model_type": "distilbert", "n_layers": 10**4}, r"num_hidden_layers is 10000, above the limit of 256"),
    ({"model_type": "roberta", "pad_token_id": 600}, r"position_offset must be an integer from 0 below"),
])
def test_family_configs_are_bounded(data, message):
    with pytest.raises(ConfigError, match=message):
        BertConfig.from_hf_dict(data)


def test_a_config_that_contradicts_the_weights_is_refused_before_allocating(tmp_path, monkeypatch):
    family_models.build("electra", tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "embedding_size": 28}))
    import bertviz_app.checkpoint as checkpoint

    def read_state_dict(folder):  # the weights themselves are never read: the headers' shapes are enough to refuse
        raise AssertionError("the tensors were read")

    monkeypatch.setattr(checkpoint, "read_state_dict", read_state_dict)
    with pytest.raises(CheckpointError, match=r"embedding_size is 28 but bert.embeddings.word_embeddings.weight has "
                                              r"20 columns"):
        load_model(tmp_path)


@pytest.mark.parametrize("kind", ["unigram", "bpe"])
def test_a_piece_the_vocabulary_lacks_shows_the_unknown_token_the_model_received(tmp_path, kind):
    """A character the vocabulary lacks reaches the model as the unknown token: its label and token say so, as
    transformers' tokens do (and as BERT's [UNK] is shown), and the source text it stood for is in the token table's
    text column. Before, a unigram piece kept its characters ('!'-like) while its id was <unk>'s."""
    from tokenizers import Tokenizer as HFTokenizer, models, pre_tokenizers, processors, trainers

    from bertviz_app.analysis import token_table

    if kind == "unigram":
        backend = family_models.unigram(["[PAD]", "<unk>", "[CLS]", "[SEP]", "[MASK]"], "[CLS] $A [SEP]",
                                        "[CLS] $A [SEP] $B:1 [SEP]:1", lowercase=True)
    else:  # a BPE that is not byte-level: a character outside its training data has no piece at all
        backend = HFTokenizer(models.BPE(unk_token="<unk>"))
        backend.pre_tokenizer = pre_tokenizers.Whitespace()
        backend.train_from_iterator(family_models.CORPUS, trainers.BpeTrainer(
            vocab_size=150, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"]))
        backend.post_processor = processors.RobertaProcessing(("</s>", backend.token_to_id("</s>")),
                                                              ("<s>", backend.token_to_id("<s>")))
    backend.save(str(tmp_path / "tokenizer.json"))
    specials = ({"cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "<unk>", "pad_token": "[PAD]"}
                if kind == "unigram" else
                {"cls_token": "<s>", "sep_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"})
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(specials), encoding="utf-8")
    ours = FamilyTokenizer.from_folder(tmp_path)
    theirs = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tmp_path / "tokenizer.json"), **specials)
    text = "the cat \u2713 sat"  # a check mark: in no training sentence
    encoding = ours.encode(text)
    expected = theirs(text)
    assert encoding.ids == expected["input_ids"] and encoding.tokens == expected.tokens()  # the library's pieces
    unknown = [i for i, id_ in enumerate(encoding.ids) if id_ == ours.unk_token_id]
    assert unknown  # what the model received: transformers' tokens of the ids, and our labels
    assert [theirs.convert_ids_to_tokens(encoding.ids)[i] for i in unknown] == ["<unk>"] * len(unknown)
    assert [encoding.labels[i] for i in unknown] == ["<unk>"] * len(unknown)
    table = token_table(encoding)
    assert "\u2713" in "".join(table.loc[unknown, "text"])  # what it stood for, beside it
    assert list(table.loc[unknown, "token"]) == ["<unk>"] * len(unknown)


def test_a_tokenizer_larger_than_the_vocabulary_says_so(tmp_path):
    family_models.build("roberta", tmp_path)
    tokens = load_tokenizer(tmp_path, "roberta").vocab_size
    config = transformers.RobertaConfig.from_pretrained(tmp_path)
    config.vocab_size = 100
    transformers.RobertaForMaskedLM(config).save_pretrained(tmp_path)
    with pytest.raises(CheckpointError, match=rf"the tokenizer has {tokens} tokens but the model's vocabulary only "
                                              r"100; the tokenizer files belong to another model"):
        load(tmp_path, device="cpu")


def test_a_family_checkpoint_without_tokenizer_json_says_how_to_make_one(tmp_path):
    family_models.build("albert", tmp_path)
    (tmp_path / "tokenizer.json").unlink()
    with pytest.raises(CheckpointError, match=r"has no tokenizer.json; this family's tokenizer is read from it"):
        load(tmp_path, device="cpu")


def test_saving_refuses_a_family_model(tmp_path):
    family_models.build("distilbert", tmp_path)
    model, _ = load_model(tmp_path)
    explorer = Explorer(model, load_tokenizer(tmp_path, "distilbert"), torch.device("cpu"), "d")
    from bertviz_app.checkpoint import save_pretrained
    with pytest.raises(CheckpointError, match="save_pretrained writes BERT checkpoints; a DistilBERT model"):
        save_pretrained(explorer.model, tmp_path / "out")


@pytest.mark.parametrize("builder", ["albert", "deberta-v2"])
def test_silencing_heads_layer_by_layer_agrees_with_a_whole_forward_pass(tmp_path, builder):
    """The ablation ranking restarts each layer from a stored hidden state: it must reach ALBERT's shared weights and
    DeBERTa's relative positions as the whole forward pass does."""
    from bertviz_app.targets import forward_ids

    family_models.build(builder, tmp_path)
    explorer = load(tmp_path, device="cpu")
    text = "The cat [MASK] on the mat."
    ranking = explorer.rank_heads(text, method="ablation")
    model, config = explorer.model, explorer.config
    encoding = explorer.encode(text)
    for layer, head in [(1, 0), (config.num_hidden_layers - 1, config.num_attention_heads - 1)]:
        mask = torch.ones(config.num_hidden_layers, config.num_attention_heads)
        mask[layer, head] = 0.0
        with torch.no_grad():
            silenced = float(ranking.target.value(model, forward_ids(model, encoding, head_mask=mask))[0])
        assert ranking.effects[layer, head] == pytest.approx(silenced - ranking.f_input, abs=1e-4)


def test_the_parameter_bound_covers_every_family_model(family):
    """config.max_num_parameters is what bounds a config.json before anything is allocated: it must not undercount
    a family's model (narrow embeddings, projections, shared layers, relative positions, extra heads)."""
    _, _, hf, ours, _ = family
    estimate = ours.config.max_num_parameters()
    assert estimate >= ours.num_parameters()
    assert estimate >= sum(p.numel() for p in hf.parameters())


def test_pretraining_refuses_to_start_from_a_family_checkpoint(tmp_path):
    from bertviz_app.pretraining.objective import build_model

    family_models.build("distilbert", tmp_path)
    with pytest.raises(ValueError, match="is a DistilBERT checkpoint; pretraining continues BERT checkpoints only"):
        build_model(str(tmp_path), load_tokenizer(tmp_path, "distilbert"))
