"""BertConfig: presets, the config.json adapter and its refusals."""

import json

import pytest

from bertviz_app.config import PRESETS, SUPPORTED_ACTIVATIONS, BertConfig, ConfigError


@pytest.mark.parametrize("name, layers, hidden, heads, intermediate", [
    ("tiny", 2, 32, 4, 64),
    ("mini", 4, 256, 4, 1024),
    ("base", 12, 768, 12, 3072),
    ("large", 24, 1024, 16, 4096),
])
def test_presets_have_the_documented_sizes(name, layers, hidden, heads, intermediate):
    config = BertConfig.preset(name)
    assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads,
            config.intermediate_size) == (layers, hidden, heads, intermediate)
    assert config.head_dim * config.num_attention_heads == config.hidden_size


def test_tiny_preset_is_small_and_overridable():
    config = BertConfig.preset("tiny", num_hidden_layers=3, layer_norm_eps=1e-6)
    assert config.vocab_size == 100 and config.max_position_embeddings == 64
    assert config.num_hidden_layers == 3 and config.layer_norm_eps == 1e-6


def test_unknown_preset_names_the_choices():
    with pytest.raises(ConfigError, match=r"unknown preset 'huge'; choose one of tiny, mini, base, large"):
        BertConfig.preset("huge")
    assert list(PRESETS) == ["tiny", "mini", "base", "large"]


def test_from_hf_dict_honours_every_architecture_field():
    config = BertConfig.from_hf_dict({
        "model_type": "bert", "vocab_size": 120, "hidden_size": 48, "num_hidden_layers": 3,
        "num_attention_heads": 6, "intermediate_size": 80, "hidden_act": "gelu_new", "layer_norm_eps": 1e-7,
        "type_vocab_size": 3, "max_position_embeddings": 40, "pad_token_id": 1, "hidden_dropout_prob": 0.2,
        "attention_probs_dropout_prob": 0.3, "classifier_dropout": 0.4, "tie_word_embeddings": False,
        "problem_type": "regression", "id2label": {"0": "a", "1": "b", "2": "c"},
        # Fields of transformers' config that we have no use for are ignored, not an error.
        "architectures": ["BertForPreTraining"], "transformers_version": "5.0.0", "use_cache": True,
        "gradient_checkpointing": False,
    })
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size) == (120, 48, 3, 6, 80)
    assert config.hidden_act == "gelu_new" and config.layer_norm_eps == 1e-7
    assert config.type_vocab_size == 3 and config.max_position_embeddings == 40 and config.pad_token_id == 1
    assert (config.hidden_dropout_prob, config.attention_probs_dropout_prob, config.classifier_dropout) == \
        (0.2, 0.3, 0.4)
    assert config.tie_word_embeddings is False and config.problem_type == "regression"
    assert config.num_labels == 3  # from id2label, as transformers counts labels


def test_num_labels_without_id2label_and_defaults():
    assert BertConfig.from_hf_dict({"num_labels": 1}).num_labels == 1
    config = BertConfig.from_hf_dict({})  # model_type defaults to bert, everything else to BERT-Base
    assert config == BertConfig()


def test_to_hf_dict_round_trips():
    config = BertConfig.preset("tiny", hidden_act="relu", type_vocab_size=4, num_labels=5, layer_norm_eps=1e-9,
                               tie_word_embeddings=False)
    data = json.loads(json.dumps(config.to_hf_dict(["BertForMaskedLM"])))
    assert data["model_type"] == "bert" and data["architectures"] == ["BertForMaskedLM"]
    assert data["position_embedding_type"] == "absolute" and len(data["id2label"]) == 5
    assert "problem_type" not in data  # None is left out, as transformers does
    assert BertConfig.from_hf_dict(data) == config


@pytest.mark.parametrize("data, message", [
    ({"model_type": "roberta"}, r"is a 'roberta' model, not BERT \(model_type must be 'bert'\)"),
    ({"model_type": "distilbert"}, r"'distilbert' model, not BERT"),
    ({"position_embedding_type": "relative_key"},
     r"position_embedding_type 'relative_key' is not supported; only learned absolute positions are"),
    ({"position_embedding_type": "relative_key_query"}, r"'relative_key_query' is not supported"),
    ({"is_decoder": True}, r"decoder/cross-attention BERT variants are not supported"),
    ({"hidden_size": 100, "num_attention_heads": 12},
     r"hidden_size \(100\) must be divisible by num_attention_heads \(12\)"),
    ({"hidden_act": "quick_gelu"}, r"hidden_act 'quick_gelu' is not supported; use one of gelu, gelu_new"),
    ({"hidden_act": {"name": "gelu"}}, r"hidden_act \{'name': 'gelu'\} is not supported"),
    ({"vocab_size": 0}, r"vocab_size must be a positive integer, got 0"),
    ({"num_hidden_layers": "12"}, r"num_hidden_layers must be a positive integer, got '12'"),
    ({"type_vocab_size": True}, r"type_vocab_size must be a positive integer, got True"),
    ({"layer_norm_eps": 0}, r"layer_norm_eps must be a positive number, got 0"),
    ({"layer_norm_eps": "1e-12"}, r"layer_norm_eps must be a positive number, got '1e-12'"),
    ({"hidden_dropout_prob": 1.5}, r"hidden_dropout_prob must be a probability between 0 and 1, got 1.5"),
    ({"pad_token_id": 30522}, r"pad_token_id must be an index into the vocabulary \(0 to 30521\) or null"),
    ({"id2label": {}}, r"num_labels must be a positive integer, got 0"),
    ({"problem_type": "ranking"}, r"problem_type 'ranking' is not supported"),
    ({"tie_word_embeddings": "yes"}, r"tie_word_embeddings must be true or false"),
])
def test_from_hf_dict_rejects_what_this_bert_cannot_represent(data, message):
    with pytest.raises(ConfigError, match=message):
        BertConfig.from_hf_dict(data)


def test_every_supported_activation_is_accepted():
    for act in SUPPORTED_ACTIVATIONS:
        assert BertConfig.preset("tiny", hidden_act=act).hidden_act == act


def test_pad_token_id_may_be_null():
    assert BertConfig.from_hf_dict({"pad_token_id": None}).pad_token_id is None


def test_from_json_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 64,
                                                      "num_attention_heads": 4}))
    assert BertConfig.from_json_file(tmp_path / "config.json").hidden_size == 64
    with pytest.raises(ConfigError, match=r"no config.json at .*missing.json"):
        BertConfig.from_json_file(tmp_path / "missing.json")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(ConfigError, match=r"broken.json is not valid JSON .*re-save the checkpoint's config.json"):
        BertConfig.from_json_file(tmp_path / "broken.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match=r"list.json must hold a JSON object"):
        BertConfig.from_json_file(tmp_path / "list.json")
