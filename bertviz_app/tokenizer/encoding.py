"""What every tokenizer gives and shares: `Encoding` (one input as the model sees it), `Truncation`, the
labels' marks (`CONTINUATION`, `VISIBLE_SPACE`), WordPiece's word grouping, the two truncation rules, and the
id <-> token look-ups both tokenizers inherit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
