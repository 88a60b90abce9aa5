"""The token table: what BERT actually reads, one row per position."""

from __future__ import annotations

import pandas as pd

from ..tokenizer import Encoding


def token_table(encoding: Encoding) -> pd.DataFrame:
    """One row per token: position, token (as a person reads it: `Encoding.labels`), piece (the vocabulary's own
    spelling, 'Ġcat' for RoBERTa), id, segment ('A'/'B'), start/end of its character span in the sentence it came
    from (both 0 for special tokens), the covered text, and whether it is a special token."""
    return pd.DataFrame({
        "position": list(encoding.positions),
        "token": list(encoding.labels),
        "piece": list(encoding.tokens),
        "id": list(encoding.ids),
        "segment": ["A" if t == 0 else "B" for t in encoding.segment_ids],
        "start": [s for s, _ in encoding.offsets],
        "end": [e for _, e in encoding.offsets],
        "text": [encoding.span_text(i) for i in range(len(encoding))],
        "special": [bool(m) for m in encoding.special_tokens_mask],
    })
