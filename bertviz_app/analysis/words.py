"""Attention between words instead of word pieces, merged as Clark et al. (2019, "What does BERT look at?") do:
attention *to* a split word is the sum over its pieces (the weight it receives in total), attention *from* a split
word is the mean over its pieces (each piece's row is a distribution, so the mean is one too). Rows keep summing to 1,
and an input without split words gives the token matrix back unchanged."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tokenizer import CONTINUATION, VISIBLE_SPACE


def _looks_special(token: str) -> bool:
    return len(token) > 2 and token.startswith("[") and token.endswith("]")


@dataclass
class Words:
    """Word pieces grouped into words. W words, T tokens.

    words: (W,) the words, pieces joined without their '##'; groups: (W,) the token indices of each word, in order;
    index: (T,) the word each token belongs to."""

    words: list[str]
    groups: list[list[int]]
    index: np.ndarray

    def __len__(self) -> int:
        return len(self.words)

    @property
    def has_split_words(self) -> bool:
        return any(len(g) > 1 for g in self.groups)


def group_words(tokens, special_mask=None, word_ids=None) -> Words:
    """Group `tokens` into words. With `word_ids` (T,) (the tokenizer's own, `Encoding.word_ids`), tokens sharing an
    id are one word. Without, WordPiece's rule: a piece starting with '##' joins the word before it; special tokens
    ([CLS], [SEP], [MASK], ... or where `special_mask` (T,) is true) are words of their own and never take a '##'
    piece (one that follows a special token starts a word). A word's text is its pieces without their '##', and
    without a leading piece that is only a space ('␣', SentencePiece's lone '▁')."""
    tokens = [str(t) for t in tokens]
    special = ([_looks_special(t) for t in tokens] if special_mask is None
               else [bool(s) for s in np.asarray(special_mask, dtype=bool)])
    if len(special) != len(tokens):
        raise ValueError(f"special_mask has {len(special)} entries for {len(tokens)} tokens; give one per token")
    if word_ids is not None and len(word_ids) != len(tokens):
        raise ValueError(f"word_ids has {len(word_ids)} entries for {len(tokens)} tokens; give one per token")
    pieces: list[list[str]] = []
    groups: list[list[int]] = []
    index = np.empty(len(tokens), dtype=np.int64)
    for i, (token, is_special) in enumerate(zip(tokens, special)):
        if word_ids is not None:
            joins = i > 0 and word_ids[i] == word_ids[i - 1]
        else:
            joins = (token.startswith(CONTINUATION) and len(token) > len(CONTINUATION) and not is_special
                     and groups and not special[groups[-1][-1]])
        if joins:
            pieces[-1].append(token)
            groups[-1].append(i)
        else:
            pieces.append([token])
            groups.append([i])
        index[i] = len(groups) - 1
    return Words([_join(p) for p in pieces], groups, index)


def _join(pieces: list[str]) -> str:
    if len(pieces) > 1 and pieces[0] == VISIBLE_SPACE:
        pieces = pieces[1:]
    # A bare '##' after the first piece is a further byte of a character split over pieces: it adds nothing.
    rest = (p[len(CONTINUATION):] if p.startswith(CONTINUATION) else p for p in pieces[1:])
    return pieces[0] + "".join(rest)


def word_attention(attention: np.ndarray, words: Words) -> np.ndarray:
    """Merge the last two axes of `attention` (..., T, T) (one head, a layer's heads, every layer) into
    (..., W, W): columns summed over each word's pieces, then rows averaged over them."""
    attention = np.asarray(attention)
    t = len(words.index)
    if attention.ndim < 2 or attention.shape[-2:] != (t, t):
        raise ValueError(f"attention must end in (tokens, tokens) = ({t}, {t}) for these {t} tokens, "
                         f"got {attention.shape}")
    n = len(words)
    # (T, W) membership: token j belongs to word w. Summing columns is A @ M; averaging rows is (M / sizes)^T @ ...
    member = np.zeros((t, n), dtype=np.float64)
    member[np.arange(t), words.index] = 1.0
    sizes = member.sum(axis=0)  # (W,)
    to_words = attention.astype(np.float64) @ member  # (..., T, W)
    from_words = np.swapaxes(member / sizes, 0, 1) @ to_words  # (..., W, W)
    return from_words.astype(attention.dtype if attention.dtype.kind == "f" else np.float64)
