"""Masking rates, sentence pairs, the training loop (single process and 2-process DDP), checkpoints and resuming."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from bertviz_app.checkpoint import load_model
from bertviz_app.config import BertConfig
from bertviz_app.model import BertForPreTraining
from bertviz_app.masking import (IGNORE_INDEX, KEPT, MASKED, RANDOM, UNCHANGED, mask_tokens,
                                 random_token_ids)
from bertviz_app.pretraining import (IS_NEXT, NOT_NEXT, PretrainingObjective, SentencePairDataset,
                                     add_pretrain_arguments, build_model, collate, evaluate, latest_checkpoint,
                                     linear_schedule, load_token_corpus, read_documents, run_pretrain,
                                     save_token_corpus, token_counts, tokenize_documents, unigram_log_prior)
from bertviz_app.tokenizer import Tokenizer

REPO = Path(__file__).resolve().parents[1]
WORDS = ("the cat dog sat on mat a bird sang in tree sun was warm it rained all day we went home and slept "
         "she poured cup of tea he read book").split()


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory) -> Tokenizer:
    folder = tmp_path_factory.mktemp("vocab")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS, "##s", "##ed", "##ing"]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return Tokenizer.from_vocab(folder / "vocab.txt")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """Documents of four consecutive sentences of a fixed cyclic story (learnable: the same sentences recur),
    and a held-out file of the same kind."""
    folder = tmp_path_factory.mktemp("corpus")
    story = ["the cat sat on the mat .", "a bird sang in the tree .", "the sun was warm all day .",
             "we went home and slept .", "she poured a cup of tea .", "he read a book in the sun ."]
    for name, docs in (("train.txt", 12), ("heldout.txt", 4)):
        text = "\n\n".join("\n".join(story[(d + k) % len(story)] for k in range(4)) for d in range(docs))
        (folder / name).write_text(text + "\n")
    return folder


# ------------------------------------------------------------------------------------------------------------------
# Masking
# ------------------------------------------------------------------------------------------------------------------
def _batch(B=400, T=64, vocab=100, pad_from=48):
    ids = torch.randint(10, vocab, (B, T), generator=torch.Generator().manual_seed(1))
    special = torch.zeros(B, T, dtype=torch.bool)
    special[:, 0] = special[:, 20] = True  # [CLS] and a [SEP]
    special[:, pad_from:] = True  # padding
    return ids, special


def test_masking_rates_match_15_80_10_10():
    ids, special = _batch()
    out = mask_tokens(ids, special, mask_token_id=4, random_token_ids=torch.arange(10, 100),
                      generator=torch.Generator().manual_seed(0))
    chosen = out.labels != IGNORE_INDEX
    n_candidates = int((~special).sum(1)[0])  # 45 per row
    # Exactly round(15%) of the non-special tokens in every row, never a special token or padding.
    assert (chosen.sum(1) == round(0.15 * n_candidates)).all()
    assert not (chosen & special).any()
    assert (out.input_ids[special] == ids[special]).all()
    n = int(chosen.sum())  # 400 x 7 = 2800 chosen positions
    for kind, p in ((MASKED, 0.8), (RANDOM, 0.1), (KEPT, 0.1)):
        observed = int((out.kind == kind).sum())
        sigma = math.sqrt(n * p * (1 - p))
        assert abs(observed - n * p) < 5 * sigma, (kind, observed, n * p)
    assert (out.input_ids[out.kind == MASKED] == 4).all()
    assert (out.input_ids[out.kind == KEPT] == ids[out.kind == KEPT]).all()
    assert (out.kind[~chosen] == UNCHANGED).all()
    assert (out.labels[chosen] == ids[chosen]).all()
    # Random replacements come from the allowed ids and are spread over them (not one fixed token).
    randoms = out.input_ids[out.kind == RANDOM]
    assert ((randoms >= 10) & (randoms < 100)).all() and len(randoms.unique()) > 50


def test_masking_is_uniform_over_positions():
    ids, special = _batch()
    out = mask_tokens(ids, special, 4, torch.arange(10, 100), generator=torch.Generator().manual_seed(0))
    per_position = (out.labels != IGNORE_INDEX).float().sum(0)[~special[0]]  # 45 positions, 400 rows
    p = 7 / 45
    sigma = math.sqrt(400 * p * (1 - p))
    assert ((per_position - 400 * p).abs() < 5 * sigma).all()


def test_whole_word_masking_takes_whole_words():
    ids, special = _batch(B=200)
    starts = torch.ones_like(special)
    starts[:, 2::3] = False  # every third token continues the word before it
    out = mask_tokens(ids, special, 4, torch.arange(10, 100), word_starts=starts,
                      generator=torch.Generator().manual_seed(0))
    chosen = out.labels != IGNORE_INDEX
    assert not (chosen & special).any()
    # A continuation piece is chosen exactly when the piece before it is (both are non-special here).
    for pos in range(2, 48, 3):
        if pos - 1 != 20 and pos != 20 and pos - 1 != 0:
            assert torch.equal(chosen[:, pos], chosen[:, pos - 1])
    assert (chosen.sum(1) <= round(0.15 * 45)).all() and (chosen.sum(1) >= 5).all()


def test_masking_validates_its_arguments():
    ids, special = _batch(B=2)
    with pytest.raises(ValueError, match="mlm_probability"):
        mask_tokens(ids, special, 4, torch.arange(10, 20), mlm_probability=0)
    with pytest.raises(ValueError, match="same shape"):
        mask_tokens(ids, special[:, :5], 4, torch.arange(10, 20))


def test_random_token_ids_exclude_special_tokens(tokenizer):
    ids = set(random_token_ids(tokenizer).tolist())
    assert not ids & tokenizer.special_ids
    assert len(ids) == tokenizer.vocab_size - 5


# ------------------------------------------------------------------------------------------------------------------
# Sentence pairs
# ------------------------------------------------------------------------------------------------------------------
def test_read_documents_splits_on_blank_lines(tmp_path):
    (tmp_path / "a.txt").write_text("one.\ntwo.\n\n\nthree.\n  \nfour.\nfive.")
    assert read_documents(tmp_path / "a.txt") == [["one.", "two."], ["three."], ["four.", "five."]]
    with pytest.raises(FileNotFoundError, match="one sentence per line"):
        read_documents(tmp_path / "missing.txt")


def test_pairs_have_bert_layout_and_half_are_random(tokenizer):
    # Token id 1000 + 100 d + 10 k + j is word j of sentence k of document d: every token says where it came from.
    documents = [[[1000 + 100 * d + 10 * k + j for j in range(3)] for k in range(4)] for d in range(8)]
    data = SentencePairDataset(documents, tokenizer, max_tokens=16, seed=0)
    labels = []
    for i in range(800):
        e = data[i]
        assert e.ids[0] == tokenizer.cls_token_id and e.ids[-1] == tokenizer.sep_token_id
        assert e.ids.count(tokenizer.sep_token_id) == 2 and len(e.ids) <= 16
        sep = e.ids.index(tokenizer.sep_token_id)
        assert e.segment_ids == [0] * (sep + 1) + [1] * (len(e.ids) - sep - 1)
        a, b = e.ids[1:sep], e.ids[sep + 1:-1]
        assert a and b
        where = lambda t: divmod((t - 1000) // 10, 10)  # noqa: E731 - (document, sentence)
        (doc_a, sent_a), (doc_b, sent_b) = where(a[-1]), where(b[0])
        assert a[-1] % 10 == 2 and b[0] % 10 == 0  # A ends and B starts on a sentence boundary
        if e.next_sentence_label == IS_NEXT:
            assert doc_b == doc_a and sent_b == sent_a + 1
        else:
            assert doc_b != doc_a
        labels.append(e.next_sentence_label)
    p_random = sum(label == NOT_NEXT for label in labels) / len(labels)
    assert abs(p_random - 0.5) < 5 * math.sqrt(0.25 / 800)
    assert data[5] == data[5] and data[5] != data[6]  # deterministic per index


def test_dataset_needs_pairs(tokenizer):
    with pytest.raises(ValueError, match="two sentences"):
        SentencePairDataset([[[6, 7]], [[8]]], tokenizer)


def test_collate_pads_and_never_masks_special_tokens(tokenizer, corpus):
    data = SentencePairDataset.from_files([corpus / "train.txt"], tokenizer, max_tokens=32)
    batch = collate([data[i] for i in range(16)], tokenizer, random_token_ids(tokenizer),
                    torch.Generator().manual_seed(0))
    special = torch.isin(batch.input_ids.where(batch.labels == IGNORE_INDEX, torch.tensor(-1)),
                         torch.tensor(sorted(tokenizer.special_ids)))
    chosen = batch.labels != IGNORE_INDEX
    assert not (chosen & (batch.attention_mask == 0)).any()
    assert not torch.isin(batch.labels[chosen], torch.tensor(sorted(tokenizer.special_ids))).any()
    assert (batch.input_ids[batch.attention_mask == 0] == tokenizer.pad_token_id).all()
    assert special.any() and batch.next_sentence_label.shape == (16,)


def test_fine_tuning_and_pretraining_pad_a_batch_with_one_helper(tokenizer, corpus):
    """Both batches come from padding.pad_inputs: ids padded with the pad id, segment 0 and mask 0 past each row."""
    from bertviz_app.finetuning.tasks.base import Feature, pad
    from bertviz_app.padding import pad_inputs

    ids, segments, mask = pad_inputs([[5, 6, 7], [8]], [[0, 0, 1], [1]], pad_id=9)
    assert ids.tolist() == [[5, 6, 7], [8, 9, 9]] and segments.tolist() == [[0, 0, 1], [1, 0, 0]]
    assert mask.tolist() == [[1, 1, 1], [1, 0, 0]] and ids.dtype == segments.dtype == mask.dtype == torch.long
    examples = [SentencePairDataset.from_files([corpus / "train.txt"], tokenizer, max_tokens=32)[i] for i in range(4)]
    batch = collate(examples, tokenizer, random_token_ids(tokenizer), torch.Generator().manual_seed(0))
    expected = pad_inputs([e.ids for e in examples], [e.segment_ids for e in examples], tokenizer.pad_token_id)
    assert torch.equal(batch.segment_ids, expected[1]) and torch.equal(batch.attention_mask, expected[2])
    unmasked = batch.labels == IGNORE_INDEX  # the positions masking left as they were
    assert torch.equal(batch.input_ids[unmasked], expected[0][unmasked])
    tuned = pad([Feature(e.ids, e.segment_ids, i) for i, e in enumerate(examples)], tokenizer.pad_token_id)
    assert all(torch.equal(a, b) for a, b in zip((tuned.input_ids, tuned.segment_ids, tuned.attention_mask),
                                                 expected))


def test_objective_equals_the_models_own_loss(tokenizer, corpus):
    data = SentencePairDataset.from_files([corpus / "train.txt"], tokenizer, max_tokens=32)
    model = BertForPreTraining(BertConfig.preset("tiny")).eval()
    batch = collate([data[i] for i in range(8)], tokenizer, random_token_ids(tokenizer),
                    torch.Generator().manual_seed(0))
    ours = PretrainingObjective(model)(batch)
    reference = model(batch.input_ids, batch.segment_ids, batch.attention_mask, labels=batch.labels,
                      next_sentence_label=batch.next_sentence_label)
    torch.testing.assert_close(ours["loss"], reference.loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours["mlm_loss"], reference.mlm_loss, rtol=1e-5, atol=1e-6)


def test_linear_schedule():
    f = linear_schedule(10, 110)
    assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0)
    assert f(60) == pytest.approx(0.5) and f(110) == 0.0 and f(200) == 0.0


# ------------------------------------------------------------------------------------------------------------------
# Models and training
# ------------------------------------------------------------------------------------------------------------------
def _args(corpus, out, *extra):
    import argparse

    parser = add_pretrain_arguments(argparse.ArgumentParser())
    return parser.parse_args(["--corpus", str(corpus), "--out", str(out), "--preset", "tiny", "--batch-size", "8",
                              "--max-tokens", "32", "--log-every", "2", "--device", "cpu", "--save-minutes", "0",
                              "--eval-examples", "16", "--timeline", "0", *extra])


def test_init_from_a_checkpoint_without_heads(tmp_path, tokenizer):
    from bertviz_app.checkpoint import save_pretrained
    from bertviz_app.model import BertModel

    encoder = BertModel(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    save_pretrained(encoder, tmp_path / "enc", tokenizer=tokenizer)
    prior = torch.log_softmax(torch.randn(tokenizer.vocab_size), -1)
    model, new = build_model(str(tmp_path / "enc"), tokenizer, max_tokens=32, log_prior=prior)
    assert model.has_mlm_head and model.has_nsp_head
    assert "cls.predictions.transform.dense.weight" in new and "cls.seq_relationship.weight" in new
    assert not any(k.startswith("bert.") for k in new)
    torch.testing.assert_close(model.bert.encoder.layer[1].output.dense.weight,
                               encoder.encoder.layer[1].output.dense.weight)
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight
    torch.testing.assert_close(model.cls.predictions.transform.dense.weight, torch.eye(32))
    torch.testing.assert_close(model.cls.predictions.bias, prior - prior.mean())


def test_reinit_top_layers_starts_them_afresh_and_trains_them_as_new(tmp_path, tokenizer):
    """--reinit-top-layers N: the checkpoint's top N layers get BERT's initialization and join the new parameters
    (with the MLM head they feed), the layers below stay as they were."""
    from bertviz_app.checkpoint import save_pretrained

    source = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    save_pretrained(source, tmp_path / "ckpt", tokenizer=tokenizer)
    model, new = build_model(str(tmp_path / "ckpt"), tokenizer, max_tokens=32, reinit_top_layers=1)
    top = len(model.bert.encoder.layer) - 1
    torch.testing.assert_close(model.bert.encoder.layer[top - 1].output.dense.weight,
                               source.bert.encoder.layer[top - 1].output.dense.weight)
    fresh = model.bert.encoder.layer[top].output.dense.weight
    assert not torch.equal(fresh, source.bert.encoder.layer[top].output.dense.weight)
    assert abs(fresh.std().item() - model.config.initializer_range) < 0.005
    assert f"bert.encoder.layer.{top}.output.dense.weight" in new and "cls.predictions.transform.dense.weight" in new
    assert not any(k.startswith(f"bert.encoder.layer.{top - 1}.") for k in new)
    assert build_model(str(tmp_path / "ckpt"), tokenizer, max_tokens=32)[1] == []
    with pytest.raises(ValueError, match="has 2 layers"):
        build_model(str(tmp_path / "ckpt"), tokenizer, max_tokens=32, reinit_top_layers=3)


def test_training_learns_saves_and_resumes(tmp_path, corpus, tokenizer):
    out = tmp_path / "run"
    tok_folder = tmp_path / "tok"
    tokenizer.save(tok_folder)
    args = _args(corpus, out, "--steps", "20", "--save-every", "10", "--lr", "1e-2", "--warmup", "3",
                 "--tokenizer", str(tok_folder), "--keep", "0")
    model = run_pretrain(args)
    rows = (out / "log.csv").read_text().splitlines()
    header = rows[0].split(",")
    train = [dict(zip(header, r.split(","))) for r in rows[1:] if ",train," in r]
    assert len(train) == 10 and train[-1]["step"] == "20"
    # On this repetitive corpus the model soon does better on held-out pairs than the weights it started from.
    heldout = SentencePairDataset.from_files([corpus / "heldout.txt"], tokenizer, max_tokens=32)
    torch.manual_seed(0)  # run_pretrain seeds the initialization with --seed 0
    start, _ = build_model("scratch", tokenizer, "tiny", 32,
                           unigram_log_prior(SentencePairDataset.from_files([corpus / "train.txt"], tokenizer, 32),
                                             tokenizer.vocab_size))
    before, after = (evaluate(m, heldout, examples=64, batch_size=32).mlm_loss for m in (start, model))
    assert after < before - 0.1, (before, after)  # deterministic: an untrained run gives exactly 0
    assert any(",heldout," in r for r in rows)
    assert latest_checkpoint(out).name == "step-0000020" and (out / "step-0000010").exists()

    # The checkpoint loads into our model and into transformers with the same predictions.
    loaded, _ = load_model(out / "step-0000020")
    assert loaded.has_mlm_head and loaded.has_nsp_head
    for a, b in zip(model.state_dict().values(), loaded.state_dict().values()):
        torch.testing.assert_close(a, b)
    from transformers import BertForPreTraining as HFBertForPreTraining

    hf = HFBertForPreTraining.from_pretrained(out / "step-0000020").eval()
    ids = torch.tensor([[2, 6, 7, 4, 5, 3]])
    torch.testing.assert_close(hf(ids).prediction_logits, loaded(ids).prediction_logits, atol=1e-4, rtol=1e-4)

    # Resuming from step 10 reaches exactly the same weights as the uninterrupted run.
    resumed_out = tmp_path / "resumed"
    resumed_out.mkdir()
    import shutil
    shutil.copytree(out / "step-0000010", resumed_out / "step-0000010")
    resumed = run_pretrain(_args(corpus, resumed_out, "--steps", "20", "--save-every", "10", "--lr", "1e-2",
                                 "--warmup", "3", "--tokenizer", str(tok_folder)))
    for (name, a), b in zip(model.state_dict().items(), resumed.state_dict().values()):
        torch.testing.assert_close(a, b, msg=name)


def test_evaluate_reports_the_unigram_baseline(corpus, tokenizer):
    data = SentencePairDataset.from_files([corpus / "heldout.txt"], tokenizer, max_tokens=32)
    counts = token_counts(data, tokenizer.vocab_size)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    with torch.no_grad():  # a head that only knows the unigram distribution reproduces the baseline exactly
        model.cls.predictions.decoder.weight.zero_()
        model.cls.predictions.bias.copy_((counts.float() + 1).log())
        model.bert.embeddings.word_embeddings.weight.zero_()
    result = evaluate(model, data, examples=64, batch_size=16, unigram_counts=counts)
    assert result.masked_tokens > 0 and result.pairs == 64
    assert result.mlm_top1 == pytest.approx(result.unigram_top1)
    assert result.mlm_top5 == pytest.approx(result.unigram_top5)
    assert 0 < result.unigram_top1 <= result.unigram_top5 <= 1
    again = evaluate(model, data, examples=64, batch_size=16, unigram_counts=counts)
    assert again == result  # the same pairs and masks every time


def test_evaluate_scores_the_same_masks_at_any_batch_size(corpus, tokenizer):
    """A training run evaluates at its own batch size and the export at another: both must see the same masks."""
    data = SentencePairDataset.from_files([corpus / "heldout.txt"], tokenizer, max_tokens=32)
    counts = token_counts(data, tokenizer.vocab_size)
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size)).eval()
    results = [evaluate(model, data, examples=40, batch_size=b, unigram_counts=counts) for b in (1, 7, 40)]
    for other in results[1:]:
        assert (other.masked_tokens, other.unigram_top1, other.unigram_top5) == (
            results[0].masked_tokens, results[0].unigram_top1, results[0].unigram_top5)
        for name in ("mlm_top1", "mlm_top5", "mlm_loss", "nsp_accuracy", "nsp_loss"):
            assert getattr(other, name) == pytest.approx(getattr(results[0], name), abs=1e-5), name


def test_tokenize_documents_drops_empty_sentences(tokenizer):
    assert tokenize_documents([["the cat .", "   "], ["dog"]], tokenizer) == [
        [[tokenizer.vocab["the"], tokenizer.vocab["cat"], tokenizer.vocab["."]]], [[tokenizer.vocab["dog"]]]]


def test_two_process_ddp_keeps_ranks_identical(tmp_path, corpus, tokenizer):
    tokenizer.save(tmp_path / "tok")
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(f"""
        import argparse, os, torch
        from bertviz_app.pretraining import add_pretrain_arguments, run_pretrain
        args = add_pretrain_arguments(argparse.ArgumentParser()).parse_args([
            "--corpus", {str(corpus)!r}, "--out", {str(tmp_path / 'out')!r}, "--preset", "tiny",
            "--tokenizer", {str(tmp_path / 'tok')!r}, "--steps", "4", "--batch-size", "4", "--max-length", "32",
            "--device", "cpu", "--threads", "1", "--save-every", "1", "--save-minutes", "0", "--log-every", "2",
            "--keep", "2", "--eval-examples", "8"])
        model = run_pretrain(args)
        torch.save(model.state_dict(), {str(tmp_path)!r} + f"/rank{{os.environ['RANK']}}.pt")
    """))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                           str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    rank0 = torch.load(tmp_path / "rank0.pt", weights_only=True)
    rank1 = torch.load(tmp_path / "rank1.pt", weights_only=True)
    start = BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size)).state_dict()
    moved = False
    for key in rank0:
        torch.testing.assert_close(rank0[key], rank1[key], rtol=0, atol=0, msg=key)
        moved |= rank0[key].shape == start[key].shape and not torch.equal(rank0[key], start[key])
    assert moved  # training changed the weights
    assert latest_checkpoint(tmp_path / "out").name == "step-0000004"
    assert sorted(p.name for p in (tmp_path / "out").glob("step-*")) == ["step-0000003", "step-0000004"]  # --keep 2
    # the main process wrote the timeline (on by default: every step of so short a run)
    from bertviz_app.timeline import open_timeline

    assert open_timeline(tmp_path / "out").steps == [0, 1, 2, 3, 4]


def test_frozen_encoder_phase_trains_only_new_heads(tmp_path, corpus, tokenizer):
    from bertviz_app.checkpoint import save_pretrained
    from bertviz_app.model import BertModel

    encoder = BertModel(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size))
    save_pretrained(encoder, tmp_path / "enc", tokenizer=tokenizer)
    args = _args(corpus, tmp_path / "run", "--init", str(tmp_path / "enc"), "--steps", "4", "--save-every", "4",
                 "--freeze-encoder-steps", "4", "--lr", "1e-2", "--warmup", "1")
    model = run_pretrain(args)
    before = encoder.state_dict()
    for key, value in model.state_dict().items():
        if key.startswith("bert."):  # encoder, embeddings (and so the tied decoder) and pooler untouched
            torch.testing.assert_close(value, before[key[len("bert."):]], rtol=0, atol=0, msg=key)
    assert not torch.equal(model.cls.predictions.transform.dense.weight, torch.eye(32))


def test_export_of_a_two_stage_run_reports_both_stages(tmp_path, corpus, tokenizer):
    """scripts/export_model.py: the exported files are float16 and its figures are theirs; the card lists every
    stage with a command whose paths are relative to the runs folder; a bad stage folder leaves --out alone."""
    import json
    import shutil

    from safetensors import safe_open

    runs = tmp_path / "runs"
    shutil.copytree(corpus, runs / "corpus")
    (runs / "corpus" / "sources.json").write_text(json.dumps({
        "packages": {"fortunes": "1"}, "heldout_percent": 2.0,
        "sources": {"story": {"train_documents": 12, "heldout_documents": 4, "sentences": 64}}}))
    tokenizer.save(runs / "tok")

    def stage(name, init, steps):
        out = runs / name
        flags = ["--steps", str(steps), "--save-every", str(steps), "--init", init, "--tokenizer", str(runs / "tok")]
        run_pretrain(_args(runs / "corpus" / "train.txt", out, *flags))
        (out / "run.sh").write_text("#!/bin/bash\ncd /somewhere\nexec .venv/bin/python -m bertviz_app pretrain "
                                    + " ".join(["--corpus", str(runs / "corpus" / "train.txt"), "--out", str(out),
                                                "--batch-size", "8", *flags]) + "\n")
        (out / "hardware.txt").write_text(f"the test machine ({name})\n")
        return out / f"step-{steps:07d}"

    def export(checkpoint, out, *stages):
        return subprocess.run([sys.executable, str(REPO / "scripts" / "export_model.py"), str(checkpoint),
                               "--corpus", str(runs / "corpus"), "--examples", "16", "--out", str(out),
                               *[a for s in stages for a in ("--stage", str(runs / s))]],
                              capture_output=True, text=True)

    first = stage("one", "scratch", 6)
    assert export(first, runs / "one" / "export", "one").returncode == 0
    second = stage("two", str(runs / "one" / "export"), 4)
    shipped = tmp_path / "shipped"
    result = export(second, shipped, "one", "two")
    assert result.returncode == 0, result.stderr

    with safe_open(str(shipped / "model.safetensors"), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F16"}
    metrics = json.loads((shipped / "metrics.json").read_text())
    assert [(s["folder"], s["steps"], s["batch_size"]) for s in metrics["stages"]] == [("one", 6, 8), ("two", 4, 8)]
    model, _ = load_model(shipped)
    heldout = SentencePairDataset.from_files([corpus / "heldout.txt"], tokenizer, 128, seed=1234)
    again = evaluate(model, heldout, 16, 32)
    assert (again.mlm_top1, again.masked_tokens) == (metrics["mlm_top1"], metrics["masked_tokens"])
    card = (shipped / "README.md").read_text()
    assert "the test machine (one)" in card and "the test machine (two)" in card
    assert "--init runs/one/export" in card and "--out runs/one/export" in card
    # the shipped card's CPU diagnosis of the copy rate stays, whatever the new weights measure
    assert card.count("## Why it answers with a word of its sentence") == 1
    assert card.index("## Why it answers") < card.index("## Corpus")
    assert str(tmp_path) not in card and "bertviz-app pretrain" in card
    assert not (tmp_path / "shipped.partial").exists()

    # A checkpoint of another run than the last stage, or an --out that is not an earlier export: refused.
    wrong = export(first, shipped, "one", "two")
    assert wrong.returncode != 0 and "not a checkpoint of the last --stage" in wrong.stderr
    clobber = export(second, runs / "corpus", "one", "two")
    assert clobber.returncode != 0 and "refusing to replace it" in clobber.stderr
    assert (runs / "corpus" / "train.txt").is_file()

    # A stage folder without its hardware.txt: refused before anything is written.
    before = (shipped / "model.safetensors").read_bytes()
    (runs / "two" / "hardware.txt").unlink()
    refused = export(second, shipped, "one", "two")
    assert refused.returncode != 0 and "lacks hardware.txt" in refused.stderr
    assert (shipped / "model.safetensors").read_bytes() == before


def test_every_setting_is_an_option_a_check_and_in_settings_json(tmp_path, corpus, tokenizer):
    """A new setting is one field of PretrainSettings: its option, its check and its entry in settings.json."""
    import argparse
    import dataclasses
    import json

    from bertviz_app.pretraining import PretrainSettings

    parser = add_pretrain_arguments(argparse.ArgumentParser())
    usage, dests = parser.format_help(), {a.dest for a in parser._actions}
    for f in dataclasses.fields(PretrainSettings):
        assert f"--{f.name.replace('_', '-')}" in usage and f.name in dests and f.metadata["help"], f.name
    tokenizer.save(tmp_path / "tok")
    run_pretrain(_args(corpus, tmp_path / "run", "--steps", "2", "--save-every", "2", "--tokenizer",
                       str(tmp_path / "tok"), "--warmup-ratio", "0.5", "--schedule", "cosine"))
    recorded = json.loads((tmp_path / "run" / "settings.json").read_text())
    assert set(recorded) == {f.name for f in dataclasses.fields(PretrainSettings)}
    assert recorded["schedule"] == "cosine" and recorded["warmup_ratio"] == 0.5 and recorded["steps"] == 2
    with pytest.raises(ValueError, match="--warmup-ratio must be at least 0 and below 1"):
        PretrainSettings("corpus.txt", "out", warmup_ratio=1.5)
    with pytest.raises(ValueError, match="--preset must be one of tiny, classroom, mini, base, large, not 'huge'"):
        PretrainSettings("corpus.txt", "out", preset="huge")


def test_warmup_is_a_ratio_and_the_old_steps_flag_still_works():
    from bertviz_app.pretraining import PretrainSettings

    assert PretrainSettings("c", "o", steps=10_000).warmup_steps == 600  # 6%, as before
    assert PretrainSettings("c", "o", steps=10_000, warmup_ratio=0.1).warmup_steps == 1000
    assert PretrainSettings("c", "o", steps=10_000, warmup=3).warmup_steps == 3  # deprecated --warmup, in steps
    assert PretrainSettings("c", "o", steps=10, warmup_ratio=0.0).warmup_steps == 0


def test_the_schedules_warm_up_then_fall():
    from bertviz_app.training import SCHEDULES

    for name, schedule in SCHEDULES.items():
        f = schedule(10, 110)
        assert f(0) == pytest.approx(0.1) and f(9) == pytest.approx(1.0), name
    assert SCHEDULES["cosine"](10, 110)(60) == pytest.approx(0.5) and SCHEDULES["cosine"](10, 110)(110) == 0.0
    assert SCHEDULES["constant"](10, 110)(100) == 1.0


# ------------------------------------------------------------------------------------------------------------------
# Token-id corpora, same-source negatives, the time limit, and the lent-GPU script's rehearsal
# ------------------------------------------------------------------------------------------------------------------
def _marked_documents(n: int, tokenizer: Tokenizer) -> list[list[list[int]]]:
    """Document d: three sentences made of one token of its own, so every sentence tells which document it is from."""
    return [[[10 + d, 10 + d]] * 3 for d in range(n)]


def test_token_corpus_round_trip(tmp_path, tokenizer):
    documents = _marked_documents(6, tokenizer)
    documents[2] = [[7, 8, 9], [5]]
    path = save_token_corpus(tmp_path / "c.npz", documents, [0, 1, 0, 1, 0, 1], ["dict", "speech"])
    loaded, sources, names = load_token_corpus(path)
    assert loaded == documents and sources == [0, 1, 0, 1, 0, 1] and names == ["dict", "speech"]
    with pytest.raises(ValueError, match="6 documents"):
        save_token_corpus(tmp_path / "bad.npz", documents, [0, 1])


def test_random_next_sentences_come_from_the_same_source(tmp_path, tokenizer):
    documents = _marked_documents(8, tokenizer)
    sources = [d % 2 for d in range(8)]
    save_token_corpus(tmp_path / "c.npz", documents, sources)
    data = SentencePairDataset.from_token_corpus(tmp_path / "c.npz", tokenizer, 32, same_source=True)
    mixed = SentencePairDataset.from_token_corpus(tmp_path / "c.npz", tokenizer, 32)
    for dataset, same in ((data, True), (mixed, False)):
        pairs = []
        for i in range(400):
            e = dataset[i]
            if e.next_sentence_label == NOT_NEXT:
                first, second = e.ids[1], e.ids[e.segment_ids.index(1)]
                assert first != second  # never the document itself
                pairs.append((first - 10) % 2 == (second - 10) % 2)
        assert len(pairs) > 150
        assert all(pairs) if same else not all(pairs)
    with pytest.raises(ValueError, match="records no document sources"):
        save_token_corpus(tmp_path / "plain.npz", documents)
        SentencePairDataset.from_token_corpus(tmp_path / "plain.npz", tokenizer, 32, same_source=True)


def test_minutes_stop_training_with_a_checkpoint(tmp_path, corpus, tokenizer):
    tok_folder = tmp_path / "tok"
    tokenizer.save(tok_folder)
    saved = []
    run_pretrain(_args(corpus, tmp_path / "run", "--steps", "500", "--save-every", "400", "--minutes", "1e-6",
                       "--tokenizer", str(tok_folder)), on_checkpoint=lambda folder, model: saved.append(folder.name))
    checkpoint = latest_checkpoint(tmp_path / "run")
    assert checkpoint is not None and int(checkpoint.name.split("-")[1]) < 500 and saved == [checkpoint.name]


def test_device_recipe_carries_the_copy_fix(tmp_path):
    """scripts/train_on_device.py's recipe replaces the sentence-embedding top layer (the copy rate's cause in the
    model card's diagnosis) and trains it faster than the rest, on the GPU as in the rehearsal."""
    import argparse
    import importlib.util

    spec = importlib.util.spec_from_file_location("train_on_device", REPO / "scripts" / "train_on_device.py")
    device = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(device)
    for rehearse in (False, True):
        args = argparse.Namespace(rehearse=rehearse, steps=0, lr=1e-5, minutes=6.0)
        s = device.settings_for(args, tmp_path / "corpus", tmp_path / "work", tmp_path / "init", 1)
        assert s.reinit_top_layers == 1 and s.head_lr_scale * s.lr >= 1e-4 and s.freeze_encoder_steps == 0


def test_device_script_rehearses_on_the_cpu(tmp_path):
    """scripts/train_on_device.py --rehearse: the lent-GPU path, end to end, on a tiny token-id corpus."""
    import importlib.util
    import json

    from bertviz_app.catalog import ENGLISH_MLM_PATH

    spec = importlib.util.spec_from_file_location("train_on_device", REPO / "scripts" / "train_on_device.py")
    device = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(device)
    english = Tokenizer.from_folder(ENGLISH_MLM_PATH)
    texts = [[f"The {w} sat on the mat.", f"A {w} sang in the tree.", "It rained all day."]
             for w in ("cat", "dog", "bird", "fox", "cow", "hen", "pig", "owl")]
    documents = tokenize_documents(texts, english)
    corpus = tmp_path / "corpus"
    save_token_corpus(corpus / "train.npz", documents, [d % 2 for d in range(len(documents))], ["a", "b"])
    save_token_corpus(corpus / "heldout.npz", documents[:3])
    out = tmp_path / "out"
    device.main(["--rehearse", "--corpus", str(corpus), "--out", str(out), "--steps", "3",
                 "--state", str(tmp_path / "no-state.json"), "--pairs", "4", "--work", str(tmp_path / "work")])
    figures = json.loads((out / "figures.json").read_text())
    assert [(row["label"], row["step"]) for row in figures] == [("start", 0), ("checkpoint step-0000003", 3)]
    assert 0 <= figures[-1]["probes copy rate"] <= 1 and "heldout top-1" in figures[-1]
    parts = sorted(out.glob("model.safetensors.part*"))
    assert len(parts) == 3 and all(p.stat().st_size <= device.PART_BYTES for p in parts)
    state = json.loads((out / "state.json").read_text())
    assert state["sessions"] == 1 and state["steps"] == 3
    rebuilt = tmp_path / "rebuilt"
    shutil_copy = __import__("shutil").copytree(ENGLISH_MLM_PATH, rebuilt)
    (rebuilt / "model.safetensors").write_bytes(b"".join(p.read_bytes() for p in parts))
    assert device.sha256(rebuilt / "model.safetensors") == state["weights_sha256"]
    assert device.resume_state(out / "state.json", shutil_copy) == state  # the next session resumes from it
    assert load_model(rebuilt)[0].has_nsp_head
    assert "step" in (out / "log.csv").read_text().splitlines()[0]
    with pytest.raises(SystemExit, match="put the returned parts back"):  # the shipped weights are not the trained
        device.resume_state(out / "state.json", ENGLISH_MLM_PATH)
