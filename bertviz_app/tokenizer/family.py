"""The BERT family's own tokenizers: any member's `tokenizer.json` (byte-level BPE, WordPiece, unigram) run whole,
and `load_tokenizer`, which picks BERT's reference-exact `Tokenizer` or this one."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import models

from ..files import read_json, read_tokenizer_json
from .encoding import (CONTINUATION, VISIBLE_SPACE, Encoding, TokenizerError, Truncation, _Vocabulary,
                       truncate_like_tokenizers)
from .wordpiece import Tokenizer

# --- the BERT family's tokenizers -----------------------------------------------------------------------------------
_WORD_START = ("\u0120", "\u2581")  # byte-level BPE's 'Ġ' (the space byte), SentencePiece's '▁'
# Where a family's tokenizer_config.json names no special token, the usual spellings, BERT's first.
_SPECIAL_GUESSES = {"cls_token": ("[CLS]", "<s>"), "sep_token": ("[SEP]", "</s>"), "mask_token": ("[MASK]", "<mask>"),
                    "pad_token": ("[PAD]", "<pad>"), "unk_token": ("[UNK]", "<unk>")}


class FamilyTokenizer(_Vocabulary):
    """A family member's own `tokenizer.json` (byte-level BPE for RoBERTa, WordPiece for DistilBERT and ELECTRA,
    SentencePiece unigram for ALBERT and DeBERTa v3) run whole through `tokenizers`: its normalizer, pre-tokenizer,
    model and pair template (`<s> A </s></s> B </s>`, `[CLS] A [SEP] B [SEP]`). The interface is `Tokenizer`'s, so
    the explorer and the views do not care which they hold.

    As for BERT, each sentence is encoded without special tokens, truncated longest-first, and only then put into the
    template (`post_process`), so truncation is ours to report. `[MASK]` in a text means the family's mask token
    (`<mask>` for RoBERTa), so that one spelling works for every model."""

    def __init__(self, backend: HFTokenizer, specials: dict[str, str | None], max_tokens: int = 512):
        backend.no_padding()
        backend.no_truncation()
        self._tk = backend
        self.max_tokens = max_tokens
        self.vocab = backend.get_vocab(with_added_tokens=True)
        self.specials = specials
        for name in ("cls_token", "sep_token", "unk_token"):
            if specials.get(name) is None or specials[name] not in self.vocab:
                raise TokenizerError(f"the tokenizer's vocabulary has no {name.replace('_', ' ')} "
                                     f"({specials.get(name) or 'none named'}); name it in tokenizer_config.json")
        if backend.post_processor is None:
            raise TokenizerError("the tokenizer.json has no post-processor, so it does not say where the special "
                                 "tokens of a sentence pair go; save the tokenizer again with transformers")
        ids = {name: (self.vocab.get(token) if token is not None else None) for name, token in specials.items()}
        self.cls_token_id, self.sep_token_id, self.unk_token_id = ids["cls_token"], ids["sep_token"], ids["unk_token"]
        self.mask_token_id = ids.get("mask_token")
        self.pad_token_id = ids.get("pad_token") if ids.get("pad_token") is not None else 0
        self.mask_token = specials.get("mask_token") if self.mask_token_id is not None else None
        self.unk_token = specials["unk_token"]
        added = {t.content for t in backend.get_added_tokens_decoder().values() if t.special}
        self.special_ids = {self.vocab[t] for t in (*added, *(v for v in specials.values() if v)) if t in self.vocab}
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        self._special_tokens = {self._id_to_token[i] for i in self.special_ids}

    # --- pieces as a person reads them -------------------------------------------------------------------------
    def _piece(self, token: str) -> tuple[str, bool]:
        """(characters, starts a word) of a vocabulary entry: WordPiece's '##' prefix, SentencePiece's '▁' and
        byte-level BPE's 'Ġ' (bytes mapped to printable characters, turned back into text by the decoder) read off."""
        model = self._tk.model
        if isinstance(model, models.WordPiece):
            prefix = model.continuing_subword_prefix
            continues = token.startswith(prefix) and token != prefix
            return (token[len(prefix):] if continues else token), not continues
        text = self._tk.decoder.decode([token]) if self._tk.decoder is not None else token
        text = text.replace("\u2581", " ")
        return text.lstrip(), token.startswith(_WORD_START) or text[:1].isspace()

    def readable(self, token: str) -> str:
        if token in self._special_tokens:
            return token
        text, starts = self._piece(token)
        return VISIBLE_SPACE if not text.strip() else (text if starts else CONTINUATION + text)

    def _labels(self, tokens, ids, seq_ids, words, spans, sources) -> tuple[list[str], list[int]]:
        """`Encoding.labels` and `Encoding.word_ids` from the pieces and the word each came from (the pre-tokenizer's
        words, as `tokenizers` numbers them per sentence). A piece the vocabulary lacks keeps its characters in the
        tokens ('▁--', as the `tokenizers` library writes it) but the model receives the unknown id: its label is the
        unknown token, what the model saw (as BERT's [UNK] and transformers' convert_ids_to_tokens show it); the
        characters it stood for stay in its offsets (the token table's text column)."""
        labels, word_ids, current = [], [], -1
        previous, previous_span = None, None  # (sentence, word) of the token before (None: special), its span
        for token, id_, seq, word, span in zip(tokens, ids, seq_ids, words, spans):
            # The unknown token stands where a piece of a word was missing: it stays in that word, labelled as sent.
            unknown = seq is not None and id_ == self.unk_token_id
            special = seq is None or (token in self._special_tokens and not unknown)
            here = None if special else (seq, word)
            joins = here is not None and here == previous
            current += 0 if joins else 1
            word_ids.append(current)
            if special:
                labels.append(token)
            elif unknown:
                continues = joins and labels[-1] != VISIBLE_SPACE
                labels.append(CONTINUATION + self.unk_token if continues else self.unk_token)
            else:
                covered = sources[seq][span[0]:span[1]]
                labels.append(self._label(token, joins, labels[-1] if joins else "", covered, span == previous_span))
            previous, previous_span = here, span
        return labels, word_ids

    def _label(self, token: str, joins: bool, before: str, covered: str, same_span: bool) -> str:
        """One piece's label: `joins` the word of the piece before (labelled `before`); `covered`: the characters of
        the input it spans, `same_span`: the piece before spans the same ones."""
        text, _ = self._piece(token)
        if "\ufffd" in text and covered:  # bytes of one character split over pieces: the first shows the character,
            if joins and same_span:  # the others only '##' (they continue the word and add no character)
                return CONTINUATION
            text = covered
        if not text.strip():
            return VISIBLE_SPACE
        return CONTINUATION + text if joins and before != VISIBLE_SPACE else text

    # --- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_folder(cls, folder: str | os.PathLike, max_tokens: int = 512) -> "FamilyTokenizer":
        folder = Path(folder)
        path = folder / "tokenizer.json"
        if not path.exists():
            raise TokenizerError(f"{folder} has no tokenizer.json; this family's tokenizer is read from it (make one "
                                 "with transformers: AutoTokenizer.from_pretrained(folder).save_pretrained(folder))")
        text, _ = read_tokenizer_json(path, TokenizerError)
        try:
            backend = HFTokenizer.from_str(text)
        except Exception as err:
            raise TokenizerError(f"could not read {path} ({str(err)[:200]})") from None
        return cls(backend, _special_tokens(folder, backend), max_tokens)

    # --- encoding -----------------------------------------------------------------------------------------------
    def _with_mask_token(self, text: str) -> tuple[str, list[int] | None]:
        """`text` with [MASK] written as this tokenizer's mask token, and for each character of the result the index
        of the character of `text` it stands for (None when nothing changed)."""
        if self.mask_token is None or self.mask_token == "[MASK]" or "[MASK]" not in text:
            return text, None
        out, origin, pos = [], [], 0
        for match in re.finditer(re.escape("[MASK]"), text):
            out.append(text[pos:match.start()])
            origin.extend(range(pos, match.start()))
            out.append(self.mask_token)
            # Its first character stands for the start of [MASK], the others for its end: a span stays whole.
            origin.extend([match.start()] + [match.end() - 1] * (len(self.mask_token) - 1))
            pos = match.end()
        out.append(text[pos:])
        origin.extend(range(pos, len(text) + 1))
        origin.append(len(text))
        return "".join(out), origin

    def encode_batch(self, texts: Sequence[str], text_pairs: Sequence[str | None] | None = None,
                     max_tokens: int | None = None, add_special_tokens: bool = True) -> list[Encoding]:
        texts, pairs = self._checked_inputs(texts, text_pairs, add_special_tokens)
        return [self._encode_pair(text, pair, max_tokens or self.max_tokens, add_special_tokens)
                for text, pair in zip(texts, pairs)]

    def _encode_pair(self, text: str, text_pair: str | None, max_tokens: int, add_special_tokens: bool) -> Encoding:
        rewritten_a, origin_a = self._with_mask_token(text)
        rewritten_b, origin_b = self._with_mask_token(text_pair) if text_pair is not None else (None, None)
        # Encoded whole, template included, so that every step (offset trimming among them) runs once, as in
        # transformers; truncation then drops tokens from the ends of A and B, where the template leaves them.
        full = self._tk.encode(rewritten_a, rewritten_b, add_special_tokens=add_special_tokens)
        special = full.special_tokens_mask
        seq_ids = [None if s else q for q, s in zip(full.sequence_ids, special)]
        len_a, len_b = seq_ids.count(0), (seq_ids.count(1) if text_pair is not None else None)
        n_special = len(seq_ids) - len_a - (len_b or 0)
        if add_special_tokens and max_tokens <= n_special:
            raise ValueError(f"max_tokens must be more than {n_special} to leave room for the sentence")
        cut_a, cut_b = truncate_like_tokenizers(len_a, len_b, max_tokens - n_special)
        truncation = None
        keep = list(range(len(seq_ids)))
        if cut_a or cut_b:
            truncation = Truncation(max_tokens, len(seq_ids), cut_a, cut_b)
            seen = {0: 0, 1: 0}
            limit = {0: len_a - cut_a, 1: (len_b or 0) - cut_b}
            keep = []
            for i, seq in enumerate(seq_ids):
                if seq is not None:
                    seen[seq] += 1
                    if seen[seq] > limit[seq]:
                        continue
                keep.append(i)
        tokens, ids, types, spans, words = full.tokens, full.ids, full.type_ids, full.offsets, full.word_ids
        offsets = []
        for i in keep:
            seq, (start, end) = seq_ids[i], spans[i]
            origin = None if seq is None else (origin_a if seq == 0 else origin_b)
            if seq is None:
                offsets.append((0, 0))
            elif origin is None:
                offsets.append((start, end))
            else:  # back to the characters the person typed ([MASK], not <mask>)
                offsets.append((origin[start], origin[end - 1] + 1 if end > start else origin[start]))
        kept_seq = [seq_ids[i] for i in keep]
        kept_tokens, kept_ids = [tokens[i] for i in keep], [ids[i] for i in keep]
        labels, word_ids = self._labels(kept_tokens, kept_ids, kept_seq, [words[i] for i in keep], offsets,
                                        (text, text_pair))
        n = len(keep)
        return Encoding(text=text, text_pair=text_pair, tokens=kept_tokens, ids=kept_ids,
                        segment_ids=[types[i] for i in keep], positions=list(range(n)), offsets=offsets,
                        sequence_ids=kept_seq, special_tokens_mask=[1 if s is None else 0 for s in kept_seq],
                        attention_mask=[1] * n, truncation=truncation, labels=labels, word_ids=word_ids)

    def tokenize(self, text: str) -> list[str]:
        return self._tk.encode(self._with_mask_token(text)[0], add_special_tokens=False).tokens

    def save(self, folder: str | os.PathLike) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._tk.save(str(folder / "tokenizer.json"))
        config = {**{k: v for k, v in self.specials.items() if v is not None}, "model_max_length": self.max_tokens}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _special_tokens(folder: Path, backend: HFTokenizer) -> dict[str, str | None]:
    """The cls, sep, mask, pad and unk tokens: as tokenizer_config.json or special_tokens_map.json name them (a
    string, or transformers' {"content": ...}), else the usual spelling that the vocabulary holds."""
    named: dict = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):  # the second wins, as in transformers
        path = folder / name
        if path.exists():
            data = read_json(path, TokenizerError)
            if not isinstance(data, dict):
                raise TokenizerError(f"{path} must hold a JSON object, got a {type(data).__name__}")
            named.update({k: data[k] for k in _SPECIAL_GUESSES if k in data})
    vocab = backend.get_vocab(with_added_tokens=True)
    out: dict[str, str | None] = {}
    for name, guesses in _SPECIAL_GUESSES.items():
        value = named.get(name)
        if isinstance(value, dict):
            value = value.get("content")
        if value is not None and not isinstance(value, str):
            raise TokenizerError(f"{folder}: {name} must be a token (a string), got {json.dumps(value)[:60]}")
        out[name] = value if value is not None else next((g for g in guesses if g in vocab), None)
    return out


def load_tokenizer(folder: str | os.PathLike, model_type: str = "bert", max_tokens: int = 512):
    """BERT's reference-exact `Tokenizer` for BERT checkpoints; the family's own tokenizer.json for the others."""
    if model_type == "bert":
        return Tokenizer.from_folder(folder, max_tokens)
    return FamilyTokenizer.from_folder(folder, max_tokens)
