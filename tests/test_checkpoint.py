"""Checkpoints in Hugging Face format: every key layout transformers writes, legacy names, .bin and sharded files, the
tied decoder, saving so that transformers loads what we write, and a clear error for each way a checkpoint is wrong.
"""

import http.server
import json
import os
import re
import shutil
import socket
import threading

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

import bertviz_app
from bertviz_app import checkpoint
from bertviz_app import device as device_module
from bertviz_app import model as ours
from bertviz_app.checkpoint import CheckpointError, load_model, save_pretrained
from bertviz_app.config import BertConfig
from conftest import perturb_

TOL = dict(atol=1e-5, rtol=1e-5)
# Small, and unlike the defaults where a default could hide a mistake: three segment types, odd eps and activation.
HF_CONFIG = dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                 max_position_embeddings=64, type_vocab_size=3, layer_norm_eps=1e-6, hidden_act="gelu_new",
                 attn_implementation="eager")




def hf_model(cls, seed: int = 0, **config):
    torch.manual_seed(seed)
    model = cls(transformers.BertConfig(**{**HF_CONFIG, **config})).eval()
    perturb_(model, seed)
    return model


@pytest.fixture(scope="module")
def inputs() -> dict:
    """A padded batch of two pairs of different lengths."""
    ids = torch.randint(5, 100, (2, 11), generator=torch.Generator().manual_seed(7))
    ids[1, 8:] = 0
    types = torch.tensor([[0] * 6 + [1] * 5, [0] * 4 + [1] * 4 + [0] * 3])
    return dict(input_ids=ids, token_type_ids=types, attention_mask=(ids != 0).long())


def real(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return x[mask.bool()]  # (tokens, ...): padded positions are left out


@pytest.fixture(scope="module")
def pretraining_folder(tmp_path_factory):
    hf = hf_model(transformers.BertForPreTraining)
    folder = tmp_path_factory.mktemp("pretraining")
    hf.save_pretrained(folder)
    return folder, hf


# ------------------------------------------------------------------------------------------------------------------
# Key layouts
# ------------------------------------------------------------------------------------------------------------------
LAYOUTS = [
    # transformers class, its construction keywords, (has MLM, has NSP, has pooler), keys our model ignores
    (transformers.BertModel, {}, (False, False, True), []),
    (transformers.BertModel, {"add_pooling_layer": False}, (False, False, False), []),
    (transformers.BertForMaskedLM, {}, (True, False, False), []),
    (transformers.BertForPreTraining, {}, (True, True, True), []),
    (transformers.BertForNextSentencePrediction, {}, (False, True, True), []),
    (transformers.BertForSequenceClassification, {}, (False, False, True), ["classifier.bias", "classifier.weight"]),
]


@pytest.mark.parametrize("hf_class, kwargs, heads, ignored", LAYOUTS,
                         ids=lambda v: v.__name__ if isinstance(v, type) else None)
def test_every_transformers_layout_loads(tmp_path, inputs, hf_class, kwargs, heads, ignored):
    torch.manual_seed(0)
    hf = hf_class(transformers.BertConfig(**HF_CONFIG), **kwargs).eval()
    perturb_(hf)
    hf.save_pretrained(tmp_path)
    model, report = load_model(tmp_path)
    assert (model.has_mlm_head, model.has_nsp_head, model.bert.pooler is not None) == heads
    assert sorted(report.ignored) == ignored
    expected_absent = [name for has, name in zip(heads[:2], ("masked-LM head", "next-sentence head")) if not has]
    assert report.absent_heads == expected_absent

    with torch.no_grad():
        out = model(**inputs)
        ref = hf(**inputs, output_hidden_states=True)
    hidden = ref.last_hidden_state if hf_class is transformers.BertModel else ref.hidden_states[-1]
    torch.testing.assert_close(real(out.last_hidden_state, inputs["attention_mask"]),
                               real(hidden, inputs["attention_mask"]), **TOL)
    if model.has_mlm_head:
        logits = ref.prediction_logits if hasattr(ref, "prediction_logits") else ref.logits
        torch.testing.assert_close(real(out.prediction_logits, inputs["attention_mask"]),
                                   real(logits, inputs["attention_mask"]), **TOL)
    else:
        assert out.prediction_logits is None
    if model.has_nsp_head:
        logits = ref.seq_relationship_logits if hasattr(ref, "seq_relationship_logits") else ref.logits
        torch.testing.assert_close(out.seq_relationship_logits, logits, **TOL)
    else:
        assert out.seq_relationship_logits is None


def test_bert_model_class_reads_every_layout(pretraining_folder, inputs):
    """Our BertModel takes the encoder out of a pretraining checkpoint and says which heads it left behind."""
    folder, hf = pretraining_folder
    model, report = load_model(folder, model_class=ours.BertModel)
    assert isinstance(model, ours.BertModel) and model.pooler is not None
    assert len(report.ignored) == 7 and all(k.startswith("cls.") for k in report.ignored)
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).pooler_output, hf.bert(**inputs).pooler_output, **TOL)


@pytest.mark.parametrize("hf_class, our_class", [
    (transformers.BertForSequenceClassification, ours.BertForSequenceClassification),
    (transformers.BertForPreTraining, ours.BertForPreTraining),
])
def test_keys_without_the_bert_prefix(tmp_path, inputs, hf_class, our_class):
    hf = hf_model(hf_class, seed=1)
    hf.save_pretrained(tmp_path)
    state = load_file(tmp_path / "model.safetensors")
    stripped = {k.removeprefix("bert."): v for k, v in state.items()}
    assert not any(k.startswith("bert.") for k in stripped)
    save_file(stripped, tmp_path / "model.safetensors")
    model, _ = load_model(tmp_path, model_class=our_class)
    with torch.no_grad():
        out, ref = model(**inputs), hf(**inputs)
    if our_class is ours.BertForSequenceClassification:
        torch.testing.assert_close(out.logits, ref.logits, **TOL)
    else:
        torch.testing.assert_close(out.seq_relationship_logits, ref.seq_relationship_logits, **TOL)


def test_legacy_gamma_beta_names_in_a_bin_file(tmp_path, pretraining_folder, inputs):
    """The layout of early TensorFlow ports: LayerNorm.gamma/beta, the decoder written out with its bias, the
    position_ids buffer saved, all in a pickled pytorch_model.bin."""
    folder, hf = pretraining_folder
    state = load_file(folder / "model.safetensors")
    legacy = {}
    for key, value in state.items():
        key = key.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta")
        legacy[key] = value
    legacy["cls.predictions.decoder.weight"] = state["bert.embeddings.word_embeddings.weight"].clone()
    legacy["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
    legacy["bert.embeddings.position_ids"] = torch.arange(64)[None]
    assert sum(k.endswith(".gamma") for k in legacy) == 2 * 2 + 1 + 1  # two per layer, embeddings, MLM transform
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    torch.save(legacy, tmp_path / "pytorch_model.bin")

    model, report = load_model(tmp_path)
    assert report.weights_file == "pytorch_model.bin" and report.ignored == []
    with torch.no_grad():
        out, ref = model(**inputs), hf(**inputs)
    torch.testing.assert_close(real(out.prediction_logits, inputs["attention_mask"]),
                               real(ref.prediction_logits, inputs["attention_mask"]), **TOL)
    torch.testing.assert_close(out.seq_relationship_logits, ref.seq_relationship_logits, **TOL)


def test_bin_file_wrapped_in_state_dict(tmp_path, pretraining_folder):
    folder, _ = pretraining_folder
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    torch.save({"state_dict": load_file(folder / "model.safetensors"), "epoch": 3}, tmp_path / "pytorch_model.bin")
    model, _ = load_model(tmp_path)
    assert model.has_mlm_head and model.has_nsp_head


def test_safetensors_is_preferred_over_bin(tmp_path, pretraining_folder):
    folder, _ = pretraining_folder
    for name in ("config.json", "model.safetensors"):
        (tmp_path / name).write_bytes((folder / name).read_bytes())
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    _, report = load_model(tmp_path)
    assert report.weights_file == "model.safetensors"


def test_sharded_safetensors(tmp_path, inputs):
    hf = hf_model(transformers.BertForPreTraining, seed=2)
    hf.save_pretrained(tmp_path, max_shard_size="40KB")
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) > 1 and not (tmp_path / "model.safetensors").exists()
    model, report = load_model(tmp_path)
    assert report.weights_file == "model.safetensors.index.json"
    with torch.no_grad():
        torch.testing.assert_close(model(**inputs).seq_relationship_logits, hf(**inputs).seq_relationship_logits,
                                   **TOL)


# ------------------------------------------------------------------------------------------------------------------
# The decoder
# ------------------------------------------------------------------------------------------------------------------
def test_decoder_is_the_word_embedding_tensor(pretraining_folder):
    model, _ = load_model(pretraining_folder[0])
    decoder, words = model.cls.predictions.decoder.weight, model.bert.embeddings.word_embeddings.weight
    assert decoder is words
    with torch.no_grad():
        words[5, 0] += 1.0
    assert decoder[5, 0] == words[5, 0]  # one tensor, not a copy
    assert model.num_parameters() == sum(p.numel() for p in model.state_dict().values()) - decoder.numel()


def test_untied_decoder_keeps_its_own_weights(tmp_path, inputs):
    """A checkpoint whose config says tie_word_embeddings: false has a decoder of its own (and a decoder bias,
    which transformers adds instead of cls.predictions.bias); both must be read, not replaced."""
    hf = hf_model(transformers.BertForPreTraining, seed=3, tie_word_embeddings=False)
    assert hf.cls.predictions.decoder.weight is not hf.bert.embeddings.word_embeddings.weight
    hf.save_pretrained(tmp_path / "hf")
    model, _ = load_model(tmp_path / "hf")
    assert model.config.tie_word_embeddings is False
    assert model.cls.predictions.decoder.weight is not model.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        out, ref = model(**inputs), hf(**inputs)
    torch.testing.assert_close(real(out.prediction_logits, inputs["attention_mask"]),
                               real(ref.prediction_logits, inputs["attention_mask"]), **TOL)

    save_pretrained(model, tmp_path / "ours")
    back, info = transformers.BertForPreTraining.from_pretrained(tmp_path / "ours", output_loading_info=True,
                                                                 attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    with torch.no_grad():
        torch.testing.assert_close(back.eval()(**inputs).prediction_logits, ref.prediction_logits, **TOL)


# ------------------------------------------------------------------------------------------------------------------
# Heads present and absent, fine-tuning heads, the report
# ------------------------------------------------------------------------------------------------------------------
def test_checkpoint_without_heads_says_so(tmp_path):
    hf_model(transformers.BertModel).save_pretrained(tmp_path)
    model, report = load_model(tmp_path)
    assert not model.has_mlm_head and not model.has_nsp_head
    assert report.absent_heads == ["masked-LM head", "next-sentence head"]
    lines = str(report).splitlines()
    assert lines[0].startswith(f"loaded 39 tensors from {tmp_path / 'model.safetensors'} into BertForPreTraining in ")
    assert lines[0].endswith(" s")
    assert lines[1] == "the checkpoint has no masked-LM head and no next-sentence head"
    assert not model.training


def test_fine_tuning_model_from_a_pretraining_checkpoint(pretraining_folder):
    model, report = load_model(pretraining_folder[0], model_class=ours.BertForSequenceClassification)
    assert report.initialized == ["classifier.weight", "classifier.bias"]
    assert len(report.ignored) == 7
    text = str(report)
    assert "newly initialized (train before use): classifier.weight, classifier.bias" in text
    assert "ignored 7 keys of heads this model does not use: cls.predictions.bias," in text


def test_fine_tuning_model_from_a_checkpoint_without_pooler(tmp_path, inputs):
    """Masked-LM checkpoints have no pooler; a sequence classifier starts it fresh, as transformers does."""
    hf = hf_model(transformers.BertForMaskedLM, seed=4)
    hf.save_pretrained(tmp_path)
    model, report = load_model(tmp_path, model_class=ours.BertForSequenceClassification)
    assert report.initialized == ["bert.pooler.dense.weight", "bert.pooler.dense.bias", "classifier.weight",
                                  "classifier.bias"]
    with torch.no_grad():
        torch.testing.assert_close(real(model(**inputs).last_hidden_state, inputs["attention_mask"]),
                                   real(hf(**inputs, output_hidden_states=True).hidden_states[-1],
                                        inputs["attention_mask"]), **TOL)


def test_next_sentence_head_without_pooler_is_reported_missing(tmp_path, pretraining_folder):
    folder, _ = pretraining_folder
    state = {k: v for k, v in load_file(folder / "model.safetensors").items() if not k.startswith("bert.pooler.")}
    save_file(state, tmp_path / "model.safetensors")
    (tmp_path / "config.json").write_text((folder / "config.json").read_text())
    with pytest.raises(CheckpointError, match=r"missing 2: bert.pooler.dense.weight, bert.pooler.dense.bias"):
        load_model(tmp_path)


# ------------------------------------------------------------------------------------------------------------------
# Saving
# ------------------------------------------------------------------------------------------------------------------
SAVE_CASES = [
    # the transformers class that wrote the checkpoint, the one that must read our save of it
    (transformers.BertForPreTraining, transformers.BertForPreTraining),
    (transformers.BertForMaskedLM, transformers.BertForMaskedLM),
    (transformers.BertModel, transformers.BertModel),
]


@pytest.mark.parametrize("source_class, target_class", SAVE_CASES, ids=lambda c: c.__name__)
def test_transformers_loads_what_we_save(tmp_path, inputs, source_class, target_class):
    hf = hf_model(source_class, seed=5)
    hf.save_pretrained(tmp_path / "hf")
    model, _ = load_model(tmp_path / "hf")
    save_pretrained(model, tmp_path / "ours")
    config = json.loads((tmp_path / "ours" / "config.json").read_text())
    assert config["architectures"] == [target_class.__name__]
    assert "cls.predictions.decoder.weight" not in load_file(tmp_path / "ours" / "model.safetensors")  # tied

    back, info = target_class.from_pretrained(tmp_path / "ours", output_loading_info=True,
                                              attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"], info
    assert back.config.layer_norm_eps == 1e-6 and back.config.type_vocab_size == 3
    back.eval()
    with torch.no_grad():
        ref, again, out = hf(**inputs), back(**inputs), model(**inputs)
    for name in ("last_hidden_state", "pooler_output", "prediction_logits", "logits", "seq_relationship_logits"):
        if getattr(ref, name, None) is not None:
            torch.testing.assert_close(getattr(again, name), getattr(ref, name), **TOL)
    mine = out.prediction_logits if model.has_mlm_head else out.last_hidden_state
    theirs = again.prediction_logits if hasattr(again, "prediction_logits") else (
        again.logits if hasattr(again, "logits") else again.last_hidden_state)
    torch.testing.assert_close(real(mine, inputs["attention_mask"]), real(theirs, inputs["attention_mask"]), **TOL)


@pytest.mark.parametrize("our_class, hf_class", [
    (ours.BertModel, transformers.BertModel),
    (ours.BertForSequenceClassification, transformers.BertForSequenceClassification),
    (ours.BertForTokenClassification, transformers.BertForTokenClassification),
    (ours.BertForQuestionAnswering, transformers.BertForQuestionAnswering),
])
def test_transformers_loads_our_other_classes(tmp_path, inputs, our_class, hf_class):
    config = BertConfig(**{k: v for k, v in HF_CONFIG.items() if k != "attn_implementation"}, num_labels=3)
    model = our_class(config).eval()
    perturb_(model, seed=6)
    save_pretrained(model, tmp_path)
    back, info = hf_class.from_pretrained(tmp_path, output_loading_info=True, attn_implementation="eager")
    assert not info["missing_keys"] and not info["unexpected_keys"], info
    back.eval()
    with torch.no_grad():
        out, ref = model(**inputs), back(**inputs)
    if our_class is ours.BertModel:
        torch.testing.assert_close(out.pooler_output, ref.pooler_output, **TOL)
    elif our_class is ours.BertForQuestionAnswering:
        torch.testing.assert_close(real(out.start_logits, inputs["attention_mask"]),
                                   real(ref.start_logits, inputs["attention_mask"]), **TOL)
    else:
        torch.testing.assert_close(real(out.logits, inputs["attention_mask"]) if out.logits.dim() == 3
                                   else out.logits,
                                   real(ref.logits, inputs["attention_mask"]) if ref.logits.dim() == 3
                                   else ref.logits, **TOL)
    again, report = load_model(tmp_path, model_class=our_class)
    assert report.initialized == [] and report.ignored == []


@pytest.mark.parametrize("mlm, nsp, pooler", [(True, True, True), (True, False, False), (False, True, True),
                                              (False, False, True), (False, False, False)])
def test_our_save_round_trips(tmp_path, mlm, nsp, pooler):
    model = ours.BertForPreTraining(BertConfig.preset("tiny", type_vocab_size=3), mlm_head=mlm, nsp_head=nsp,
                                    pooler=pooler)
    perturb_(model, seed=7)
    save_pretrained(model, tmp_path)
    back, report = load_model(tmp_path)
    assert (back.has_mlm_head, back.has_nsp_head, back.bert.pooler is not None) == (mlm, nsp, pooler)
    assert back.config == model.config
    expected = model.state_dict()
    assert back.state_dict().keys() == expected.keys()
    for key, value in back.state_dict().items():
        torch.testing.assert_close(value, expected[key], rtol=0, atol=0)


def test_float16_save_loads_back(tmp_path, pretraining_folder, inputs):
    model, _ = load_model(pretraining_folder[0])
    save_pretrained(model, tmp_path, dtype=torch.float16)
    stored = load_file(tmp_path / "model.safetensors")
    assert {v.dtype for v in stored.values()} == {torch.float16}
    back, _ = load_model(tmp_path)
    assert all(p.dtype == torch.float32 for p in back.parameters())
    for key, value in back.state_dict().items():
        torch.testing.assert_close(value, model.state_dict()[key].half().float(), rtol=0, atol=0)
    assert back.cls.predictions.decoder.weight is back.bert.embeddings.word_embeddings.weight
    with torch.no_grad():
        torch.testing.assert_close(back(**inputs).seq_relationship_logits,
                                   model(**inputs).seq_relationship_logits, atol=2e-2, rtol=2e-2)
    hf, info = transformers.BertForPreTraining.from_pretrained(tmp_path, output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"]


# ------------------------------------------------------------------------------------------------------------------
# Bad input: one clear error each, naming the problem and what to do
# ------------------------------------------------------------------------------------------------------------------
def copy_folder(src, dst, names=("config.json", "model.safetensors")):
    dst.mkdir(exist_ok=True)
    for name in names:
        (dst / name).write_bytes((src / name).read_bytes())
    return dst


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text, text
    return text


def test_unknown_folder(tmp_path):
    with pytest.raises(CheckpointError, match=r"no checkpoint folder at .*nope; give a folder that holds config.json "
                                              r"and model.safetensors \(or pytorch_model.bin\)") as err:
        load_model(tmp_path / "nope")
    one_line(err)
    with pytest.raises(CheckpointError, match=r"no checkpoint folder at nope;"):
        load_model("./nope/")  # relative, with a trailing slash: a path, never a hub id


def test_a_file_instead_of_a_folder(tmp_path, pretraining_folder):
    with pytest.raises(CheckpointError, match=r"model.safetensors is a file; give the folder that holds config.json"):
        load_model(pretraining_folder[0] / "model.safetensors")


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    """Hub ids resolve against an empty cache, whatever this machine has downloaded before."""
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("hub_id", ["bert-base-uncased", "google-bert/bert-base-cased"])
def test_hub_id_offline(monkeypatch, empty_hub_cache, hub_id):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(CheckpointError, match=rf"no local folder '{hub_id}', and the Hugging Face hub is switched off "
                                              r"here \(HF_HUB_OFFLINE\); .*pass its local folder instead") as err:
        load_model(hub_id)
    one_line(err)


@pytest.fixture
def silent_hub(monkeypatch, empty_hub_cache):
    """A hub on the loopback address that accepts connections and never answers (a network that drops replies)."""
    import huggingface_hub.constants
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(checkpoint, "HUB_TIMEOUT", 0.3)
    yield
    server.close()


def test_hub_that_never_answers_fails_instead_of_hanging(silent_hub):
    # In a thread, so that a regression (huggingface_hub's calls wait forever by default) fails here instead of
    # hanging the whole test run.
    errors = []

    def attempt():
        try:
            load_model("someone/some-bert")
        except Exception as err:  # noqa: BLE001 - handed to the test thread
            errors.append(err)

    thread = threading.Thread(target=attempt, daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "loading a hub id from a hub that never answers hangs"
    assert len(errors) == 1 and isinstance(errors[0], CheckpointError), errors
    message = str(errors[0])
    assert "\n" not in message
    assert re.fullmatch(r"no local folder 'someone/some-bert', and the Hugging Face hub could not be reached "
                        r"\(\w*Timeout\); without internet, download the checkpoint elsewhere and pass its local "
                        r"folder instead", message), message


@pytest.fixture
def hub_without_the_model(monkeypatch, empty_hub_cache):
    """A hub on the loopback address that answers every request as the real one does for an unknown repository."""
    import huggingface_hub.constants

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the name http.server calls)
            body = b'{"error": "Repository not found"}'
            self.send_response(404)
            self.send_header("X-Error-Code", "RepoNotFound")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_HEAD = do_GET  # noqa: N815

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    yield
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_hub_id_that_does_not_exist(hub_without_the_model):
    with pytest.raises(CheckpointError, match=r"no local folder 'someone/no-such-bert', and the Hugging Face hub has "
                                              r"no public model of that name \(RepositoryNotFoundError\); check the "
                                              r"spelling, or pass the local folder") as err:
        load_model("someone/no-such-bert")
    one_line(err)


def test_folder_without_config(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("model.safetensors",))
    with pytest.raises(CheckpointError, match=r"ckpt has no config.json; a Hugging Face checkpoint folder needs "
                                              r"config.json next to model.safetensors or pytorch_model.bin") as err:
        load_model(folder)
    one_line(err)


def test_non_bert_config(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "xlnet"}))
    with pytest.raises(CheckpointError, match=r"config.json: this checkpoint is a 'xlnet' model; bertviz-app reads "
                                              r"BERT and its family, whose config.json says model_type 'bert', "
                                              r"'roberta', 'distilbert', 'albert', 'electra', 'deberta-v2'") as err:
        load_model(folder)
    one_line(err)


def test_broken_config_json(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt")
    (folder / "config.json").write_text('{"model_type": "bert",')
    with pytest.raises(CheckpointError, match=r"config.json is not valid JSON .*re-save the checkpoint's config.json"):
        load_model(folder)


def test_weights_with_wrong_shapes_are_listed(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "vocab_size": 120, "max_position_embeddings": 80}))
    with pytest.raises(CheckpointError) as err:
        load_model(folder)
    text = str(err.value)
    assert text.startswith(f"the weights in {folder / 'model.safetensors'} do not fit a BertForPreTraining built "
                           "from its config.json:")
    assert "wrong shape 3: bert.embeddings.word_embeddings.weight: checkpoint (100, 32) vs model (120, 32)" in text
    assert "bert.embeddings.position_embeddings.weight: checkpoint (64, 32) vs model (80, 32)" in text
    assert "cls.predictions.bias: checkpoint (100,) vs model (120,)" in text
    assert text.endswith("check that config.json belongs to these weights")


def test_missing_and_unknown_keys_are_listed(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt")
    state = load_file(folder / "model.safetensors")
    del state["bert.encoder.layer.1.output.dense.bias"]
    state["bert.encoder.layer.0.attention.self.rotary.weight"] = torch.zeros(3)
    state["lm_head.weight"] = torch.zeros(3)
    save_file(state, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"(?s)missing 1: bert.encoder.layer.1.output.dense.bias\n.*"
                                              r"unexpected 2: bert.encoder.layer.0.attention.self.rotary.weight, "
                                              r"lm_head.weight\n.*check that config.json belongs to these weights"):
        load_model(folder)


@pytest.mark.parametrize("corrupt", ["random bytes", "truncated", "empty", "bad header"])
def test_corrupted_safetensors(tmp_path, pretraining_folder, corrupt):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt")
    path = folder / "model.safetensors"
    data = path.read_bytes()
    path.write_bytes({"random bytes": torch.randint(0, 256, (4096,), dtype=torch.uint8).numpy().tobytes(),
                      "truncated": data[:len(data) // 2],
                      "empty": b"",
                      "bad header": data[:9] + b"!" + data[10:]}[corrupt])  # the JSON header, broken
    with pytest.raises(CheckpointError, match=r"could not read .*model.safetensors: the file is corrupted or not a "
                                              r"\.safetensors weight file \(.*\); download or save the checkpoint "
                                              r"again") as err:
        load_model(folder)
    one_line(err)


def test_corrupted_bin(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("config.json",))
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x02not a pickle at all")
    with pytest.raises(CheckpointError, match=r"could not read .*pytorch_model.bin: the file is corrupted or not a "
                                              r"\.bin weight file \(UnpicklingError: Unsupported operand") as err:
        load_model(folder)
    one_line(err)
    assert "will likely succeed" not in str(err.value)


class Payload:
    """Stands for code hidden in a pickle: weights_only refuses to build it."""


class Hostile:
    """What an attacker pickles: unpickling it calls os.system (torch 2.6+ blocks the module os lives in)."""

    def __reduce__(self):
        return (os.system, ("echo this ran",))


@pytest.mark.parametrize("payload, name, torch_says", [
    (Payload(), "test_checkpoint.Payload", "Unsupported global: GLOBAL test_checkpoint.Payload"),
    (Hostile(), f"{os.system.__module__}.system", f"Trying to load unsupported GLOBAL {os.system.__module__}.system "
                                                  f"whose module {os.system.__module__} is blocked"),
], ids=["a class", "os.system in __reduce__"])
def test_bin_that_would_run_code_is_refused(tmp_path, pretraining_folder, payload, name, torch_says):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("config.json",))
    torch.save({"bert.embeddings.word_embeddings.weight": torch.zeros(2), "payload": payload},
               folder / "pytorch_model.bin")
    with pytest.raises(Exception) as raw:  # what torch says of this very file, so that both wordings are covered
        torch.load(folder / "pytorch_model.bin", weights_only=True)
    assert torch_says in str(raw.value)
    with pytest.raises(CheckpointError, match=rf"pytorch_model.bin was refused as unsafe: it is a pickle that asks "
                                              rf"for {re.escape(name)}, and unpickling can run code.*safetensors"
                       ) as err:
        load_model(folder)
    one_line(err)
    assert "corrupted" not in str(err.value) and "weights_only" not in str(err.value)
    assert "likely succeed" not in str(err.value)


def test_bin_that_is_not_a_dictionary_of_tensors(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("config.json",))
    torch.save([torch.zeros(2)], folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=r"pytorch_model.bin does not hold a dictionary of tensors"):
        load_model(folder)


def test_missing_weight_file(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("config.json",))
    with pytest.raises(CheckpointError, match=r"ckpt has no weights: expected one of model.safetensors, "
                                              r"model.safetensors.index.json, pytorch_model.bin") as err:
        load_model(folder)
    one_line(err)


def test_sharded_checkpoint_with_a_missing_shard(tmp_path):
    hf_model(transformers.BertForPreTraining, seed=8).save_pretrained(tmp_path, max_shard_size="40KB")
    shard = sorted(tmp_path.glob("model-*.safetensors"))[-1]
    shard.unlink()
    with pytest.raises(CheckpointError, match=rf"the weight file .*{shard.name} is missing; the checkpoint is "
                                              r"incomplete") as err:
        load_model(tmp_path)
    one_line(err)


@pytest.mark.parametrize("index, message", [
    ("{not json", r"is not a valid weight index \(JSONDecodeError"),
    ('{"metadata": {}}', r"is not a valid weight index \(KeyError"),
    ('{"weight_map": {"a": "../../elsewhere.safetensors"}}', r"names a shard outside its folder"),
])
def test_invalid_shard_index(tmp_path, pretraining_folder, index, message):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("config.json",))
    (folder / "model.safetensors.index.json").write_text(index)
    with pytest.raises(CheckpointError, match=message):
        load_model(folder)


# ------------------------------------------------------------------------------------------------------------------
# Devices (the other user-given name that load() resolves)
# ------------------------------------------------------------------------------------------------------------------
@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)


@pytest.mark.parametrize("device, message", [
    ("tpu", r"unknown device 'tpu'; use auto, cpu or cuda"),
    ("banana", r"unknown device 'banana'; use auto, cpu or cuda"),
    ("meta", r"unknown device 'meta'; use auto, cpu or cuda"),
    ("cuda", r"device 'cuda' was asked for but no CUDA GPU is available here; use --device cpu"),
    ("cuda:1", r"no CUDA GPU is available here"),
])
def test_unknown_or_unavailable_device(no_gpu, device, message):
    with pytest.raises(ValueError, match=message):
        device_module.resolve_device(device)


def test_auto_and_cpu_devices(no_gpu):
    assert device_module.resolve_device("auto") == torch.device("cpu")
    assert device_module.resolve_device(" CPU ") == torch.device("cpu")


# ------------------------------------------------------------------------------------------------------------------
# Checked before anything is allocated: bounded configs, then the weights' shapes from the headers alone
# ------------------------------------------------------------------------------------------------------------------
@pytest.fixture
def nothing_allocated(monkeypatch):
    """Fails the test if loading reads a tensor or builds a model with real storage: the checkpoint must be refused
    from config.json and the weights' headers alone."""
    def read_state_dict(*args, **kwargs):
        raise AssertionError("tensors were read before the checkpoint was checked")

    init_weights = ours.BertPreTrainedModel.init_weights

    def init_on_meta_only(self):
        assert next(self.parameters()).is_meta, "a model with real storage was built before the checkpoint was checked"
        init_weights(self)

    monkeypatch.setattr(checkpoint, "read_state_dict", read_state_dict)
    monkeypatch.setattr(ours.BertPreTrainedModel, "init_weights", init_on_meta_only)


def with_config(src, dst, names=("config.json", "model.safetensors"), **changes):
    folder = copy_folder(src, dst, names)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return folder


@pytest.mark.parametrize("changes, message", [
    ({"num_hidden_layers": 100_000}, r"num_hidden_layers is 100000, above the limit of 256"),
    ({"hidden_size": 10**7}, r"hidden_size is 10000000, above the limit of 16,384"),
    ({"num_hidden_layers": 1000, "hidden_size": 768, "num_attention_heads": 12, "intermediate_size": 3072},
     r"num_hidden_layers is 1000, above the limit of 256"),
    ({"hidden_size": 16_384, "num_attention_heads": 128, "num_hidden_layers": 256},
     r"this config describes a model of up to .* billion parameters .* above the limit of 4 billion"),
])
def test_an_oversized_config_is_refused_before_allocating(tmp_path, pretraining_folder, nothing_allocated, changes,
                                                          message):
    folder = with_config(pretraining_folder[0], tmp_path / "ckpt", **changes)
    with pytest.raises(CheckpointError, match=rf"config.json: {message}") as err:
        load_model(folder)
    one_line(err)


def test_config_fields_that_disagree_with_the_weights_are_named(tmp_path, pretraining_folder, nothing_allocated):
    folder = with_config(pretraining_folder[0], tmp_path / "ckpt", vocab_size=120, hidden_size=64,
                         intermediate_size=128, type_vocab_size=2, num_hidden_layers=200)
    with pytest.raises(CheckpointError) as err:
        load_model(folder)
    text = str(err.value)
    assert ("config.json disagrees with the weights: "
            "vocab_size is 120 but bert.embeddings.word_embeddings.weight has 100 rows; "
            "hidden_size is 64 but bert.embeddings.word_embeddings.weight has 32 columns; "
            "type_vocab_size is 2 but bert.embeddings.token_type_embeddings.weight has 3 rows; "
            "intermediate_size is 128 but bert.encoder.layer.0.intermediate.dense.weight has 64 rows; "
            "num_hidden_layers is 200 but the weights hold 2 layers (bert.encoder.layer.0 to 1)"
            ) in text
    assert "missing 3168: " in text and text.endswith("check that config.json belongs to these weights")


def test_weights_without_the_tensors_that_size_the_model_are_refused_before_allocating(tmp_path, pretraining_folder,
                                                                                       nothing_allocated):
    # Nothing in the weights to compare the config with: the config could ask for anything up to the parameter limit.
    folder = with_config(pretraining_folder[0], tmp_path / "ckpt", num_hidden_layers=200, hidden_size=768,
                         num_attention_heads=12, intermediate_size=3072)
    save_file({"lm_head.weight": torch.zeros(3)}, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"num_hidden_layers is 200 but the weights hold no layers\n.*"
                                              r"missing \d+: bert.embeddings.word_embeddings.weight"):
        load_model(folder)


@pytest.mark.parametrize("layout", ["pytorch_model.bin", "sharded safetensors"])
def test_shapes_come_from_every_weight_format_without_reading_the_tensors(tmp_path, nothing_allocated, layout):
    hf = hf_model(transformers.BertForPreTraining, seed=3)
    if layout == "pytorch_model.bin":
        hf.config.save_pretrained(tmp_path)
        torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    else:
        hf.save_pretrained(tmp_path, max_shard_size="40KB")
    shapes, name = checkpoint.read_shapes(tmp_path)
    assert name == {"pytorch_model.bin": "pytorch_model.bin"}.get(layout, "model.safetensors.index.json")
    assert shapes == {key: value.shape for key, value in hf.state_dict().items() if key in shapes}
    assert "bert.embeddings.word_embeddings.weight" in shapes
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 80}))
    with pytest.raises(CheckpointError, match=r"max_position_embeddings is 80 but "
                                              r"bert.embeddings.position_embeddings.weight has 64 rows"):
        load_model(tmp_path)


def test_a_bin_file_is_memory_mapped_not_read(tmp_path, monkeypatch):
    hf = hf_model(transformers.BertForPreTraining, seed=4)
    hf.config.save_pretrained(tmp_path)
    torch.save(hf.state_dict(), tmp_path / "pytorch_model.bin")
    calls = []
    load = torch.load
    monkeypatch.setattr(torch, "load", lambda *args, **kwargs: calls.append(kwargs) or load(*args, **kwargs))
    load_model(tmp_path)
    assert calls and all(kw["mmap"] and kw["weights_only"] for kw in calls)


@pytest.mark.parametrize("value, dtype", [(float("nan"), torch.float32), (float("inf"), torch.float16),
                                          (1e300, torch.float64)])  # 1e300 overflows float32
def test_weights_that_are_not_finite_are_refused(tmp_path, pretraining_folder, value, dtype):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt")
    state = load_file(folder / "model.safetensors")
    for key in ("bert.encoder.layer.1.attention.self.query.weight", "cls.predictions.bias"):
        state[key] = state[key].to(dtype)
        state[key].view(-1)[3] = value
    save_file(state, folder / "model.safetensors")
    with pytest.raises(CheckpointError, match=r"2 of the \d+ tensors in .*model.safetensors hold NaN or infinite "
                                              r"values: bert.encoder.layer.1.attention.self.query.weight, "
                                              r"cls.predictions.bias; the checkpoint is damaged") as err:
        load_model(folder)
    one_line(err)


# ------------------------------------------------------------------------------------------------------------------
# Hostile or broken files: load() raises a one-line CheckpointError naming the file, never a raw exception
# ------------------------------------------------------------------------------------------------------------------
DEEP = "[" * 100_000
BAD_FILES = [
    # (file, content or a kind of file, files removed so that no fallback hides the bad one)
    ("config.json", DEEP, ()),
    ("config.json", '{"hidden_size": NaN}', ()),
    ("config.json", '{"layer_norm_eps": 1e999}', ()),
    ("config.json", '{"vocab_size": 1' + "0" * 5000 + "}", ()),
    ("config.json", '{"hidden_size": 18446744073709551616}', ()),
    ("config.json", '{"num_hidden_layers": "12"}', ()),
    ("config.json", '{"initializer_range": "0.02"}', ()),
    ("config.json", '{"id2label": 5}', ()),
    ("config.json", '{"model_type": ["bert"]}', ()),
    ("config.json", "[1, 2]", ()),
    ("config.json", b"\xff\xfe\x00garbage", ()),
    ("config.json", "", ()),
    ("config.json", "/dev/zero", ()),
    ("config.json", "20 GB", ()),
    ("config.json", "directory", ()),
    ("tokenizer_config.json", '{"strip_accents": [1]}', ()),
    ("tokenizer_config.json", '{"do_lower_case": "no"}', ()),
    ("tokenizer_config.json", "[]", ()),
    ("tokenizer_config.json", DEEP, ()),
    ("tokenizer_config.json", '{"model_max_length": Infinity}', ()),
    ("tokenizer_config.json", "/dev/zero", ()),
    ("tokenizer.json", DEEP, ("vocab.txt",)),
    ("tokenizer.json", '{"model": 5}', ("vocab.txt",)),
    ("tokenizer.json", b"\x00\x01\x02", ("vocab.txt",)),
    ("tokenizer.json", "/dev/zero", ("vocab.txt",)),
    ("tokenizer.json", "20 GB", ("vocab.txt",)),
    ("vocab.txt", "/dev/zero", ("tokenizer.json",)),
    ("vocab.txt", "20 GB", ("tokenizer.json",)),
    ("vocab.txt", b"[UNK]\n\xff\n", ("tokenizer.json",)),
    ("vocab.txt", "directory", ("tokenizer.json",)),
    ("model.safetensors.index.json", '{"weight_map": [1]}', ("model.safetensors",)),
    ("model.safetensors.index.json", '{"weight_map": {"a": 5}}', ("model.safetensors",)),
    ("model.safetensors.index.json", "[]", ("model.safetensors",)),
    ("model.safetensors.index.json", DEEP, ("model.safetensors",)),
    ("model.safetensors.index.json", "/dev/zero", ("model.safetensors",)),
    ("model.safetensors", "/dev/zero", ()),
]


def plant(path, content):
    if content == "/dev/zero":
        path.symlink_to("/dev/zero")
    elif content == "directory":
        path.mkdir()
    elif content == "20 GB":
        with open(path, "wb") as f:  # sparse: no disk space, but reading it whole would take 20 GB of memory
            f.truncate(20 * 2**30)
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


@pytest.mark.parametrize("name, content, removed", BAD_FILES,
                         ids=[f"{name}:{str(content)[:24]}" for name, content, _ in BAD_FILES])
def test_load_turns_every_bad_file_into_one_checkpoint_error(tmp_path, tiny_mlm_folder, name, content, removed):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_mlm_folder, folder)
    for other in (name, *removed):
        (folder / other).unlink(missing_ok=True)
    plant(folder / name, content)
    with pytest.raises(CheckpointError) as err:
        bertviz_app.load(str(folder), device="cpu")
    assert name in one_line(err)


def test_a_fifo_is_refused_instead_of_waited_on(tmp_path, pretraining_folder):
    folder = copy_folder(pretraining_folder[0], tmp_path / "ckpt", names=("model.safetensors",))
    os.mkfifo(folder / "config.json")  # opening it would block until someone writes
    errors = []
    thread = threading.Thread(target=lambda: errors.append(pytest.raises(CheckpointError, load_model, folder)),
                              daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "loading waits on a FIFO named config.json"
    assert errors and re.search(r"config.json is a pipe, not a regular file; put the checkpoint's own config.json "
                                r"there", str(errors[0].value))


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_every_file_of_a_saved_folder_has_the_mode_the_umask_gives(tmp_path, tiny_config, umask):
    """safetensors alone writes the weights 0600: copied to a shared place, they were the one unreadable file."""
    from bertviz_app.tokenizer import Tokenizer
    from bertviz_app.catalog import minilm_path

    old = os.umask(umask)
    try:
        save_pretrained(ours.BertForPreTraining(tiny_config), tmp_path / "saved",
                        tokenizer=Tokenizer.from_folder(minilm_path()))
    finally:
        os.umask(old)
    modes = {p.name: oct(p.stat().st_mode & 0o777) for p in (tmp_path / "saved").iterdir()}
    assert "model.safetensors" in modes and len(modes) > 2
    assert set(modes.values()) == {oct(0o666 & ~umask)}, modes
