"""Debian's fortune cookies (`/usr/share/games/fortunes`, the `fortunes` and `fortunes-min` packages) as documents of
sentences, and the held-out rule by a document's text: one home for scripts/build_corpus.py (the shipped model's
corpus) and the app's Pretrain tab (its built-in text), so that both read the same text the same way."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from .sources import split_sentences

FORTUNES = Path("/usr/share/games/fortunes")
# Fortune files that are pictures or lists rather than prose.
FORTUNE_SKIP = {"art", "ascii-art", "zippy", "startrek", "linuxcookie", "debian", "perl"}


def fortunes(folder: Path = FORTUNES) -> list[list[str]]:
    """Each cookie of the prose files in `folder` as a document (its sentences); [] when there is none."""
    documents = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else ():
        if path.suffix or not path.is_file() or path.name in FORTUNE_SKIP:
            continue  # .dat indexes, .u8 links
        text = path.read_text(encoding="utf-8", errors="replace")
        for cookie in re.split(r"^%\s*$", text, flags=re.MULTILINE):
            # Attribution lines ("-- Mark Twain") and indented verse markers are not prose.
            lines = [ln for ln in cookie.splitlines() if not re.match(r"^\s*--", ln)]
            body = " ".join(ln.strip() for ln in lines)
            sentences = split_sentences(body)
            if sentences:
                documents.append(sentences)
    return documents


def is_heldout(document: list[str], percent: float) -> bool:
    """Whether `document` is in the held-out `percent` of its corpus: by the hash of its text, so the split does not
    depend on the order the documents were read in."""
    digest = hashlib.md5("\n".join(document).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") < percent / 100 * 2 ** 32
