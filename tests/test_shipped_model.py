"""The English masked-LM model we ship in assets/ (minilm-l6-mlm-nsp-en): it is the default, it loads in transformers
with the same outputs, its model card's held-out figures are reproduced from the Debian corpus, and the everyday
probes answer sensibly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open

import bertviz_app
from bertviz_app.checkpoint import load_model
from bertviz_app.catalog import ENGLISH_MLM_NAME, ENGLISH_MLM_PATH, MINILM_NAME, builtin_models
from bertviz_app.pretraining import SentencePairDataset, evaluate, token_counts
from bertviz_app.tokenizer import Tokenizer

pytestmark = pytest.mark.real_weights
ROOT = Path(__file__).resolve().parent.parent
CORPUS_PACKAGES = "fortunes fortunes-min wordnet-base dict-gcide python3-doc"


@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer


@pytest.fixture(scope="module")
def metrics():
    return json.loads((ENGLISH_MLM_PATH / "metrics.json").read_text())


def test_it_is_the_default_and_minilm_stays_selectable(explorer):
    assert list(builtin_models()) == [ENGLISH_MLM_NAME, MINILM_NAME]
    assert explorer.name == ENGLISH_MLM_NAME
    assert explorer.model.has_mlm_head and explorer.model.has_nsp_head
    minilm = bertviz_app.load(MINILM_NAME, device="cpu")
    assert minilm.name == MINILM_NAME and not minilm.model.has_mlm_head
    # the same architecture and vocabulary, so attention can be compared before and after the training
    assert minilm.model.config.num_hidden_layers == explorer.model.config.num_hidden_layers
    assert minilm.tokenizer.vocab == explorer.tokenizer.vocab


def test_half_precision_on_disk_float32_in_memory(explorer):
    weights = ENGLISH_MLM_PATH / "model.safetensors"
    assert weights.stat().st_size < 50e6
    with safe_open(str(weights), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"F16"}
    assert {p.dtype for p in explorer.model.parameters()} == {torch.float32}


def test_transformers_reads_it_with_the_same_outputs(explorer):
    import transformers
    hf = transformers.BertForPreTraining.from_pretrained(ENGLISH_MLM_PATH, dtype=torch.float32,
                                                         attn_implementation="eager").eval()
    ours, _ = load_model(ENGLISH_MLM_PATH)
    enc = explorer.tokenizer.encode("The capital of France is [MASK].", "It is a large city.")
    ids = torch.tensor([enc.ids])
    types = torch.tensor([enc.segment_ids])
    with torch.no_grad():
        theirs = hf(input_ids=ids, token_type_ids=types)
        mine = ours.eval()(ids, types)
    torch.testing.assert_close(mine.prediction_logits, theirs.prediction_logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(mine.seq_relationship_logits, theirs.seq_relationship_logits, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("text, sensible", [
    ("The [MASK] barked at the cat.", {"dog"}),
    ("She poured a cup of [MASK].", {"tea", "coffee", "water", "milk", "wine"}),
    ("A week has seven [MASK].", {"days"}),
    ("The capital of France is [MASK].", {"paris"}),
    ("He opened the [MASK] and walked in.", {"door"}),
])
def test_everyday_probes(explorer, text, sensible):
    top5 = [token for token, _ in explorer.fill_mask(text, top_k=5)[0]]
    assert sensible & set(top5), f"{text} -> {top5}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    """The Debian corpus, rebuilt by the repository's script (the model card's figures come from it)."""
    missing = [p for p in CORPUS_PACKAGES.split() if subprocess.run(
        ["dpkg-query", "-W", "-f=${db:Status-Status}", p], capture_output=True, text=True).stdout != "installed"]
    if missing:
        pytest.fail(f"the corpus needs Debian packages {' '.join(missing)}: `apt-get install -y "
                    f"{CORPUS_PACKAGES}` (.ci/run installs them)")
    out = tmp_path_factory.mktemp("corpus")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_corpus.py"), "--out", str(out)], check=True,
                   capture_output=True)
    return out


@pytest.mark.slow  # 130 s: the corpus rebuilt and its 19 MB training split tokenized for the unigram baseline
def test_model_card_figures_reproduce_on_the_heldout_split(corpus, metrics):
    shipped, _ = load_model(ENGLISH_MLM_PATH)
    tokenizer = Tokenizer.from_folder(ENGLISH_MLM_PATH)
    heldout = SentencePairDataset.from_files([corpus / "heldout.txt"], tokenizer, 128, seed=1234)
    counts = token_counts(SentencePairDataset.from_files([corpus / "train.txt"], tokenizer, 128),
                          tokenizer.vocab_size)
    result = evaluate(shipped, heldout, metrics["heldout_pairs"], 32, unigram_counts=counts)
    assert result.masked_tokens == metrics["masked_tokens"]  # the same pairs and masks as the card
    for key in ("mlm_top1", "mlm_top5", "nsp_accuracy", "unigram_top1", "unigram_top5"):
        assert getattr(result, key) == pytest.approx(metrics[key], abs=2e-3), key
    # far above the baseline that always guesses the most frequent words
    assert result.mlm_top1 > 3 * result.unigram_top1 and result.mlm_top5 > 2 * result.unigram_top5
    assert result.nsp_accuracy >= 0.80
