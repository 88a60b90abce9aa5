"""Tokenizers: BERT's reference-exact WordPiece (wordpiece.py), any family member's tokenizer.json (family.py), and
what both give (encoding.py: `Encoding`, `Truncation`, the labels' marks, the truncation rules)."""

from .encoding import (CONTINUATION, VISIBLE_SPACE, Encoding, TokenizerError, Truncation, truncate_like_tokenizers,
                       truncate_longest_first, wordpiece_word_ids)
from .family import FamilyTokenizer, load_tokenizer
from .wordpiece import SPECIAL_TOKENS, Tokenizer

__all__ = ["CONTINUATION", "SPECIAL_TOKENS", "VISIBLE_SPACE", "Encoding", "FamilyTokenizer", "Tokenizer",
           "TokenizerError", "Truncation", "load_tokenizer", "truncate_like_tokenizers", "truncate_longest_first",
           "wordpiece_word_ids"]
