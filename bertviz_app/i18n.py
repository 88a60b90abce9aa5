"""The app's languages: one catalogue for Python and the page's JavaScript.

The catalogue is `views/js/catalog-es.mjs`, a plain JSON object keyed by the English string (gettext's habit: the
source string is the key, so English needs no catalogue and a string missing from one shows in English). The views
import it as a module; this module reads the same file as JSON, for the Gradio app's labels (given to gradio's
`gr.I18n`, which translates them in the visitor's page) and for `translate`. Why not a .po file: gettext's .mo files
must be compiled, and the page's JavaScript needs the catalogue as a module anyway; one file read by both languages
cannot drift. Token text, model outputs and what a visitor typed are never looked up.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

CATALOGUE_FILES = {"es": Path(__file__).resolve().parent / "views" / "js" / "catalog-es.mjs"}
LANGUAGES = ("en", *CATALOGUE_FILES)  # "en" is the source language
_OBJECT = re.compile(r"^export const \w+ = (\{.*\});\s*$", re.S | re.M)
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    """English string -> its translation in `lang` (a name of CATALOGUE_FILES)."""
    source = CATALOGUE_FILES[lang].read_text(encoding="utf-8")
    found = _OBJECT.search(source)
    if not found:
        raise ValueError(f"{CATALOGUE_FILES[lang].name}: no `export const NAME = {{...}};` object")
    return json.loads(found.group(1))


def translate(english: str, lang: str = "en", **values) -> str:
    """`english` in `lang` (English when the catalogue lacks it), its {name} placeholders filled from `values`."""
    text = catalogue(lang).get(english, english) if lang in CATALOGUE_FILES else english
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text) \
        if values else text


def placeholders(text: str) -> list[str]:
    """The {name} placeholders of a string, sorted: what a translation must keep."""
    return sorted(_PLACEHOLDER.findall(text))


def choose_language(asked: str | None = None, accept_language: str | None = None) -> str:
    """`asked` (a page's ?lang=) when it is one of LANGUAGES, else the first known language of an Accept-Language
    header ("es-ES,es;q=0.9,en;q=0.8"), else "en"."""
    def known(tag: str | None) -> str | None:
        primary = (tag or "").strip().lower().split(";")[0].split("-")[0]
        return primary if primary in LANGUAGES else None

    if known(asked):
        return known(asked)
    for tag in (accept_language or "").split(","):
        if known(tag):
            return known(tag)
    return "en"
