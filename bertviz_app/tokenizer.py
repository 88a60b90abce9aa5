"""BERT tokenization: words split here, WordPiece through the `tokenizers` library, [CLS] A [SEP] B [SEP] built here.

The goal is to give exactly the tokens of BERT's reference tokenizer (the pure-Python one in `transformers`), with
character offsets. The `tokenizers` library's BertNormalizer and BertPreTokenizer differ from it on several inputs
(tests/test_tokenizer.py has one case of each):
- it does not apply NFC, so a decomposed 'e' + U+0301 stays two characters for a cased vocabulary;
- it lowercases character by character, so a final capital sigma becomes 'σ' where Python's str.lower gives 'ς';
- one CJK range is mistyped (U+2B820..U+2B91F are not split off as Chinese characters);
- its Unicode tables are older or newer than Python's `unicodedata`: unassigned code points (emoji newer than the
  tables included) are kept instead of dropped, and punctuation, combining marks and format characters added in
  recent Unicode versions are classified differently.
So the splitting into words (cleaning, CJK, NFC, lowercasing, accent stripping, punctuation) is done here with
Python's `unicodedata`, as the reference does, and only the words go to the library's WordPiece model.

We encode each sentence without special tokens, truncate (longest first for pairs, as the reference does) and
assemble the input ourselves, so padding and truncation are ours to control and to report: a `tokenizer.json` that
pads or truncates to a fixed length (as the default model's does) changes nothing here.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

from .files import VOCAB_LIMIT, read_json, read_text, read_tokenizer_json

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


class TokenizerError(ValueError):
    """Tokenizer files that cannot be used; the message says what is missing."""


@dataclass(frozen=True)
class Truncation:
    """How much of the input did not fit into the model."""

    max_tokens: int
    original_length: int  # tokens the full input would have had, special tokens included
    removed_a: int  # tokens cut from the end of sentence A
    removed_b: int  # tokens cut from the end of sentence B

    def __str__(self) -> str:
        cut = [f"{n} from sentence {name}" for n, name in ((self.removed_a, "A"), (self.removed_b, "B")) if n]
        return (f"the input has {self.original_length} tokens but the model reads at most {self.max_tokens}; "
                f"removed {' and '.join(cut)}")


@dataclass(frozen=True)
class Encoding:
    """One input as BERT sees it. Every list has one entry per token.

    segment_ids: 0 for [CLS], A and the first [SEP]; 1 for B and its [SEP] (the model's token_type_ids)
    positions: 0 .. len - 1
    offsets: (start, end) character span in the sentence the token came from; (0, 0) for special tokens
    sequence_ids: 0 for tokens of A, 1 for tokens of B, None for special tokens
    truncation: None when everything fitted
    labels: each token as a person reads it (what the views, tables and figures show): WordPiece's own spelling
        ('play', '##ing'); for byte-level BPE and SentencePiece the piece's characters, without the word-start
        marker ('Ġ', '▁'), with '##' before a piece that continues a word, as WordPiece writes it, and '␣' for a
        piece that is only a space. Default: the tokens themselves.
    word_ids: (T,) pieces of one word share an id, every special token has one of its own; ids count up from 0.
        Default: WordPiece's rule ('##' pieces join the piece before them).
    """

    text: str
    text_pair: str | None
    tokens: list[str]
    ids: list[int]
    segment_ids: list[int]
    positions: list[int]
    offsets: list[tuple[int, int]]
    sequence_ids: list[int | None]
    special_tokens_mask: list[int]
    attention_mask: list[int]
    truncation: Truncation | None = None
    labels: list[str] | None = None
    word_ids: list[int] | None = None

    def __post_init__(self):
        if self.labels is None:
            object.__setattr__(self, "labels", list(self.tokens))
        if self.word_ids is None:
            object.__setattr__(self, "word_ids", wordpiece_word_ids(self.tokens, self.special_tokens_mask))

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


CONTINUATION = "##"  # WordPiece's mark of a piece that continues a word, which labels give every family's pieces
VISIBLE_SPACE = "\u2423"  # a piece that is only a space ('▁' or 'Ġ' alone), which would otherwise show as nothing


def wordpiece_word_ids(tokens: Sequence[str], special_mask: Sequence[bool]) -> list[int]:
    """One id per token: WordPiece continuations ('##ing') share the id of the piece before them; every special
    token has an id of its own. Ids count up from 0 in token order."""
    ids, current = [], -1
    for i, (token, special) in enumerate(zip(tokens, special_mask)):
        continues = not special and token.startswith(CONTINUATION) and i > 0 and not special_mask[i - 1]
        current += 0 if continues else 1
        ids.append(current)
    return ids


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


def truncate_like_tokenizers(len_a: int, len_b: int | None, budget: int) -> tuple[int, int]:
    """`truncate_longest_first` as the `tokenizers` library does it (so as transformers' fast tokenizers, which every
    family checkpoint's tokenizer.json is): the shorter sentence keeps what it can up to half the budget, and when
    both are cut, the longer one keeps the odd token (the reference BERT tokenizer gives it to sentence A)."""
    if len_b is None:
        return max(0, len_a - budget), 0
    if len_a + len_b <= budget:
        return 0, 0
    short, long = sorted((len_a, len_b))
    keep_long = short if short > budget else max(short, budget - short)
    keep_short = short
    if keep_short + keep_long > budget:
        keep_short, keep_long = budget // 2, budget // 2 + budget % 2
    keep_a, keep_b = (keep_short, keep_long) if len_a <= len_b else (keep_long, keep_short)
    return len_a - min(keep_a, len_a), len_b - min(keep_b, len_b)


# --- BERT's basic tokenization, with offsets ------------------------------------------------------------------------
# Character classes exactly as the reference defines them, through Python's unicodedata (see the module docstring).

def _is_control(char: str) -> bool:
    return char not in "\t\n\r" and unicodedata.category(char).startswith("C")


def _is_whitespace(char: str) -> bool:
    # Zs and the usual ASCII ones become a space; str.isspace also catches U+2028, U+2029 and U+001C..U+001F, which
    # the reference keeps as characters and then splits on (its final split is str.split()).
    return char in " \t\n\r" or unicodedata.category(char) == "Zs" or char.isspace()


def _is_punctuation(char: str) -> bool:
    cp = ord(char)
    # All non-alphanumeric ASCII counts (so ^ $ ` too), and every Unicode P* category.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F), (0x2B740, 0x2B81F),
               (0x2B820, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F))


def _is_cjk(char: str) -> bool:
    cp = ord(char)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


@dataclass(frozen=True)
class _Word:
    """One word for WordPiece: its normalized text, and for each of its characters the span of the input it came
    from (`spans[i]` is the (start, end) that character i covers)."""

    text: str
    spans: list[tuple[int, int]]
    special: bool = False  # a special token written in the input ([MASK]), not split further


class _BasicTokenizer:
    """Splits text into words as BERT's reference tokenizer does, keeping where every character came from."""

    def __init__(self, lowercase: bool, strip_accents: bool | None, chinese_chars: bool, specials: list[str]):
        self.lowercase = lowercase
        # None means: strip accents when lowercasing, as the original BERT does.
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.chinese_chars = chinese_chars
        self.specials = set(specials)
        # Special tokens are found in the raw input before anything else, longest first (as the reference's trie).
        ordered = sorted(specials, key=len, reverse=True)
        self._special_re = re.compile("|".join(re.escape(t) for t in ordered)) if ordered else None

    def words(self, text: str) -> list[_Word]:
        words: list[_Word] = []
        pos = 0
        for match in (self._special_re.finditer(text) if self._special_re else ()):
            words.extend(self._chunk(text, pos, match.start()))
            words.append(_Word(match.group(), [(match.start(), match.end())] * len(match.group()), special=True))
            pos = match.end()
        words.extend(self._chunk(text, pos, len(text)))
        return words

    def _chunk(self, text: str, start: int, end: int) -> list[_Word]:
        """Words of text[start:end], which holds no special token."""
        pieces: list[list[int]] = []  # indices into `text` of each whitespace-separated piece, control chars dropped
        current: list[int] = []
        for i in range(start, end):
            char = text[i]
            if " " < char < "\x7f":  # printable ASCII: neither control, space nor CJK
                current.append(i)
                continue
            if char in "\x00\ufffd" or _is_control(char):
                continue  # dropped without splitting: 'a\x00b' is one word, as in the reference
            if _is_whitespace(char) or (self.chinese_chars and _is_cjk(char)):
                if current:
                    pieces.append(current)
                    current = []
                if not _is_whitespace(char):
                    pieces.append([i])
                continue
            current.append(i)
        if current:
            pieces.append(current)
        words: list[_Word] = []
        for indices in pieces:
            words.extend(self._piece(text, indices))
        return words

    def _normalize(self, piece: str) -> str:
        piece = unicodedata.normalize("NFC", piece)
        if self.lowercase:
            piece = piece.lower()
        if self.strip_accents:
            piece = "".join(c for c in unicodedata.normalize("NFD", piece) if unicodedata.category(c) != "Mn")
        return piece

    def _piece(self, text: str, indices: list[int]) -> list[_Word]:
        raw = "".join(text[i] for i in indices)
        if unicodedata.normalize("NFC", raw) in self.specials:
            # The reference leaves a special token that appears only after cleaning ('[MA\u200bSK]') unsplit and
            # not lowercased, and WordPiece then finds it in the vocabulary.
            span = (indices[0], indices[-1] + 1)
            return [_Word(unicodedata.normalize("NFC", raw), [span] * len(raw), special=False)]
        if raw.isascii():  # the common case, where normalizing is at most lowercasing, character for character
            normalized = raw.lower() if self.lowercase else raw
            spans = [(i, i + 1) for i in indices]
        else:
            normalized = self._normalize(raw)
            spans = self._align(text, indices, normalized)
        words: list[_Word] = []
        word_start = None
        for k, char in enumerate(normalized + " "):
            boundary = k == len(normalized) or char.isspace() or _is_punctuation(char)
            if boundary and word_start is not None:
                words.append(_Word(normalized[word_start:k], spans[word_start:k]))
                word_start = None
            if k < len(normalized) and _is_punctuation(char):
                words.append(_Word(char, spans[k:k + 1]))
            elif boundary is False and word_start is None:
                word_start = k
        return words

    def _align(self, text: str, indices: list[int], normalized: str) -> list[tuple[int, int]]:
        """For each character of `normalized`, the span of `text` it came from.

        Normalization works on clusters (a character with the combining marks after it), so each cluster is
        normalized alone; when that gives the same length as normalizing the whole piece (all but odd cases; the
        final sigma changes a letter, not a length), each output character points at its cluster. Otherwise every
        character gets the whole piece."""
        clusters: list[list[int]] = []
        for i in indices:
            if clusters and unicodedata.combining(text[i]):
                clusters[-1].append(i)
            else:
                clusters.append([i])
        spans: list[tuple[int, int]] = []
        for cluster in clusters:
            out = self._normalize("".join(text[i] for i in cluster))
            spans.extend([(cluster[0], cluster[-1] + 1)] * len(out))
        if len(spans) != len(normalized):
            spans = [(indices[0], indices[-1] + 1)] * len(normalized)
        return spans


class _Vocabulary:
    """Id <-> token lookups shared by `Tokenizer` and `FamilyTokenizer`; each sets `vocab` (token -> id),
    `_id_to_token`, `_tk` (the `tokenizers` pipeline) and `unk_token`."""

    vocab: dict[str, int]
    unk_token: str

    @property
    def vocab_size(self) -> int:
        """Rows an embedding matrix needs: one past the highest id."""
        return max(self.vocab.values()) + 1

    def token_to_id(self, token: str) -> int | None:
        return self.vocab.get(token)

    def id_to_token(self, index: int) -> str:
        return self._id_to_token.get(int(index), self.unk_token)

    def convert_ids_to_tokens(self, ids) -> list[str]:
        return [self.id_to_token(i) for i in ids]

    def readable(self, token: str) -> str:
        """A vocabulary entry as a person reads it (see `Encoding.labels`); WordPiece's own spelling is already
        readable. Without its neighbours a piece's marker decides: a piece without one continues a word."""
        return token

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        return self._tk.decode([int(i) for i in ids], skip_special_tokens=skip_special_tokens)

    def encode(self, text: str, text_pair: str | None = None, max_tokens: int | None = None) -> Encoding:
        """The model's template around `text` (and `text_pair`: `[CLS] a [SEP] b [SEP]` for BERT), truncated
        longest-first to `max_tokens`."""
        return self.encode_batch([text], None if text_pair is None else [text_pair], max_tokens)[0]

    # how the template separates a pair, for the message when a pair comes without special tokens
    separator = "a separator"

    def _checked_inputs(self, texts: Sequence[str], text_pairs: Sequence[str | None] | None,
                        add_special_tokens: bool) -> tuple[list[str], list[str | None]]:
        """(texts, pairs: None where a text has none) of `encode_batch`'s arguments, checked."""
        texts = list(texts)
        pairs = [None] * len(texts) if text_pairs is None else list(text_pairs)
        if len(pairs) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(pairs)} text pairs")
        for text in (*texts, *pairs):
            if text is not None and not isinstance(text, str):
                raise TypeError("text and text_pair must be strings")
        if not add_special_tokens and any(p is not None for p in pairs):
            raise ValueError(f"pairs need special tokens ({self.separator} between them)")
        return texts, pairs


class Tokenizer(_Vocabulary):
    """A BERT WordPiece tokenizer. Build it with `from_folder`, `from_tokenizer_json` or `from_vocab`."""

    def __init__(self, backend: HFTokenizer, max_tokens: int = 512, do_lower_case: bool = True,
                 strip_accents: bool | None = None, tokenize_chinese_chars: bool = True):
        if not isinstance(backend.model, models.WordPiece):
            raise TokenizerError(f"a {type(backend.model).__name__} tokenizer is not BERT's WordPiece")
        backend.no_padding()
        backend.no_truncation()
        self._tk = backend  # the whole pipeline, kept for decode() and save()
        self.max_tokens = max_tokens
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars
        self.vocab = backend.get_vocab(with_added_tokens=True)
        missing = [t for t in ("[CLS]", "[SEP]", "[UNK]") if t not in self.vocab]
        if missing:
            raise TokenizerError(f"the vocabulary has no {', '.join(missing)}; it is not a BERT vocabulary")
        self.cls_token_id = self.vocab["[CLS]"]
        self.sep_token_id = self.vocab["[SEP]"]
        self.unk_token, self.unk_token_id = "[UNK]", self.vocab["[UNK]"]
        self.pad_token_id = self.vocab.get("[PAD]", 0)
        self.mask_token_id = self.vocab.get("[MASK]")
        self.special_ids = {self.vocab[t] for t in SPECIAL_TOKENS if t in self.vocab}
        self._id_to_token = {i: t for t, i in self.vocab.items()}
        # Only the WordPiece model runs in the library: words come from _BasicTokenizer (see the module docstring).
        model = backend.model
        self._wordpiece = HFTokenizer(models.WordPiece(self.vocab, unk_token=model.unk_token,
                                                       continuing_subword_prefix=model.continuing_subword_prefix,
                                                       max_input_chars_per_word=model.max_input_chars_per_word))
        self._basic = _BasicTokenizer(do_lower_case, strip_accents, tokenize_chinese_chars,
                                      [t for t in SPECIAL_TOKENS if t in self.vocab])

    # --- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_folder(cls, folder: str | os.PathLike, max_tokens: int = 512) -> "Tokenizer":
        """tokenizer.json when the folder has a BERT one, else vocab.txt with the settings of tokenizer_config.json."""
        folder = Path(folder)
        settings = _read_tokenizer_config(folder)
        if (folder / "tokenizer.json").exists():
            try:
                return cls.from_tokenizer_json(folder / "tokenizer.json", max_tokens)
            except TokenizerError:
                if not (folder / "vocab.txt").exists():
                    raise
        if (folder / "vocab.txt").exists():
            return cls.from_vocab(folder / "vocab.txt", do_lower_case=settings.get("do_lower_case", True),
                                  strip_accents=settings.get("strip_accents"),
                                  tokenize_chinese_chars=settings.get("tokenize_chinese_chars", True),
                                  max_tokens=max_tokens)
        raise TokenizerError(f"{folder} has neither tokenizer.json nor vocab.txt; copy the tokenizer files of the "
                             "checkpoint into the folder")

    @classmethod
    def from_tokenizer_json(cls, path: str | os.PathLike, max_tokens: int = 512) -> "Tokenizer":
        """From a `tokenizers` file with BERT's pipeline (WordPiece, BertNormalizer, BertPreTokenizer)."""
        path = Path(path)
        text, spec = read_tokenizer_json(path, TokenizerError)
        try:
            backend = HFTokenizer.from_str(text)
        except Exception as err:
            raise TokenizerError(f"could not read {path} ({str(err)[:200]})") from None
        if not isinstance(backend.model, models.WordPiece):
            raise TokenizerError(f"{path} is a {type(backend.model).__name__} tokenizer, not BERT's WordPiece")
        normalizer = spec.get("normalizer") or {}
        pre_tokenizer = spec.get("pre_tokenizer") or {}
        # Our splitting reproduces BertNormalizer + BertPreTokenizer; any other pipeline would be silently ignored.
        if normalizer.get("type") != "BertNormalizer" or pre_tokenizer.get("type") != "BertPreTokenizer":
            raise TokenizerError(f"{path} does not use BERT's normalizer and pre-tokenizer "
                                 f"({normalizer.get('type')}, {pre_tokenizer.get('type')}); put the model's vocab.txt "
                                 "and tokenizer_config.json in the folder instead")
        return cls(backend, max_tokens, do_lower_case=bool(normalizer.get("lowercase", True)),
                   strip_accents=normalizer.get("strip_accents"),
                   tokenize_chinese_chars=bool(normalizer.get("handle_chinese_chars", True)))

    @classmethod
    def from_vocab(cls, path: str | os.PathLike, do_lower_case: bool = True, strip_accents: bool | None = None,
                   tokenize_chinese_chars: bool = True, max_tokens: int = 512) -> "Tokenizer":
        """From a vocab.txt (one token per line, the line number is the id)."""
        # Universal newlines, then '\n' only, as the reference reads it: a token may hold other line separators.
        text = read_text(Path(path), TokenizerError, VOCAB_LIMIT).replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        vocab = {token: index for index, token in enumerate(lines)}  # a repeated token keeps its last id, as there
        if "[UNK]" not in vocab:
            raise TokenizerError(f"{path} has no [UNK] token; it is not a BERT vocabulary")
        backend = HFTokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))
        backend.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=tokenize_chinese_chars,
                                                        strip_accents=strip_accents, lowercase=do_lower_case)
        backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        backend.decoder = decoders.WordPiece(prefix="##")
        backend.add_special_tokens([t for t in SPECIAL_TOKENS if t in vocab])
        if "[CLS]" in vocab and "[SEP]" in vocab:
            # Only for the tokenizer.json we save, so that other programs get [CLS]/[SEP]; encode() places its own.
            backend.post_processor = processors.BertProcessing(("[SEP]", vocab["[SEP]"]), ("[CLS]", vocab["[CLS]"]))
        return cls(backend, max_tokens, do_lower_case, strip_accents, tokenize_chinese_chars)

    # --- encoding -----------------------------------------------------------------------------------------------
    def _pieces(self, texts: Sequence[str]) -> list[tuple[list[str], list[int], list[tuple[int, int]]]]:
        """WordPiece tokens, ids and character spans of each text, without special tokens. The words of all texts go
        to the WordPiece model in one batch (it runs on every core)."""
        words = [self._basic.words(text) for text in texts]
        plain = [[w.text for w in ws if not w.special] for ws in words]
        batch = self._wordpiece.encode_batch(plain, is_pretokenized=True, add_special_tokens=False)
        return [self._assemble(ws, enc) for ws, enc in zip(words, batch)]

    def _assemble(self, words: list[_Word], enc) -> tuple[list[str], list[int], list[tuple[int, int]]]:
        """One text's pieces in order: special words as they are, the others as WordPiece split them."""
        tokens: list[str] = []
        ids: list[int] = []
        offsets: list[tuple[int, int]] = []
        # Each of these properties builds a new list on every access: read them once.
        wp_tokens, wp_ids, wp_offsets, wp_words = enc.tokens, enc.ids, enc.offsets, enc.word_ids
        k = 0
        plain_index = 0
        for word in words:  # WordPiece output is in word order; word_ids says whose each piece is
            if word.special:
                tokens.append(word.text)
                ids.append(self.vocab[word.text])
                offsets.append(word.spans[0])
                continue
            while k < len(wp_ids) and wp_words[k] == plain_index:
                start, end = wp_offsets[k]  # characters of the word
                tokens.append(wp_tokens[k])
                ids.append(wp_ids[k])
                offsets.append((word.spans[start][0], word.spans[end - 1][1]))
                k += 1
            plain_index += 1
        return tokens, ids, offsets

    separator = "[SEP]"

    def encode_batch(self, texts: Sequence[str], text_pairs: Sequence[str | None] | None = None,
                     max_tokens: int | None = None, add_special_tokens: bool = True) -> list[Encoding]:
        """`encode` for many inputs at once, WordPiece batched. Without special tokens, each text's pieces as they
        are (no pairs, no truncation unless `max_tokens` is given): what pretraining reads from a corpus."""
        texts, pairs = self._checked_inputs(texts, text_pairs, add_special_tokens)
        n_a = len(texts)
        pieces = self._pieces(texts + [p for p in pairs if p is not None])
        pair_pieces = iter(pieces[n_a:])
        out = []
        for text, pair, a in zip(texts, pairs, pieces[:n_a]):
            b = next(pair_pieces) if pair is not None else None
            if add_special_tokens:
                out.append(self._with_specials(text, pair, a, b, max_tokens or self.max_tokens))
            else:
                keep = len(a[1]) if max_tokens is None else max_tokens
                out.append(_encoding(text, None, a[0][:keep], a[1][:keep], [0] * len(a[1][:keep]),
                                     a[2][:keep], [0] * len(a[1][:keep]), None))
        return out

    def _with_specials(self, text: str, text_pair: str | None, a, b, max_tokens: int) -> Encoding:
        n_special = 3 if b is not None else 2
        if max_tokens <= n_special:
            raise ValueError(f"max_tokens must be more than {n_special} to leave room for the sentence")
        len_a, len_b = len(a[1]), (len(b[1]) if b is not None else None)
        cut_a, cut_b = truncate_longest_first(len_a, len_b, max_tokens - n_special)
        truncation = None
        if cut_a or cut_b:
            truncation = Truncation(max_tokens, len_a + (len_b or 0) + n_special, cut_a, cut_b)
        tokens, ids, segment_ids, offsets, seq_ids = ["[CLS]"], [self.cls_token_id], [0], [(0, 0)], [None]

        def add(pieces, keep: int, segment: int) -> None:
            piece_tokens, piece_ids, piece_offsets = pieces
            tokens.extend(piece_tokens[:keep] + ["[SEP]"])
            ids.extend(piece_ids[:keep] + [self.sep_token_id])
            offsets.extend(piece_offsets[:keep] + [(0, 0)])
            segment_ids.extend([segment] * (keep + 1))
            seq_ids.extend([segment] * keep + [None])

        add(a, len_a - cut_a, 0)
        if b is not None:
            add(b, len_b - cut_b, 1)
        return _encoding(text, text_pair, tokens, ids, segment_ids, offsets, seq_ids, truncation)

    def tokenize(self, text: str) -> list[str]:
        """WordPiece tokens of `text`, without special tokens."""
        return self._pieces([text])[0][0]

    # --- saving -------------------------------------------------------------------------------------------------
    def save(self, folder: str | os.PathLike) -> None:
        """tokenizer.json, vocab.txt and tokenizer_config.json, readable by us and by transformers."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self._tk.save(str(folder / "tokenizer.json"))
        by_id = {i: t for t, i in self.vocab.items()}
        # Every id up to the highest gets a line, so line numbers stay ids even if the vocabulary had gaps.
        lines = [by_id.get(i, f"[unused_gap{i}]") for i in range(self.vocab_size)]
        (folder / "vocab.txt").write_text("".join(token + "\n" for token in lines), encoding="utf-8")
        config = {"tokenizer_class": "BertTokenizer", "model_max_length": self.max_tokens,
                  "do_lower_case": self.do_lower_case, "strip_accents": self.strip_accents,
                  "tokenize_chinese_chars": self.tokenize_chinese_chars}
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _encoding(text, text_pair, tokens, ids, segment_ids, offsets, seq_ids, truncation) -> Encoding:
    n = len(ids)
    return Encoding(text=text, text_pair=text_pair, tokens=tokens, ids=ids, segment_ids=segment_ids,
                    positions=list(range(n)), offsets=offsets, sequence_ids=seq_ids,
                    special_tokens_mask=[1 if s is None else 0 for s in seq_ids], attention_mask=[1] * n,
                    truncation=truncation)


def _read_tokenizer_config(folder: Path) -> dict:
    """The settings of tokenizer_config.json that we use, type-checked (absent ones are left out)."""
    path = folder / "tokenizer_config.json"
    if not path.exists():
        return {}
    data = read_json(path, TokenizerError)
    if not isinstance(data, dict):
        raise TokenizerError(f"{path} must hold a JSON object, got a {type(data).__name__}")
    settings = {key: data[key] for key in ("do_lower_case", "strip_accents", "tokenize_chinese_chars") if key in data}
    for key, value in settings.items():
        if not isinstance(value, bool) and not (key == "strip_accents" and value is None):
            allowed = "true, false or null" if key == "strip_accents" else "true or false"
            raise TokenizerError(f"{path}: {key} must be {allowed}, got {json.dumps(value)[:60]}; fix or remove it")
    return settings


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
        # By spelling, not id: a unigram piece the vocabulary lacks keeps its characters but takes the unknown id.
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

    def _labels(self, tokens, seq_ids, words, spans, sources) -> tuple[list[str], list[int]]:
        """`Encoding.labels` and `Encoding.word_ids` from the pieces and the word each came from (the pre-tokenizer's
        words, as `tokenizers` numbers them per sentence)."""
        labels, word_ids, current = [], [], -1
        previous, previous_span = None, None  # (sentence, word) of the token before (None: special), its span
        for token, seq, word, span in zip(tokens, seq_ids, words, spans):
            special = seq is None or token in self._special_tokens
            here = None if special else (seq, word)
            joins = here is not None and here == previous
            current += 0 if joins else 1
            word_ids.append(current)
            if special:
                labels.append(token)
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
        labels, word_ids = self._labels(kept_tokens, kept_seq, [words[i] for i in keep], offsets,
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
