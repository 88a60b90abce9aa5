"""Tiny random checkpoints of the BERT family, built by transformers itself (the oracle) with tokenizers trained by
`tokenizers` on a few sentences: what the family's parity tests, the app's tests and benchmarks/bench_family.py load.

No real weights of these models reach this machine, so each checkpoint is random, in sizes unlike any real model
(hidden 36, 4 heads of 9, ...), with every LayerNorm and bias moved far from its initial value so that one loaded into
the wrong place cannot go unnoticed."""

from __future__ import annotations

import json
from pathlib import Path

import torch
import transformers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

CORPUS = ["The cat sat on the mat.", "A bird sang in the tree, and the sun was warm.",
          "She poured a cup of tea for her friend.", "Paris is the capital of France.",
          "The keys to the cabinet were lost yesterday!", "They walked home slowly through the rain.",
          "Dogs bark; cats purr. Birds sing!", "Numbers like 42 and 1999 appear too."] * 3
VOCAB_SIZE = 120  # what each trained tokenizer is asked for; the config takes the size it really has
BASE = dict(hidden_size=36, num_hidden_layers=3, num_attention_heads=4, intermediate_size=52,
            max_position_embeddings=48, initializer_range=0.1)


def _perturb(model: torch.nn.Module, seed: int) -> None:
    """LayerNorm weights far from 1 and biases far from 0, whatever each family calls its LayerNorms."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "norm" in name.lower() and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * noise)
            elif name.endswith("bias"):
                p.copy_(0.2 * noise)
            else:
                p.add_(0.02 * noise)


# --- tokenizers, trained here ---------------------------------------------------------------------------------------
def wordpiece(lowercase: bool = True) -> Tokenizer:
    """BERT's pipeline (DistilBERT, ELECTRA)."""
    tk = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tk.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tk.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tk.decoder = decoders.WordPiece()
    tk.train_from_iterator(CORPUS, trainers.WordPieceTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tk.token_to_id("[CLS]"), tk.token_to_id("[SEP]")
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return tk


def byte_level_bpe() -> Tokenizer:
    """RoBERTa's pipeline: byte-level BPE, <s> A </s></s> B </s>, offsets trimmed of the leading space."""
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE + 150, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tk.post_processor = processors.RobertaProcessing(("</s>", tk.token_to_id("</s>")), ("<s>", tk.token_to_id("<s>")),
                                                     trim_offsets=True, add_prefix_space=False)
    return tk


def unigram(specials: list[str], single: str, pair: str, lowercase: bool) -> Tokenizer:
    """SentencePiece unigram with the Metaspace pre-tokenizer (ALBERT, DeBERTa v3)."""
    tk = Tokenizer(models.Unigram())
    steps = [normalizers.Replace("``", '"'), normalizers.Replace("''", '"'), normalizers.NFKD()]
    tk.normalizer = normalizers.Sequence(steps + ([normalizers.Lowercase()] if lowercase else []))
    tk.pre_tokenizer = pre_tokenizers.Metaspace()
    tk.decoder = decoders.Metaspace()
    tk.train_from_iterator(CORPUS, trainers.UnigramTrainer(vocab_size=VOCAB_SIZE, special_tokens=specials,
                                                           unk_token=specials[1]))
    names = {name for name in (single + " " + pair).split() if not name.startswith("$")}
    tk.post_processor = processors.TemplateProcessing(
        single=single, pair=pair, special_tokens=[(n.split(":")[0], tk.token_to_id(n.split(":")[0])) for n in names])
    return tk


# --- the family ----------------------------------------------------------------------------------------------------
def _save(model, tokenizer: Tokenizer, folder: Path, specials: dict) -> Path:
    model.save_pretrained(folder)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({**specials, "model_max_length": 46}), encoding="utf-8")
    # Saved again by transformers, which writes what its own classes change (ALBERT's and DeBERTa's [MASK] takes the
    # space before it, ALBERT strips accents): the files a real checkpoint of the family holds.
    transformers.AutoTokenizer.from_pretrained(folder).save_pretrained(folder)
    return folder


def build(family: str, folder: Path, seed: int = 0, **overrides):
    """Write a checkpoint of `family` (a key of BUILDERS) into `folder`; returns transformers' model, eval mode."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model, tokenizer, specials = BUILDERS[family](overrides)
    _perturb(model, seed)
    _save(model.eval(), tokenizer, folder, specials)
    return model.eval()


def _roberta(overrides):
    tk = byte_level_bpe()
    config = transformers.RobertaConfig(**{**BASE, "vocab_size": tk.get_vocab_size(), "pad_token_id": 1,
                                           "bos_token_id": 0, "eos_token_id": 2, "type_vocab_size": 1,
                                           "max_position_embeddings": 50, **overrides}, attn_implementation="eager")
    return transformers.RobertaForMaskedLM(config), tk, dict(
        bos_token="<s>", eos_token="</s>", cls_token="<s>", sep_token="</s>", unk_token="<unk>", pad_token="<pad>",
        mask_token="<mask>", tokenizer_class="RobertaTokenizer")


def _distilbert(overrides):
    tk = wordpiece()
    config = transformers.DistilBertConfig(vocab_size=tk.get_vocab_size(), dim=36, n_layers=3, n_heads=4,
                                           hidden_dim=52, max_position_embeddings=48, initializer_range=0.1,
                                           attn_implementation="eager", **overrides)
    return transformers.DistilBertForMaskedLM(config), tk, dict(
        cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]", pad_token="[PAD]", mask_token="[MASK]",
        tokenizer_class="DistilBertTokenizer")


def _albert(overrides):
    specials = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"]
    tk = unigram(specials, "[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1", lowercase=True)
    config = transformers.AlbertConfig(**{**BASE, "vocab_size": tk.get_vocab_size(), "embedding_size": 20,
                                          "num_hidden_layers": 4, "num_hidden_groups": 2, "pad_token_id": 0,
                                          **overrides}, attn_implementation="eager")
    return transformers.AlbertForPreTraining(config), tk, dict(
        cls_token="[CLS]", sep_token="[SEP]", unk_token="<unk>", pad_token="<pad>", mask_token="[MASK]",
        tokenizer_class="AlbertTokenizer")


def _electra(overrides, generator: bool = False):
    tk = wordpiece()
    config = transformers.ElectraConfig(**{**BASE, "vocab_size": tk.get_vocab_size(), "embedding_size": 20,
                                           **overrides}, attn_implementation="eager")
    model = (transformers.ElectraForMaskedLM if generator else transformers.ElectraForPreTraining)(config)
    return model, tk, dict(cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]", pad_token="[PAD]",
                           mask_token="[MASK]", tokenizer_class="ElectraTokenizer")


def _deberta(overrides):
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tk = unigram(specials, "[CLS]:0 $A:0 [SEP]:0", "[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1", lowercase=False)
    settings = {**BASE, "vocab_size": tk.get_vocab_size(), "relative_attention": True, "position_buckets": 8,
                "max_relative_positions": 20, "pos_att_type": ["p2c", "c2p"], "norm_rel_ebd": "layer_norm",
                "share_att_key": True, "position_biased_input": False, "type_vocab_size": 0, "pad_token_id": 0,
                **overrides}
    config = transformers.DebertaV2Config(**settings, attn_implementation="eager")
    return transformers.DebertaV2ForMaskedLM(config), tk, dict(
        cls_token="[CLS]", sep_token="[SEP]", unk_token="[UNK]", pad_token="[PAD]", mask_token="[MASK]",
        tokenizer_class="DebertaV2Tokenizer")


BUILDERS = {"roberta": _roberta, "distilbert": _distilbert, "albert": _albert, "electra": _electra,
            "electra-generator": lambda o: _electra(o, generator=True), "deberta-v2": _deberta}


def batch(config, seed: int = 0) -> dict:
    """Two inputs of 13 and 9 real tokens, the second padded, with segments where the family has them."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, config.vocab_size, (2, 13), generator=gen)
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0
    ids[1, 9:] = config.pad_token_id
    batch = dict(input_ids=ids, attention_mask=mask)
    if config.type_vocab_size >= 2:
        types = torch.zeros_like(ids)
        types[:, 6:] = 1
        types[1, 9:] = 0
        batch["token_type_ids"] = types
    return batch
