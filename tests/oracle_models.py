"""A tiny random BertForPreTraining built by transformers (the oracle), saved with a small word-level vocabulary and
loaded into ours: text in, both models out, for the attribution and ablation tests."""

from __future__ import annotations

from pathlib import Path

import torch
import transformers

from bertviz_app.checkpoint import load_model
from bertviz_app.tokenizer import Tokenizer
from conftest import perturb_

WORDS = ("the cat dog sat on mat a bird sang in tree sun was warm she poured cup of tea paris capital france is are "
         "keys to cabinet table they were lost").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", *WORDS]
# Unlike MiniLM in every size, with weights large enough (initializer_range) for predictions that are far from uniform.
CONFIG = dict(vocab_size=len(VOCAB), hidden_size=48, num_hidden_layers=3, num_attention_heads=6, intermediate_size=80,
              max_position_embeddings=64, type_vocab_size=2, layer_norm_eps=1e-12, hidden_act="gelu",
              pad_token_id=0, initializer_range=0.15)


def oracle_pair(folder: Path, seed: int = 0):
    """(ours, transformers' model, tokenizer), the same perturbed random weights on both sides, in eval mode."""
    torch.manual_seed(seed)
    hf = transformers.BertForPreTraining(transformers.BertConfig(**CONFIG, attn_implementation="eager")).eval()
    perturb_(hf, seed=seed)
    hf.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    ours, report = load_model(folder)
    assert report.absent_heads == [] and report.initialized == []
    return ours.eval(), hf, Tokenizer.from_vocab(folder / "vocab.txt")


def zero_output_columns(hf, heads) -> None:
    """Silence (layer, head) pairs in a transformers BERT the way it can: zero that head's d input columns of the
    attention output projection (transformers 5 has no head mask)."""
    config = hf.config
    d = config.hidden_size // config.num_attention_heads
    with torch.no_grad():
        for layer, head in heads:
            hf.bert.encoder.layer[layer].attention.output.dense.weight[:, head * d:(head + 1) * d] = 0.0
