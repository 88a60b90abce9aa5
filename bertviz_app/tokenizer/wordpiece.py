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

from ..files import VOCAB_LIMIT, read_json, read_text, read_tokenizer_json
from .encoding import Encoding, Truncation, TokenizerError, _Vocabulary, truncate_longest_first

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


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


_PLAIN_ASCII = re.compile(r"[\t\n\r -~]*")  # printable ASCII and the whitespace the reference splits at
_ASCII_WORDS = re.compile(r"[A-Za-z0-9]+|[!-/:-@\[-`{-~]")  # a run of letters and digits, or one punctuation mark

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
        if _PLAIN_ASCII.fullmatch(text, start, end):
            return self._ascii_words(text, start, end)
        return self._words(text, start, end)

    def _ascii_words(self, text: str, start: int, end: int) -> list[_Word]:
        """What `_words` gives where the text is printable ASCII and whitespace (most of any English corpus), by one
        regular expression instead of a step per character: no control character to drop, no accent, and every
        character but a letter or digit is punctuation, a word of its own."""
        return [_Word(m.group().lower() if self.lowercase else m.group(), [(i, i + 1) for i in range(*m.span())])
                for m in _ASCII_WORDS.finditer(text, start, end)]

    def _words(self, text: str, start: int, end: int) -> list[_Word]:
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
