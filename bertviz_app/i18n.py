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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

CATALOGUE_FILES = {"es": Path(__file__).resolve().parent / "views" / "js" / "catalog-es.mjs"}
LANGUAGES = ("en", *CATALOGUE_FILES)  # "en" is the source language
_OBJECT = re.compile(r"^export const \w+ = (\{.*\});\s*$", re.S | re.M)
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_COMMENT_LINE = re.compile(r"^[ \t]*//.*$", re.M)


@lru_cache(maxsize=None)
def catalogue(lang: str) -> dict[str, str]:
    """English string -> its translation in `lang` (a name of CATALOGUE_FILES)."""
    return dict(entries(lang))


def entries(lang: str) -> list[tuple[str, str]]:
    """The catalogue of `lang` as its file lists it: (English, translation), in order, a key written twice included."""
    source = CATALOGUE_FILES[lang].read_text(encoding="utf-8")
    found = _OBJECT.search(source)
    if not found:
        raise ValueError(f"{CATALOGUE_FILES[lang].name}: no `export const NAME = {{...}};` object")
    # whole-line // comments inside the object name a block of entries (one part of the interface): JSON without them
    return json.loads(_COMMENT_LINE.sub("", found.group(1)), object_pairs_hook=list)


SERVER_ONLY = "// server only"  # a block of the catalogue under a comment line that starts so: what Python alone reads


def for_pages(source: str) -> str:
    """A catalogue's module without its server-only blocks, for the pages' scripts: the library's messages and the
    other strings only Python translates weigh on every saved page, which carries the catalogue, and no page asks
    for them. A block runs from its comment line to the next block's comment (or the object's end)."""
    kept, dropping, entries_seen = [], False, False
    for line in source.split("\n"):
        comment = line.lstrip().startswith("//")
        if line.startswith(SERVER_ONLY):
            dropping, entries_seen = True, False
            continue
        if dropping and (line.startswith("};") or (comment and entries_seen)):
            dropping = False
        if dropping:
            entries_seen = entries_seen or not comment
            continue
        kept.append(line)
    return "\n".join(kept)


def translate(english: str, lang: str = "en", **values) -> str:
    """`english` in `lang` (English when the catalogue lacks it), its {name} placeholders filled from `values`."""
    text = catalogue(lang).get(english, english) if lang in CATALOGUE_FILES else english
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), text) \
        if values else text


# A message the library writes (a refused input, a model that cannot load) is English, filled in with its values by
# an f-string, as a notebook prints it. The app shows it in the visitor's language by its template: the catalogue's
# entry "{field} has {n} characters; paste at most {most} (...)" matches "Sentence A has 30,000 characters; ...", and
# the values are put into the translation as they are, except those of TRANSLATED_VALUES (a box's or a setting's
# name, who asked, what was asked for: interface words), which are looked up themselves. Only templates with this
# much fixed text are tried, so that a short one ("{n} tokens") cannot claim a sentence it does not write.
TEMPLATE_MIN_CHARS = 16
TRANSLATED_VALUES = frozenset({"field", "who", "what"})


@lru_cache(maxsize=None)
def _templates(lang: str) -> tuple[tuple[re.Pattern, str], ...]:
    """Each catalogue entry with placeholders and enough fixed text, as a pattern that reads its values back, the
    most specific (most fixed text) first."""
    found = []
    for english in catalogue(lang):
        fixed = _PLACEHOLDER.sub("", english)
        if fixed == english or len(fixed) < TEMPLATE_MIN_CHARS:
            continue
        seen: set[str] = set()
        parts = []
        for piece in re.split(r"(\{\w+\})", english):
            name = _PLACEHOLDER.fullmatch(piece)
            if not name:
                parts.append(re.escape(piece))
            elif name.group(1) in seen:
                parts.append(f"(?P={name.group(1)})")
            else:
                seen.add(name.group(1))
                parts.append(f"(?P<{name.group(1)}>.+?)")
        found.append((len(fixed), re.compile("".join(parts), re.S), english))
    return tuple((pattern, english) for _, pattern, english in sorted(found, key=lambda f: -f[0]))


def translate_message(message: str, lang: str = "en") -> str:
    """A message of the library in `lang`: its catalogue entry, or the translation of the catalogued template it is
    filled from, with its values; the message as it is (English) when the catalogue has neither."""
    if lang not in CATALOGUE_FILES or not message:
        return message
    known = catalogue(lang)
    if message in known:
        return known[message]
    for pattern, english in _templates(lang):
        filled = pattern.fullmatch(message)
        if filled:
            values = {name: translate_message(value, lang) if name in TRANSLATED_VALUES else value
                      for name, value in filled.groupdict().items()}
            return translate(english, lang, **values)
    return message


# What a figure or a reading is written with: tr("English {name}", name=value) -> the visitor's language. The figure
# builders take one (English by default), so they know no language and no request.
@dataclass(frozen=True)
class Translator:
    """`translate` into `lang`, as one callable: tr("English {name}", name=value); `tr.message(text)` for a message
    the library wrote (`translate_message`)."""

    lang: str

    def __call__(self, english: str, **values) -> str:
        return translate(english, self.lang, **values)

    def message(self, text: str) -> str:
        return translate_message(text, self.lang)


def translator(lang: str) -> Translator:
    return Translator(lang)


english: Translator = translator("en")  # the source language: placeholders filled, nothing looked up


class Message(str):
    """An English sentence that remembers its template and values, to be translated where a page shows it: for a
    writer that speaks to every page at once (the training lane's thread) and so picks no language. It is the English
    text wherever a string is expected (a log, a notebook, a test); `said(message, tr)` is the visitor's. A value that
    is a Message is translated with it ("{how} before ...", how=Message("Cancelled"))."""

    def __new__(cls, english_text: str, **values):
        self = super().__new__(cls, translate(english_text, "en", **values))
        self.english, self.values = english_text, values
        return self

    def __call__(self, tr: Translator) -> str:
        return tr(self.english, **{name: said(value, tr) for name, value in self.values.items()})


def said(text: str, tr: Translator) -> str:
    """`text` as `tr` says it: a Message translated, any other text (the library's, a file's name) as it is."""
    return text(tr) if isinstance(text, Message) else text


# Static texts made of catalogued parts (a figure's reading with its formula folded under it, a data list's label with
# a file's name): gradio translates a Markdown's whole value, or a choice's whole label, so the page's catalogue holds
# each such text whole, built from its parts' translations.
_COMPOSED: dict[str, tuple[str, dict[str, str], dict[str, str]]] = {}


def composed(template: str, names: dict[str, str] | None = None, **parts: str) -> str:
    """`template` filled with `parts` (English, each translated) and `names` (kept as they are: a file's, a host's),
    remembered so that `page_catalogue` can translate it whole: the template as the catalogue has it (when it holds
    it), each part as the catalogue or an earlier composed text has it."""
    names = names or {}
    text = template.format(**names, **parts)
    _COMPOSED[text] = (template, parts, names)
    return text


def page_catalogue(lang: str) -> dict[str, str]:
    """`catalogue(lang)` and every `composed` text whose parts it holds: what gradio translates the page with."""
    known = dict(catalogue(lang))
    for text, (template, parts, names) in list(_COMPOSED.items()):  # in order: a part may be an earlier text
        if all(part in known for part in parts.values()):
            known[text] = known.get(template, template).format(
                **names, **{name: known[part] for name, part in parts.items()})
    return known


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


def language_of_headers(headers, asked: str | None = None) -> str:
    """The visitor's language from a request's headers, as the page chose it (views/js/i18n.mjs): `asked` (the
    request's own ?lang=), else ?lang= in the page's address the browser names as Referer, else Accept-Language."""
    if asked is None and headers.get("referer"):
        asked = parse_qs(urlsplit(headers["referer"]).query).get("lang", [None])[0]
    return choose_language(asked, headers.get("accept-language"))
