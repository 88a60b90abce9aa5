"""BertConfig: presets, the config.json adapter and its refusals."""

import json

import pytest

from bertviz_app.config import (MAX_PARAMETERS, PRESETS, SIZE_LIMITS, SUPPORTED_ACTIVATIONS, BertConfig,
                                ConfigError)


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
    with pytest.raises(ConfigError, match=r"unknown preset 'huge'; choose one of tiny, classroom, mini, base, large"):
        BertConfig.preset("huge")
    assert list(PRESETS) == ["tiny", "classroom", "mini", "base", "large"]


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
    ({"model_type": "gpt2"}, r"is a 'gpt2' model; bertviz-app reads BERT and its family, whose config.json says "
                             r"model_type 'bert', 'roberta', 'distilbert', 'albert', 'electra', 'deberta-v2'"),
    ({"model_type": "deberta"}, r"'deberta' model; bertviz-app reads BERT and its family"),
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
    ({"type_vocab_size": True}, r"type_vocab_size must be a positive integer or 0, got True"),
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


# ------------------------------------------------------------------------------------------------------------------
# Bounds: a config.json that asks for an absurd model fails here, before anything is allocated
# ------------------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(SIZE_LIMITS))
def test_every_size_has_an_upper_bound(name):
    limit = SIZE_LIMITS[name]
    with pytest.raises(ConfigError, match=rf"^{name} is {limit + 1}, above the limit of {limit:,} \(far above any "
                                          rf"real BERT\); check {name} in config.json$"):
        BertConfig.from_hf_dict({name: limit + 1})


@pytest.mark.parametrize("data, field", [
    ({"num_hidden_layers": 100_000}, "num_hidden_layers"),
    ({"hidden_size": 10**7}, "hidden_size"),
    ({"num_hidden_layers": 1000}, "num_hidden_layers"),  # 1000 BERT-Base layers
    ({"hidden_size": 2**64}, "hidden_size"),
    ({"vocab_size": 10**5000}, "vocab_size"),  # more digits than Python will print
])
def test_oversized_configs_name_the_field_and_its_limit(data, field):
    with pytest.raises(ConfigError, match=rf"^{field} is .*, above the limit of [\d,]+ ") as err:
        BertConfig.from_hf_dict(data)
    assert len(str(err.value)) < 200


def test_the_limits_admit_every_real_bert():
    BertConfig.preset("large")
    BertConfig.from_hf_dict({"vocab_size": 501_153})  # LaBSE
    BertConfig.from_hf_dict({"vocab_size": 119_547, "max_position_embeddings": 8192})  # multilingual, long inputs
    # Megatron-BERT 3.9B: the largest published BERT-style encoder, just under the parameter limit.
    megatron = BertConfig.from_hf_dict({"hidden_size": 2560, "num_hidden_layers": 48, "num_attention_heads": 40,
                                        "intermediate_size": 10240, "vocab_size": 30592})
    assert 3.8e9 < megatron.max_num_parameters() < MAX_PARAMETERS


def test_a_config_within_every_field_limit_can_still_be_too_big():
    with pytest.raises(ConfigError, match=r"this config describes a model of up to 825\.7 billion parameters "
                                          r"\(3,303 GB in float32\), above the limit of 4 billion; check "
                                          r"num_hidden_layers, hidden_size, intermediate_size and vocab_size"):
        BertConfig.from_hf_dict({"hidden_size": 16_384, "num_attention_heads": 128, "num_hidden_layers": 256,
                                 "intermediate_size": 65_536})


@pytest.mark.parametrize("overrides", [{}, {"tie_word_embeddings": False}, {"num_labels": 7, "type_vocab_size": 3}])
@pytest.mark.parametrize("preset", ["tiny", "base"])
def test_parameter_estimate_matches_the_models(preset, overrides):
    import torch

    from bertviz_app.model import BertForPreTraining, BertForSequenceClassification, BertModel

    config = BertConfig.preset(preset, **overrides)
    with torch.device("meta"):  # shapes only: the count needs no memory
        pretraining = BertForPreTraining(config).num_parameters()
        classifier = BertForSequenceClassification(config).num_parameters() - BertModel(config).num_parameters()
    assert config.max_num_parameters() == pretraining + classifier


@pytest.mark.parametrize("data, message", [
    ({"layer_norm_eps": 5}, r"layer_norm_eps must be below 1, got 5"),
    ({"layer_norm_eps": float("inf")}, r"layer_norm_eps must be below 1, got inf"),
    ({"layer_norm_eps": float("nan")}, r"layer_norm_eps must be a positive number, got nan"),
    ({"initializer_range": "0.02"}, r"initializer_range \(the standard deviation of new weights, 0.02 in BERT\) must "
                                    r"be a number above 0 and at most 1, got '0.02'"),
    ({"initializer_range": -1}, r"initializer_range .* got -1"),
    ({"id2label": 5}, r"id2label must be a JSON object \(label id -> name\), got 5"),
    ({"id2label": ["a", "b"]}, r"id2label must be a JSON object .*, got \['a', 'b'\]"),
    ({"model_type": ["bert"]}, r"this checkpoint is a \['bert'\] model; bertviz-app reads BERT"),
    ({"hidden_act": "x" * 10**6}, r"hidden_act 'x+\.\.\.x+' is not supported"),
    ({"hidden_dropout_prob": None}, r"hidden_dropout_prob must be a probability between 0 and 1, got None"),
    ({"pad_token_id": 1.5}, r"pad_token_id must be an index into the vocabulary"),
])
def test_wrong_types_and_values_are_config_errors(data, message):
    with pytest.raises(ConfigError, match=message) as err:
        BertConfig.from_hf_dict(data)
    assert len(str(err.value)) < 300  # a megabyte-long value is not copied into the message


def test_from_hf_dict_wants_a_dict():
    with pytest.raises(ConfigError, match=r"a config must be a JSON object \(a dict\), got list"):
        BertConfig.from_hf_dict([1, 2])


@pytest.mark.parametrize("content, message", [
    ("[" * 100_000, r"is not valid JSON \(it is nested too deeply to read\); re-save the checkpoint's config.json"),
    ('{"hidden_size": NaN}', r"is not valid JSON \(ValueError: NaN is not a JSON number\)"),
    ('{"layer_norm_eps": -Infinity}', r"is not valid JSON \(ValueError: -Infinity is not a JSON number\)"),
    ('{"layer_norm_eps": 1e999}', r"is not valid JSON \(ValueError: 1e999 is too large for a number\)"),
    ('{"vocab_size": 1' + "0" * 5000 + "}",
     r"is not valid JSON \(ValueError: an integer of 5001 digits is too long for any setting\)"),
    (b'{"model_type": "bert\xff"}', r"is not UTF-8 text \(byte 20 is 0xff\)"),
    ("", r"is not valid JSON \(JSONDecodeError: Expecting value"),
])
def test_json_that_python_would_choke_on_or_let_through(tmp_path, content, message):
    path = tmp_path / "config.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError, match=rf"config.json {message}"):
        BertConfig.from_json_file(path)


@pytest.mark.parametrize("kind, message", [
    ("/dev/zero", r"is a device \(a link to /dev/zero\), not a regular file; put the checkpoint's own config.json "
                  r"there"),
    ("directory", r"is a directory, not a regular file"),
    ("20 GB", r"is larger than the 16 MiB a config.json may have here \(real ones are far smaller\); check that it "
              r"is the checkpoint's own file"),
])
def test_config_json_is_read_with_a_size_cap(tmp_path, kind, message):
    path = tmp_path / "config.json"
    if kind == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:
        with open(path, "wb") as f:  # sparse: no disk space used, but reading it would take 20 GB of memory
            f.truncate(20 * 2**30)
    with pytest.raises(ConfigError, match=rf"config.json {message}"):
        BertConfig.from_json_file(path)
