"""Python's help topics as documents of sentences: the sections of the language reference that `help("if")` shows,
which every Python install carries (the standard library's `pydoc_data.topics`). The Pretrain tab's default text,
because it is there wherever the app was installed, with nothing else to install or fetch (Debian's fortunes need a
system package and root)."""

from __future__ import annotations

import re

from .sources import split_sentences

HEADING = re.compile(r"[*=~^-]{3,}")  # the line under a title
EMPHASIS = re.compile(r"\*{1,2}(\w[^*]*?)\*{1,2}")  # *s* and **bold**, reStructuredText's marks the topics keep


def help_topics() -> list[list[str]]:
    """Each prose paragraph of the help topics as a document (its sentences, in order); [] when this Python carries
    none. Indented paragraphs (code, grammar, tables), titles and sentences that introduce code (ending in ':') are
    left out."""
    try:
        from pydoc_data.topics import topics
    except ImportError:  # a Python stripped of its documentation
        return []
    documents = []
    for _, topic in sorted(topics.items()):
        for paragraph in re.split(r"\n\s*\n", topic):
            lines = paragraph.splitlines()
            if not lines or lines[0][:1].isspace() or any(HEADING.fullmatch(line.strip()) for line in lines):
                continue
            text = re.sub(r"^[*-] ", "", " ".join(lines))  # a list's item, as the prose it is
            sentences = [EMPHASIS.sub(r"\1", s) for s in split_sentences(text) if not s.endswith(":")]
            if sentences:
                documents.append(sentences)
    return documents
