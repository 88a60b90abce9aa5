"""The app with the BERT family: one server for the module offering a RoBERTa, DistilBERT, ALBERT, ELECTRA and
DeBERTa checkpoint built by transformers (tests/family_models.py), driven through gradio_client as a visitor's page
drives it; and the family's words and extras (sentence order, "replaced?") from the tabs' view functions."""

from __future__ import annotations

import base64
import json

import pytest
from gradio_client import Client

import family_models
from bertviz_app import app, views
from bertviz_app.app.tabs.embeddings import family_note
from bertviz_app.app.tabs.hidden import shared_layers_note
from bertviz_app.app.tabs.masked_lm import mlm_status, replaced_view
from bertviz_app.app.tabs.model_info import model_text
from bertviz_app.app.tabs.next_sentence import next_sentence_view

FAMILIES = ("roberta", "distilbert", "albert", "electra", "deberta-v2")
PAIR = ("The cat sat on the mat.", "Dogs bark, cats purr.")


@pytest.fixture(scope="module")
def explorers(tmp_path_factory):
    folders = []
    for name in FAMILIES:
        folder = tmp_path_factory.mktemp(name)
        family_models.build(name, folder)
        folders.append(str(folder))
    loaded = app.load_models(folders, device="cpu")
    return {explorer.config.model_type: (name, explorer) for name, explorer in loaded.items()}


@pytest.fixture(scope="module")
def client(explorers):
    demo = app.build_demo({name: explorer for name, explorer in explorers.values()})
    url = app.serve(demo, port=app.free_port(), block=False)
    yield Client(url, verbose=False)
    demo.close()


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_is_analyzed_and_drawn(client, explorers, family):
    name, explorer = explorers[family]
    out = client.predict(name, *PAIR, api_name="/analyze")
    table = json.loads(out[0]["table"])  # the token table's {headers, data}, as one string
    column = {name: [row[table["headers"].index(name)] for row in table["data"]] for name in ("token", "piece")}
    encoding = explorer.encode(*PAIR)
    # Shown as read ('cat', '##s'), the vocabulary's own pieces ('Ġcat', '▁cat') kept beside them
    assert column["token"] == encoding.labels and column["piece"] == encoding.tokens
    tokens = column["token"]
    decoded = views.decode_payload(base64.b64decode(out[2]["payload"]))
    assert decoded.header["tokens"] == tokens
    assert decoded.arrays["words"].tolist() == encoding.word_ids
    assert not any(mark in token for token in tokens for mark in ("\u0120", "\u2581"))
    if family in ("roberta", "albert", "deberta-v2"):
        assert encoding.labels != encoding.tokens  # the marks were there to drop
    config = explorer.config
    assert decoded.values("attention").shape == (config.num_hidden_layers, config.num_attention_heads, len(tokens),
                                                 len(tokens))
    embeddings = client.predict(20, api_name="/embeddings")
    drawn = [figure for figure in embeddings if figure is not None]
    # DeBERTa v3 has no position table, DistilBERT and DeBERTa no second segment: those figures are left out
    expected = 4 - (0 if config.position_biased_input else 2) - (0 if config.type_vocab_size >= 2 else 1)
    assert len(drawn) == expected and all(f["type"] == "plotly" for f in drawn)
    hidden = client.predict(2, api_name="/hidden_states")
    assert all(f["type"] == "plotly" and len(f["plot"]) > 1000 for f in hidden)


def test_each_family_says_what_it_lacks(explorers):
    roberta, distilbert, albert, electra, deberta = (explorers[f][1] for f in FAMILIES)
    assert "RoBERTa has no segment B embedding" in family_note(roberta)
    assert "no segment embeddings at all" in family_note(distilbert)
    assert "no absolute position embedding" in family_note(deberta)
    assert "layer 3' is the same weights as layer 1 applied a third time" in shared_layers_note(albert)
    assert shared_layers_note(roberta) == ""
    for explorer in (roberta, distilbert, albert, electra, deberta):
        assert "What this family does differently from BERT" in model_text(explorer)
    run = roberta.run(*PAIR)
    message, label = next_sentence_view(roberta, run)
    assert label is None and "RoBERTa dropped next-sentence prediction" in message
    message, label = next_sentence_view(distilbert, distilbert.run(*PAIR))
    assert label is None and "DistilBERT has no next-sentence prediction" in message
    assert "ELECTRA's discriminator has no masked-LM head" in mlm_status(electra)


def test_albert_shows_sentence_order_where_bert_shows_next_sentence(explorers):
    albert = explorers["albert"][1]
    run = albert.run(*PAIR)
    message, label = next_sentence_view(albert, run)
    assert "P(A then B is the original order)" in message and set(label) == {"In order", "Swapped"}
    assert label["In order"] == pytest.approx(run.is_next_probability)
    message, label = next_sentence_view(albert, albert.run(PAIR[0]))
    assert label is None and "sentence-order head" in message


def test_electra_replaced_view_lists_every_token(explorers):
    electra = explorers["electra"][1]
    run = electra.run("The cat drank the mat.")
    message, table = replaced_view(electra, run)
    assert message.startswith("**Replaced?**") and list(table["token"]) == run.tokens
    expected = [p for _, p in electra.replaced("The cat drank the mat.")]
    assert [float(p) for p in table["P(replaced)"]] == pytest.approx(expected, rel=1e-2)
    assert replaced_view(explorers["roberta"][1], run)[0] == ""


def test_compare_puts_two_families_side_by_side(client, explorers):
    roberta, _ = explorers["roberta"]
    albert, _ = explorers["albert"]
    client.predict(roberta, *PAIR, api_name="/analyze")
    message, left, right, change, _, layers = client.predict(*PAIR, albert, api_name="/compare")
    assert left["payload"] and right["payload"] and change is None and layers is None
    assert "RoBERTa (left) and ALBERT (right) each split the input with their own tokenizer" in message
    assert "is the same weights as layer 1 applied a third time" in message  # ALBERT's shared layers, said here too
    assert "The left model has 3 layers and the other 4: layers are paired by relative depth" in message


# BERT's own fields, which every member reads; each family's further fields; the fine-tuned head's only with a head.
BERT_FIELDS = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
               "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
               "type_vocab_size", "layer_norm_eps", "initializer_range", "pad_token_id", "tie_word_embeddings",
               "model_type"}
FAMILY_FIELDS = {"bert": set(), "roberta": {"position_offset", "head_act"}, "distilbert": {"head_act"},
                 "albert": {"embedding_size", "num_hidden_groups"}, "electra": {"embedding_size", "head_act"},
                 "deberta-v2": {"position_biased_input", "relative_attention", "pos_att_type", "position_buckets",
                                "max_relative_positions", "norm_rel_ebd"}}


def configuration_rows(text: str) -> dict[str, tuple[str, str]]:
    """The Model tab's configuration table: field -> (value, what it means)."""
    table = text.split("#### Configuration", 1)[1]
    rows = [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in table.splitlines()
            if line.startswith("| `")]
    assert all(len(row) == 3 for row in rows), rows
    return {field.strip("`"): (value, words) for field, value, words in rows}


@pytest.mark.parametrize("family", ["bert", *FAMILIES])
def test_the_model_tab_lists_the_fields_that_apply_each_in_plain_words(explorers, family):
    from bertviz_app import load

    explorer = load(device="cpu") if family == "bert" else explorers[family][1]
    rows = configuration_rows(model_text(explorer))
    assert set(rows) == BERT_FIELDS | FAMILY_FIELDS[family]
    assert all(len(words.split()) >= 3 for _, words in rows.values())  # a few words each, not a bare name
    # no field of another member left at its "off" value
    assert not any(value in ("not set", "`-1`", "`None`") for value, _ in rows.values()), rows
