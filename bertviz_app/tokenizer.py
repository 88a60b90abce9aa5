"""WordPiece tokenization through the `tokenizers` library, with BERT's [CLS] A [SEP] B [SEP] layout built here.

We encode each sentence without special tokens, truncate (longest first for pairs, as BERT's reference tokenizer
does) and assemble the input ourselves, so padding and truncation are ours to control and to report: a
`tokenizer.json` that pads or truncates to a fixed length (as the default model's does) changes nothing here.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class TokenizerError(ValueError):
    """Tokenizer files that cannot be used; the message says what is missing."""


@dataclass(frozen=True)
class Truncation:
    """How much of the input did not fit into the model."""

    max_length: int
    original_length: int  # tokens the full input would have had, special tokens included
    removed_a: int  # tokens cut from the end of sentence A
    removed_b: int  # tokens cut from the end of sentence B

    def __str__(self) -> str:
        cut = [f"{n} from sentence {name}" for n, name in ((self.removed_a, "A"), (self.removed_b, "B")) if n]
        return (f"the input has {self.original_length} tokens but the model reads at most {self.max_length}; "
                f"removed {' and '.join(cut)}")


@dataclass(frozen=True)
class Encoding:
    """One input as BERT sees it. Every list has one entry per token.

    type_ids: segment id, 0 for [CLS], A and the first [SEP]; 1 for B and its [SEP]
    positions: 0 .. len - 1
    offsets: (start, end) character span in the sentence the token came from; (0, 0) for special tokens
    sequence_ids: 0 for tokens of A, 1 for tokens of B, None for special tokens
    truncation: None when everything fitted
    """

    text: str
    text_pair: str | None
    tokens: list[str]
    ids: list[int]
    type_ids: list[int]
    positions: list[int]
    offsets: list[tuple[int, int]]
    sequence_ids: list[int | None]
    special_tokens_mask: list[int]
    attention_mask: list[int]
    truncation: Truncation | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def is_pair(self) -> bool:
        return self.text_pair is not None

    def span_text(self, index: int) -> str:
        """The characters of the input that token `index` covers ('' for special tokens)."""
        seq = self.sequence_ids[index]
        if seq is None:
            return ""
        source = self.text if seq == 0 else self.text_pair
        start, end = self.offsets[index]
        return source[start:end]


def truncate_longest_first(len_a: int, len_b: int | None, budget: int) -> tuple[int, int]:
    """How many tokens to remove from A and from B so that both fit into `budget` tokens.

    Remove from the longer sentence until both have the same length, then alternately, with the odd one from B;
    the same result as the reference tokenizer's 'longest_first' strategy."""
    len_b = len_b or 0
    excess = max(0, len_a + len_b - budget)
    if len_b == 0:
        return excess, 0
    first = min(abs(len_a - len_b), excess)
    rest = excess - first
    if len_a > len_b:
        return first + rest // 2, rest - rest // 2
    return rest // 2, first + rest - rest // 2


class Tokenizer:
    """A BERT WordPiece tokenizer. Build it with `from_folder`, `from_tokenizer_json` or `from_vocab`."""

    def __init__(self, backend: HFTokenizer, max_length: int = 512, do_lower_case: bool | None = None):
        backend.no_padding()
        backend.no_truncation()
        backend.post_processor = None  # [CLS]/[SEP] are placed in encode(), after our own truncation
        self._tk = backend
        self.max_length = max_length
        self.do_lower_case = do_lower_case
        self.vocab = backend.get_vocab(with_added_tokens=True)
        missing = [t for t in ("[CLS]", "[SEP]", "[UNK]") if t not in self.vocab]
        if missing:
            raise TokenizerError(f"the vocabulary has no {', '.join(missing)}; it is not a BERT vocabulary")
        self.cls_token_id = self.vocab["[CLS]"]
        self.sep_token_id = self.vocab["[SEP]"]
        self.unk_token_id = self.vocab["[UNK]"]
        self.pad_token_id = self.vocab.get("[PAD]", 0)
        self.mask_token_id = self.vocab.get("[MASK]")
        self.special_ids = {self.vocab[t] for t in SPECIAL_TOKENS if t in self.vocab}
        self._id_to_token = {i: t for t, i in self.vocab.items()}

    # --- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_folder(cls, folder: str | os.PathLike, max_length: int = 512) -> "Tokenizer":
        """tokenizer.json when the folder has one, else vocab.txt with `do_lower_case` from tokenizer_config.json."""
        folder = Path(folder)
        settings = _read_tokenizer_config(folder)
        if (folder / "tokenizer.json").exists():
            return cls.from_tokenizer_json(folder / "tokenizer.json", max_length)
        if (folder / "vocab.txt").exists():
            return cls.from_vocab(folder / "vocab.txt", do_lower_case=settings.get("do_lower_case", True),
                                  strip_accents=settings.get("strip_accents"),
                                  tokenize_chinese_chars=settings.get("tokenize_chinese_chars", True),
                                  max_length=max_length)
        raise TokenizerError(f"{folder} has neither tokenizer.json nor vocab.txt; copy the tokenizer files of the "
                             "checkpoint into the folder")

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike, max_length: int = 512) -> "Tokenizer":
        try:
            backend = HFTokenizer.from_file(str(path))
        except Exception as err:
            raise TokenizerError(f"could not read {path} ({err})") from None
        if type(backend.model).__name__ != "WordPiece":
            raise TokenizerError(f"{path} is a {type(backend.model).__name__} tokenizer, not BERT's WordPiece")
        lower = None
        normalizer = json.loads(Path(path).read_text(encoding="utf-8")).get("normalizer") or {}
        if normalizer.get("type") == "BertNormalizer":
            lower = bool(normalizer.get("lowercase"))
        return cls(backend, max_length, lower)

    @classmethod
    def from_vocab(cls, path: str | os.PathLike, do_lower_case: bool = True, strip_accents: bool | None = None,
                   tokenize_chinese_chars: bool = True, max_length: int = 512) -> "Tokenizer":
        """From a vocab.txt (one token per line, the line number is the id)."""
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as err:
            raise TokenizerError(f"could not read the vocabulary {path} ({err})") from None
        vocab: dict[str, int] = {}
        for index, token in enumerate(lines):
            vocab.setdefault(token.rstrip("\n"), index)
        if "[UNK]" not in vocab:
            raise TokenizerError(f"{path} has no [UNK] token; it is not a BERT vocabulary")
        backend = HFTokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        # strip_accents None means: strip when lowercasing, as the original BERT does.
        backend.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=tokenize_chinese_chars,
                                                        strip_accents=strip_accents, lowercase=do_lower_case)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece(prefix="##")
        backend.add_special_tokens([t for t in SPECIAL_TOKENS if t in vocab])
        return cls(backend, max_length, do_lower_case)

    # --- encoding -----------------------------------------------------------------------------------------------
    def encode(self, text: str, text_pair: str | None = None, max_length: int | None = None) -> Encoding:
        """`[CLS] text [SEP]` or `[CLS] text [SEP] text_pair [SEP]`, truncated longest-first to `max_length`."""
        if not isinstance(text, str) or (text_pair is not None and not isinstance(text_pair, str)):
            raise TypeError("text and text_pair must be strings")
        max_length = max_length or self.max_length
        n_special = 3 if text_pair is not None else 2
        if max_length <= n_special:
            raise ValueError(f"max_length must be more than {n_special} to leave room for the sentence")
        a = self._tk.encode(text, add_special_tokens=False)
        b = self._tk.encode(text_pair, add_special_tokens=False) if text_pair is not None else None
        len_a, len_b = len(a.ids), (len(b.ids) if b is not None else None)
        cut_a, cut_b = truncate_longest_first(len_a, len_b, max_length - n_special)
        truncation = None
        if cut_a or cut_b:
            truncation = Truncation(max_length, len_a + (len_b or 0) + n_special, cut_a, cut_b)

        tokens, ids, type_ids, offsets, seq_ids = ["[CLS]"], [self.cls_token_id], [0], [(0, 0)], [None]

        def add(enc, keep: int, segment: int) -> None:
            tokens.extend(enc.tokens[:keep])
            ids.extend(enc.ids[:keep])
            offsets.extend(tuple(o) for o in enc.offsets[:keep])
            type_ids.extend([segment] * keep)
            seq_ids.extend([segment] * keep)
            tokens.append("[SEP]")
            ids.append(self.sep_token_id)
            offsets.append((0, 0))
            type_ids.append(segment)
            seq_ids.append(None)

        add(a, len_a - cut_a, 0)
        if b is not None:
            add(b, len_b - cut_b, 1)
        n = len(ids)
        return Encoding(text=text, text_pair=text_pair, tokens=tokens, ids=ids, type_ids=type_ids,
                        positions=list(range(n)), offsets=offsets, sequence_ids=seq_ids,
                        special_tokens_mask=[1 if s is None else 0 for s in seq_ids], attention_mask=[1] * n,
                        truncation=truncation)

    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of `text`, without special tokens."""
        return self._tk.encode(text, add_special_tokens=False).tokens

    # --- vocabulary ---------------------------------------------------------------------------------------------
    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, index: int) -> str:
        return self._id_to_token.get(int(index), "[UNK]")

    def convert_ids_to_tokens(self, ids) -> list[str]:
        return [self.id_to_token(i) for i in ids]

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self._tk.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    # --- saving -------------------------------------------------------------------------------------------------
    def save(self, folder: str | os.PathLike) -> None:
        """tokenizer.json, vocab.txt and tokenizer_config.json, readable by us and by transformers."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._tk.save(str(folder / "tokenizer.json"))
        by_id = sorted(self.vocab.items(), key=lambda item: item[1])
        (folder / "vocab.txt").write_text("".join(token + "\n" for token, _ in by_id), encoding="utf-8")
        config = {"tokenizer_class": "BertTokenizer", "model_max_length": self.max_length,
                  "do_lower_case": self.do_lower_case if self.do_lower_case is not None else True}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")


def _read_tokenizer_config(folder: Path) -> dict:
    path = folder / "tokenizer_config.json"
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise TokenizerError(f"{path} is not valid JSON ({err})") from None
    return data if isinstance(data, dict) else {}
