"""The vocabulary of heads, in one place: the statistics a head is summarised by, the rule that names its role from
them, and each role's short label and colour. Python reads it from here; the views' JavaScript reads the same
definitions from views/js/heads.mjs, which this module writes (`python -m bertviz_app.heads`; tests/test_heads.py
fails when the file is stale), so that a role means the same in a notebook, the app and an offline page.

A role: the place that gets the largest share of the head's attention ([CLS], [SEP], the token itself, the previous
or the next token; a corpus adds punctuation), when that share is at least DOMINANT_SHARE; otherwise "broad" when the
head's entropy is at least BROAD_ENTROPY of a uniform row's, else "mixed"."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numpy as np

# What analysis.head_statistics measures of every head, in its order.
HEAD_STATISTICS = ("entropy", "distance", "cls", "sep", "self", "previous", "next")
# A share statistic -> the role it names; a corpus also measures the share to punctuation (CORPUS_SHARES).
SHARES = {"cls": "[CLS]", "sep": "[SEP]", "self": "self", "previous": "previous token", "next": "next token"}
CORPUS_SHARES = {**SHARES, "punctuation": "punctuation"}
DOMINANT_SHARE = 0.5  # a head "is" a [SEP] head, a previous-token head... when over half its attention goes there
BROAD_ENTROPY = 0.75  # otherwise it is "broad" when its entropy is at least this fraction of the uniform one
BROAD, MIXED = "broad", "mixed"
CLEAR_ROLES = tuple(SHARES.values())  # the roles that mean over half of the attention on one place
# A colour per role, in the order a legend lists them.
ROLE_COLORS = {"previous token": "#d62728", "next token": "#ff7f0e", "self": "#9467bd", "[CLS]": "#2ca02c",
               "[SEP]": "#1f77b4", BROAD: "#bdbdbd", MIXED: "#f0f0f0"}
# The same roles in the colour-blind palette (views/js/palette.mjs): picked from Okabe & Ito's and Tol's colour-blind
# sets (with two greys) by the largest smallest CIEDE2000 distance under simulated protanopia, deuteranopia and
# tritanopia: 21.3, against 1.3 for ROLE_COLORS (tests/js/palette.test.mjs measures it).
ROLE_COLORS_COLORBLIND = {"previous token": "#E69F00", "next token": "#56B4E9", "self": "#117733", "[CLS]": "#332288",
                          "[SEP]": "#000000", BROAD: "#8c8c8c", MIXED: "#ececec"}
# What a corpus shows of a head's statistics (corpus/stats.STATISTICS, entropy also over a uniform row's), in words:
# the heads grid and its scatter offer every one but "entropy" (they show entropy_ratio), a head's card every one but
# "entropy_ratio". A statistic the corpus measures reaches both with its line here.
CORPUS_STATISTICS = {"entropy": "entropy (nats)", "entropy_ratio": "entropy (1 = spread evenly)",
                     "distance": "mean distance (tokens)", "cls": "share to [CLS]", "sep": "share to [SEP]",
                     "self": "share to itself", "previous": "share to the previous token",
                     "next": "share to the next token", "punctuation": "share to punctuation"}
GRID_STATISTICS = tuple(name for name in CORPUS_STATISTICS if name != "entropy")
# A role in a few characters, for a tile.
SHORT_ROLES = {"previous token": "prev", "next token": "next", "self": "self", "[CLS]": "[CLS]", "[SEP]": "[SEP]",
               "punctuation": "punct", BROAD: BROAD, MIXED: MIXED}

JS_MODULE = Path(__file__).resolve().parent / "views" / "js" / "heads.mjs"


def roles(shares: Mapping[str, np.ndarray], entropy_ratio, labels: Mapping[str, str] = SHARES) -> np.ndarray:
    """Every head's role, as an object array of the shape of `entropy_ratio`. shares: statistic -> share array, one
    for each name of `labels` (SHARES, or CORPUS_SHARES); entropy_ratio: the head's entropy over a uniform row's.
    A share that is NaN (a corpus with no such token) never wins; on a tie the first of `labels` does."""
    names = list(labels)
    stacked = np.stack([np.asarray(shares[n], dtype=np.float64) for n in names], axis=-1)  # (..., S)
    stacked = np.where(np.isnan(stacked), -1.0, stacked)
    best = stacked.argmax(-1)
    top = np.take_along_axis(stacked, best[..., None], -1)[..., 0]
    ratio = np.asarray(entropy_ratio, dtype=np.float64)
    out = np.where(ratio >= BROAD_ENTROPY, BROAD, MIXED).astype(object)
    clear = top >= DOMINANT_SHARE
    out[clear] = np.asarray([labels[n] for n in names], dtype=object)[best[clear]]
    return out


def role_of(shares: Mapping[str, float], entropy_ratio: float, labels: Mapping[str, str] = SHARES) -> str:
    """One head's role (see `roles`)."""
    return str(roles(shares, entropy_ratio, labels)[()])


def js_module() -> str:
    """views/js/heads.mjs as it should read: these definitions as one frozen object."""
    data = {"statistics": HEAD_STATISTICS, "shares": SHARES, "corpusShares": CORPUS_SHARES,
            "dominantShare": DOMINANT_SHARE, "broadEntropy": BROAD_ENTROPY, "broad": BROAD, "mixed": MIXED,
            "clearRoles": CLEAR_ROLES, "roleColors": ROLE_COLORS,
            "roleColorsColorblind": ROLE_COLORS_COLORBLIND, "shortRoles": SHORT_ROLES,
            "corpusStatistics": CORPUS_STATISTICS}
    return ("// Generated by `python -m bertviz_app.heads` from bertviz_app/heads.py: edit that file, not this one.\n"
            f"export const HEADS = Object.freeze({json.dumps(data, indent=2, ensure_ascii=False)});\n")


if __name__ == "__main__":
    JS_MODULE.write_text(js_module(), encoding="utf-8")
    print(f"wrote {JS_MODULE}")
