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
from collections.abc import Callable
from functools import lru_cache, partial
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


# What a figure or a reading is written with: tr("English {name}", name=value) -> the visitor's language. The figure
# builders take one (English by default), so they know no language and no request.
Translator = Callable[..., str]


def translator(lang: str) -> Translator:
    """`translate` into `lang`, as one callable: tr("English {name}", name=value)."""
    return partial(_translate_into, lang)


def _translate_into(lang: str, english: str, **values) -> str:
    return translate(english, lang, **values)


english: Translator = translator("en")  # the source language: placeholders filled, nothing looked up


# Static texts made of catalogued parts (a figure's reading with its formula folded under it): gradio translates a
# Markdown's whole value, so the page's catalogue holds each such text whole, built from its parts' translations.
_COMPOSED: dict[str, tuple[str, dict[str, str]]] = {}


def composed(template: str, **parts: str) -> str:
    """`template` filled with `parts` (English), remembered so that `page_catalogue` can translate it whole."""
    text = template.format(**parts)
    _COMPOSED[text] = (template, parts)
    return text


def page_catalogue(lang: str) -> dict[str, str]:
    """`catalogue(lang)` and every `composed` text whose parts it holds: what gradio translates the page with."""
    known = catalogue(lang)
    whole = {text: template.format(**{name: known[part] for name, part in parts.items()})
             for text, (template, parts) in _COMPOSED.items() if all(part in known for part in parts.values())}
    return {**known, **whole}


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
