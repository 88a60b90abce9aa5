"""Head report cards: what one head does over a corpus, with the examples to prove it (Clark et al. 2019's heads,
HeadVis' and CircuitsVis' top examples, Dodrio's rankings). Everything comes from the corpus folder: the per-token
statistics it stores, its positional profile and tag links; each example names its sentence, so a click opens
`corpus.run(sentence)` at that head and token.

A card's examples are the tokens where the head does its thing most, read off its role: the largest share to the
previous token for a previous-token head (and so on for next, self, [CLS], [SEP], punctuation), the highest entropy
for a broad head, the lowest for a mixed one; or any statistic asked for. One example per sentence, so that a card
shows the pattern across sentences rather than one sentence many times."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..heads import BROAD, CORPUS_SHARES, MIXED
from .sources import CorpusError
from .stats import STATISTICS

# A role (heads.roles' names) -> the statistic its examples are ranked by, and whether the largest come first.
ROLE_STATISTIC = {**{role: (share, True) for share, role in CORPUS_SHARES.items()}, BROAD: ("entropy", True),
                  MIXED: ("entropy", False)}
CARD_STATISTICS = tuple(s for s in STATISTICS if s != "strongest")


@dataclass
class HeadCard:
    """One head over a corpus: its role, each statistic's mean, its top examples (one row per sentence: sentence,
    position, piece, value, text), its positional profile and, for a tagged corpus, its tag links."""
    layer: int
    head: int
    role: str
    statistics: dict[str, float]
    ranked_by: str
    examples: pd.DataFrame
    profile: pd.DataFrame
    links: pd.DataFrame | None = field(default=None)

    def __repr__(self) -> str:
        return (f"HeadCard(layer {self.layer}, head {self.head}: {self.role}; {len(self.examples)} examples by "
                f"{self.ranked_by})")


def head_card(corpus, layer: int, head: int, statistic: str | None = None, k: int = 5) -> HeadCard:
    layer, head = corpus.check_layer(layer), corpus.check_head(head)
    if statistic is not None and statistic not in CARD_STATISTICS:
        raise CorpusError(f"a card ranks its examples by one of {', '.join(CARD_STATISTICS)}, not {statistic!r}")
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or not 1 <= k <= 100:
        raise CorpusError(f"k is the number of examples, 1 to 100, not {k!r}")
    summary = corpus.head_summary()
    row = summary[(summary["layer"] == layer) & (summary["head"] == head)].iloc[0]
    role = str(row["role"])
    name, largest = (statistic, statistic != "entropy") if statistic else ROLE_STATISTIC.get(role, ("entropy", False))
    examples = top_examples(corpus, layer, head, name, largest, k)
    links = corpus.tag_links(layer, head) if corpus.tags else None
    return HeadCard(layer, head, role, {s: float(row[s]) for s in CARD_STATISTICS}, name, examples,
                    corpus.positional_profile(layer, head), links)


def top_examples(corpus, layer: int, head: int, statistic: str, largest: bool, k: int) -> pd.DataFrame:
    """The k tokens, each from another sentence, with the largest (or smallest) `statistic` of this head."""
    values = _head_statistic(corpus, layer, head, statistic)
    rows = np.flatnonzero(~np.isnan(values))
    order = rows[np.argsort(-values[rows] if largest else values[rows], kind="stable")]
    columns = corpus.token_columns
    _, first = np.unique(columns[order, 0], return_index=True)  # each sentence's best token, in the ranking
    picked = order[np.sort(first)[:k]]
    pieces, _ = corpus.spelled(picked)
    texts = corpus.sentences["text"]
    return pd.DataFrame({"sentence": columns[picked, 0], "position": columns[picked, 1], "piece": pieces,
                         "value": values[picked], "text": [texts.loc[s] for s in columns[picked, 0]]})


def _head_statistic(corpus, layer: int, head: int, statistic: str) -> np.ndarray:
    """(N,) one head's per-token statistic, read shard by shard from the memory maps (never every head's)."""
    k = STATISTICS.index(statistic)
    return np.concatenate([np.asarray(s.array("head_stats")[:, layer, head, k], dtype=np.float64)
                           for s in corpus.shards])
