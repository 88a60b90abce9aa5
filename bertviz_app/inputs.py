"""The one check of an input's text, whichever way it comes in (a notebook's `Explorer`, the app's boxes, the API):
what is refused, in a sentence that names the box and says what to do. The explorer calls `check_text` before it
encodes; the app's boxes call `text_problem`, so a visitor and a notebook read the same words."""

from __future__ import annotations

import re

MAX_CHARS = 20_000  # per box; the tokenizer is fast, but a pasted book should not reach it

LONE_SURROGATE = ("contains a character that is not text (an unpaired UTF-16 surrogate, as a broken copy and paste "
                  "can leave); remove it and try again.")


def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# Control characters that are not white space (NUL, BEL, ESC, DEL, C1 codes): unicodedata's "Cc" less what
# str.isspace() keeps (tab, line breaks, form feed, the separators U+001C-U+001F, NEL); and the bidirectional
# embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), which make text show in another order than it is
# read (U+202E can spoof what a token or a sentence appears to say). Other format characters, such as the zero-width
# joiner inside an emoji or the left-to-right mark, are not among them. A regex, not a loop: a box may hold 20,000
# characters, a corpus's source millions.
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\u202a-\u202e\u2066-\u2069]")


def not_text(value: str) -> str | None:
    """What in `value` is not text (a lone surrogate, a control character), as the end of a sentence that starts
    with what holds it; None when nothing is. `text_problem` and a corpus's build (corpus/sources.py) ask it."""
    if has_lone_surrogate(value):
        return LONE_SURROGATE
    control = _CONTROL.search(value)
    if control:
        # the tokenizer would drop it without a word, so the tokens would not show what was typed
        return (f"contains a control character (U+{ord(control.group()):04X}, character {control.start() + 1}) that "
                "is not text; remove it and try again.")
    return None


def text_problem(value) -> str | None:
    """What is wrong with `value` as the text of one box, as the end of a sentence that starts with the box's name
    ("Sentence A " + this); None when nothing is. None counts as an empty box, and empty is no problem here (sentence
    B may be; `check_text` says when sentence A is)."""
    if value is None:
        value = ""
    if not isinstance(value, str):
        return f"must be text, not {type(value).__name__}."
    if has_lone_surrogate(value):
        return LONE_SURROGATE
    if len(value) > MAX_CHARS:
        return (f"has {len(value):,} characters; paste at most {MAX_CHARS:,} (the model reads only the first few "
                "hundred tokens anyway).")
    return not_text(value)


def check_text(text, text_pair=None) -> tuple[str, str | None]:
    """`text` (sentence A) and `text_pair` (sentence B, optional) as the model may read them, or a ValueError (a
    TypeError for something that is not text) in words; an empty or blank sentence B means a single sentence."""
    for value, name in ((text, "Sentence A"), (text_pair, "Sentence B")):
        problem = text_problem(value)
        if problem:
            raise (TypeError if problem.startswith("must be text") else ValueError)(f"{name} {problem}")
    if text is None or not text.strip():
        raise ValueError("Sentence A is empty: type a sentence (sentence B is optional).")
    if text_pair is not None and not text_pair.strip():
        text_pair = None
    return text, text_pair
